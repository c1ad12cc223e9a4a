"""Where a frame differs from the one before: boxes of pixels, from what the layers drew.

The rasterizer records every layer it draws as a picture whose bounds Skia computes (stroke,
shadow, rotation and anti-aliasing included: `recorded`); a layer whose state changed damages
its old and its new bounds. Redrawing a damaged box must give exactly the pixels a whole redraw
gives, and a drawing that a box clips through may not (a layer's offscreen buffer, hence its
dither pattern, starts where the clip cuts it). `settle` therefore grows each box until every
drawing either lies wholly inside it or misses it, and merges boxes that meet.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import skia

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 excluded
# A flat drawing's outline: ("ellipse" | "rect" | "rrect", left, top, right, bottom, corner radius)
Outline = tuple[str, float, float, float, float, float]

PAD = 2  # pixels around Skia's bounds, for anti-aliased edges
STRIP = 64  # rows of one band of an outline's damage (fewer, taller boxes convert faster)
SPANS_CACHED = 4096  # an outline's spans over a band, kept: a shape's outline is the new one of a frame and the old of a later one
EDGE = 3  # pixels either side of an outline that its drawing may change (anti-aliasing, filtering)


def recorded(draw: Callable[[skia.Canvas], None], width: int, height: int) -> tuple[skia.Picture, Box | None]:
    """`draw` recorded as a picture, and the pixel box it can touch (None: nothing)."""
    recorder = skia.PictureRecorder()
    canvas = recorder.beginRecording(skia.Rect.MakeWH(width, height), skia.RTreeFactory()())
    draw(canvas)
    picture = recorder.finishRecordingAsPicture()
    return picture, box_of(picture.cullRect(), width, height) if picture.approximateOpCount() else None


def box_of(rect: skia.Rect, width: int, height: int) -> Box | None:
    x0 = max(0, math.floor(rect.left()) - PAD)
    y0 = max(0, math.floor(rect.top()) - PAD)
    x1 = min(width, math.ceil(rect.right()) + PAD)
    y1 = min(height, math.ceil(rect.bottom()) + PAD)
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def turned_box(rect: tuple[float, float, float, float], scale: float, rotation: float, outset: float,
               width: int, height: int) -> Box | None:
    """The pixel box a shape drawn in `rect` (x, y, w, h), `outset` pixels beyond it (a stroke's
    half), scaled and turned `rotation` degrees about its centre, can touch: its corners' bounds,
    a pixel for anti-aliasing and `PAD` more, as Skia's recorded bounds would give (None: none)."""
    x, y, w, h = rect
    c, s = abs(math.cos(math.radians(rotation))), abs(math.sin(math.radians(rotation)))
    hw, hh = scale * (w / 2 + outset), scale * (h / 2 + outset)
    ex, ey = hw * c + hh * s + 1.0, hw * s + hh * c + 1.0
    cx, cy = x + w / 2, y + h / 2
    return box_of(skia.Rect.MakeLTRB(cx - ex, cy - ey, cx + ex, cy + ey), width, height)


