"""GIF and WebM outputs: VP9 segments joined by stream copy with Opus sound, alpha where a scene has
no background, and GIFs made from x264 segments with one palette."""
from __future__ import annotations

import av
import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.encode import X264Encoder
from reelfarm.renderer.encode_web import VP9Encoder, content_type, extension
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.render import finish_video, render_segment
from reelfarm.renderer.spec import RenderSpec, clamp_for_container, container_problems
from tests.helpers import write_tone

SPEC = RenderSpec("16:9", 180, 8)  # 320x180, 48 frames over 6 s


def _segments(doc, tmp_path, spec, make_encoder, transparent=False, yuv=True):
    parsed = parse_doc(doc)
    paths = []
    for i, frames in enumerate((range(24), range(24, 48))):
        path = str(tmp_path / f"seg{i}.mp4")
        raster = SkiaRasterizer(parsed, spec.format, *spec.size, LocalAssets(tmp_path), yuv=yuv,
                                transparent=transparent)
        render_segment(parsed, path, spec, frames, LocalAssets(tmp_path), make_encoder(), raster=raster)
        paths.append(path)
    return paths


def test_webm_is_vp9_with_opus_sound_of_the_whole_timeline(doc, tmp_path):
    write_tone(tmp_path / "tone.wav", 6.0)
    doc["assets"] = {"music": {"type": "audio", "key": "tone.wav"}}
    doc["audio"] = [{"asset": "music"}]
    out = tmp_path / "video.webm"
    finish_video(doc, _segments(doc, tmp_path, SPEC, VP9Encoder), str(out), LocalAssets(tmp_path),
                 container="webm")
    with av.open(str(out)) as c:
        assert c.format.name.startswith("matroska")
        video, audio = c.streams.video[0], c.streams.audio[0]
        assert video.codec_context.name == "vp9" and audio.codec_context.name == "opus"
        frames = list(c.decode(video=0))
    assert len(frames) == 48 and (frames[0].width, frames[0].height) == (320, 180)


def test_transparent_webm_keeps_alpha_where_a_scene_has_no_background(doc, tmp_path):
    del doc["scenes"][1]["background"]
    out = tmp_path / "video.webm"
    paths = _segments(doc, tmp_path, SPEC, lambda: VP9Encoder(alpha=True), transparent=True, yuv=False)
    finish_video(doc, paths, str(out), container="webm")
    with av.open(str(out)) as c:
        stream = c.streams.video[0]
        decoder = av.CodecContext.create("libvpx-vp9", "r")
        frames = [f for p in c.demux(stream) for f in decoder.decode(p)]  # the last packet flushes
    assert len(frames) == 48 and frames[0].format.name == "yuva420p"
    first = frames[4].to_ndarray(format="rgba")  # scene one: its gradient background, opaque
    last = frames[-1].to_ndarray(format="rgba")  # scene two: no background
    assert first[..., 3].min() > 250
    assert (last[..., 3] == 0).mean() > 0.5 and last[..., 3].max() > 200  # clear around its text


def test_gif_has_one_palette_size_and_every_frame(doc, tmp_path):
    out = tmp_path / "video.gif"
    finish_video(doc, _segments(doc, tmp_path, SPEC, X264Encoder), str(out), container="gif", fps=SPEC.fps)
    with av.open(str(out)) as c:
        assert c.format.name == "gif" and not c.streams.audio
        frames = list(c.decode(video=0))
    assert len(frames) == 48 and (frames[0].width, frames[0].height) == (320, 180)
    rgb = frames[40].to_ndarray(format="rgb24")  # scene two: the brand's primary, #1D4ED8
    assert np.abs(rgb[2, 2].astype(int) - [0x1D, 0x4E, 0xD8]).max() < 24


def test_names_limits_and_problems():
    assert (extension("gif"), content_type("gif"), content_type("webm")) == ("gif", "image/gif", "video/webm")
    assert clamp_for_container("gif", 2160, 60) == (720, 24, ["resolution", "fps"])
    assert clamp_for_container("webm", 2160, 60) == (2160, 60, [])
    assert [(p.pointer, p.code) for p in container_problems("gif", True)] == [("/transparent", "unsupported")]
    assert [p.pointer for p in container_problems("mov", "yes")] == ["/container", "/transparent"]
    assert container_problems("webm", True) == []
    with pytest.raises(ValueError):
        extension("mov")
