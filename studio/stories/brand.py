"""Brand tokens: the neutral kit, sanitising tokens into a VideoDoc brand block, and contrast.

Stories never paint literal brand colours. They paint ``$brand.colors.*`` tokens, and pick
*which* token goes where by measuring the contrast of the actual colours, so a light, dark or
loud brand all stay legible.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from dataclasses import dataclass
from typing import Any

from reelfarm.renderer.cache import bounded_cache
from reelfarm.renderer.tokens import NEUTRAL_BRAND  # the one neutral kit, shared with the renderer

COLOR_NAMES = ("primary", "secondary", "accent", "background", "text")
MIN_CONTRAST = 4.5

_HEX = re.compile(r"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$")


def is_hex(value: object) -> bool:
    """Tell whether ``value`` is a ``#RRGGBB`` or ``#RRGGBBAA`` colour."""
    return isinstance(value, str) and bool(_HEX.match(value))


def brand_block(tokens: dict | None) -> dict[str, Any]:
    """Turn ``BrandKit.tokens`` into a VideoDoc ``brand`` block.

    Keys the VideoDoc schema does not allow are dropped, invalid values are replaced by the
    neutral kit's, missing ones are filled from it (so every ``$brand`` token a story uses
    resolves), a font family the renderer does not ship becomes the closest one it does, and
    a logo without a URL becomes ``None`` (a stored logo keeps its storage ``key``).
    """
    tokens = tokens if isinstance(tokens, dict) else {}
    neutral = NEUTRAL_BRAND
    colors_in: dict = _mapping(tokens.get("colors"))
    colors = {
        name: colors_in[name] if is_hex(colors_in.get(name)) else neutral["colors"][name]
        for name in COLOR_NAMES
    }
    palette_in = tokens.get("palette")
    if isinstance(palette_in, list):
        palette = [c for c in palette_in if is_hex(c)][:32]
    else:
        palette = list(neutral["palette"])
    fonts_in: dict = _mapping(tokens.get("fonts"))
    fonts = {role: _font(fonts_in.get(role), neutral["fonts"][role], role) for role in ("heading", "body")}
    radius: Any = tokens.get("radius")
    if not (is_number(radius) and radius >= 0):
        radius = neutral["radius"]
    tagline = tokens.get("tagline")
    return {
        "colors": colors,
        "palette": palette,
        "fonts": fonts,
        "logo": _logo(tokens.get("logo")),
        "radius": radius,
        "tagline": tagline if isinstance(tagline, str) else None,
    }


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool): what a JSON number may be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _font(value: object, fallback: dict, role: str) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("family"), str):
        return copy.deepcopy(fallback)
    family = value["family"].strip()
    if not family:
        return copy.deepcopy(fallback)
    font: dict[str, Any] = {"family": shipped_family(family, role)}
    weight = value.get("weight")
    if isinstance(weight, int) and not isinstance(weight, bool) and 100 <= weight <= 900:
        font["weight"] = weight
    return font


def shipped_family(family: str, role: str) -> str:
    """``family`` if the renderer ships it (any case), else the closest shipped family.

    A brand kit extracted from a website may name any font; the renderer draws only the
    families it ships, and refuses a document naming another.
    """
    shipped = _shipped_families()
    if not shipped:
        return family
    by_lower = {name.lower(): name for name in shipped}
    if family.lower() in by_lower:
        return by_lower[family.lower()]
    name = family.lower()
    if "serif" in name and "sans" not in name or any(w in name for w in ("garamond", "times", "georgia", "baskerville")):
        choice = "Playfair Display" if role == "heading" else "Merriweather"
    elif any(w in name for w in ("condensed", "narrow", "compressed")):
        choice = "Oswald" if role == "heading" else "Roboto"
    else:
        choice = NEUTRAL_BRAND["fonts"][role]["family"]
    return choice if choice in shipped else shipped[0]


@functools.lru_cache(maxsize=1)
def _shipped_families() -> tuple[str, ...]:
    try:
        from reelfarm.renderer.fonts import available_families
    except ImportError:  # no renderer in this process: keep families as given
        return ()
    return tuple(available_families())


def _logo(value: object) -> dict | None:
    if not isinstance(value, dict):
        return None
    url = value.get("url")
    if not isinstance(url, str) or not url.strip():
        return None
    logo: dict[str, Any] = {"url": url}
    if isinstance(value.get("key"), str) and value["key"].strip():
        logo["key"] = value["key"]  # the copy in our storage, which renders read
    for key in ("width", "height"):
        dim: Any = value.get(key)
        logo[key] = dim if is_number(dim) and dim > 0 else None
    dominant = value.get("dominant_color")
    logo["dominant_color"] = dominant if is_hex(dominant) else None
    return logo


