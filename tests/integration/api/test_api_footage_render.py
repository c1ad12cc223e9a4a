"""A clip from the media library in a rendered video, through the HTTP API and the embedded farm.

A clip made here with PyAV (each picture carrying its own number as black and white bars, a 440 Hz
tone as its sound) is uploaded to the library; a video's document names it by its key as a
``video`` layer that starts 0.5 s in, 1 s trimmed off, at 1.5x; the render is requested, drawn in
chunks by the farm, stitched, and downloaded. Every frame of the MP4 shows the clip picture whose
presentation interval holds ``trim_start + (t - layer start) * speed`` (``reelfarm.renderer.footage``:
the last picture starting at or before that clip second, so ``floor`` of it times the clip's fps),
on both sides of every chunk boundary, and its sound is the tone played 1.5x as fast (660 Hz) from
the layer's start on, silence before (and the render's stream carries it). Another workspace cannot name the clip in its documents.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.farm.services import stream
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import upload
from tests.integration.api.test_api_renders import _download, _video, _wait, farm_client  # noqa: F401
from tests.integration.api.test_api_streams import plan
from tests.unit.renderer.test_footage import bars as footage_bars
from tests.unit.renderer.test_footage import read_bars as footage_read_bars

BITS = 10
CLIP_FPS = 30
CLIP_SEC = 11.0
RATE = 48000
TONE = 440.0
FPS = 24
LAYER_START, TRIM_START, SPEED = 0.5, 1.0, 1.5


def bars(i: int, width: int = 80, height: int = 32) -> np.ndarray:
    """Picture ``i`` of the clip: ``i`` in binary as vertical bars, most significant bit left."""
    return footage_bars(i, width, height, BITS)


def read_bars(rgb: np.ndarray) -> int:
    return footage_read_bars(rgb, bits=BITS)


def numbered_clip(path: Path) -> bytes:
    """An H.264 + AAC MP4 as a phone makes one: ``CLIP_SEC`` of numbered pictures and the tone."""
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=CLIP_FPS)
        video.width, video.height, video.pix_fmt = 80, 32, "yuv420p"
        sound = container.add_stream("aac", rate=RATE)
        sound.layout = "mono"
        for i in range(round(CLIP_SEC * CLIP_FPS)):
            frame = av.VideoFrame.from_ndarray(bars(i), format="rgb24")
            frame.pts = i
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        total = round(CLIP_SEC * RATE)
        for start in range(0, total, 1024):
            u = (start + np.arange(min(1024, total - start))) / RATE
            frame = av.AudioFrame.from_ndarray((0.5 * np.sin(2 * np.pi * TONE * u)).astype(np.float32)[None],
                                               format="fltp", layout="mono")
            frame.sample_rate, frame.pts, frame.time_base = RATE, start, Fraction(1, RATE)
            container.mux(sound.encode(frame))
        container.mux(sound.encode(None))
    return path.read_bytes()


def clip_doc(key: str) -> dict[str, Any]:
    """7 s in one scene: a farm cuts it after 1 s (its lead chunk) and about halfway, both inside the layer."""
    return {
        "version": 1, "fps": FPS, "duration": 7, "format": "1:1",
        "assets": {"clip": {"type": "video", "key": key}},
        "scenes": [{"id": "only", "duration": 7, "background": {"type": "solid", "color": "#000000"}, "layers": [
            {"id": "clip", "type": "video", "asset": "clip", "x": 0.5, "y": 0.5, "w": 1, "h": 1, "fit": "fill",
             "start": LAYER_START, "trim_start": TRIM_START, "speed": SPEED, "volume": 0.8}]}],
    }


def shown(t: Fraction) -> int:
    """The clip picture on screen at video second ``t`` (exact arithmetic)."""
    u = Fraction(TRIM_START) + (t - Fraction(LAYER_START)) * Fraction(SPEED)
    return math.floor(u * CLIP_FPS)


def tone_level(pcm: np.ndarray, a: float, b: float, freq: float) -> float:
    """The RMS of what ``pcm`` carries within 20 Hz of ``freq`` between seconds ``a`` and ``b``."""
    part = pcm[round(a * RATE):round(b * RATE)].astype(np.float64)
    spectrum = np.fft.rfft(part)
    spectrum[np.abs(np.fft.rfftfreq(len(part), 1 / RATE) - freq) >= 20] = 0
    return float(np.sqrt(np.mean(np.fft.irfft(spectrum, len(part)) ** 2)))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the frames and sound are the renderer's, whatever the database
def test_a_library_clip_renders_frame_for_frame_across_chunks_with_its_sound(farm_client, make_tenant,  # noqa: F811
                                                                             services, tmp_path: Path) -> None:
    tenant = make_tenant(credits=3)
    uploaded = upload(farm_client, tenant, numbered_clip(tmp_path / "clip.mp4"), name="clip.mp4")
    assert uploaded.status_code == 201, uploaded.get_json()
    asset = uploaded.get_json()
    assert (asset["kind"], asset["fps"], asset["has_audio"]) == ("video", CLIP_FPS, True)
    video = _video(farm_client, tenant)
    edited = farm_client.patch(f"/api/v1/videos/{video['id']}", json={"doc": clip_doc(asset["key"])},
                               headers=tenant.headers)
    assert edited.status_code == 200, edited.get_json()

    requested = farm_client.post(f"/api/v1/videos/{video['id']}/renders",
                                 json={"format": "1:1", "resolution": 720, "fps": FPS}, headers=tenant.headers)
    assert requested.status_code == 202, requested.get_json()
    done, _ = _wait(farm_client, f"/api/v1/renders/{requested.get_json()['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    starts = plan(services, done["id"])
    assert len(starts) >= 3 and starts[1] / FPS > LAYER_START, f"two chunk boundaries while the clip shows: {starts}"

    mp4 = tmp_path / "video.mp4"
    mp4.write_bytes(_download(farm_client, done["url"]))
    with av.open(str(mp4)) as container:
        decoded = list(container.decode(*container.streams.video, *container.streams.audio))
    pictures = [f.to_ndarray(format="rgb24") for f in decoded if isinstance(f, av.VideoFrame)]
    assert len(pictures) == 7 * FPS and pictures[0].shape == (720, 720, 3)
    for n, rgb in enumerate(pictures):
        t = Fraction(n, FPS)
        if t < LAYER_START:
            assert rgb.max() < 40, f"frame {n}: nothing shows before the layer starts"
        else:
            assert read_bars(rgb) == shown(t), f"frame {n} (chunk starting at frame {max(s for s in starts if s <= n)})"

    sound = np.concatenate([f.to_ndarray()[0] for f in decoded if isinstance(f, av.AudioFrame)])
    assert abs(len(sound) / RATE - 7) < 0.05
    played = tone_level(sound, 0.6, 6.9, TONE * SPEED)
    assert abs(played - 0.8 * 0.5 / math.sqrt(2)) < 0.04, played  # the clip's tone, at the layer's volume
    assert tone_level(sound, 0.6, 6.9, TONE) < 0.02 * played  # played faster, so not at 440 Hz
    assert np.abs(sound[: round(0.49 * RATE)]).max() < 1e-3, "silence before the layer starts"
    assert services.storage.exists(stream.stream_audio_key(done["id"])), "the render's stream has the sound too"


def test_another_workspace_cannot_name_the_clip(client, make_tenant, tmp_path: Path) -> None:
    owner, other = make_tenant(name="owner"), make_tenant(name="other")
    asset = upload(client, owner, numbered_clip(tmp_path / "clip.mp4"), name="clip.mp4").get_json()
    video = _video(client, other)
    refused = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": clip_doc(asset["key"])},
                           headers=other.headers)
    error = assert_error(refused, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/doc/assets/clip/key"]
