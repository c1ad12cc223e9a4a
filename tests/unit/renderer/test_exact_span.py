"""A faint shape's image is drawn with the same source position at every pixel however a clip
cuts its rows (`reelfarm.renderer.sprites.exact_span`), so a box redrawn gives the pixels a whole
frame gives, at 1080p and 2160p as at the small sizes of `test_determinism`.

Real Skia draws: an image drawn filtered into a rect, once whole and once under each of many
clip rects, compared inside the clip.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import skia

from reelfarm.renderer.sprites import EVERY_PIXEL_MAPPED, exact_span

TOLERANCE = 0.125  # pixels: tighter than any faint fill gets (`sprites.EXACT_LEVELS` / 0x40 = 0.19)

WIDTH, ROWS = 1920, 48
SAMPLING = skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kNone)


def _orb(width: int, height: int) -> skia.Image:
    surface = skia.Surface(width, height)
    canvas = surface.getCanvas()
    canvas.clear(0)
    canvas.drawOval(skia.Rect.MakeLTRB(2, 2, width - 2, height - 2),
                    skia.Paint(AntiAlias=True, Color=skia.ColorSetARGB(0x40, 0x1F, 0x6F, 0xEB)))
    return surface.makeImageSnapshot()


def _drawn(image: skia.Image, dest: skia.Rect, source: float, clip: tuple[int, int] | None = None,
           paint: skia.Paint | None = None) -> np.ndarray:
    surface = skia.Surface(WIDTH, ROWS)
    canvas = surface.getCanvas()
    canvas.clear(skia.ColorSetARGB(0xFF, 0xF7, 0xF5, 0xF2))
    if clip is not None:
        canvas.clipRect(skia.Rect.MakeLTRB(clip[0], 0, clip[1], ROWS))
    canvas.drawImageRect(image, skia.Rect.MakeWH(source, image.height()), dest, SAMPLING, paint,
                         skia.Canvas.kFast_SrcRectConstraint)
    return np.asarray(surface.makeImageSnapshot()).copy()


def _clips_that_differ(image: skia.Image, dest: skia.Rect, source: float, rng: random.Random, count: int,
                       paint: skia.Paint | None = None) -> int:
    whole = _drawn(image, dest, source, paint=paint)
    differ = 0
    for _ in range(count):
        x0 = rng.randrange(max(0, int(dest.left())), min(WIDTH - 1, int(dest.right())))
        x1 = rng.randrange(x0 + 1, WIDTH + 1)
        part = _drawn(image, dest, source, (x0, x1), paint)
        differ += not np.array_equal(part[:, x0:x1], whole[:, x0:x1])
    return differ


def _rects(rng: random.Random, count: int) -> list[tuple[float, float, int]]:
    out = []
    for _ in range(count):
        width = rng.uniform(150, 1100)
        left = rng.uniform(-width / 3, WIDTH - width / 2)
        out.append((left, left + width, math.ceil(width * rng.uniform(1.0, 1.3)) + 4))
    return out


def test_an_exact_span_draws_the_same_pixels_under_any_clip():
    rng = random.Random(5)
    differ = drawn = 0
    for left, right, image_width in _rects(rng, 30):
        found = exact_span(left, right, image_width, WIDTH, TOLERANCE)
        if found is None:
            continue
        lft, rgt, source = found
        assert image_width - 1 < source <= image_width
        assert abs(lft - left) <= TOLERANCE and abs(lft + image_width * (rgt - lft) / source - right) <= TOLERANCE
        image = _orb(image_width, 40)
        differ += _clips_that_differ(image, skia.Rect.MakeLTRB(lft, 4, rgt, 44), source, rng, 25)
        drawn += 1
    assert drawn >= 25, "an exact span is found for most rects"
    assert differ == 0


def test_the_rects_asked_draw_otherwise_under_some_clips():
    """What the exact spans are for: the same images and clips in the rects asked, drawn on Skia's
    legacy path, differ under some clips (a clip starts a row's span elsewhere); drawn through
    the raster pipeline (the fallback where no exact span is found) they do not."""
    rng = random.Random(5)
    legacy = pipeline = 0
    for left, right, image_width in _rects(rng, 30):
        image, dest = _orb(image_width, 40), skia.Rect.MakeLTRB(left, 4, right, 44)
        state = rng.getstate()
        legacy += _clips_that_differ(image, dest, image_width, rng, 25)
        rng.setstate(state)
        pipeline += _clips_that_differ(image, dest, image_width, rng, 25, skia.Paint(ColorFilter=EVERY_PIXEL_MAPPED))
    assert legacy > 0 and pipeline == 0, (legacy, pipeline)


@pytest.mark.parametrize(("frame_width", "widest"), [(320, 0.9), (1280, 0.3), (1920, 0.3), (3840, 0.1)])
def test_shapes_up_to_a_width_find_an_exact_span(frame_width: int, widest: float):
    """Up to a third of the frame at 1080p (the inverse scale has some 12 bits there, so wider
    shapes find one less often: drawn then through the raster pipeline), a tenth at 2160p (11)."""
    rng = random.Random(frame_width)
    for _ in range(300):
        width = frame_width * rng.uniform(0.02, widest)
        left = rng.uniform(-width / 3, frame_width - width / 2)
        image_width = math.ceil(width * rng.uniform(1.0, 1.3)) + 4
        assert exact_span(left, left + width, image_width, frame_width, TOLERANCE) is not None, (left, width, image_width)
