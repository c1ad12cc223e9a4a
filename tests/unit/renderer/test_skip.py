"""Frames drawn and converted only where they changed equal the same frames drawn in any order.

A frame drawn by restoring and redrawing boxes, or skipped, must equal, bit for bit, the frame
the same rasterizer draws after any other frame (what chunk seams rely on; through lossless x264
for every story and format in `test_determinism`). Against `SkiaRasterizer(reuse=False)`, which
draws every frame whole, the old way, frames are held to `test_fidelity`'s bounds.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from av.video.reformatter import VideoReformatter

from reelfarm.renderer import damage
from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.encode import rgba_to_bt709
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import TEXT_BLOCKS_MAX_ENTRIES, SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.renderer.yuv import Bt709Planes
from reelfarm.studio.stories import list_stories
from tests.helpers import write_png
from tests.unit.renderer.test_fidelity import MAX_DIFF, MIN_PSNR, luma_psnr


def _story(story_id: str, fmt: str = "16:9") -> dict:
    story = next(s for s in list_stories() if s.id == story_id)
    return story.build({}, NEUTRAL_BRAND, fmt, None)


def _photo_doc(tmp_path) -> tuple[dict, LocalAssets]:
    """A moving photo with rounded corners, a ken-burns background image, a group with a shadowed
    text and a held logo above moving shapes: the layer kinds the stories use least."""
    write_png(tmp_path / "photo.png", 400, 260)
    doc = {
        "version": 1, "fps": 30, "duration": 6, "format": "16:9",
        "assets": {"photo": {"type": "image", "key": "photo.png"}},
        "scenes": [
            {"id": "a", "duration": 3,
             "background": {"type": "linear", "colors": ["#1E1B4B", "#DB2777"], "angle": 30},
             "layers": [
                 {"id": "bar", "type": "shape", "shape": "rounded_rect", "fill": "#F59E0B", "w": 0.2, "h": 0.1,
                  "radius": 0.02, "keyframes": {"x": [{"t": 0, "v": 0.2}, {"t": 2, "v": 0.8}],
                                                "rotation": [{"t": 0, "v": 0}, {"t": 2, "v": 90}]}},
                 {"id": "logo", "type": "image", "asset": "photo", "fit": "contain", "x": 0.5, "y": 0.5,
                  "w": 0.3, "h": 0.3},
                 {"id": "photo", "type": "image", "asset": "photo", "fit": "cover", "radius": 0.03,
                  "w": 0.4, "h": 0.5, "y": 0.5, "opacity": 0.8,
                  "keyframes": {"x": [{"t": 0, "v": 0.3}, {"t": 2, "v": 0.34}]}},
                 {"id": "g", "type": "group", "x": 0.5, "y": 0.8, "w": 0.8, "h": 0.2,
                  "enter": {"preset": "fade", "duration": 0.5},
                  "children": [{"id": "t", "type": "text", "text": "Shadowed text", "size": 0.06, "x": 0.5,
                                "y": 0.5, "w": 1.0, "shadow": {"dx": 0.004, "dy": 0.004, "blur": 0.01,
                                                               "color": "#000000"},
                                "enter": {"preset": "typewriter", "duration": 1.0}}]},
             ]},
            {"id": "b", "duration": 3, "transition": {"type": "crossfade", "duration": 0.5},
             "background": {"type": "image", "asset": "photo", "fit": "cover",
                            "ken_burns": {"from": {"scale": 1.0}, "to": {"scale": 1.2}}},
             "layers": [{"id": "c", "type": "shape", "shape": "ellipse", "fill": "#38BDF8CC", "w": 0.2, "h": 0.2,
                         "keyframes": {"y": [{"t": 0, "v": 0.3}, {"t": 2, "v": 0.7}]}}]},
        ],
    }
    return doc, LocalAssets(str(tmp_path))


@pytest.mark.parametrize("story_id", ["announcement", "flash_sale", "countdown", "before_after"])
def test_frames_drawn_where_they_changed_equal_frames_drawn_in_any_order(story_id):
    doc = parse_doc(_story(story_id, "9:16"))
    spec = RenderSpec("9:16", 180, doc.fps)
    order = list(range(doc.frame_count))
    random.Random(story_id).shuffle(order)
    for yuv in (False, True):
        in_order = SkiaRasterizer(doc, "9:16", *spec.size, yuv=yuv)
        expected = [in_order.render(spec.time(n)).copy() for n in range(doc.frame_count)]
        jumping = SkiaRasterizer(doc, "9:16", *spec.size, yuv=yuv)
        for n in order:
            assert np.array_equal(jumping.render(spec.time(n)), expected[n]), f"frame {n}"
        whole = SkiaRasterizer(doc, "9:16", *spec.size, yuv=yuv, reuse=False)
        for n in range(doc.frame_count):
            reference = whole.render(spec.time(n))
            if yuv:
                assert luma_psnr(reference, expected[n], spec.height) >= MIN_PSNR, f"frame {n}"
        assert in_order.drawn_pixels < 0.9 * whole.drawn_pixels, "drew nearly every pixel again"
        if yuv:
            assert in_order._planes.converted_pixels < 0.9 * whole._planes.converted_pixels


@pytest.mark.parametrize("story_id", ["announcement", "flash_sale", "before_after"])
def test_a_transition_starts_from_the_planes_of_the_frame_before_it(story_id, monkeypatch):
    """Drawn in order, a transition composed from planes takes the previous scene's last frame
    from the planes of the frame just drawn (its key equal to that frame's), not drawn and
    converted again; its frames equal those of a rasterizer that starts at the transition and
    draws that last frame itself."""
    doc = parse_doc(_story(story_id))
    spec = RenderSpec("16:9", 180, doc.fps)
    drawn_last: list[int] = []
    real = SkiaRasterizer._draw_last
    monkeypatch.setattr(SkiaRasterizer, "_draw_last", lambda self, i: drawn_last.append(i) or real(self, i))
    in_order = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
    started: set[int] = set()  # the scenes whose transition in has begun
    for n in range(doc.frame_count):
        index, local = in_order.timeline.locate(spec.time(n))
        frame = in_order.render(spec.time(n))
        progress = in_order.timeline.transition_progress(index, local)
        if progress is not None and in_order._mixes(index) and index not in started:
            started.add(index)
            fresh = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
            before = len(drawn_last)
            assert np.array_equal(fresh.render(spec.time(n)), frame), f"frame {n}, the transition's first"
            assert drawn_last[before:] == [index - 1]  # the fresh one drew the last frame itself
            del drawn_last[before:]
    assert started, "no transition composed from planes"
    assert drawn_last == [], "drawn in order, a transition drew the scene before it again"


def test_images_groups_shadows_and_ken_burns_in_any_order(tmp_path):
    source, assets = _photo_doc(tmp_path)
    doc = parse_doc(source)
    spec = RenderSpec("16:9", 180, doc.fps)
    skipping = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    expected = [skipping.render(spec.time(n)).copy() for n in range(doc.frame_count)]
    whole = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True, reuse=False)
    for n in range(doc.frame_count):
        reference = whole.render(spec.time(n))
        assert luma_psnr(expected[n], reference, spec.height) >= MIN_PSNR, f"frame {n}"
        assert np.abs(expected[n].astype(np.int16) - reference).max() <= MAX_DIFF, f"frame {n}"
    # Chunks of one process share its rasterizer and arrive in any order.
    order = list(range(doc.frame_count))
    random.Random(7).shuffle(order)
    fresh = SkiaRasterizer(doc, "16:9", *spec.size, assets, yuv=True)
    for n in order[:40]:
        assert np.array_equal(skipping.render(spec.time(n)), expected[n]), f"frame {n} out of order"
        assert np.array_equal(fresh.render(spec.time(n)), expected[n]), f"frame {n} out of order, fresh"


def test_a_held_frame_is_neither_drawn_nor_converted_again():
    source = {"version": 1, "fps": 30, "duration": 6, "format": "16:9", "scenes": [
        {"id": "s", "duration": 6, "background": {"type": "linear", "colors": ["#1E1B4B", "#DB2777"]},
         "layers": [{"id": "t", "type": "text", "text": "Held", "size": 0.1, "x": 0.5, "y": 0.5,
                     "enter": {"preset": "slide", "duration": 1.0}},
                    {"id": "r", "type": "shape", "shape": "rect", "fill": "#F59E0B", "w": 0.1, "h": 0.1,
                     "x": 0.2, "y": 0.2, "keyframes": {"x": [{"t": 3, "v": 0.2}, {"t": 4, "v": 0.5}]}}]}]}
    doc = parse_doc(source)
    spec = RenderSpec("16:9", 180, doc.fps)
    raster = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
    costs = []
    for n in range(doc.frame_count):
        before = raster.drawn_pixels, raster._planes.converted_pixels
        frame = raster.render(spec.time(n))
        costs.append((raster.drawn_pixels - before[0], raster._planes.converted_pixels - before[1]))
    assert frame is raster._planes.buffer  # the planes the encoder reads, the same buffer every frame
    last = frame.copy()
    before = raster.drawn_pixels, raster._planes.converted_pixels
    assert np.array_equal(raster.render(spec.time(doc.frame_count - 1)), last)
    assert (raster.drawn_pixels, raster._planes.converted_pixels) == before
    # Still from 1 s to 3 s and from 4 s on: those frames cost nothing at all; the moving ones
    # only the boxes the text and the square cover.
    fps = doc.fps
    assert all(c == (0, 0) for c in costs[fps + 1:3 * fps] + costs[4 * fps + 1:])
    assert costs[0] == (spec.width * spec.height, spec.width * spec.height)
    assert all(0 < c[0] < spec.width * spec.height // 2 for c in costs[1:fps] + costs[3 * fps + 1:4 * fps])


def _noise_and_planes(rng: np.random.Generator, w: int, h: int) -> tuple[np.ndarray, np.ndarray, Bt709Planes]:
    """An opaque noise frame, its whole conversion, and planes holding a black frame's."""
    frame = rng.integers(0, 256, (h, w, 4), np.uint8)
    frame[..., 3] = 255
    whole = rgba_to_bt709(VideoReformatter(), frame, "yuv420p", src_format="bgra").to_ndarray()
    planes = Bt709Planes(w, h)
    planes.convert(np.zeros_like(frame), "bgra", None)
    return frame, whole, planes


def _assert_boxes_equal(planes: Bt709Planes, whole: np.ndarray, boxes: list) -> None:
    """Every luma and chroma sample of each box in `planes` equals the whole conversion's."""
    h, w = planes.height, planes.width
    n, c = w * h, (w // 2) * (h // 2)
    flat, wflat = planes.buffer.reshape(-1), whole.reshape(-1)
    for x0, y0, x1, y1 in boxes:
        assert np.array_equal(planes.y[y0:y1, x0:x1], whole[:h][y0:y1, x0:x1])
        for a in (n, n + c):
            got = flat[a:a + c].reshape(h // 2, w // 2)[y0 // 2:-(-y1 // 2), x0 // 2:-(-x1 // 2)]
            want = wflat[a:a + c].reshape(h // 2, w // 2)[y0 // 2:-(-y1 // 2), x0 // 2:-(-x1 // 2)]
            assert np.array_equal(got, want)


def test_boxes_converted_alone_equal_the_whole_conversion():
    rng = np.random.default_rng(3)
    h, w = 270, 480
    frame, whole, planes = _noise_and_planes(rng, w, h)
    boxes = [(0, 0, 17, 9), (101, 33, 250, 47), (470, 260, 480, 270), (5, 120, 479, 121), (200, 0, 201, 270)]
    planes.convert(frame, "bgra", boxes)
    y = planes.buffer[:h]
    for x0, y0, x1, y1 in boxes:
        assert np.array_equal(y[y0:y1, x0:x1], whole[y0:y1, x0:x1])
    planes.convert(frame, "bgra", [(0, 0, w, h)])
    assert np.array_equal(planes.buffer, whole)
    planes.convert(frame, "bgra", None)
    assert np.array_equal(planes.buffer, whole)


def test_many_boxes_converted_together_equal_the_whole_conversion():
    """Many boxes are converted in one call (packed in one image); those reaching the frame's
    edge apart. Either way every sample equals the whole frame's conversion."""
    rng = np.random.default_rng(4)
    h, w = 360, 640
    frame, whole, planes = _noise_and_planes(rng, w, h)
    boxes = [(x, y, x + int(rng.integers(2, 90)), y + int(rng.integers(2, 64)))
             for x, y in zip(rng.integers(0, w - 90, 40), rng.integers(0, h - 64, 40))]
    boxes += [(0, 0, 30, 20), (w - 12, 100, w, 140), (300, h - 6, 360, h)]
    planes.convert(frame, "bgra", boxes)
    _assert_boxes_equal(planes, whole, boxes)


@pytest.mark.parametrize("low_rows", [56, 80])
def test_an_outline_strip_and_a_box_at_the_bottom_convert_in_one_shelf(low_rows):
    """An outline's boxes (strips of 64 rows) are converted in an atlas of 66 rows, not 128; a box
    reaching the frame's bottom goes beside them, at the atlas's bottom, where it fits (56 rows),
    else under them (80); every sample equals the whole frame's conversion either way."""
    rng = np.random.default_rng(5)
    h, w = 720, 1280
    frame, whole, planes = _noise_and_planes(rng, w, h)
    boxes = [(100, 128, 140, 192), (600, 192, 660, 256), (900, 320, 1000, 384), (400, h - low_rows, 460, h)]
    sizes: list[tuple[int, int]] = []
    real = planes._context
    planes._context = lambda width, height: sizes.append((width, height)) or real(width, height)  # type: ignore[method-assign]
    planes.convert(frame, "bgra", boxes)
    assert sizes == ([(320, 66)] if low_rows == 56 else [(256, 66 * 3)])
    _assert_boxes_equal(planes, whole, boxes)


@pytest.mark.parametrize(("w", "h"), [(480, 270), (576, 720), (1080, 1350)])
def test_a_box_converts_from_its_own_pixels_and_the_two_rows_under_it(w, h):
    """What packing boxes into one image relies on (`renderer/yuv.py`): with the area filter a
    box's samples depend on its own pixels and, for its last chroma row, the two rows under it;
    noise anywhere else leaves them as they are."""
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (h, w, 4), np.uint8)
    frame[..., 3] = 255
    planes = Bt709Planes(w, h)
    whole = planes.convert(frame, "bgra", None).copy()
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w // 2 - 20)) * 2, int(rng.integers(0, h // 2 - 20)) * 2
        x1, y1 = x0 + 2 * int(rng.integers(1, 20)), y0 + 2 * int(rng.integers(1, 20))
        noisy = rng.integers(0, 256, (h, w, 4), np.uint8)
        noisy[..., 3] = 255
        noisy[y0:min(h, y1 + 2), x0:x1] = frame[y0:min(h, y1 + 2), x0:x1]
        other = Bt709Planes(w, h)
        other.convert(noisy, "bgra", None)
        assert np.array_equal(other.y[y0:y1, x0:x1], planes.y[y0:y1, x0:x1])
        for got, want in ((other.u, planes.u), (other.v, planes.v)):
            assert np.array_equal(got[y0 // 2:y1 // 2, x0 // 2:x1 // 2], want[y0 // 2:y1 // 2, x0 // 2:x1 // 2])
    assert np.array_equal(planes.buffer, whole)


def test_a_crossfade_of_planes_is_the_blend_to_within_one_level():
    from reelfarm.renderer.compose import PlaneTransitions

    rng = np.random.default_rng(8)
    w, h = 640, 360
    a = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
    b = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
    out = np.empty_like(a)
    mixer = PlaneTransitions(w, h)
    for p in (0.0, 0.013, 0.37, 0.5, 0.91, 1.0):
        mixer._blend(out, a, b, round(p * 256))
        exact = a * (1.0 - p) + b * p
        assert np.abs(out - exact).max() <= 1.0, p
    mixer._blend(out, a, b, 0)
    assert np.array_equal(out, a)
    mixer._blend(out, a, b, 256)
    assert np.array_equal(out, b)


def _noise_frame(rng, w: int, h: int) -> np.ndarray:
    frame = rng.integers(0, 256, (h, w, 4), np.uint8)
    frame[..., 3] = 255
    return frame


@pytest.mark.parametrize("direction", ["left", "right", "up", "down"])
def test_a_wipe_of_planes_is_the_drawn_wipe_converted_bit_for_bit(direction):
    import skia

    from reelfarm.renderer.compose import PlaneTransitions, draw_transition
    from reelfarm.renderer.model import Transition

    rng = np.random.default_rng(9)
    w, h = 320, 180
    prev, inc = _noise_frame(rng, w, h), _noise_frame(rng, w, h)
    tr = Transition(type="wipe", duration=0.5, direction=direction)
    mixer = PlaneTransitions(w, h)
    a, b = (Bt709Planes(w, h).convert(f, "bgra", None).copy() for f in (prev, inc))
    for p in (0.0, 0.013, 0.37, 0.5, 0.91):
        surface = skia.Surface(w, h)
        draw_transition(surface.getCanvas(), *(skia.Image.fromarray(f, colorType=skia.kBGRA_8888_ColorType,
                                                                    alphaType=skia.kPremul_AlphaType) for f in (prev, inc)),
                        tr, p, w, h)
        drawn = Bt709Planes(w, h).convert(surface.toarray(colorType=skia.kBGRA_8888_ColorType), "bgra", None)
        out = np.empty_like(a)
        mixer.compose(out, a, b, tr, p)
        assert np.array_equal(out, drawn), p


def test_a_zoom_fills_an_even_rectangle_growing_to_the_frame_and_wipes_end_on_even_pixels():
    from reelfarm.renderer.compose import ZOOM_FROM, wipe_edge, zoom_rect

    w, h = 1280, 720
    widths = []
    for p in np.linspace(0.0, 1.0, 31):
        rect = zoom_rect(float(p), w, h)
        assert all(v % 2 == 0 for v in rect) and rect[2] - rect[0] == w - 2 * rect[0]
        assert abs((rect[2] - rect[0]) / w - (ZOOM_FROM + (1 - ZOOM_FROM) * p)) <= 2 / w
        widths.append(rect[2] - rect[0])
        for direction in ("left", "right", "up", "down"):
            x0, y0, x1, y1 = wipe_edge(float(p), direction, w, h)
            assert all(v % 2 == 0 for v in (x0, y0, x1, y1))
            assert abs((x1 - x0) * (y1 - y0) / (w * h) - p) <= 2 / min(w, h)
    assert widths == sorted(widths) and widths[-1] == w


@pytest.mark.parametrize(("w", "h"), [(1080, 1350), (360, 450), (576, 720)])
def test_a_zoom_of_planes_ends_on_the_incoming_planes_at_every_size(w, h):
    """4:5 at 1080p has chroma planes of an odd number of rows (675), which PyAV's
    ``from_numpy_buffer`` reads two rows short: the zoom's last frames came out 147 levels off."""
    from reelfarm.renderer.compose import PlaneTransitions
    from reelfarm.renderer.model import Transition

    rng = np.random.default_rng(w)
    previous = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
    incoming = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
    out = np.empty_like(previous)
    PlaneTransitions(w, h).compose(out, previous, incoming, Transition(type="zoom", duration=0.5), 1.0)
    assert np.array_equal(out, incoming)


def test_settled_boxes_hold_every_drawing_they_meet_and_do_not_overlap():
    drawings = [(10, 10, 50, 30), (40, 25, 90, 60), (200, 200, 220, 210), (0, 100, 300, 110)]
    boxes = damage.settle([(45, 28, 46, 29), (205, 150, 206, 205)], drawings)
    for box in boxes:
        for drawing in drawings:
            assert not damage.meets(box, drawing) or damage.contains(box, drawing)
    for i, a in enumerate(boxes):
        assert all(not damage.meets(a, b) for b in boxes[i + 1:])
    assert any(damage.contains(b, (45, 28, 46, 29)) for b in boxes)
    assert not any(damage.meets(b, (0, 100, 300, 110)) for b in boxes)


def test_text_blocks_are_shaped_once_per_layer_and_size_and_bounded(monkeypatch):
    import reelfarm.renderer.layers as layers_module

    shaped = []

    class Counting(layers_module.TextBlock):
        def __post_init__(self) -> None:
            shaped.append(self.spec)
            super().__post_init__()

    monkeypatch.setattr(layers_module, "TextBlock", Counting)
    doc = parse_doc(_story("quote"))
    spec = RenderSpec("16:9", 180, doc.fps)
    raster = SkiaRasterizer(doc, "16:9", *spec.size)
    for n in range(doc.frame_count):
        raster.render(spec.time(n))
    assert shaped and len(shaped) == len(raster._texts)
    assert raster._texts.max_entries == TEXT_BLOCKS_MAX_ENTRIES and 0 < raster._texts.nbytes


def test_a_shape_turning_as_it_fades_in_equals_it_drawn_first():
    """A faded shape is drawn through an offscreen layer wider than the shape: a box cutting that
    layer moved its origin and changed a sample by a level (podcast_teaser's badge popping in at
    360p, frame 7), so its box holds the whole layer, not only the shape's corners."""
    doc = parse_doc(_story("podcast_teaser", "9:16"))
    spec = RenderSpec("9:16", 360, doc.fps)
    in_order = SkiaRasterizer(doc, "9:16", *spec.size, yuv=True)
    for n in range(12):
        frame = in_order.render(spec.time(n))
        first = SkiaRasterizer(doc, "9:16", *spec.size, yuv=True).render(spec.time(n))
        assert np.array_equal(frame, first), f"frame {n}"


def test_a_faded_layers_box_holds_its_offscreen_layer_held_or_moving():
    """Static or moving, a faded layer drawn as paths has a box that holds its whole offscreen
    layer (wider than what it draws), so no box redrawn around it moves that layer's origin."""
    doc = parse_doc({
        "version": 1, "fps": 30, "duration": 6, "format": "16:9",
        "scenes": [{"id": "a", "duration": 6, "background": {"type": "solid", "color": "#F8F5F0"}, "layers": [
            {"id": "orb", "type": "shape", "shape": "ellipse", "fill": "#DB2777", "w": 0.3, "h": 0.3,
             "keyframes": {"x": [{"t": 0, "v": 0.2}, {"t": 6, "v": 0.8}]}},
            {"id": "held", "type": "text", "text": "Held, faded, turned", "size": 0.06, "x": 0.5, "y": 0.3,
             "opacity": 0.6, "rotation": 8, "pill": {"color": "#1E1B4B", "padding": 0.03, "radius": 0.02}},
            {"id": "moving", "type": "shape", "shape": "rounded_rect", "fill": "#0E7490", "radius": 0.02,
             "x": 0.5, "y": 0.7, "w": 0.2, "h": 0.1, "opacity": 0.7,
             "keyframes": {"rotation": [{"t": 0, "v": 0}, {"t": 6, "v": 90}]}},
        ]}]})
    spec = RenderSpec("16:9", 360, doc.fps)
    raster = SkiaRasterizer(doc, "16:9", *spec.size, yuv=True)
    raster.render(spec.time(10))
    plan, frame = raster._plan(0), raster._frame_box()
    layers = {layer.id: layer for kind, layer in plan.items if kind == "layer"}
    held = next(item for kind, item in plan.items if kind == "picture")
    pictured = next(l for l in raster._scenes[0] if l.id == "held")
    for layer, box in ((pictured, held[1]), (layers["moving"], raster._main.held.items[2].box)):
        state = raster._state(layer, spec.time(10), 6.0)
        faded = raster._faded_bounds(layer, state, frame)
        assert faded is not None and box is not None
        assert damage.contains(box, damage.turned_box(faded, state.scale, state.rotation, 0.0, *spec.size)), layer.id
    order = list(range(0, 180, 7))
    random.Random(3).shuffle(order)
    first = [SkiaRasterizer(doc, "16:9", *spec.size, yuv=True).render(spec.time(n)).copy() for n in order]
    for n, expected in zip(order, first):
        assert np.array_equal(raster.render(spec.time(n)), expected), f"frame {n}"
