"""Video layers show, in every output frame, exactly the clip frame whose presentation interval
contains ``trim_start + (t - layer start) * speed``, whichever chunk draws it and whatever that
chunk drew before.

The clips are made here: frame ``i`` carries ``i`` as eight black or white bars (most significant
bit left), losslessly encoded, with keyframes 50 frames apart, at frame rates other than the
video's. Each output frame is decoded and its bars read back.
"""
from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.footage import ClipReader, ClipStore, probe_clip
from reelfarm.renderer.linter import lint
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.render import render_segment
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still

BITS = 8
FPS = 30
SIZE = 64  # the videos: 1:1 at resolution 64


def bars(i: int, width: int, height: int, bits: int = BITS) -> np.ndarray:
    """Frame `i` of a clip: `i` in binary as `bits` vertical bars, most significant bit on the left."""
    rgb = np.zeros((height, width, 3), np.uint8)
    for bit in range(bits):
        if (i >> (bits - 1 - bit)) & 1:
            rgb[:, bit * width // bits:(bit + 1) * width // bits] = 255
    return rgb


def make_clip(path: Path, times: list[Fraction], width: int = 64, height: int = 32, rotation: int = 0,
              gop: int = 50, b_frames: bool = False) -> Path:
    """A clip whose frame i is shown from times[i] (seconds) until the next one; lossless, or with
    ``b_frames`` nearly so, three B-frames between P-frames, none of them referred to."""
    container = av.open(str(path), "w")
    stream = container.add_stream("libx264", rate=1000)
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p"
    stream.time_base = Fraction(1, 1000)
    stream.options = {"qp": "0", "g": str(gop), "keyint_min": str(gop), "sc_threshold": "0", "bf": "2"}
    if b_frames:  # x264 makes no B-frame losslessly
        stream.options = {"crf": "4", "g": str(gop), "keyint_min": str(gop), "sc_threshold": "0",
                          "x264-params": "bframes=3:b-adapt=0:b-pyramid=none"}
    if rotation:
        stream.set_display_rotation(rotation)
    for i, start in enumerate(times):
        frame = av.VideoFrame.from_ndarray(bars(i, width, height), format="rgb24")
        frame.pts = int(start * 1000)
        frame.time_base = Fraction(1, 1000)
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()
    return path


def steady(fps: int, seconds: float) -> list[Fraction]:
    return [Fraction(i, fps) for i in range(round(seconds * fps))]


def read_bars(rgb: np.ndarray, vertical: bool = True, bits: int = BITS) -> int:
    """The number the `bits` bars of a frame spell (vertical bars left to right, or horizontal top down)."""
    grey = rgb[..., :3].mean(axis=2)
    n = grey.shape[1] if vertical else grey.shape[0]
    value = 0
    for bit in range(bits):
        centre = int((bit + 0.5) * n / bits)
        band = grey[:, centre - 1:centre + 2] if vertical else grey[centre - 1:centre + 2, :]
        inner = band[band.shape[0] // 4: -band.shape[0] // 4] if vertical else band[:, band.shape[1] // 4: -band.shape[1] // 4]
        value = value * 2 + int(inner.mean() > 127)
    return value


def expected(times: list[Fraction], t: Fraction, start: Fraction = Fraction(0), trim_start: Fraction = Fraction(0),
             speed: Fraction = Fraction(1), loop: bool = False, trim_end: Fraction | None = None,
             clip_end: Fraction | None = None) -> int:
    """The clip frame whose interval contains trim_start + (t - start) * speed, in exact arithmetic."""
    clip_end = clip_end or times[-1] + (times[-1] - times[-2])
    end = clip_end if trim_end is None else min(trim_end, clip_end)
    x = (t - start) * speed
    if loop:
        x = x % (end - trim_start)
    u = min(trim_start + x, end)
    shown = [i for i, s in enumerate(times) if s <= u and s < end]
    return shown[-1]


def doc(layer: dict[str, Any] | None = None, background: dict[str, Any] | None = None,
        duration: float = 6, scenes: int = 1) -> dict[str, Any]:
    each = duration / scenes
    out: dict[str, Any] = {
        "version": 1, "fps": FPS, "duration": duration, "format": "1:1",
        "assets": {"clip": {"type": "video", "key": "clip.mp4"}},
        "scenes": [{"id": f"s{i}", "duration": each, "layers": [], "background": {"type": "solid", "color": "#000000"}}
                   for i in range(scenes)],
    }
    if layer is not None:
        out["scenes"][0]["layers"].append({"id": "v", "type": "video", "asset": "clip", "x": 0.5, "y": 0.5,
                                           "w": 1, "h": 1, "fit": "fill", **layer})
    if background is not None:
        for scene in out["scenes"]:
            scene["background"] = {"type": "video", "asset": "clip", "fit": "fill", **background}
    return out


def decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def render_chunks(tmp: Path, data: dict[str, Any], chunks: list[tuple[int, int]], fresh: bool = True) -> list[np.ndarray]:
    """Frames of `chunks`, each drawn and encoded on its own, as separate nodes do (`fresh`: a new
    rasterizer for each chunk; otherwise one rasterizer draws them all, as one machine does)."""
    spec = RenderSpec("1:1", SIZE, FPS)
    parsed = parse_doc(data)
    assets = LocalAssets(tmp)
    frames: list[np.ndarray] = []
    shared = None if fresh else SkiaRasterizer(parsed, "1:1", *spec.size, assets, yuv=True)
    for n, (a, b) in enumerate(chunks):
        raster = shared or SkiaRasterizer(parsed, "1:1", *spec.size, assets, yuv=True)
        path = tmp / f"seg{n}.mp4"
        try:
            render_segment(parsed, str(path), spec, range(a, b), assets, raster=raster)
        finally:
            if shared is None:
                raster.close()
        frames += decoded(path)
    return frames


CHUNKS = [(0, 23), (23, 61), (61, 90)]  # three chunks, cut at frames no clip keyframe lines up with


@pytest.fixture
def clip25(tmp_path: Path) -> list[Fraction]:
    times = steady(25, 8)
    make_clip(tmp_path / "clip.mp4", times)
    return times


@pytest.mark.parametrize("fresh", [True, False], ids=["a node per chunk", "one rasterizer"])
def test_every_frame_of_every_chunk_shows_the_clip_frame_of_its_instant(tmp_path: Path, clip25: list[Fraction],
                                                                        fresh: bool) -> None:
    data = doc({"trim_start": 0.3, "start": 0.5})
    frames = render_chunks(tmp_path, data, CHUNKS, fresh)
    assert len(frames) == 90
    for n, rgb in enumerate(frames):
        t = Fraction(n, FPS)
        if t < Fraction(1, 2):
            assert rgb.mean() < 20, n  # before the layer starts: the black background
            continue
        want = expected(clip25, t, start=Fraction(1, 2), trim_start=Fraction(3, 10))
        assert read_bars(rgb) == want, (n, read_bars(rgb), want)


def test_speed_two_skips_frames_and_a_loop_wraps(tmp_path: Path) -> None:
    times = steady(24, 2)  # 48 frames, 2 s
    make_clip(tmp_path / "clip.mp4", times)
    data = doc({"trim_start": 0.5, "trim_end": 1.75, "speed": 2, "loop": True})
    frames = render_chunks(tmp_path, data, CHUNKS)
    shown = [read_bars(rgb) for rgb in frames]
    want = [expected(times, Fraction(n, FPS), trim_start=Fraction(1, 2), trim_end=Fraction(7, 4),
                     speed=Fraction(2), loop=True, clip_end=Fraction(2)) for n in range(90)]
    assert shown == want
    assert min(shown) == 12 and max(shown) == 41  # 0.5 s and the last frame before 1.75 s
    assert any(b < a for a, b in pairwise(shown))  # it wrapped
    assert all(b - a in (1, 2, 3) for a, b in pairwise(shown) if b > a)  # 2x at 24 on 30: skips


def test_without_loop_the_last_frame_is_held(tmp_path: Path) -> None:
    times = steady(25, 1)
    make_clip(tmp_path / "clip.mp4", times)
    frames = render_chunks(tmp_path, doc({}), [(0, 45)])
    assert [read_bars(f) for f in frames] == [min(24, expected(times, Fraction(n, FPS), clip_end=Fraction(1)))
                                               for n in range(45)]
    assert read_bars(frames[-1]) == 24


def test_variable_frame_rate_takes_the_frame_presented_at_each_instant(tmp_path: Path) -> None:
    times, t = [], Fraction(0)
    for i in range(100):  # intervals of 20, 50 and 90 ms in turn
        times.append(t)
        t += Fraction((20, 50, 90)[i % 3], 1000)
    make_clip(tmp_path / "clip.mp4", times)
    frames = render_chunks(tmp_path, doc({"speed": 0.7}), CHUNKS)
    for n, rgb in enumerate(frames):
        assert read_bars(rgb) == expected(times, Fraction(n, FPS), speed=Fraction(7, 10)), n


def test_a_background_clip_and_a_still_at_any_time(tmp_path: Path, clip25: list[Fraction]) -> None:
    data = doc(background={"trim_start": 1.0}, scenes=2)  # each scene's clip starts with the scene
    frames = render_chunks(tmp_path, data, [(0, 40), (40, 95), (95, 180)])

    def want(t: Fraction) -> int:
        return expected(clip25, t - (3 if t >= 3 else 0), trim_start=Fraction(1))
    assert [read_bars(rgb) for rgb in frames] == [want(Fraction(n, FPS)) for n in range(180)]
    for t in (Fraction(7, 10), Fraction(2), Fraction(29, 30), Fraction(1, 3), Fraction(101, 30)):
        rgba = render_still(data, float(t), RenderSpec("1:1", SIZE, FPS), LocalAssets(tmp_path))
        assert read_bars(rgba) == want(t), t


def test_rotated_phone_footage_is_shown_turned(tmp_path: Path) -> None:
    times = steady(30, 2)
    # stored landscape, shown portrait: turned a quarter clockwise, so its left column becomes its top row
    make_clip(tmp_path / "clip.mp4", times, width=64, height=32, rotation=-90)
    index = probe_clip(str(tmp_path / "clip.mp4"))
    assert len(index.pts) == 60
    frames = render_chunks(tmp_path, doc({"trim_start": 0.2}), [(0, 30), (30, 60)])
    for n, rgb in enumerate(frames):
        assert read_bars(rgb, vertical=False) == expected(times, Fraction(n, FPS), trim_start=Fraction(1, 5)), n


def test_contain_letterboxes_a_turned_clip_of_odd_size(tmp_path: Path) -> None:
    times = steady(30, 1)
    make_clip(tmp_path / "clip.mp4", times, width=63, height=31, rotation=-90)
    rgba = render_still(doc({"fit": "contain"}), 0.5, RenderSpec("1:1", SIZE, FPS), LocalAssets(tmp_path))
    # shown 31 x 63 in a 64 x 64 box: about 16 px of black either side, bars across the full height
    assert rgba[:, :14, :3].max() < 30 and rgba[:, -14:, :3].max() < 30
    assert read_bars(rgba[:, 18:46], vertical=False) == 15


def test_a_reader_decodes_each_frame_once_in_order_and_seeks_only_to_go_back_or_past_a_keyframe(
        tmp_path: Path, clip25: list[Fraction]) -> None:
    reader = ClipReader(str(tmp_path / "clip.mp4"))
    try:
        for number in range(10, 40):
            assert read_bars(reader.frame(number).to_ndarray(format="rgb24")) == number
        assert (reader.seeks, reader.decoded) == (1, 40)  # one seek to frame 0's keyframe, 0..39 once
        reader.frame(120)  # keyframes at 0, 50, 100...: from 100, not from 40
        assert reader.seeks == 2 and reader.decoded == 40 + 21
        assert read_bars(reader.frame(5).to_ndarray(format="rgb24")) == 5  # back: a seek to 0
        assert reader.seeks == 3
    finally:
        reader.close()


def test_pictures_before_the_frame_asked_that_nothing_refers_to_are_not_decoded(tmp_path: Path) -> None:
    path = make_clip(tmp_path / "b.mp4", steady(25, 8), b_frames=True)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.has_b_frames
        whole = {f.pts: f.to_ndarray(format="rgb24") for f in container.decode(stream)}
    reader = ClipReader(str(path))
    try:
        shown = reader.frame(45)  # keyframe at 0: the P-frames up to it, not the B-frames between
        assert read_bars(shown.to_ndarray(format="rgb24")) == 45 and reader.decoded < 20
        for number in (45, *range(46, 60), 120, 121, 199, 3):
            assert np.array_equal(reader.frame(number).to_ndarray(format="rgb24"), whole[reader.index.pts[number]])
    finally:
        reader.close()


def test_open_decoders_are_bounded(tmp_path: Path, clip25: list[Fraction]) -> None:
    store = ClipStore(parse_doc(doc({})), LocalAssets(tmp_path), max_open=2)
    for slot in "abcde":
        store.fitted("clip", slot, 3, 16, 16, "fill")
    assert len(store._readers) == 2
    store.close()


def test_a_missing_clip_is_an_asset_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="'clip'"):
        render_still(doc({}), 1.0, RenderSpec("1:1", SIZE, FPS), LocalAssets(tmp_path))


def _codes(report: Any) -> list[tuple[str, str]]:
    return [(p.pointer, p.code) for p in report.errors + report.warnings]


def test_the_linter_names_clips_too_short_missing_or_trimmed_wrong(tmp_path: Path) -> None:
    make_clip(tmp_path / "clip.mp4", steady(25, 2))  # 2 s
    assets = LocalAssets(tmp_path)
    layer = "/scenes/0/layers/0"
    # 6 s to fill from 0.5 s of a 2 s clip: too short, unless it loops or runs slower
    assert _codes(lint(doc({"trim_start": 0.5}), assets, check_layout=False)) == [(layer + "/asset", "clip_too_short")]
    assert _codes(lint(doc({"trim_start": 0.5, "loop": True}), assets, check_layout=False)) == []
    assert _codes(lint(doc({"speed": 0.33}), assets, check_layout=False)) == []
    assert _codes(lint(doc({"start": 4.1}), assets, check_layout=False)) == []  # 1.9 s to fill
    assert _codes(lint(doc({"start": 3.9}), assets, check_layout=False)) == [(layer + "/asset", "clip_too_short")]
    assert _codes(lint(doc(background={}), assets, check_layout=False)) == [("/scenes/0/background/asset",
                                                                             "clip_too_short")]
    assert _codes(lint(doc({"trim_start": 2.5, "loop": True}), assets, check_layout=False)) == [
        (layer + "/trim_start", "bad_trim")]
    assert _codes(lint(doc({"trim_start": 1, "trim_end": 0.5, "loop": True}), check_layout=False)) == [
        (layer + "/trim_end", "bad_trim")]
    report = lint(doc({"loop": True}), LocalAssets(tmp_path / "elsewhere"), check_layout=False)
    assert _codes(report) == [(layer + "/asset", "missing_asset")] and "'clip'" in report.errors[0].message
    # measured by the caller (a media library knows its clips' lengths): no file is read
    assert _codes(lint(doc({}), clip_duration=lambda asset_id: 6.0, check_layout=False)) == []
    assert _codes(lint(doc({}), clip_duration=lambda asset_id: 5.0, check_layout=False)) == [
        (layer + "/asset", "clip_too_short")]


def test_a_video_layer_must_name_a_video_asset() -> None:
    data = doc({})
    data["assets"]["still"] = {"type": "image", "key": "a.png"}
    data["scenes"][0]["layers"][0]["asset"] = "still"
    data["scenes"][0]["layers"].append({"id": "v2", "type": "video", "asset": "nothing"})
    assert _codes(lint(data, check_layout=False)) == [("/scenes/0/layers/0/asset", "wrong_asset_type"),
                                                      ("/scenes/0/layers/1/asset", "unknown_asset")]
    del data["scenes"][0]["layers"][1]["asset"]
    assert lint(data, check_layout=False).errors[0].pointer == "/scenes/0/layers/1"  # schema: asset required
