from __future__ import annotations

import numpy as np
import pytest

from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec, frame_size
from reelfarm.renderer.stills import render_still
from tests.helpers import write_png


def _text_doc(text: str, **layer) -> dict:
    return {"version": 1, "fps": 30, "duration": 6, "brand": {"colors": {"background": "#FFFFFF", "text": "#000000"}},
            "scenes": [{"id": "s", "duration": 6, "background": {"type": "solid", "color": "#FFFFFF"},
                        "layers": [{"id": "t", "type": "text", "text": text, "size": 0.1, "x": 0.5, "y": 0.5,
                                    "w": 0.9, "h": 0.5, "color": "#000000", **layer}]}]}


def _ink(frame: np.ndarray) -> np.ndarray:
    """Mask of pixels noticeably darker than the white background."""
    return frame[..., :3].min(axis=-1) < 128


def test_same_doc_same_frames_twice(doc):
    parsed = parse_doc(doc)
    a = SkiaRasterizer(parsed, "16:9", 320, 180)
    b = SkiaRasterizer(parse_doc(doc), "16:9", 320, 180)
    for n in range(0, 180, 7):
        assert np.array_equal(a.render(n / 30), b.render(n / 30)), f"frame {n} differs"


def test_frame_depends_on_time_alone(doc):
    """A frame reached after others equals the same frame drawn first (caches never leak state)."""
    parsed = parse_doc(doc)
    sequential = SkiaRasterizer(parsed, "9:16", 180, 320)
    frames = {n: sequential.render(n / 30).copy() for n in range(180)}
    for n in (0, 14, 89, 95, 101, 179):
        fresh = SkiaRasterizer(parsed, "9:16", 180, 320).render(n / 30)
        assert np.array_equal(frames[n], fresh), f"frame {n} depends on history"


def test_motion_changes_pixels_and_holds_do_not(doc):
    r = SkiaRasterizer(parse_doc(doc), "16:9", 320, 180)
    f0, f1 = r.render(0.0).copy(), r.render(0.5).copy()
    assert not np.array_equal(f0, f1)
    doc["scenes"][0]["layers"] = doc["scenes"][0]["layers"][:1]
    r = SkiaRasterizer(parse_doc(doc), "16:9", 320, 180)
    assert np.array_equal(r.render(1.5).copy(), r.render(2.5))


@pytest.mark.parametrize("text", ["你好世界，欢迎", "こんにちは世界", "नमस्ते दुनिया", "Привет мир", "Γειά σου κόσμε"])
def test_scripts_draw_real_glyphs_not_tofu(text):
    frame = render_still(_text_doc(text), 1.0, RenderSpec("16:9", 360))
    tofu = render_still(_text_doc("\ue000" * len(text)), 1.0, RenderSpec("16:9", 360))
    ink = _ink(frame)
    assert ink.sum() > 300, "no glyphs drawn"
    assert not np.array_equal(ink, _ink(tofu)), "drew the same as missing glyphs"
    h = ink.shape[0]
    ys, _ = np.nonzero(ink)
    assert ys.min() >= h * 0.25 and ys.max() <= h * 0.75, "ink outside the text box"


def test_arabic_is_shaped_and_right_to_left():
    joined = render_still(_text_doc("مرحبا بالعالم", align="start"), 1.0, RenderSpec("16:9", 360))
    isolated = render_still(_text_doc("\u200c".join("مرحبا بالعالم"), align="start"), 1.0, RenderSpec("16:9", 360))
    assert _ink(joined).sum() > 300
    assert not np.array_equal(_ink(joined), _ink(isolated)), "letters were not joined by shaping"
    xs = np.nonzero(_ink(joined))[1]
    assert xs.max() > 640 * 0.9, "start-aligned RTL text should hug the right edge of its box"


def test_hebrew_start_alignment_is_right():
    ink = _ink(render_still(_text_doc("שלום עולם", align="start"), 1.0, RenderSpec("16:9", 360)))
    xs = np.nonzero(ink)[1]
    assert xs.min() > 320 and xs.max() > 640 * 0.9


