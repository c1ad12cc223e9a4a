from __future__ import annotations

import gc
import io
import os

import av
import numpy as np
import pytest
from PIL import Image

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.backends import RasterChoice
from reelfarm.renderer.chunks import plan_chunks
from reelfarm.renderer.concat import probe
from reelfarm.renderer.render import render_segment, render_video
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still_png, write_poster
from tests.helpers import write_tone


def decoded_frames(path):
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        frames = [(f.pts * stream.time_base, f.key_frame) for f in c.decode(stream)]
    return frames


@pytest.mark.parametrize("workers,fps", [(1, 30), (2, 24)])
def test_render_video_frame_count_size_and_timestamps(doc, tmp_path, workers, fps):
    out = tmp_path / "out.mp4"
    stats = render_video(doc, str(out), RenderSpec("9:16", 180, fps), workers=workers)
    info = probe(str(out))
    assert (info["width"], info["height"]) == (180, 320)
    assert info["fps"] == fps
    assert info["frames"] == stats.frames == 6 * fps
    assert info["profile"] == "High" and info["pix_fmt"] == "yuv420p"
    assert info["colorspace"] == "bt709" and info["color_range"] == "tv"
    assert not info["has_audio"]
    times = [float(t) for t, _ in decoded_frames(out)]
    assert times == pytest.approx([n / fps for n in range(6 * fps)], abs=1e-6)


def test_audio_is_mixed_and_muxed(doc, tmp_path):
    write_tone(tmp_path / "tone.wav", 3.0)
    doc["assets"] = {"music": {"type": "audio", "key": "tone.wav"}}
    doc["audio"] = [{"asset": "music", "start": 1.0, "volume": 0.8, "fade_in": 0.5, "fade_out": 0.5}]
    out = tmp_path / "a.mp4"
    render_video(doc, str(out), RenderSpec("1:1", 180), workers=2, assets=LocalAssets(tmp_path))
    info = probe(str(out))
    assert info["has_audio"] and info["audio_codec"] == "aac" and info["audio_rate"] == 48000
    assert info["audio_duration"] == pytest.approx(6.0, abs=0.05)
    with av.open(str(out)) as c:
        pcm = np.concatenate([f.to_ndarray().reshape(-1) for f in c.decode(audio=0)])
    quiet, loud = pcm[: 48000 * 2 // 2], pcm[48000 * 2 * 2: 48000 * 2 * 3]  # 0-0.5 s silent, 2-3 s tone
    assert np.abs(quiet).max() < 0.01 and np.abs(loud).max() > 0.2


def test_segments_start_with_keyframes(doc, tmp_path):
    chunks = plan_chunks(180, 3)
    assert chunks == [(0, 60), (60, 120), (120, 180)]
    for i, (a, b) in enumerate(chunks):
        path = tmp_path / f"s{i}.mp4"
        assert render_segment(doc, str(path), RenderSpec("16:9", 180, 30), range(a, b)) == b - a
        frames = decoded_frames(path)
        assert len(frames) == b - a and frames[0][1]


def test_progress_reaches_total(doc, tmp_path):
    seen = []
    render_video(doc, str(tmp_path / "p.mp4"), RenderSpec("16:9", 180), workers=2, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (180, 180)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_still_png_and_poster(doc, tmp_path):
    png = render_still_png(doc, 2.5, RenderSpec("4:5", 360))
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (360, 450)
    poster = tmp_path / "poster.jpg"
    write_poster(doc, str(poster), RenderSpec("16:9", 360))
    image = Image.open(poster)
    assert image.format == "JPEG" and image.size == (640, 360)


def test_colours_survive_render_and_encode(tmp_path):
    """Pure red drawn by the rasterizer decodes as red (channel order and BT.709 both right)."""
    doc = {"version": 1, "fps": 30, "duration": 6,
           "scenes": [{"id": "s", "duration": 6, "background": {"type": "solid", "color": "#FF0000"},
                       "layers": [{"id": "b", "type": "shape", "shape": "rect", "x": 0.75, "y": 0.5, "w": 0.5,
                                   "h": 1.0, "fill": "#0000FF"}]}]}
    out = tmp_path / "red.mp4"
    render_video(doc, str(out), RenderSpec("16:9", 180), workers=1)
    with av.open(str(out)) as c:
        frame = next(c.decode(video=0))
        rgb = frame.to_ndarray(format="rgb24", dst_colorspace="ITU709", src_colorspace="ITU709")
        y = frame.to_ndarray(format="yuv420p")[:180]
    assert y[90, 40] == pytest.approx(63, abs=1)  # BT.709 limited range: red has Y=63
    r, g, b = (int(v) for v in rgb[90, 40])
    assert r > 230 and g < 25 and b < 25
    r, g, b = (int(v) for v in rgb[90, 280])
    assert b > 230 and r < 25 and g < 25


def _child_sigterm_is_default(source, out):
    import signal

    from reelfarm.renderer.backends import EncoderChoice
    from reelfarm.renderer.render import _worker_init
    _worker_init(source, RenderSpec("16:9", 180, 30), RasterChoice("cpu"), None, None, EncoderChoice(), {})
    out.put(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)


def test_chunk_processes_die_on_sigterm_whatever_the_host_taught_them(doc, tmp_path):
    """A host (an RQ worker, a server) may ignore SIGTERM; a forked chunk process must not, or
    a pool torn down while one worker holds the queue lock waits forever."""
    import multiprocessing
    import signal

    ctx = multiprocessing.get_context("fork")
    out = ctx.SimpleQueue()
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        child = ctx.Process(target=_child_sigterm_is_default, args=(doc, out))
        child.start()
        child.join(30)
        assert child.exitcode == 0, "the chunk process set-up failed"  # (out.get() would wait forever)
        assert out.get() is True
        stats = render_video(doc, str(tmp_path / "x.mp4"), RenderSpec("16:9", 180), workers=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stats.frames == 180


def test_stills_from_one_rasterizer_equal_stills_drawn_alone(doc):
    from reelfarm.renderer.stills import iter_stills_png
    times = [2.9, 0.2, 3.25, 5.0]  # out of order, across the transition
    together = list(iter_stills_png(doc, times, RenderSpec("4:5", 180)))
    assert together == [render_still_png(doc, t, RenderSpec("4:5", 180)) for t in times]


class _Dropped:
    """Garbage in a reference cycle whose finalizer notes the process it runs in."""

    def __init__(self, path) -> None:
        self.path, self.me = path, self

    def __del__(self) -> None:
        with open(self.path, "a") as log:
            log.write(f"{os.getpid()}\n")


def test_chunk_processes_never_collect_what_the_parent_dropped(doc, tmp_path, monkeypatch):
    """A finalizer that needs a thread of the parent (a dropped swscale context joining its slice
    threads, a decoder its frame threads) waits for ever in a forked child, where that thread does
    not exist: a chunk process hung so in a test run. What the parent dropped is collected before
    the pool forks, or left to the parent; each child here collects all it can as it starts."""
    import reelfarm.renderer.render as render_module

    started = render_module._worker_init

    def collecting(*args, **kwargs):
        gc.collect()
        started(*args, **kwargs)

    monkeypatch.setattr(render_module, "_worker_init", collecting)
    log = tmp_path / "finalized"
    gc.disable()  # the garbage stays uncollected in this process until the pool forks
    try:
        for _ in range(50):
            _Dropped(log)
        render_video(doc, str(tmp_path / "v.mp4"), RenderSpec("16:9", 180), workers=2)
    finally:
        gc.enable()
    gc.collect()
    pids = log.read_text().split()
    assert len(pids) == 50 and set(pids) == {str(os.getpid())}
