"""Colour arithmetic for brand extraction: CSS colour parsing (through tinycss2), WCAG contrast, tints.

Colours are ``(r, g, b)`` tuples of ints 0..255 in sRGB; a colour with alpha is composited on white,
since a translucent brand colour is seen over the (usually white) page.
"""
from __future__ import annotations

import colorsys
import re

import tinycss2
from tinycss2 import color4

RGB = tuple[int, int, int]

WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
NEAR_BLACK: RGB = (17, 17, 17)
TEXT_CONTRAST = 4.5  # WCAG AA for body text
GRAPHIC_CONTRAST = 3.0  # WCAG AA for large text and graphics (buttons, brand shapes)
MIN_ALPHA = 0.35  # fainter colours are overlays and tints, not brand colours

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_CHANNELS = re.compile(rf"^\s*({_NUMBER})(%?)\s*,?\s*({_NUMBER})(%?)\s*,?\s*({_NUMBER})(%?)\s*$")


def parse_color(value: object) -> RGB | None:
    """The sRGB colour a CSS colour value (text or a tinycss2 token) names, or None.

    None for anything that is not a colour, for ``currentColor``, for a nearly transparent colour,
    and for colour spaces this tinycss2 cannot convert to sRGB.
    """
    try:
        parsed = color4.parse_color(value.strip() if isinstance(value, str) else value)
        if parsed is None or isinstance(parsed, str):
            return None
        srgb = _to_srgb(parsed)
    except (NotImplementedError, ValueError, TypeError, ZeroDivisionError):
        return None
    if srgb is None:
        return None
    alpha = 1.0 if parsed.alpha is None else float(parsed.alpha)
    if alpha < MIN_ALPHA:
        return None
    channels = [min(1.0, max(0.0, c)) for c in srgb]
    return tuple(round((c * alpha + (1 - alpha)) * 255) for c in channels)  # type: ignore[return-value]


def _to_srgb(color: color4.Color) -> tuple[float, float, float] | None:
    """Gamma-encoded sRGB channels 0..1 (out of gamut unclipped); None for spaces we do not map."""
    if color.space in ("srgb", "hsl", "hwb"):
        return tuple(float(c) for c in color.to("srgb").coordinates)  # type: ignore[return-value]
    if color.space == "srgb-linear":
        return tuple(_encode(float(c or 0)) for c in color.coordinates)  # type: ignore[return-value]
    if color.space in ("oklab", "oklch", "xyz-d65"):  # Tailwind 4 writes its palette in oklch
        return _xyz_d65_to_srgb(color.to("xyz-d65").coordinates)
    if color.space in ("lab", "lch", "xyz-d50"):
        x, y, z = (float(c) for c in color.to("xyz-d50").coordinates)
        return _xyz_d65_to_srgb((0.955473 * x - 0.023099 * y + 0.063259 * z,  # Bradford D50 -> D65
                                 -0.028370 * x + 1.009995 * y + 0.021041 * z,
                                 0.012314 * x - 0.020508 * y + 1.330366 * z))
    return None


def _xyz_d65_to_srgb(xyz: tuple) -> tuple[float, float, float]:
    x, y, z = (float(c) for c in xyz)
    linear = (3.240970 * x - 1.537383 * y - 0.498611 * z,
              -0.969244 * x + 1.875968 * y + 0.041555 * z,
              0.055630 * x - 0.203977 * y + 1.056972 * z)
    return tuple(_encode(c) for c in linear)  # type: ignore[return-value]


def _encode(linear: float) -> float:
    value = min(1.0, max(0.0, linear))
    return value * 12.92 if value <= 0.0031308 else 1.055 * value ** (1 / 2.4) - 0.055


def parse_channels(value: str) -> RGB | None:
    """A bare channel triplet in a custom property, as frameworks write them for ``rgb(var(--x))``.

    ``"29 78 216"`` and ``"29, 78, 216"`` are RGB; ``"222 47% 11%"`` is HSL (shadcn/ui style).
    """
    match = _CHANNELS.match(value)
    if match is None:
        return None
    a, a_pct, b, b_pct, c, c_pct = match.groups()
    if b_pct and c_pct and not a_pct:
        return parse_color(f"hsl({a} {b}% {c}%)")
    if not (a_pct or b_pct or c_pct):
        return parse_color(f"rgb({a} {b} {c})")
    return None


