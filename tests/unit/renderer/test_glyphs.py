"""Large text is drawn as paths (`text.PATH_GLYPHS`), and stays deterministic and faithful.

Skia draws a glyph of up to 256 device pixels from a mask placed at a quarter pixel across and a
whole pixel down; under `PATH_GLYPHS` (a perspective that moves nothing) it draws every glyph as a
path at its exact place. Text of `PATH_GLYPHS_PX` device pixels or more is drawn that way, so a
fraction of a pixel down shows in its pixels, and a whole pixel moves the same pixels.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
import skia

from reelfarm.renderer import text
from reelfarm.renderer.fonts import font_book
from reelfarm.renderer.model import FontRef, parse_doc
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.text import PATH_GLYPHS_PX, TextBlock, TextSpec
from tests.unit.renderer.test_determinism import _cuts, _rendered
from tests.unit.renderer.test_fidelity import MAX_DIFF, MIN_PSNR, _compare

LINE = "We're opening our second studio"


def _block(size: float) -> TextBlock:
    return TextBlock(TextSpec(text=LINE, font=FontRef("Inter", 700), size_px=size, min_size_px=size / 2,
                              color="#FFFFFF", align="left", direction="auto", line_height=1.2,
                              letter_spacing=0.0, auto_shrink=False, box_w=4000.0, box_h=0.0), font_book())


def _painted(block: TextBlock, x: float, y: float, scale: float = 1.0, paths: bool = True) -> np.ndarray:
    surface = skia.Surface(1200, 400)
    canvas = surface.getCanvas()
    canvas.clear(skia.ColorBLACK)
    canvas.scale(scale, scale)
    block.paint(canvas, x, y, paths=paths)
    return surface.makeImageSnapshot().toarray()[..., 0].astype(np.int16)


def test_text_from_the_threshold_up_moves_by_fractions_of_a_pixel_down_and_smaller_text_does_not():
    large, small = _block(PATH_GLYPHS_PX), _block(PATH_GLYPHS_PX - 8)
    assert not np.array_equal(_painted(large, 10, 20), _painted(large, 10, 20.3))  # a path at its exact place
    assert np.array_equal(_painted(small, 10, 20), _painted(small, 10, 20.3))  # a mask on a whole pixel
    assert np.array_equal(_painted(large, 10, 20, paths=False), _painted(large, 10, 20.3, paths=False))
    # what counts is the size on the device: the smaller text scaled up past the threshold is paths
    scale = PATH_GLYPHS_PX / (PATH_GLYPHS_PX - 8)
    assert not np.array_equal(_painted(small, 10, 20, scale), _painted(small, 10, 20 + 0.3 / scale, scale))


def test_a_whole_pixel_moves_the_same_pixels():
    block = _block(140)
    for x, y in ((10.3, 20.6), (10.25, 20.5), (10.7, 20.1)):
        at, moved = _painted(block, x, y), _painted(block, x + 3, y + 2)
        assert at.any()
        assert np.array_equal(at[:-2, :-3], moved[2:, 3:])  # (the line runs past the surface's right)


def _near(mask: np.ndarray) -> np.ndarray:
    """`mask` grown by one pixel each way."""
    grown = mask.copy()
    for axis in (0, 1):
        for step in (1, -1):
            grown |= np.roll(mask, step, axis)
    return grown


def test_paths_cover_what_the_masks_they_replace_cover():
    """The same line as masks and as paths: they differ only near the masks' edges (the paths are
    unhinted and not rounded to a whole pixel down), never two pixels further."""
    block = _block(140)
    masks, paths = _painted(block, 10.25, 20.0, paths=False), _painted(block, 10.25, 20.0)
    edges = _near(_near((masks > 0) & (masks < 255)) | _near(masks == 255) & _near(masks == 0))
    assert not np.array_equal(masks, paths)
    assert (masks == 255).sum() > max(20_000, edges.sum())  # the band allowed is not the whole text
    assert not (masks != paths)[~edges].any()


def _large_text_doc() -> dict:
    """Two scenes of 0.3-unit text (108 px at 360): sliding and fading in, scaling, then held
    through a crossfade."""
    heading = {"id": "heading", "type": "text", "text": "Large and moving", "font": {"family": "Inter", "weight": 700},
               "size": 0.3, "color": "#FFFFFF", "x": 0.05, "y": 0.3, "w": 1.6, "anchor": "left", "align": "left",
               "enter": {"preset": "slide", "direction": "left", "distance": 0.3, "duration": 0.8,
                         "easing": "out-cubic"}}
    scaling = {"id": "scaling", "type": "text", "text": "Grow", "font": {"family": "Inter", "weight": 700},
               "size": 0.2, "color": "#FDE68A", "x": 0.5, "y": 0.75, "w": 0.9, "align": "center",
               "keyframes": {"scale": [{"t": 0, "v": 1.0}, {"t": 1.5, "v": 1.6, "easing": "in-out-quad"}],
                             "opacity": [{"t": 0, "v": 0.4}, {"t": 0.6, "v": 1.0, "easing": "linear"}]}}
    held = {"id": "held", "type": "text", "text": "Held", "font": {"family": "Inter", "weight": 700},
            "size": 0.35, "color": "#0F172A", "x": 0.5, "y": 0.5, "w": 0.9, "align": "center"}
    return {"version": 1, "fps": 24, "duration": 6, "format": "1:1", "title": "Large text",
            "scenes": [{"id": "one", "duration": 3, "background": {"type": "solid", "color": "#1E1B4B"},
                        "layers": [heading, scaling]},
                       {"id": "two", "duration": 3, "background": {"type": "solid", "color": "#F59E0B"},
                        "transition": {"type": "crossfade", "duration": 0.5, "easing": "linear"},
                        "layers": [held]}]}


@pytest.fixture
def large_doc():
    doc = parse_doc(_large_text_doc())
    spec = RenderSpec("1:1", 360, doc.fps)
    assert doc.scenes[0].layers[0].size * min(spec.size) >= PATH_GLYPHS_PX
    return doc, spec


def test_large_text_frames_are_indistinguishable_from_the_reference(large_doc):
    psnr, diff = _compare(*large_doc)
    assert psnr >= MIN_PSNR and diff <= MAX_DIFF, f"worst frame: {psnr:.1f} dB, a sample off by {diff}"


def test_large_text_frames_are_the_same_in_any_chunk_split_and_order(large_doc, tmp_path):
    doc, spec = large_doc
    rng = random.Random("large text")
    whole = _rendered(doc, spec, [range(doc.frame_count)], [0], True, tmp_path / "whole")
    cuts = _cuts(rng, doc.frame_count)
    order = list(range(len(cuts)))
    rng.shuffle(order)
    shuffled = _rendered(doc, spec, cuts, order, True, tmp_path / "shuffled")
    fresh = _rendered(doc, spec, cuts, list(reversed(range(len(cuts)))), False, tmp_path / "fresh")
    for n, (a, b, c) in enumerate(zip(whole, shuffled, fresh)):
        assert np.array_equal(a, b) and np.array_equal(a, c), f"frame {n} differs"


def test_a_frame_draws_its_text_as_paths_only_from_the_threshold_up(monkeypatch):
    """At 240 every text is under the threshold: the frame is the masks' (as with paths turned
    off); at 360 it is not."""
    from reelfarm.renderer.raster import SkiaRasterizer

    doc = parse_doc(_large_text_doc())

    def frame(resolution: int) -> np.ndarray:
        size = RenderSpec("1:1", resolution, doc.fps).size
        return SkiaRasterizer(doc, "1:1", *size, reuse=False).render(0.4).copy()

    drawn = {resolution: frame(resolution) for resolution in (240, 360)}
    monkeypatch.setattr(text, "PATH_GLYPHS_PX", 1e9)
    assert np.array_equal(drawn[240], frame(240))
    assert not np.array_equal(drawn[360], frame(360))
