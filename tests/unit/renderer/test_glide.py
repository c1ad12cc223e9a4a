"""Image layers that only move are drawn from images made once per grid position, and their
opaque inside's planes copied, not converted (`reelfarm.renderer.glide`)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from reelfarm.renderer import glide
from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.yuv import Bt709Planes
from tests.unit.renderer.test_fidelity import MAX_DIFF, MIN_PSNR, _write_photo, luma_psnr


def _drifting(tmp_path, alpha: bool = False, over: bool = True, both: bool = False) -> tuple[dict, LocalAssets]:
    """A noisy photo with rounded corners drifting sideways (and down, `both`) over a gradient,
    a heading sliding over its lower part (`over`), and an orb moving beside it."""
    _write_photo(tmp_path / "bench" / "photo.png")
    if alpha:
        from PIL import Image
        with Image.open(tmp_path / "bench" / "photo.png") as im:
            rgba = np.array(im.convert("RGBA"))
        rgba[::7, :, 3] = 90  # every seventh row see-through
        Image.fromarray(rgba).save(tmp_path / "bench" / "photo.png")
    keyframes = {"x": [{"t": 0, "v": 0.62}, {"t": 6, "v": 0.5, "easing": "in-out-quad"}]}
    if both:
        keyframes["y"] = [{"t": 0, "v": 0.45}, {"t": 6, "v": 0.55}]
    layers = [
        {"id": "orb", "type": "shape", "shape": "ellipse", "fill": "#F59E0B", "w": 0.12, "h": 0.12,
         "keyframes": {"x": [{"t": 0, "v": 0.1}, {"t": 6, "v": 0.2}], "y": [{"t": 0, "v": 0.2}, {"t": 6, "v": 0.3}]}},
        {"id": "photo", "type": "image", "asset": "photo", "fit": "cover", "radius": 0.025, "w": 0.5,
         "h": 0.66, "y": 0.5, "keyframes": keyframes},
    ]
    if over:
        layers.append({"id": "heading", "type": "text", "text": "Over the photo", "size": 0.07, "color": "#FFFFFF",
                       "x": 0.3, "y": 0.7, "w": 0.6, "anchor": "left",
                       "enter": {"preset": "slide", "direction": "left", "distance": 0.08, "duration": 0.8}})
    doc = {"version": 1, "fps": 30, "duration": 6, "format": "16:9",
           "assets": {"photo": {"type": "image", "key": "bench/photo.png"}},
           "scenes": [{"id": "a", "duration": 6,
                       "background": {"type": "linear", "colors": ["#0F172A", "#0E7490", "#22C55E"], "angle": 120},
                       "layers": layers}]}
    return doc, LocalAssets(str(tmp_path))


@pytest.mark.parametrize("alpha,over,both", [(False, True, False), (False, False, False), (False, False, True),
                                             (True, True, False)],
                         ids=["under-text", "alone", "moving-down-too", "see-through"])
def test_a_drifting_photo_is_copied_from_its_images_and_equals_its_conversion(tmp_path, alpha, over, both):
    source, assets = _drifting(tmp_path, alpha, over, both)
    doc = parse_doc(source)
    spec = RenderSpec("16:9", 360, doc.fps)
    fast = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    reference = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True, reuse=False)
    expected = []
    for n in range(doc.frame_count):
        frame = fast.render(spec.time(n)).copy()
        expected.append(frame)
        # the planes copied from the photo's images are the planes its pixels convert to, bit for bit
        whole = Bt709Planes(*spec.size).convert(fast._main.pixels(), "bgra", None)
        assert np.array_equal(frame, whole), f"frame {n}"
        ref = reference.render(spec.time(n))
        assert luma_psnr(frame, ref, spec.height) >= MIN_PSNR, f"frame {n}"
        assert np.abs(frame.astype(np.int16) - ref).max() <= MAX_DIFF, f"frame {n}"
    if alpha or both:  # nothing opaque to copy; drawn where it is, not glided
        assert fast._planes.stamped_pixels == 0
    else:  # most of the photo's inside, most frames (text slides over a part of it)
        assert fast._planes.stamped_pixels > 0.5 * (0.5 * spec.width) * (0.66 * spec.height) * doc.frame_count
    # any order, any start: the same frames
    order = list(range(doc.frame_count))
    random.Random(5).shuffle(order)
    fresh = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    for n in order[:25]:
        assert np.array_equal(fresh.render(spec.time(n)), expected[n]), f"frame {n} out of order"
        alone = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
        assert np.array_equal(alone.render(spec.time(n)), expected[n]), f"frame {n} alone"


def test_a_glide_is_drawn_once_per_grid_position(tmp_path, monkeypatch):
    source, assets = _drifting(tmp_path, over=False)
    doc = parse_doc(source)
    spec = RenderSpec("16:9", 360, doc.fps)
    made: list[tuple[float, float]] = []
    real = glide.Glides._make
    monkeypatch.setattr(glide.Glides, "_make", lambda self, w, h, fx, fy, paint: made.append((fx, fy))
                        or real(self, w, h, fx, fy, paint))
    fast = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    for n in range(doc.frame_count):
        fast.render(spec.time(n))
    assert len(made) > glide.STEPS // 2, "the photo was not glided"
    assert len(made) == len(set(made))  # never made twice (it fits its cache)
    assert len({fy for _, fy in made}) == 1  # one place along y, not rounded
    # along x, at most the grid's positions within a pixel and those kept off pixel centres
    assert len({round(fx % 1, 6) for fx, _ in made}) <= glide.STEPS + 4


def test_a_place_is_within_half_a_step_and_between_the_same_pixel_centres():
    rng = random.Random(3)
    for _ in range(50_000):
        v, size, steps = rng.uniform(-50, 2000), rng.choice([160.0, 712.8, rng.uniform(1, 900)]), rng.choice([8, 16])
        q = glide._on_grid(v, size, steps)
        assert abs(q - v) <= 0.5 / steps + 1e-9
        for edge in (0.0, size):  # no column drawn or dropped against the box's own place
            assert math.floor(v + edge - 0.5) == math.floor(q + edge - 0.5)
        assert glide._on_grid(v, size, steps) == q
    assert glide._on_grid(123.456, 10.0, 0) == 123.456  # an axis it does not move on: exact


def test_only_layers_keeping_their_size_and_top_glide():
    assert glide.sideways([None, (1.0, 2.0, 10.0, 5.0), (1.5, 2.0, 10.0, 5.0)])
    assert not glide.sideways([(1.0, 2.0, 10.0, 5.0), (1.0, 2.5, 10.0, 5.0)])  # moves down too
    assert not glide.sideways([(1.0, 2.0, 10.0, 5.0), (1.0, 2.0, 11.0, 5.0)])  # grows
    assert not glide.sideways([None, None])


@pytest.mark.parametrize("budget", [1, 1_500_000], ids=["nothing-held", "some-held"])
def test_glides_the_budget_cannot_hold_draw_the_same_frames(tmp_path, monkeypatch, budget):
    """Over its budget an image is made for the frame at hand and dropped (the frame's recorded
    picture still plays it back), and no planes are copied for it: the frames are the same."""
    source, assets = _drifting(tmp_path)
    doc = parse_doc(source)
    spec = RenderSpec("16:9", 360, doc.fps)
    held = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    expected = [held.render(spec.time(n)).copy() for n in range(doc.frame_count)]
    monkeypatch.setattr(glide, "MIN_BYTES", budget)
    monkeypatch.setattr(glide, "FRAMES", 0.0)
    tight = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    assert tight._glides.budget == budget
    for n in range(doc.frame_count):
        assert np.array_equal(tight.render(spec.time(n)), expected[n]), f"frame {n}"
        assert tight._glides.nbytes <= budget
    if budget == 1:
        assert tight._planes.stamped_pixels == 0
    assert tight._planes.stamped_pixels < held._planes.stamped_pixels