def colors_in(value: str) -> list[RGB]:
    """Every colour in a declaration value, gradients and shorthands (``border: 1px solid red``) included."""
    return _colors_in_tokens(tinycss2.parse_component_value_list(value, skip_comments=True))


def _colors_in_tokens(tokens: list) -> list[RGB]:
    found: list[RGB] = []
    for token in tokens:
        if token.type in ("hash", "ident"):
            color = parse_color(token)
        elif token.type == "function":
            color = parse_color(token)
            if color is None and token.lower_name not in ("url", "var", "env"):
                found.extend(_colors_in_tokens(token.arguments))  # linear-gradient(...), color-mix(...)
                continue
        else:
            continue
        if color is not None:
            found.append(color)
    return found


def to_hex(color: RGB) -> str:
    """``#RRGGBB``, upper case."""
    return "#{:02X}{:02X}{:02X}".format(*color)


def from_hex(text: str) -> RGB:
    """The colour of a ``#RRGGBB`` string."""
    value = text.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def relative_luminance(color: RGB) -> float:
    """WCAG 2 relative luminance, 0 (black) to 1 (white)."""
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = color
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast_ratio(a: RGB, b: RGB) -> float:
    """WCAG 2 contrast ratio, 1 to 21."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ensure_contrast(color: RGB, background: RGB, minimum: float) -> RGB:
    """``color``, its lightness moved away from ``background`` just enough to reach ``minimum``.

    The hue and saturation stay. Every background reaches at least 4.58 against black or white, so
    for minimums up to 4.5 this always succeeds; black or white is the last resort.
    """
    if contrast_ratio(color, background) >= minimum:
        return color
    extreme = BLACK if contrast_ratio(BLACK, background) >= contrast_ratio(WHITE, background) else WHITE
    hue, lightness, saturation = colorsys.rgb_to_hls(*(c / 255 for c in color))
    target = 0.0 if extreme == BLACK else 1.0
    for step in range(1, 101):
        level = lightness + (target - lightness) * step / 100
        candidate = _from_unit(colorsys.hls_to_rgb(hue, level, saturation))
        if contrast_ratio(candidate, background) >= minimum:
            return candidate
    return extreme


def chroma(color: RGB) -> int:
    """max - min channel: 0 for greys, up to 255 for pure hues."""
    return max(color) - min(color)


def is_chromatic(color: RGB) -> bool:
    """True for a colour with a visible hue (not a grey, near-black or near-white)."""
    return chroma(color) >= 40


def distance(a: RGB, b: RGB) -> float:
    """A cheap perceptual distance ("redmean"); about 0 to 765."""
    mean_red = (a[0] + b[0]) / 2
    dr, dg, db = (a[0] - b[0]), (a[1] - b[1]), (a[2] - b[2])
    return ((2 + mean_red / 256) * dr * dr + 4 * dg * dg + (2 + (255 - mean_red) / 256) * db * db) ** 0.5


def mix(a: RGB, b: RGB, amount: float) -> RGB:
    """``a`` moved ``amount`` (0..1) of the way to ``b``."""
    return tuple(round(x + (y - x) * amount) for x, y in zip(a, b))  # type: ignore[return-value]


def rotate_hue(color: RGB, degrees: float) -> RGB:
    """``color`` with its hue turned by ``degrees``, lightness and saturation kept."""
    hue, lightness, saturation = colorsys.rgb_to_hls(*(c / 255 for c in color))
    return _from_unit(colorsys.hls_to_rgb((hue + degrees / 360) % 1.0, lightness, saturation))


def _from_unit(channels: tuple[float, float, float]) -> RGB:
    return tuple(min(255, max(0, round(c * 255))) for c in channels)  # type: ignore[return-value]