@bounded_cache(max_entries=1024, max_bytes=256 * 1024)
def luminance(hex_color: str) -> float:
    """WCAG relative luminance of an opaque ``#RRGGBB`` colour (alpha is ignored)."""
    channels = []
    for i in (1, 3, 5):
        c = int(hex_color[i : i + 2], 16) / 255
        channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio between two opaque colours, from 1 to 21."""
    la, lb = luminance(a), luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def mix(a: str, b: str, alpha: float) -> str:
    """``a`` laid over ``b`` at opacity ``alpha``, as ``#RRGGBB``."""
    out = []
    for i in (1, 3, 5):
        ca, cb = int(a[i : i + 2], 16), int(b[i : i + 2], 16)
        out.append(round(ca * alpha + cb * (1 - alpha)))
    return "#" + "".join(f"{c:02X}" for c in out)


def token(name: str, alpha: int | None = None) -> str:
    """The ``$brand.colors.NAME`` token, with an ``.aNN`` opacity suffix when ``alpha`` is set."""
    base = f"$brand.colors.{name}"
    return base if alpha is None else f"{base}.a{alpha:02d}"


@dataclass(frozen=True)
class Kit:
    """The colour roles of one story build: which brand token paints what.

    ``theme`` is ``light`` (brand background surface) or ``dark`` (a brand primary surface, or
    the brand text colour where primary cannot carry legible text).
    """

    brand: dict[str, Any]
    theme: str = "light"

    def inverted(self) -> Kit:
        """The same brand with the other theme: for a contrasting scene."""
        return Kit(brand=self.brand, theme="light" if self.theme == "dark" else "dark")

    def hex(self, name: str) -> str:
        """The brand's colour for a token name such as ``primary``."""
        return self.brand["colors"][name][:7]

    @property
    def surface(self) -> str:
        """Colour name of the scene background."""
        if self.theme != "dark":
            return "background"
        best = max(contrast(self.hex("primary"), self.hex(n)) for n in ("background", "text"))
        return "primary" if best >= MIN_CONTRAST else "text"

    def ink_on(self, surface: str) -> str:
        """Colour name of body text on the ``surface`` colour name: the higher-contrast one."""
        options = [n for n in ("text", "background", "secondary", "primary") if n != surface]
        return max(options, key=lambda n: contrast(self.hex(n), self.hex(surface)))

    @property
    def ink(self) -> str:
        """Colour name of main text on the scene surface."""
        return self.ink_on(self.surface)

    @property
    def highlight(self) -> str:
        """Colour name for eyebrows and key figures: a brand colour when it stays legible."""
        for name in ("primary", "accent", "secondary"):
            if name != self.surface and contrast(self.hex(name), self.hex(self.surface)) >= MIN_CONTRAST:
                return name
        return self.ink

    @property
    def button(self) -> str:
        """Colour name of call-to-action pills: a brand colour that stands off the surface."""
        for name in ("primary", "accent", "secondary", "text", "background"):
            if name == self.surface:
                continue
            if contrast(self.hex(name), self.hex(self.ink_on(name))) >= MIN_CONTRAST and contrast(
                self.hex(name), self.hex(self.surface)
            ) >= 1.4:
                return name
        return self.ink

    @property
    def card(self) -> str:
        """Colour name of panels that carry text: the surface's strongest partner."""
        return self.button

    def readable_on(self, hex_color: str) -> str:
        """A text colour for a literal background: a brand token when legible, else black or white."""
        bg = hex_color[:7]
        best = max(("text", "background"), key=lambda n: contrast(self.hex(n), bg))
        if contrast(self.hex(best), bg) >= MIN_CONTRAST:
            return token(best)
        return "#FFFFFF" if contrast("#FFFFFF", bg) >= contrast("#000000", bg) else "#000000"

    def tint(self, name: str = "primary", strength: int = 12) -> str:
        """A faint token of ``name`` for decoration, kept faint enough to leave text legible."""
        surface = self.hex(self.surface)
        ink = self.hex(self.ink)
        for alpha in (strength, 10, 8, 6, 4):
            if contrast(ink, mix(self.hex(name), surface, alpha / 100)) >= 7:
                return token(name, alpha)
        return token(self.surface)

    def tone(self, name: str) -> str:
        """The ``$brand.colors.NAME`` token for a colour name."""
        return token(name)
