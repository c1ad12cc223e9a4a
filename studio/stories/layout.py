"""Layout helpers shared by every story: frames, boxes, text fitting, timing and common elements.

Stories lay out in *units* of the frame's short side (1 unit = 1080 px at 1080p), with the
origin at the top-left corner, and convert to the VideoDoc's frame fractions at the end
(``Frame.place``). A story's layout function runs once per format; ``compose`` turns the four
results into one layer list with ``formats`` overrides.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from reelfarm.renderer.spec import FORMAT_RATIOS, FORMATS
from reelfarm.studio.errors import LayoutError
from reelfarm.studio.stories.brand import Kit, contrast, token
from reelfarm.studio.stories.measure import Typesetter
from reelfarm.studio.stories.textfit import MIN_TEXT, ROLES, Fit, Role, fit_text, wrap_lines

# (width, height) in short-side units, from the format's ratio.
_SIZE = {f: (w / min(w, h), h / min(w, h)) for f, (w, h) in FORMAT_RATIOS.items()}
_KIND = {"16:9": "wide", "9:16": "tall", "1:1": "square", "4:5": "portrait"}
# Big type grows in the tall format, where lines are short and the frame long.
_DISPLAY_SCALE = {"wide": 1.0, "tall": 1.15, "square": 0.95, "portrait": 1.05}
# Content margins as fractions of (width, top, bottom), all beyond the 5% safe area: 9:16 keeps
# clear of the captions and buttons that short-video apps draw over the lower part of the frame.
_MARGIN = {"16:9": (0.08, 0.09, 0.09), "9:16": (0.08, 0.08, 0.13), "1:1": (0.08, 0.08, 0.08), "4:5": (0.08, 0.075, 0.075)}


@dataclass(frozen=True)
class Box:
    """A rectangle in short-side units, origin top-left."""

    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def inset(self, dx: float, dy: float | None = None) -> Box:
        dy = dx if dy is None else dy
        return Box(self.x + dx, self.y + dy, self.w - 2 * dx, self.h - 2 * dy)

    def split_x(self, fraction: float, gap: float = 0.0) -> tuple[Box, Box]:
        """Left and right parts: the left one ``fraction`` of the width less half the gap."""
        left = (self.w - gap) * fraction
        return Box(self.x, self.y, left, self.h), Box(self.x + left + gap, self.y, self.w - left - gap, self.h)

    def split_y(self, fraction: float, gap: float = 0.0) -> tuple[Box, Box]:
        """Top and bottom parts: the top one ``fraction`` of the height less half the gap."""
        top = (self.h - gap) * fraction
        return Box(self.x, self.y, self.w, top), Box(self.x, self.y + top + gap, self.w, self.h - top - gap)

    def rows(self, n: int, gap: float) -> list[Box]:
        """``n`` equal rows separated by ``gap``."""
        h = (self.h - gap * (n - 1)) / n
        return [Box(self.x, self.y + i * (h + gap), self.w, h) for i in range(n)]

    def cols(self, n: int, gap: float) -> list[Box]:
        """``n`` equal columns separated by ``gap``."""
        w = (self.w - gap * (n - 1)) / n
        return [Box(self.x + i * (w + gap), self.y, w, self.h) for i in range(n)]

    def square(self, side: float | None = None) -> Box:
        """The largest (or a ``side``-sized) square centred in this box."""
        s = min(self.w, self.h) if side is None else side
        return Box(self.cx - s / 2, self.cy - s / 2, s, s)


@dataclass(frozen=True)
class Frame:
    """One output format, measured in short-side units, with the brand's typesetter."""

    fmt: str
    typesetter: Typesetter | None = field(default=None, compare=False, repr=False)

    @property
    def w(self) -> float:
        return _SIZE[self.fmt][0]

    @property
    def h(self) -> float:
        return _SIZE[self.fmt][1]

    @property
    def kind(self) -> str:
        """``wide`` (16:9), ``tall`` (9:16), ``square`` (1:1) or ``portrait`` (4:5)."""
        return _KIND[self.fmt]

    @property
    def wide(self) -> bool:
        return self.fmt == "16:9"

    @property
    def content(self) -> Box:
        """The area text and visuals live in: well inside the safe area."""
        mx, top, bottom = _MARGIN[self.fmt]
        return Box(mx * self.w, top * self.h, (1 - 2 * mx) * self.w, (1 - top - bottom) * self.h)

    def pick(self, wide: Any, tall: Any, square: Any = None, portrait: Any = None) -> Any:
        """A value by frame kind; ``square`` defaults to ``portrait`` and the reverse, then ``tall``."""
        if self.kind == "wide":
            return wide
        if self.kind == "tall":
            return tall
        if self.kind == "square":
            return square if square is not None else portrait if portrait is not None else tall
        return portrait if portrait is not None else square if square is not None else tall

    def place(self, box: Box) -> dict[str, Any]:
        """VideoDoc position properties (frame fractions, top-left anchor) for ``box``."""
        return {
            "x": _r(box.x / self.w),
            "y": _r(box.y / self.h),
            "w": _r(box.w / self.w),
            "h": _r(box.h / self.h),
            "anchor": "top-left",
        }


