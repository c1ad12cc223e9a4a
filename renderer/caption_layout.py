"""How a document's captions are drawn: as text layers of each scene, and what the linter says of them.

The rasterizer draws a scene's layers and then ``caption_layers(doc, index, fmt)``: one text layer
for each stretch of the scene during which the same cues are shown (overlapping cues are one
stretch showing both, one above the other), visible from the stretch's start to its end in the
scene's own time. Being layers, captions are drawn, cached and redrawn only where they change
exactly as the scene's own texts are (``reelfarm.renderer.raster``), and any frame is still
computed from ``(doc, t)`` alone. A cue that runs across a cut is drawn in both scenes at the same
place, so it holds still while the scene changes beneath it. While a scene blends in from the one
before, its captions are not part of the blend: the rasterizer blends the scenes without them and
draws ``caption_layers(..., during_transition=True)`` over the result.

The words are set in the brand's body font (or the captions' own ``font``: a translated copy
gives cues in Arabic, Hebrew, Devanagari or CJK its text layers' family for that script),
centred, on a box of one of the brand's colours (``Captions.style``), inside the safe area at the bottom (or top) of the frame. They wrap within
at most ``MAX_WIDTH_EMS`` em (a comfortable line to read) and never wider than the safe area less
the box's padding; a cue longer than ``MAX_LINES`` lines shrinks to fit them, down to
``MIN_SCALE`` of its size, and past that the linter names it (``caption_overflow``). The box is
opaque, so the contrast the linter checks is the text's against the box (``low_contrast`` at
``/captions/style`` under ``MIN_CONTRAST``).
"""
from __future__ import annotations

import functools
import itertools

from reelfarm.renderer.captions import Cue
from reelfarm.renderer.model import Doc, FontRef, Layer, Pill
from reelfarm.renderer.spec import frame_size

__all__ = ["CAPTION_COLORS", "MAX_LINES", "caption_layers", "stretches", "transition_in"]

SIZES = {"small": 0.042, "medium": 0.05, "large": 0.06}  # of the frame's short side
LINE_HEIGHT = 1.2
MAX_LINES = 3
MAX_WIDTH_EMS = 22.0
MIN_SCALE = 0.75
PAD_EMS = 0.4
MIN_CONTRAST = 4.5
CAPTION_COLORS = {  # style -> (text, box)
    "box": ("$brand.colors.background", "$brand.colors.text"),
    "inverse": ("$brand.colors.text", "$brand.colors.background"),
    "primary": ("$brand.colors.background", "$brand.colors.primary"),
}


def stretches(cues: tuple[Cue, ...], t0: float, t1: float) -> list[tuple[float, float, str]]:
    """``(start, end, text)`` for each stretch of ``[t0, t1)`` during which the same cues are shown
    (the texts of overlapping cues one above the other, in time order)."""
    shown = [c for c in cues if c.start < t1 and c.end > t0]
    edges = sorted({t0, t1} | {c.start for c in shown if c.start > t0} | {c.end for c in shown if c.end < t1})
    out: list[tuple[float, float, str]] = []
    for a, b in itertools.pairwise(edges):
        text = "\n".join(c.text for c in shown if c.start <= a and c.end >= b)
        if not text:
            continue
        if out and out[-1][1] == a and out[-1][2] == text:
            out[-1] = (out[-1][0], b, text)
        else:
            out.append((a, b, text))
    return out


def transition_in(doc: Doc, index: int) -> float:
    """How long scene ``index`` blends in from the one before (0 for a cut and the first scene)."""
    tr = doc.scenes[index].transition
    return tr.duration if index > 0 and tr.type != "cut" and tr.duration > 0 else 0.0


def caption_layers(doc: Doc, index: int, fmt: str, during_transition: bool = False) -> tuple[Layer, ...]:
    """The text layers that draw ``doc``'s captions over scene ``index`` in ``fmt`` (none without captions):
    once its transition in is over, or with ``during_transition`` while it lasts. Captions are drawn
    over a transition, not blended with it: a cue shown at the cut holds still, and one that ended
    before it does not fade out with the scene it was drawn over."""
    captions = doc.captions
    if captions is None or not captions.cues:
        return ()
    scene_start, duration = doc.scene_starts()[index], doc.scenes[index].duration
    blend = min(transition_in(doc, index), duration)
    start, end = (scene_start, scene_start + blend) if during_transition else (scene_start + blend,
                                                                                scene_start + duration)
    if end <= start:
        return ()
    template = _template(captions.style, captions.position, captions.size, fmt, doc.safe_area, captions.font)
    return tuple(
        Layer(**{**template, "id": f"captions.{n}", "text": text, "start": a - scene_start,
                 "end": None if b >= scene_start + duration else b - scene_start})
        for n, (a, b, text) in enumerate(stretches(captions.cues, start, end)))


@functools.lru_cache(maxsize=64)
def _template(style: str, position: str, size: str, fmt: str, safe: tuple[float, float],
              font: tuple[str, int] | None = None) -> dict:
    """A caption layer's properties but its id, text and times: its box placed in ``fmt``'s frame,
    its words in ``font`` (family, weight), else the brand's body font."""
    width, height = frame_size(fmt, 1080)
    unit = float(min(width, height))
    size_px = SIZES[size] * unit
    pad = PAD_EMS * size_px
    box_w = min((1 - 2 * safe[0]) * width - 2 * pad, MAX_WIDTH_EMS * size_px)
    box_h = MAX_LINES * size_px * LINE_HEIGHT
    # the box's pill reaches 0.6 of its padding above and below the text (``SkiaRasterizer._draw_text``)
    bottom = position == "bottom"
    y = 1 - safe[1] - 0.6 * pad / height if bottom else safe[1] + 0.6 * pad / height
    color, box = CAPTION_COLORS[style]
    return {"type": "text", "x": 0.5, "y": y, "w": box_w / width, "h": box_h / height,
            "anchor": "bottom" if bottom else "top", "valign": "bottom" if bottom else "top",
            "font": FontRef(*font) if font else "$brand.fonts.body", "size": SIZES[size],
            "min_size": SIZES[size] * MIN_SCALE, "auto_shrink": True, "line_height": LINE_HEIGHT, "color": color, "align": "center",
            "pill": Pill(color=box, padding=pad / unit, radius=0.25 * size_px / unit)}
