"""Brand tokens (`$brand.colors.primary`, `$brand.fonts.heading`, ...) and colours.

Tokens resolve against the document's `brand` block; what the block leaves out comes from the
neutral defaults below, so a document without a brand still renders.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reelfarm.renderer.model import FontRef

NEUTRAL_BRAND: dict[str, Any] = {
    "colors": {
        "primary": "#1F3A5F",     # deep navy
        "secondary": "#E9E4DA",   # warm sand
        "accent": "#B4462F",      # burnt sienna
        "background": "#F7F5F2",  # warm paper
        "text": "#17191E",        # ink
    },
    "palette": ["#1F3A5F", "#E9E4DA", "#B4462F", "#F7F5F2", "#17191E", "#5B7083"],
    "fonts": {"heading": {"family": "Montserrat", "weight": 800}, "body": {"family": "Inter", "weight": 400}},
    "logo": None,
    "radius": 0.02,
    "tagline": None,
}
"""The neutral kit: every new workspace's default, and what a document's brand block leaves out."""

_ALPHA = re.compile(r"^(?P<ref>.+)\.a(?P<pct>\d{1,3})$")
COLOR_KEYS = ("primary", "secondary", "accent", "background", "text")


class TokenError(LookupError):
    """A `$brand...` reference that names no token."""


class Brand:
    """Resolves token references against a brand block merged over the neutral defaults."""

    def __init__(self, block: Mapping[str, Any] | None = None) -> None:
        block = block or {}
        self.colors = {**NEUTRAL_BRAND["colors"], **(block.get("colors") or {})}
        self.palette = list(block.get("palette") or NEUTRAL_BRAND["palette"])
        fonts = {**NEUTRAL_BRAND["fonts"], **(block.get("fonts") or {})}
        self.fonts = {k: FontRef(v["family"], int(v.get("weight", 400))) for k, v in fonts.items()}
        self.radius = float(block.get("radius", NEUTRAL_BRAND["radius"]))
        self.logo = block.get("logo")

    def color(self, value: str) -> str:
        """A `#RRGGBB[AA]` colour for a literal or a colour token."""
        if not value.startswith("$"):
            return value
        alpha = None
        match = _ALPHA.match(value)
        if match and match.group("ref").count(".") >= 2:
            value, alpha = match.group("ref"), min(100, int(match.group("pct")))
        parts = value.split(".")
        if len(parts) == 3 and parts[1] == "colors" and parts[2] in self.colors:
            hex_ = self.colors[parts[2]]
        elif len(parts) == 3 and parts[1] == "palette" and parts[2].isdigit() and int(parts[2]) < len(self.palette):
            hex_ = self.palette[int(parts[2])]
        else:
            raise TokenError(value)
        if alpha is not None:
            hex_ = hex_[:7] + f"{round(alpha * 2.55):02X}"
        return hex_

    def font(self, value: FontRef | str) -> FontRef:
        if isinstance(value, FontRef):
            return value
        parts = value.split(".")
        if len(parts) == 3 and parts[1] == "fonts" and parts[2] in self.fonts:
            return self.fonts[parts[2]]
        raise TokenError(value)

    def number(self, value: float | str) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        if value == "$brand.radius":
            return self.radius
        raise TokenError(value)

    def check(self, value: str) -> bool:
        """True when `value` is a token this brand resolves (of any kind)."""
        for resolve in (self.color, self.font, self.number):
            try:
                resolve(value)
                return True
            except (TokenError, KeyError, ValueError):
                continue
        return value == "$brand.logo" and bool(self.logo and self.logo.get("url"))


def parse_hex(value: str) -> tuple[int, int, int, int]:
    """(r, g, b, a) bytes of `#RRGGBB` or `#RRGGBBAA`."""
    v = value.lstrip("#")
    r, g, b = int(v[0:2], 16), int(v[2:4], 16), int(v[4:6], 16)
    a = int(v[6:8], 16) if len(v) == 8 else 255
    return r, g, b, a


def argb(value: str) -> int:
    """Skia's 0xAARRGGBB integer for a hex colour."""
    r, g, b, a = parse_hex(value)
    return (a << 24) | (r << 16) | (g << 8) | b


def relative_luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour given as 0..255 floats."""
    def channel(c: float) -> float:
        c = c / 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG contrast ratio between two sRGB colours (1 to 21)."""
    la, lb = relative_luminance(a), relative_luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)
