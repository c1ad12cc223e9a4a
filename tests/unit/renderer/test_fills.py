"""The inside of a faint shape fading over a plain background is filled, not drawn: its pixels and
planes equal, bit for bit, those of the same frame drawn first (`reelfarm.renderer.fills`)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from reelfarm.renderer import damage, fills
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.yuv import Bt709Planes, flat_samples


def _fading(background: dict) -> dict:
    """Two faint orbs fading in and drifting (one reaching the frame's bottom, one under a
    heading sliding in), a bar fading in over the first."""
    return {
        "version": 1, "fps": 30, "duration": 6.0, "format": "16:9",
        "scenes": [{"id": "a", "duration": 6.0, "background": background, "layers": [
            {"id": "orb_a", "type": "shape", "shape": "ellipse", "fill": "#DB277722", "x": -0.1, "y": -0.2,
             "w": 0.5, "h": 0.9, "anchor": "top-left", "enter": {"preset": "fade", "duration": 1.5},
             "keyframes": {"x": [{"t": 0, "v": -0.1}, {"t": 2, "v": -0.08}], "scale": [{"t": 0, "v": 1.0}, {"t": 2, "v": 1.05}]}},
            {"id": "orb_b", "type": "shape", "shape": "rounded_rect", "fill": "#38BDF81A", "radius": 0.05,
             "x": 0.55, "y": 0.5, "w": 0.5, "h": 0.6, "anchor": "top-left", "enter": {"preset": "fade", "duration": 1.2}},
            {"id": "bar", "type": "shape", "shape": "rect", "fill": "#1E1B4B", "x": 0.1, "y": 0.3, "w": 0.2, "h": 0.04,
             "anchor": "top-left", "enter": {"preset": "fade", "duration": 0.8}},
            {"id": "heading", "type": "text", "text": "Fading in", "size": 0.08, "x": 0.7, "y": 0.7,
             "enter": {"preset": "slide", "duration": 0.8}},
        ]}],
    }


def _frames(doc: dict, order: list[int], height: int = 180) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Every frame's planes and BGRA pixels drawn in `order` by one rasterizer, and the pixels its
    fills set (counted through `fills.Fills.insides`)."""
    parsed = parse_doc(doc)
    spec = RenderSpec("16:9", height, parsed.fps)
    raster = SkiaRasterizer(parsed, "16:9", *spec.size, yuv=True)
    filled = 0
    real = raster._fills.insides

    def counted(*args):  # type: ignore[no-untyped-def]
        nonlocal filled
        stamps = args[-1]
        before = len(stamps)
        rest = real(*args)
        filled += sum((s.box[2] - s.box[0]) * (s.box[3] - s.box[1]) for s in stamps[before:])
        return rest

    raster._fills.insides = counted  # type: ignore[method-assign]
    planes: dict[int, np.ndarray] = {}
    pixels: dict[int, np.ndarray] = {}
    for n in order:
        planes[n] = raster.render(spec.time(n)).copy()
        pixels[n] = raster._main.array.copy()
    return [planes[n] for n in sorted(planes)], [pixels[n] for n in sorted(pixels)], filled


@pytest.mark.parametrize("height", [180, 360])
def test_a_fading_inside_filled_equals_the_frame_drawn_first(height):
    doc = _fading({"type": "solid", "color": "#F8F5F0"})
    count = 60  # the fades' two seconds
    planes, pixels, filled = _frames(doc, list(range(count)), height)
    assert filled > 0, "nothing was filled"
    order = list(range(count))
    random.Random(7).shuffle(order)
    shuffled, _, _ = _frames(doc, order, height)
    for n in range(count):
        first, first_pixels, _ = _frames(doc, [n], height)
        assert np.array_equal(planes[n], first[0]), f"frame {n}: planes differ from the frame drawn first"
        assert np.array_equal(planes[n], shuffled[n]), f"frame {n}: planes differ drawn in another order"
        if n % 7 == 0:
            assert np.array_equal(pixels[n], first_pixels[0]), f"frame {n}: pixels differ from the frame drawn first"


def test_over_a_background_of_more_than_one_colour_nothing_is_filled():
    doc = _fading({"type": "linear", "colors": ["#1E1B4B", "#DB2777"], "angle": 30})
    count = 60
    planes, _, filled = _frames(doc, list(range(count)))
    assert filled == 0
    for n in (5, 20, 40):
        assert np.array_equal(planes[n], _frames(doc, [n])[0][0]), f"frame {n}"


def test_a_plain_box_converts_to_the_samples_of_its_pixel_anywhere_but_the_last_rows():
    rng = np.random.default_rng(11)
    h, w = 120, 200
    frame = rng.integers(0, 256, (h, w, 4), np.uint8)
    frame[..., 3] = 255
    pixel = np.array([37, 180, 90, 255], np.uint8)
    frame[20:60, 40:110] = pixel
    planes = Bt709Planes(w, h)
    planes.convert(frame, "bgra", None)
    y, u, v = flat_samples(bytes(pixel), "bgra")
    assert (planes.y[20:60, 40:110] == y).all()
    assert (planes.u[10:30, 20:55] == u).all() and (planes.v[10:30, 20:55] == v).all()


def test_a_plain_base_is_told_from_one_of_two_colours():
    base = np.zeros((8, 10, 4), np.uint8)
    base[:] = (1, 2, 3, 255)
    assert list(fills.plain_pixel(base)) == [1, 2, 3, 255]
    base[7, 9, 0] = 4
    assert fills.plain_pixel(base) is None
    assert fills.plain_pixel(None) is None


def test_an_outline_and_its_inside_cover_what_either_reaches_on_even_pixels():
    rng = random.Random(5)
    w, h = 640, 360
    for _ in range(80):
        left, top = rng.uniform(-100, 500), rng.uniform(-100, 300)
        old = ("ellipse", left, top, left + rng.uniform(70, 400), top + rng.uniform(70, 300), 0.0)
        dx, dy, grow = rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(0, 3)
        new = ("ellipse", old[1] + dx - grow, old[2] + dy - grow, old[3] + dx + grow, old[4] + dy + grow, 0.0)
        inside: list[damage.Box] = []
        edges = damage.outline_boxes(old, new, w, h, inside)
        mask = np.zeros((h, w), np.uint8)
        for x0, y0, x1, y1 in edges + inside:
            mask[y0:y1, x0:x1] += 1
        assert mask.max() <= 1, "boxes overlap"
        for x0, y0, x1, y1 in inside:
            assert all(v % 2 == 0 for v in (x0, y0, x1, y1)) and 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        reach = damage.outline_boxes(old, new, w, h)  # without `inside`: the edges alone
        assert sum((b[2] - b[0]) * (b[3] - b[1]) for b in reach) <= int(mask.sum())
        # every pixel either outline reaches (grown by EDGE) lies in a box
        yy, xx = np.mgrid[0:h, 0:w] + 0.5
        for o in (old, new):
            cx, cy = (o[1] + o[3]) / 2, (o[2] + o[4]) / 2
            a, b = (o[3] - o[1]) / 2 + damage.EDGE - 1, (o[4] - o[2]) / 2 + damage.EDGE - 1
            within = ((xx - cx) / a) ** 2 + ((yy - cy) / b) ** 2 <= 1
            assert mask[within].all()
