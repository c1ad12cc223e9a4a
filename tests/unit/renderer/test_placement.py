"""Faint shapes are placed on a grid (`reelfarm.renderer.sprites.Sprites.placed`).

An orb drifting, growing and fading by a fraction of a pixel a frame is drawn at its placement:
edges on a grid and opacity in steps, so the frames between two grid steps are the same frame,
skipped, and every frame stays within `test_fidelity`'s bounds of the reference drawing and equal
to itself however the frames before it were drawn.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.sprites import EDGE_LEVELS, GRID_PHASE, LEVELS_PER_STEP, Sprites
from reelfarm.renderer.timeline import LayerState
from reelfarm.renderer.tokens import Brand
from tests.unit.renderer.test_fidelity import MAX_DIFF, MIN_PSNR, luma_psnr


def _orb_doc(fill: str = "#1F3A5F1A") -> dict:
    """One faint orb drifting 2% of the width, growing 6% and fading in, over a still background."""
    return {
        "version": 1, "fps": 30, "duration": 6, "format": "16:9",
        "scenes": [{"id": "a", "duration": 6, "background": {"type": "solid", "color": "#F7F5F2"},
                    "layers": [{"id": "orb", "type": "shape", "shape": "ellipse", "fill": fill,
                                "x": 0.6, "y": 0.4, "w": 0.5, "h": 0.8,
                                "enter": {"preset": "fade", "delay": 0.1, "duration": 1.0},
                                "keyframes": {"x": [{"t": 0, "v": 0.6}, {"t": 6, "v": 0.58}],
                                              "scale": [{"t": 0, "v": 1.0}, {"t": 6, "v": 1.06}]}}]}],
    }


def test_frames_between_grid_steps_are_skipped_and_stay_close_to_the_reference():
    doc = parse_doc(_orb_doc())
    spec = RenderSpec("16:9", 360, doc.fps)
    placed = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
    reference = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True, reuse=False)
    frames, skipped, drawn = [], 0, 0
    for n in range(doc.frame_count):
        frame = placed.render(spec.time(n))
        skipped += placed.drawn_pixels == drawn
        drawn = placed.drawn_pixels
        frames.append(frame.copy())
        whole = reference.render(spec.time(n))
        assert luma_psnr(frame, whole, spec.height) >= MIN_PSNR, f"frame {n}"
        assert np.abs(frame.astype(np.int16) - whole).max() <= MAX_DIFF, f"frame {n}"
    # the orb drifts about 0.07 px a frame here and each edge moves about 0.05 more: most frames
    # place it alike
    assert skipped >= doc.frame_count // 3, f"only {skipped} of {doc.frame_count} frames skipped"
    order = list(range(doc.frame_count))
    random.Random(3).shuffle(order)
    jumping = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
    for n in order:
        assert np.array_equal(jumping.render(spec.time(n)), frames[n]), f"frame {n} out of order"


def _state(x: float = 0.0, opacity: float = 1.0, scale: float = 1.0) -> LayerState:
    return LayerState(x=x, y=0.0, opacity=opacity, scale=scale, rotation=0.0)


def test_placement_error_is_bounded_by_the_fill_alpha():
    sprites = Sprites(Brand({}), 360.0, 640)
    for alpha in (0x10, 0x1A, 0x30, 0x40):
        layer = parse_doc(_orb_doc(f"#1F3A5F{alpha:02X}")).scenes[0].layers[0]
        rng = random.Random(alpha)
        for _ in range(200):
            x, y, opacity = rng.uniform(0, 500), rng.uniform(0, 300), rng.random()
            box = (x, y, 240.0, 160.0)
            at = sprites.placed(layer, box, _state(opacity=opacity))
            # moving an edge by d pixels changes a pixel by at most alpha * d
            for got, exact in ((at.left, x), (at.top, y), (at.right, x + 240.0), (at.bottom, y + 160.0)):
                assert abs(got - exact) * alpha <= EDGE_LEVELS + 1e-9, (alpha, got, exact)
                assert abs(got - round(got)) > 0.01, "an edge on a whole pixel lands on the filter's rounding ties"
            assert abs(at.opacity - opacity) * alpha <= LEVELS_PER_STEP / 2 + 1e-9


def test_equal_placements_for_states_a_fraction_of_a_cell_apart():
    sprites = Sprites(Brand({}), 360.0, 640)
    layer = parse_doc(_orb_doc()).scenes[0].layers[0]  # alpha 0x1A: one grid line a pixel
    base = 100.0 + GRID_PHASE  # on a grid line
    near = [sprites.placed(layer, (base + d, 50.0 + GRID_PHASE, 240.0, 160.0), _state()) for d in (-0.3, 0.0, 0.3)]
    assert near[0] == near[1] == near[2]
    assert sprites.placed(layer, (base + 0.7, 50.0 + GRID_PHASE, 240.0, 160.0), _state()) != near[1]


def test_a_thin_shape_is_drawn_where_its_state_puts_it():
    sprites = Sprites(Brand({}), 360.0, 640)
    layer = parse_doc(_orb_doc()).scenes[0].layers[0]
    at = sprites.placed(layer, (10.3, 20.6, 200.0, 3.2), _state(opacity=0.37))
    assert tuple(at) == pytest.approx((10.3, 20.6, 210.3, 23.8, 0.37))