def test_auto_shrink_fits_long_text():
    long = "A headline long enough that it will never fit at this size in a small box " * 2
    doc = _text_doc(long, auto_shrink=True, min_size=0.02, h=0.3)
    layer = parse_doc(doc).scenes[0].layers[0]
    r = SkiaRasterizer(parse_doc(doc), "16:9", 640, 360)
    block = r._text_block(layer, (0.9 * 640, 0.3 * 360))
    assert block.size_px < 0.1 * 360 and not block.overflows


def test_image_layer_with_cover_and_radius(tmp_path):
    write_png(tmp_path / "photo.png")
    doc = _text_doc("x")
    doc["assets"] = {"photo": {"type": "image", "key": "photo.png"}}
    doc["scenes"][0]["layers"] = [{"id": "img", "type": "image", "asset": "photo", "x": 0.5, "y": 0.5,
                                   "w": 1.0, "h": 1.0, "fit": "cover", "radius": 0.1,
                                   "ken_burns": {"from": {"scale": 1.0}, "to": {"scale": 1.3}}}]
    from reelfarm.renderer.assets import LocalAssets
    frame = render_still(doc, 1.0, RenderSpec("16:9", 180), LocalAssets(tmp_path))
    assert tuple(frame[90, 160, :3]) != (255, 255, 255)
    assert tuple(frame[0, 0, :3]) == (255, 255, 255)  # rounded corner clipped


def test_missing_asset_is_a_clear_error(tmp_path):
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.errors import AssetError
    doc = _text_doc("x")
    doc["assets"] = {"photo": {"type": "image", "key": "nope.png"}}
    doc["scenes"][0]["layers"] = [{"id": "img", "type": "image", "asset": "photo", "w": 0.5, "h": 0.5}]
    with pytest.raises(AssetError, match="photo"):
        render_still(doc, 1.0, RenderSpec("16:9", 180), LocalAssets(tmp_path))


def test_corrupt_image_is_a_clear_error(tmp_path):
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.errors import AssetError
    (tmp_path / "bad.png").write_bytes(b"\x89PNG not really")
    doc = _text_doc("x")
    doc["assets"] = {"photo": {"type": "image", "key": "bad.png"}}
    doc["scenes"][0]["layers"] = [{"id": "img", "type": "image", "asset": "photo", "w": 0.5, "h": 0.5}]
    with pytest.raises(AssetError, match="not a readable"):
        render_still(doc, 1.0, RenderSpec("16:9", 180), LocalAssets(tmp_path))


@pytest.mark.parametrize("kind", ["crossfade", "slide", "wipe", "zoom"])
def test_transitions_blend_between_scenes(doc, kind):
    doc["scenes"][1]["transition"] = {"type": kind, "duration": 1.0, "direction": "left"}
    r = SkiaRasterizer(parse_doc(doc), "16:9", 160, 90)
    before, during, after = r.render(2.9).copy(), r.render(3.5).copy(), r.render(4.5).copy()
    assert not np.array_equal(during, before) and not np.array_equal(during, after)


def test_sizes_are_relative_to_the_short_side():
    doc = _text_doc("Same size")
    ink_wide = _ink(render_still(doc, 1.0, RenderSpec("16:9", 360))).sum()
    ink_tall = _ink(render_still(doc, 1.0, RenderSpec("9:16", 360))).sum()
    assert ink_tall == pytest.approx(ink_wide, rel=0.1)
    assert frame_size("9:16", 360) == (360, 640)


def test_a_word_wider_than_its_box_is_an_overflow_and_shrinks():
    doc = _text_doc("Smart scheduling", font={"family": "Montserrat", "weight": 800}, size=0.142, w=0.8, h=0)
    parsed = parse_doc(doc)
    r = SkiaRasterizer(parsed, "9:16", 360, 640)
    layer = parsed.scenes[0].layers[0].for_format("9:16")
    assert r._text_block(layer, (0.8 * 360, 0)).overflows
    doc["scenes"][0]["layers"][0].update(auto_shrink=True, min_size=0.05)
    parsed = parse_doc(doc)
    shrunk = SkiaRasterizer(parsed, "9:16", 360, 640)._text_block(parsed.scenes[0].layers[0], (0.8 * 360, 0))
    assert not shrunk.overflows and shrunk.size_px < 0.142 * 360