def even(box: Box) -> Box:
    """`box` widened to even pixels on every side (the chroma grid of yuv420p)."""
    return (box[0] // 2 * 2, box[1] // 2 * 2, -(-box[2] // 2) * 2, -(-box[3] // 2) * 2)


def meets(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def contains(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def settle(damage: Sequence[Box], drawings: Sequence[Box]) -> list[Box]:
    """Disjoint boxes covering `damage`, each holding wholly every drawing it meets."""
    boxes = _merged(list(damage))
    changed = True
    while changed:
        changed = False
        for drawing in drawings:
            for i, box in enumerate(boxes):
                if meets(box, drawing) and not contains(box, drawing):
                    boxes[i] = union(box, drawing)
                    changed = True
        if changed:
            boxes = _merged(boxes)
    return boxes


def _merged(boxes: list[Box]) -> list[Box]:
    """Each box in turn joined with the first box kept that it meets, until it meets none."""
    out: list[Box] = []
    for box in boxes:
        x0, y0, x1, y1 = box
        i = 0
        while i < len(out):  # `meets` written out: an outline's many strips make this a hot loop
            a0, b0, a1, b1 = out[i]
            if x0 < a1 and a0 < x1 and y0 < b1 and b0 < y1:
                del out[i]
                x0, y0, x1, y1 = min(x0, a0), min(y0, b0), max(x1, a1), max(y1, b1)
                i = 0
            else:
                i += 1
        out.append((x0, y0, x1, y1))
    return out


def without(box: Box, hole: Box) -> list[Box]:
    """`box` less `hole`: up to four boxes (the bands above and below it, the pieces beside it)."""
    x0, y0, x1, y1 = box
    h0, h1 = max(x0, hole[0]), min(x1, hole[2])
    v0, v1 = max(y0, hole[1]), min(y1, hole[3])
    if h0 >= h1 or v0 >= v1:
        return [box]
    pieces = [(x0, y0, x1, v0), (x0, v1, x1, y1), (x0, v0, h0, v1), (h1, v0, x1, v1)]
    return [p for p in pieces if p[2] > p[0] and p[3] > p[1]]


def area(boxes: Sequence[Box]) -> int:
    return sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes)



def outline_boxes(old: Outline, new: Outline, width: int, height: int, inside: list[Box] | None = None) -> list[Box]:
    """Boxes holding every pixel where a flat drawing (one colour inside its outline) at outline
    `old` and at `new` may differ: per band of `STRIP` rows, what either reaches at all less what
    both cover on every row, `EDGE` pixels in from their edges. Where `inside` is given (the
    drawing's colour changed too), what both cover is added to it, boxes on even pixels."""
    top = max(0, math.floor(min(old[2], new[2])) - EDGE)
    bottom = min(height, math.ceil(max(old[4], new[4])) + EDGE)
    # reach from the outlines grown by EDGE, cover from them shrunk by EDGE
    grown_old, grown_new, shrunk_old, shrunk_new = (_grown(old, EDGE), _grown(new, EDGE),
                                                    _grown(old, -EDGE), _grown(new, -EDGE))
    out: list[Box] = []
    for band in range(top // STRIP * STRIP, bottom, STRIP):
        y0, y1 = max(band, top), min(band + STRIP, bottom)
        a, b = _spans(grown_old, y0, y1)[0], _spans(grown_new, y0, y1)[0]
        if a is None and b is None:
            continue
        if a is None or b is None:
            lo, hi = (a or b)[0] - EDGE, (a or b)[1] + EDGE  # type: ignore[index]
        else:
            lo, hi = min(a[0], b[0]) - EDGE, max(a[1], b[1]) + EDGE
        c, d = _spans(shrunk_old, y0, y1)[1], _spans(shrunk_new, y0, y1)[1]
        x0, x1 = max(0, math.floor(lo)), min(width, math.ceil(hi))
        if c is not None and d is not None:
            inner0, inner1 = max(c[0], d[0]) + EDGE, min(c[1], d[1]) - EDGE
            if inner1 - inner0 >= STRIP:
                left, right = min(width, 2 * math.ceil(inner0 / 2)), max(0, 2 * math.floor(inner1 / 2))
                if left > x0:
                    out.append((x0, y0, left, y1))
                if x1 > right:
                    out.append((right, y0, x1, y1))
                if inside is not None and min(width, right) > max(0, left):
                    piece = (max(0, left), y0, min(width, right), y1)
                    (inside if y0 % 2 == 0 and y1 % 2 == 0 and piece[2] % 2 == 0 else out).append(piece)
                continue
        if x1 > x0:
            out.append((x0, y0, x1, y1))
    return out


def _grown(o: Outline, by: float) -> Outline:
    kind, left, top, right, bottom, radius = o
    return (kind, left - by, top - by, right + by, bottom + by, max(0.0, radius + by))


@functools.lru_cache(maxsize=SPANS_CACHED)
def _spans(o: Outline, y0: float, y1: float) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Over rows [y0, y1): the x span the outline reaches on any row, and the span it covers on
    every row (None: none)."""
    _, left, top, right, bottom, _ = o
    if y1 <= top or y0 >= bottom:
        return None, None
    cx, cy = (left + right) / 2.0, (top + bottom) / 2.0
    wide = _half_width(o, min(max(cy, y0), y1))
    reach = (cx - wide, cx + wide)
    if y0 < top or y1 > bottom:
        return reach, None
    narrow = _half_width(o, y0 if abs(y0 - cy) > abs(y1 - cy) else y1)
    return reach, ((cx - narrow, cx + narrow) if narrow > 0 else None)


def _half_width(o: Outline, y: float) -> float:
    kind, left, top, right, bottom, radius = o
    a, b = (right - left) / 2.0, (bottom - top) / 2.0
    d = abs(y - (top + bottom) / 2.0)
    if d >= b or a <= 0:
        return 0.0
    if kind == "ellipse":
        return a * math.sqrt(max(0.0, 1.0 - (d / b) ** 2))
    if kind == "rect":
        return a
    r = min(radius, a, b)
    corner = d - (b - r)
    return a if corner <= 0 else a - r + math.sqrt(max(0.0, r * r - corner * corner))
