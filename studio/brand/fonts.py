"""Mapping the font families a site declares to the families the renderer ships.

A shipped family maps to itself. Another maps by kind: known names first (Helvetica -> Inter,
Georgia -> Merriweather, Futura -> Poppins), then words in the name (``Condensed``, ``Serif``,
``Sans``), then the generic family that ends the stack (``serif``). A name we cannot place is skipped
so the next family in the stack decides, as a browser falls back.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from reelfarm.renderer.fonts import available_families

DEFAULT_FAMILY = "Inter"

# Lower-case name (or name prefix, see _known) -> shipped family.
_KNOWN: dict[str, str] = {
    # neo-grotesques and UI faces
    "helvetica": "Inter", "helvetica neue": "Inter", "arial": "Inter", "system-ui": "Inter",
    "-apple-system": "Inter", "blinkmacsystemfont": "Inter", "segoe ui": "Inter", "sf pro": "Inter",
    "san francisco": "Inter", "ui-sans-serif": "Inter", "ui-rounded": "Inter", "sans-serif": "Inter",
    "verdana": "Inter", "tahoma": "Inter", "ibm plex sans": "Inter", "source sans": "Inter",
    "work sans": "Inter", "nunito sans": "Inter", "geist": "Inter", "manrope": "Inter",
    "plus jakarta sans": "Inter", "figtree": "Inter", "graphik": "Inter", "untitled sans": "Inter",
    "neue haas": "Inter", "aktiv grotesk": "Inter", "suisse": "Inter", "calibri": "Inter",
    "ubuntu": "Open Sans", "noto sans": "Noto Sans", "fira sans": "Open Sans", "pt sans": "Open Sans",
    "source sans pro": "Open Sans", "trebuchet ms": "Open Sans",
    # geometric
    "futura": "Poppins", "avenir": "Poppins", "avenir next": "Poppins", "century gothic": "Poppins",
    "circular": "Poppins", "product sans": "Poppins", "google sans": "Poppins", "nunito": "Poppins",
    "quicksand": "Poppins", "outfit": "Poppins", "sofia pro": "Poppins", "brandon": "Poppins",
    "gotham": "Montserrat", "proxima nova": "Montserrat", "raleway": "Montserrat", "metropolis": "Montserrat",
    "gilroy": "Montserrat", "josefin sans": "Montserrat", "museo sans": "Montserrat", "sora": "Montserrat",
    "dm sans": "DM Sans", "space grotesk": "DM Sans",
    # condensed and display
    "impact": "Oswald", "bebas neue": "Oswald", "bebas": "Oswald", "anton": "Oswald",
    "league gothic": "Oswald", "fjalla one": "Oswald", "teko": "Oswald", "barlow condensed": "Oswald",
    "roboto condensed": "Oswald", "din condensed": "Oswald", "archivo narrow": "Oswald",
    # serif
    "georgia": "Merriweather", "times": "Merriweather", "times new roman": "Merriweather",
    "ui-serif": "Merriweather", "garamond": "Merriweather", "eb garamond": "Merriweather",
    "baskerville": "Merriweather", "libre baskerville": "Merriweather", "cambria": "Merriweather",
    "lora": "Merriweather", "pt serif": "Merriweather", "source serif": "Merriweather",
    "roboto slab": "Merriweather", "crimson": "Merriweather", "palatino": "Merriweather",
    "charter": "Merriweather", "tiempos": "Merriweather", "noto serif": "Noto Serif",
    "didot": "Playfair Display", "bodoni": "Playfair Display", "playfair": "Playfair Display",
    "cormorant": "Playfair Display", "dm serif display": "Playfair Display", "abril fatface": "Playfair Display",
    "prata": "Playfair Display", "canela": "Playfair Display", "freight display": "Playfair Display",
}
_GENERIC = frozenset({"serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "ui-serif",
                      "ui-sans-serif", "ui-monospace", "ui-rounded", "emoji", "math", "fangsong",
                      "inherit", "initial", "unset", "revert"})
_CONDENSED = re.compile(r"condensed|narrow|compressed|extra ?cond|\bcond\b", re.IGNORECASE)
_DISPLAY_SERIF = re.compile(r"display|didone|fatface|headline", re.IGNORECASE)


def shipped_families() -> list[str]:
    """The families documents may name (the renderer's)."""
    return available_families()


def map_family(name: str, *, heading: bool = False) -> str | None:
    """The shipped family for one declared family name, or None when it gives no hint.

    ``heading`` picks Playfair Display rather than Merriweather for a serif of unknown style.
    """
    text = " ".join(name.strip().strip("'\"").split())
    lower = text.lower()
    if not lower or lower in ("inherit", "initial", "unset", "revert", "emoji", "math"):
        return None
    exact = {family.lower(): family for family in shipped_families()}
    if lower in exact:
        return exact[lower]
    if _CONDENSED.search(lower):
        return "Oswald"
    known = _known(lower)
    if known:
        return known
    if lower == "serif" or (re.search(r"serif|slab", lower) and "sans" not in lower):
        return "Playfair Display" if heading or _DISPLAY_SERIF.search(lower) else "Merriweather"
    for family, shipped in exact.items():
        if lower.startswith(family + " "):  # "Inter Tight", "Poppins Latin"
            return shipped
    if re.search(r"sans|grotesk|grotesque|mono|gothic", lower) or lower in _GENERIC:
        return DEFAULT_FAMILY
    return None


def _known(lower: str) -> str | None:
    if lower in _KNOWN:
        return _KNOWN[lower]
    words = lower.split(" ")
    for size in range(len(words) - 1, 0, -1):  # "Avenir Next LT Pro" -> "avenir next" -> "avenir"
        prefix = " ".join(words[:size])
        if prefix in _KNOWN:
            return _KNOWN[prefix]
    return None


def map_stack(stack: Sequence[str], *, heading: bool = False) -> str | None:
    """The shipped family for a ``font-family`` stack: the first entry that maps, as a browser picks."""
    for name in stack:
        family = map_family(name, heading=heading)
        if family:
            return family
    return None


def choose_font(stack: Sequence[str], weight: int, *, heading: bool,
                fallback: str = DEFAULT_FAMILY) -> dict:
    """The token ``{"family", "weight", "original"}`` for a declared stack (possibly empty)."""
    family = map_stack(stack, heading=heading) or fallback
    return {"family": family, "weight": weight, "original": stack[0] if stack else None}