def _r(value: float, digits: int = 4) -> float:
    return round(value, digits)


# --- timing -------------------------------------------------------------------------------

TIME_STEP = 0.125  # scene lengths are multiples of 1/8 s: exact in binary, so sums are exact


def scene_durations(weights: list[float], total: float) -> list[float]:
    """Split ``total`` seconds over scenes in proportion to ``weights``.

    Every scene but the last is a multiple of 1/8 s (exactly representable); the last one takes
    the remainder, so ``sum(durations) == total`` holds exactly, in any summation order. The
    remainder is shown rounded to the millisecond when that keeps the sums exact.
    """
    scale = total / sum(weights)
    out: list[float] = []
    for w in weights[:-1]:
        out.append(max(TIME_STEP, round(w * scale / TIME_STEP) * TIME_STEP))
    out.append(total - sum(out))
    if out[-1] <= 0:
        raise LayoutError("duration too short for this many scenes")
    tidy = round(out[-1], 3)
    candidate = out[:-1] + [tidy]
    if sum(candidate) == total and sum(reversed(candidate)) == total and math.fsum(candidate) == total:
        out[-1] = tidy
    return out


@dataclass(frozen=True)
class Beat:
    """Motion timing inside one scene of ``dur`` seconds: staggered entrances and drifts."""

    dur: float

    @property
    def enter_time(self) -> float:
        return round(min(0.6, self.dur * 0.3), 3)

    def delay(self, i: int) -> float:
        """Delay of the ``i``-th element to enter: staggered, always done by mid-scene."""
        return round(min(0.1 + 0.15 * i, self.dur * 0.3), 3)

    def enter(self, preset: str, i: int = 0, **extra: Any) -> dict[str, Any]:
        motion = {"preset": preset, "delay": self.delay(i), "duration": self.enter_time}
        if preset == "slide":
            motion.setdefault("direction", "down")
            motion.setdefault("distance", 0.04)
        if preset in ("typewriter", "word-by-word"):
            motion["duration"] = round(min(1.2, self.dur * 0.4), 3)
        motion.update(extra)
        return motion

    def drift(self, x: float, y: float, dx: float, dy: float, grow: float = 0.06) -> dict[str, Any]:
        """Keyframes for a slow drift from (x, y) by (dx, dy) with a gentle scale-up."""
        end = round(self.dur, 3)

        def track(a: float, b: float) -> list[dict]:
            return [{"t": 0, "v": _r(a)}, {"t": end, "v": _r(b), "easing": "in-out-quad"}]

        return {"x": track(x, x + dx), "y": track(y, y + dy), "scale": track(1.0, 1.0 + grow)}

    def transition(self, kind: str, direction: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": kind, "duration": round(min(0.5, self.dur * 0.25), 3)}
        if direction:
            out["direction"] = direction
        if kind != "cut":
            out["easing"] = "in-out-cubic"
        return out


# --- layers -------------------------------------------------------------------------------


def text_layer(layer_id: str, text: str, frame: Frame, box: Box, fit: Fit, role: Role, *,
               color: str, align: str = "left", valign: str = "top", enter: dict | None = None,
               **extra: Any) -> dict[str, Any]:
    """A text layer in ``box`` with a fitted size and auto-shrink."""
    layer: dict[str, Any] = {
        "id": layer_id,
        "type": "text",
        "text": text,
        **frame.place(box),
        "font": f"$brand.fonts.{role.font}",
        "size": fit.size,
        "min_size": fit.min_size,
        "auto_shrink": True,
        "color": color,
        "align": align,
        "valign": valign,
        "line_height": role.line_height,
    }
    if role.uppercase:
        layer["uppercase"] = True
    if role.spacing:
        layer["letter_spacing"] = role.spacing
    if enter:
        layer["enter"] = enter
    layer.update(extra)
    return layer


@dataclass(frozen=True)
class Block:
    """One item of a vertical stack: its height (units), the gap above it, and its layers."""

    h: float
    make: Callable[[Box], list[dict]]
    gap: float = 0.0


def text_block(layer_id: str, text: str, frame: Frame, width: float, max_h: float, *, role: str,
               max_len: int, color: str, align: str = "left", enter: dict | None = None,
               gap: float = 0.0, size: float | None = None, worst_word: int | None = None,
               max_lines: int | None = None, **extra: Any) -> Block:
    """A fitted text layer as a stack block; ``extra`` may restyle (``line_height``, ``font``...)."""
    style = ROLES[role]
    restyle: dict[str, Any] = {k: extra.pop(k) for k in ("line_height", "uppercase") if k in extra}
    if "letter_spacing" in extra:
        restyle["spacing"] = extra.pop("letter_spacing")
    style = replace(style, **restyle)
    if size is None and style.font == "heading" and style.size >= 0.06:
        size = style.size * _DISPLAY_SCALE[frame.kind]
    setter = frame.typesetter if "font" not in extra else None
    fit = fit_text(text, max_len, width, max_h, style, size=size, worst_word=worst_word, setter=setter,
                   max_lines=max_lines)

    def make(box: Box) -> list[dict]:
        return [text_layer(layer_id, text, frame, box, fit, style, color=color, align=align, enter=enter, **extra)]

    return Block(h=fit.h, make=make, gap=gap)


def stack(region: Box, blocks: list[Block], valign: str = "middle") -> list[dict]:
    """Lay ``blocks`` out top to bottom inside ``region`` (``top``, ``middle`` or ``bottom``)."""
    total = sum(b.h for b in blocks) + sum(b.gap for b in blocks[1:])
    if total > region.h + 1e-6:
        raise LayoutError(f"stacked blocks need {total:.3f} but the region is {region.h:.3f} tall")
    slack = region.h - total
    y = region.y + {"top": 0.0, "middle": slack / 2, "bottom": slack}[valign]
    layers: list[dict] = []
    for i, block in enumerate(blocks):
        if i:
            y += block.gap
        layers += block.make(Box(region.x, y, region.w, block.h))
        y += block.h
    return layers


def rule_block(layer_id: str, frame: Frame, kit: Kit, beat: Beat, *, align: str = "left",
               i: int = 0, gap: float = 0.0, width: float = 0.09, color: str | None = None) -> Block:
    """A short accent bar that wipes in: the eyebrow rule above a headline."""
    height = 0.012
    fill = color or kit.tone(kit.highlight)

    def make(box: Box) -> list[dict]:
        x = {"left": box.x, "center": box.cx - width / 2, "right": box.right - width}[align]
        bar = Box(x, box.y, width, height)
        return [shape_layer(layer_id, frame, bar, "rounded_rect", fill, radius=height / 2,
                            enter=beat.enter("wipe", i, direction="right"))]

    return Block(h=height, make=make, gap=gap)


def shape_layer(layer_id: str, frame: Frame, box: Box, shape: str, fill: Any, **extra: Any) -> dict[str, Any]:
    """A shape in ``box``; ``fill`` may be ``None`` for an outline drawn by ``stroke``."""
    layer = {"id": layer_id, "type": "shape", "shape": shape, **frame.place(box)}
    if fill is not None:
        layer["fill"] = fill
    layer.update(extra)
    return layer


def button_block(layer_id: str, text: str, frame: Frame, kit: Kit, beat: Beat, *, width: float,
                 max_len: int, align: str = "left", i: int = 0, gap: float = 0.0, fill: str | None = None,
                 worst_word: int | None = None) -> Block:
    """A call to action: label in a rounded pill of the brand's button colour (or ``fill``)."""
    style = ROLES["button"]
    pad = 0.024
    fill = fill or kit.button
    fit = fit_text(text, max_len, width - 2 * pad, style.size * style.line_height * 2.3, style, worst_word=worst_word,
                   setter=frame.typesetter)

    def make(box: Box) -> list[dict]:
        inner = box.inset(pad)
        return [text_layer(layer_id, text, frame, inner, fit, style, color=kit.tone(kit.ink_on(fill)), align=align,
                           enter=beat.enter("pop", i),
                           pill={"color": kit.tone(fill), "padding": pad, "radius": "$brand.radius"})]

    return Block(h=fit.h + 2 * pad, make=make, gap=gap)


def orb(layer_id: str, frame: Frame, kit: Kit, beat: Beat, *, cx: float, cy: float, d: float,
        color: str = "primary", strength: int = 10, dx: float = 0.03, dy: float = -0.02) -> dict[str, Any]:
    """A large soft circle of brand tint that drifts across the scene: quiet motion behind text."""
    box = Box(cx - d / 2, cy - d / 2, d, d)
    layer = shape_layer(layer_id, frame, box, "ellipse", kit.tint(color, strength))
    placed = frame.place(box)
    layer["keyframes"] = beat.drift(placed["x"], placed["y"], dx / frame.w, dy / frame.h)
    layer["enter"] = beat.enter("fade", 0, duration=round(min(1.0, beat.dur * 0.4), 3))
    return layer


def image_layer(layer_id: str, asset: str, frame: Frame, beat: Beat, box: Box, *, i: int = 0,
                radius: Any = "$brand.radius", focus: tuple[float, float] = (0.5, 0.5),
                crop_max: float | None = None) -> dict[str, Any]:
    """A rounded image card with a slow Ken Burns push.

    ``crop_max`` keeps a picture whose shape differs from the box's (a wide product photo in a
    9:16 card) from losing more than that share of its width or height, zoom included: the rest of
    the card is a blurred fill of the picture itself. Without it the card is covered, as avatars
    (a face cropped to a disc) want.
    """
    fx, fy = focus
    return {
        "id": layer_id,
        "type": "image",
        "asset": asset,
        **frame.place(box),
        "fit": "cover",
        **({"crop_max": crop_max} if crop_max is not None else {}),
        "radius": radius,
        "ken_burns": {"from": {"scale": 1.0, "x": fx, "y": fy},
                      "to": {"scale": 1.12, "x": min(1.0, fx + 0.04), "y": max(0.0, fy - 0.03)},
                      "easing": "in-out-quad"},
        "enter": beat.enter("fade", i),
    }


PICTURE_CROP_MAX = 0.12
"""How much of a story's picture (a product photo, a cover) a card may hide: enough for the Ken
Burns push (1.12 hides 10.7%) on a picture of the card's shape, never the 18% and more that covering
a 9:16 card with a landscape photo took."""


def video_layer(layer_id: str, asset: str, frame: Frame, beat: Beat, box: Box, *, i: int = 0,
                radius: Any = "$brand.radius", loop: bool = True, volume: float = 0.0) -> dict[str, Any]:
    """A rounded card playing a clip from its start, cropped to fill the box (``cover``).

    ``cover`` about the centre is what lets one clip serve every format: a 16:9 clip in a 9:16
    frame's box loses its sides, never leaves bars. A looping clip fills a scene longer than itself;
    one that does not loop holds its last frame, and the linter names it (``clip_too_short``).
    ``volume`` 0 by default: story footage is picture, the soundtrack field carries the music.
    """
    return {
        "id": layer_id,
        "type": "video",
        "asset": asset,
        **frame.place(box),
        "fit": "cover",
        "radius": radius,
        "loop": loop,
        "volume": volume,
        "enter": beat.enter("fade", i),
    }


def video_background(asset: str, kit: Kit, *, loop: bool = True, volume: float = 0.0,
                     veil: int | None = 72) -> dict[str, Any]:
    """A scene background playing a clip over the whole frame (``cover``, centred: see ``video_layer``),
    under a veil of the scene's surface colour at ``veil`` percent so the scene's text, coloured
    for that surface, stays legible whatever the footage shows; ``None`` for no veil."""
    bg: dict[str, Any] = {"type": "video", "asset": asset, "fit": "cover", "loop": loop, "volume": volume,
                          "color": kit.tone(kit.surface)}
    if veil:
        bg["overlay"] = token(kit.surface, veil)
    return bg


def logo_layers(frame: Frame, kit: Kit, beat: Beat, *, box: Box | None = None, height: float = 0.075,
                align: str = "left", i: int = 0) -> list[dict]:
    """The brand logo (asset ``logo``), top-left of the content area unless ``box`` is given.

    Empty when the brand has no logo. The logo is fitted (``contain``) inside its box, whose
    shape follows the logo's known aspect ratio.
    """
    logo = kit.brand.get("logo")
    if not logo:
        return []
    aspect = 3.0
    if logo.get("width") and logo.get("height"):
        aspect = min(5.0, max(0.5, logo["width"] / logo["height"]))
    area = box or Box(frame.content.x, frame.content.y - 0.01, frame.content.w, height)
    h = min(area.h, height)
    w = min(area.w, h * aspect)
    x = {"left": area.x, "center": area.cx - w / 2, "right": area.right - w}[align]
    spot = Box(x, area.y, w, h)
    layers = [{"id": "logo", "type": "image", "asset": "logo", **frame.place(spot), "fit": "contain",
               "enter": beat.enter("fade", i)}]
    chip = logo_chip(kit)
    if chip:
        pad = h * 0.22
        layers.insert(0, shape_layer("logo_chip", frame, spot.inset(-pad), "rounded_rect", token(chip),
                                     radius="$brand.radius", enter=beat.enter("fade", i)))
    return layers


def logo_chip(kit: Kit) -> str | None:
    """The colour name of a backing card the logo needs on this surface, or ``None``.

    A logo is made for the brand's background; on other surfaces, or where its dominant colour
    is too close to the surface, it sits on a card of a colour it stands out from.
    """
    dominant = (kit.brand.get("logo") or {}).get("dominant_color")
    surface = kit.hex(kit.surface)
    if dominant is None:
        return None if kit.surface == "background" else "background"
    if contrast(dominant[:7], surface) >= 2.5:
        return None
    return max(("background", "text"), key=lambda n: contrast(dominant[:7], kit.hex(n)))


def top_reserve(kit: Kit) -> float:
    """Units kept free at the top of the content area for the logo (0 without one)."""
    return 0.11 if kit.brand.get("logo") else 0.0


def lower_third(prefix: str, name: str, role_text: str, frame: Frame, kit: Kit, beat: Beat, *,
                region: Box, name_max: int, role_max: int, i: int = 0) -> list[dict]:
    """A name/role card anchored to the bottom-left of ``region``: slides in from the left."""
    fill = kit.card
    ink = kit.tone(kit.ink_on(fill))
    pad = 0.035
    width = min(region.w, frame.pick(0.78, region.w, region.w, region.w))
    inner_w = width - 2 * pad - 0.02
    name_b = text_block(f"{prefix}_name", name, frame, inner_w, 0.12, role="subhead", max_len=name_max,
                        color=ink, enter=beat.enter("fade", i + 1))
    role_b = (text_block(f"{prefix}_role", role_text, frame, inner_w, 0.1, role="caption", max_len=role_max,
                         color=ink, enter=beat.enter("fade", i + 2), gap=0.01) if role_text else None)
    inner_h = name_b.h + (role_b.h + role_b.gap if role_b else 0.0)
    card = Box(region.x, region.bottom - inner_h - 2 * pad, width, inner_h + 2 * pad)
    bar = Box(card.x + pad, card.y + pad, 0.01, inner_h)
    layers = [
        shape_layer(f"{prefix}_card", frame, card, "rounded_rect", kit.tone(fill), radius="$brand.radius",
                    enter=beat.enter("slide", i, direction="left", distance=0.05)),
        shape_layer(f"{prefix}_bar", frame, bar, "rect", token("accent") if fill != "accent" else kit.tone(kit.ink_on(fill)),
                    enter=beat.enter("wipe", i + 1, direction="down")),
    ]
    text_region = Box(card.x + pad + 0.03, card.y + pad, inner_w, inner_h)
    return layers + stack(text_region, [b for b in (name_b, role_b) if b is not None], valign="top")


__all__ = [
    "FORMATS", "MIN_TEXT", "ROLES", "Beat", "Block", "Box", "Fit", "Frame", "Role", "button_block",
    "fit_text", "image_layer", "logo_layers", "lower_third", "orb", "rule_block", "scene_durations",
    "shape_layer", "stack", "text_block", "text_layer", "top_reserve", "video_background", "video_layer", "wrap_lines",
]


# Short headlines grow up to this factor while they stay within this many lines.
_BOOST = {"headline": (1.3, 3), "title": (1.2, 4)}


def title_blocks(frame: Frame, kit: Kit, beat: Beat, *, width: float, max_h: float, headline: str,
                 headline_max: int, kicker: str = "", kicker_max: int = 40, sub: str = "", sub_max: int = 0,
                 align: str = "left", role: str = "headline", rule: bool = True, i0: int = 0) -> list[Block]:
    """The title block: accent rule, eyebrow, one dominant headline, optional supporting line.

    The headline gets whatever height the eyebrow and supporting line leave of ``max_h``.
    """
    blocks: list[Block] = []
    i = i0
    if rule:
        blocks.append(rule_block("rule", frame, kit, beat, align=align, i=i))
        i += 1
    if kicker:
        blocks.append(text_block("kicker", kicker, frame, width, 0.12, role="kicker", max_len=kicker_max,
                                 color=kit.tone(kit.highlight), align=align, enter=beat.enter("fade", i),
                                 gap=0.03 if rule else 0.0))
        i += 1
    sub_h = min(0.34, 0.4 * max_h) if sub else 0.0
    used = sum(b.h + b.gap for b in blocks) + (0.035 if blocks else 0.0) + (sub_h + 0.035 if sub else 0.0)
    boost, lines = _BOOST.get(role, (1.0, None))
    blocks.append(text_block("headline", headline, frame, width, max_h - used, role=role, max_len=headline_max,
                             color=kit.tone(kit.ink), align=align, enter=beat.enter("slide", i),
                             gap=0.035 if blocks else 0.0, size=ROLES[role].size * boost * _DISPLAY_SCALE[frame.kind],
                             max_lines=lines))
    if sub:
        blocks.append(text_block("sub", sub, frame, width, sub_h, role="body", max_len=sub_max,
                                 color=kit.tone(kit.ink), align=align, enter=beat.enter("fade", i + 1), gap=0.035))
    return blocks
