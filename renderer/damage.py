"""Where a frame differs from the one before: boxes of pixels, from what the layers drew.

The rasterizer records every layer it draws as a picture whose bounds Skia computes (stroke,
shadow, rotation and anti-aliasing included: `recorded`); a layer whose state changed damages
its old and its new bounds. Redrawing a damaged box must give exactly the pixels a whole redraw
gives, and a drawing that a box clips through may not (a layer's offscreen buffer, hence its
dither pattern, starts where the clip cuts it). `settle` therefore grows each box until every
drawing either lies wholly inside it or misses it, and merges boxes that meet.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import skia

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 excluded

PAD = 2  # pixels around Skia's bounds, for anti-aliased edges


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
    out: list[Box] = []
    for box in boxes:
        while True:
            hit = next((i for i, other in enumerate(out) if meets(box, other)), None)
            if hit is None:
                break
            box = union(box, out.pop(hit))
        out.append(box)
    return out


def area(boxes: Sequence[Box]) -> int:
    return sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes)
