"""`damage.outline_boxes`: every pixel where a flat shape drawn at one outline and at another
differ lies in a box it gives, and the boxes leave out most of what both cover."""
from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import skia

from reelfarm.renderer import damage

W, H = 480, 270


def _drawn(outline: damage.Outline) -> np.ndarray:
    kind, left, top, right, bottom, radius = outline
    pixels = np.zeros((H, W, 4), np.uint8)
    surface = skia.Surface(pixels, colorType=skia.kBGRA_8888_ColorType, alphaType=skia.kPremul_AlphaType)
    paint = skia.Paint(Color=0x40FF8800, AntiAlias=True)
    rect = skia.Rect.MakeLTRB(left, top, right, bottom)
    canvas = surface.getCanvas()
    if kind == "ellipse":
        canvas.drawOval(rect, paint)
    elif kind == "rrect":
        canvas.drawRRect(skia.RRect.MakeRectXY(rect, radius, radius), paint)
    else:
        canvas.drawRect(rect, paint)
    return pixels


@pytest.mark.parametrize("kind", ["ellipse", "rect", "rrect"])
def test_every_changed_pixel_lies_in_a_box(kind):
    rng = random.Random(kind)
    inside = 0
    for _ in range(40):
        left, top = rng.uniform(-60, W - 40), rng.uniform(-60, H - 40)
        w, h = rng.uniform(20, 400), rng.uniform(20, 300)
        radius = rng.uniform(0, min(w, h) / 2) if kind == "rrect" else 0.0
        old = (kind, left, top, left + w, top + h, radius)
        d = [rng.choice([0.0, 0.3, -0.7, 1.0, 2.5]) for _ in range(4)]
        new = (kind, left + d[0], top + d[1], left + w + d[2], top + h + d[3], radius)
        boxes = damage.outline_boxes(old, new, W, H)
        covered = np.zeros((H, W), bool)
        for x0, y0, x1, y1 in boxes:
            assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
            covered[y0:y1, x0:x1] = True
        before, after = _drawn(old), _drawn(new)
        changed = np.any(before != after, axis=-1)
        assert not np.any(changed & ~covered), f"{old} -> {new}: a changed pixel outside every box"
        inside += int(np.count_nonzero(~changed & (before[..., 3] > 0) & ~covered))
    assert inside > 0  # the unchanged inside is left out, not redrawn


def _turned(canvas: skia.Canvas, kind: str, rect: tuple[float, float, float, float], scale: float, rotation: float,
            stroke: float) -> None:
    """A shape drawn as `reelfarm.renderer.layers` draws one, scaled and turned about its centre."""
    x, y, w, h = rect
    canvas.save()
    canvas.translate(x + w / 2, y + h / 2)
    canvas.rotate(rotation)
    canvas.scale(scale, scale)
    canvas.translate(-(x + w / 2), -(y + h / 2))
    shape = skia.Rect.MakeXYWH(x, y, w, h)
    paints = [skia.Paint(Color=0xFFFF8800, AntiAlias=True)]
    if stroke:
        paints.append(skia.Paint(Color=0xFF0000FF, AntiAlias=True, Style=skia.Paint.kStroke_Style, StrokeWidth=stroke))
    for paint in paints:
        if kind == "ellipse":
            canvas.drawOval(shape, paint)
        elif kind == "rrect":
            canvas.drawRRect(skia.RRect.MakeRectXY(shape, min(w, h) / 4, min(w, h) / 4), paint)
        else:
            canvas.drawRect(shape, paint)
    canvas.restore()


def test_a_turned_shapes_box_holds_its_recorded_bounds_and_every_pixel_it_draws():
    """`damage.turned_box` stands in for recording a turning or growing shape's drawing (its box
    from its corners): it holds every pixel drawn, and without a stroke the box Skia's recorded
    bounds give (with one Skia outsets a rect's bounds for mitres four strokes long, where a right
    angle's mitre reaches half a stroke on each axis)."""
    rng = random.Random(17)
    for _ in range(300):
        w, h = rng.uniform(2, 200), rng.uniform(2, 150)
        x, y = rng.uniform(-60, W - 40), rng.uniform(-60, H - 40)
        scale, rotation = rng.uniform(0.3, 1.6), rng.uniform(-400, 400)
        stroke = rng.choice([0.0, rng.uniform(0.5, 9)])
        kind = rng.choice(["rect", "rrect", "ellipse"])

        draw = functools.partial(_turned, kind=kind, rect=(x, y, w, h), scale=scale, rotation=rotation,
                                 stroke=stroke)
        box = damage.turned_box((x, y, w, h), scale, rotation, stroke / 2, W, H)
        _, recorded = damage.recorded(draw, W, H)
        pixels = np.zeros((H, W, 4), np.uint8)
        surface = skia.Surface(pixels, colorType=skia.kBGRA_8888_ColorType, alphaType=skia.kPremul_AlphaType)
        draw(surface.getCanvas())
        drawn = np.argwhere(pixels[..., 3] > 0)
        if not len(drawn):  # off the frame (Skia's bounds of a drawing all outside it are a corner's)
            continue
        (y0, x0), (y1, x1) = drawn.min(0), drawn.max(0)
        assert box is not None and damage.contains(box, (int(x0), int(y0), int(x1) + 1, int(y1) + 1))
        if not stroke:
            assert recorded is not None and damage.contains(box, recorded), (box, recorded)