def test_cjk_without_spaces_wraps_instead_of_overflowing():
    doc = _text_doc("这是一个很长的中文句子，没有空格也可以在任何地方换行显示", w=0.5, h=0)
    parsed = parse_doc(doc)
    block = SkiaRasterizer(parsed, "16:9", 640, 360)._text_block(parsed.scenes[0].layers[0], (320, 0))
    assert not block.overflows and block.height > 0.1 * 360 * 1.5


def test_svg_image_is_drawn(tmp_path):
    from reelfarm.renderer.assets import LocalAssets
    (tmp_path / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">'
                                       '<rect width="100" height="100" fill="#ff0000"/></svg>')
    doc = _text_doc("x")
    doc["assets"] = {"logo": {"type": "image", "key": "logo.svg"}}
    doc["scenes"][0]["layers"] = [{"id": "logo", "type": "image", "asset": "logo", "x": 0.5, "y": 0.5,
                                   "w": 0.5, "h": 0.5, "fit": "contain"}]
    frame = render_still(doc, 1.0, RenderSpec("1:1", 200), LocalAssets(tmp_path))
    assert tuple(frame[100, 100, :3]) == (255, 0, 0)
    assert tuple(frame[10, 10, :3]) == (255, 255, 255)


def test_group_moves_and_fades_its_children():
    doc = _text_doc("x")
    child = {"id": "dot", "type": "shape", "shape": "rect", "x": 0.5, "y": 0.5, "w": 1.0, "h": 1.0, "fill": "#000000"}
    doc["scenes"][0]["layers"] = [{"id": "g", "type": "group", "x": 0.25, "y": 0.5, "w": 0.2, "h": 0.2,
                                   "opacity": 0.5, "children": [child]}]
    frame = render_still(doc, 1.0, RenderSpec("1:1", 200))
    assert abs(int(frame[100, 50, 0]) - 128) <= 2          # half-transparent black over white
    assert tuple(frame[100, 150, :3]) == (255, 255, 255)    # nothing right of the group box


@pytest.mark.parametrize("preset", ["typewriter", "word-by-word"])
def test_text_reveals_grow_without_moving_the_layout(preset):
    doc = _text_doc("one two three four", align="left", enter={"preset": preset, "duration": 2.0})
    r = SkiaRasterizer(parse_doc(doc), "16:9", 640, 360)
    inks = [_ink(r.render(t).copy()) for t in (0.3, 1.0, 1.9, 2.5)]
    counts = [int(i.sum()) for i in inks]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    # Revealed glyphs stay where the full text puts them: every inked pixel stays inked.
    assert not np.any(inks[1] & ~inks[3])


def test_wipe_reveals_from_one_side():
    doc = _text_doc("x")
    doc["scenes"][0]["layers"] = [{"id": "bar", "type": "shape", "shape": "rect", "x": 0.5, "y": 0.5, "w": 0.8,
                                   "h": 0.2, "fill": "#000000", "enter": {"preset": "wipe", "direction": "right",
                                                                          "duration": 1.0, "easing": "linear"}}]
    frame = render_still(doc, 0.5, RenderSpec("1:1", 200))
    assert tuple(frame[100, 30, :3]) == (0, 0, 0) and tuple(frame[100, 170, :3]) == (255, 255, 255)


def test_measure_text_reports_height_and_the_widest_word():
    from reelfarm.renderer.text import measure_text
    m = measure_text("Smart scheduling", "Montserrat", 800, 0.142 * 360, 288)
    assert m.widest_word > 288            # "scheduling" alone is wider than the box
    two_lines = measure_text("Smart scheduling", "Montserrat", 800, 40, 200)
    one_line = measure_text("Smart scheduling", "Montserrat", 800, 40, 2000)
    assert two_lines.height > 1.5 * one_line.height and one_line.width > two_lines.width
