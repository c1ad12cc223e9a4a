"""A video clip's sound is heard in the render while its layer (or background) shows: placed at the
layer's start, from ``trim_start`` into the clip, cut at the layer's end and at the used part's end,
wrapped when it loops, at its ``volume``, played at ``speed`` as a tape would be (the pitch moves
with it), silent when muted, hidden or without sound.

The clips are made here with PyAV: pictures, and a 440 Hz tone as sound. The mix is checked sample
by sample on clips whose sound is lossless PCM (in MOV); a whole MP4 rendered from a clip with AAC
sound, as phones record it, is checked by decoding its audio and measuring the tone's energy.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.audio import DECLICK_SEC, clip_sounds
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.render import mix_doc_audio, render_video
from reelfarm.renderer.spec import RenderSpec

RATE = 48000
TONE = 440.0
LEVEL = 0.5  # the tone's amplitude in the clip
EDGE = round(DECLICK_SEC * RATE)


def make_clip(path: Path, seconds: float = 4.0, fps: int = 25, sound: str | None = "pcm_s16le",
              sound_from: float = 0.0, freq: float = TONE) -> Path:
    """A 32x32 clip of ``seconds`` at ``fps`` whose sound (codec ``sound``, None for none) is a
    tone of ``freq`` from clip second ``sound_from`` to the end: at clip second ``u`` its sample is
    ``LEVEL * sin(2 pi freq u)``."""
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width = video.height = 32
        video.pix_fmt = "yuv420p"
        audio = None
        if sound is not None:
            audio = container.add_stream(sound, rate=RATE)
            audio.layout = "mono"
        for i in range(round(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(np.full((32, 32, 3), i % 256, np.uint8), format="rgb24")
            frame.pts = i
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if audio is not None:
            first = round(sound_from * RATE)
            size = 1024
            for start in range(first, round(seconds * RATE), size):
                u = (start + np.arange(min(size, round(seconds * RATE) - start))) / RATE
                frame = av.AudioFrame.from_ndarray((LEVEL * np.sin(2 * np.pi * freq * u)).astype(np.float32)[None],
                                                   format="fltp", layout="mono")
                frame.sample_rate, frame.pts, frame.time_base = RATE, start, Fraction(1, RATE)
                container.mux(audio.encode(frame))
            container.mux(audio.encode(None))
    return path


def tone(u: np.ndarray, freq: float = TONE) -> np.ndarray:
    return LEVEL * np.sin(2 * np.pi * freq * u)


def doc(layers: list[dict[str, Any]] | None = None, background: dict[str, Any] | None = None,
        duration: float = 6.0, scenes: int = 1, clip: str = "clip.mov", **extra: Any) -> dict[str, Any]:
    each = duration / scenes
    data: dict[str, Any] = {
        "version": 1, "fps": 30, "duration": duration, "format": "1:1",
        "assets": {"clip": {"type": "video", "key": clip}},
        "scenes": [{"id": f"s{i}", "duration": each, "layers": [], "background": {"type": "solid", "color": "#000000"}}
                   for i in range(scenes)],
        **extra,
    }
    for layer in layers or []:
        data["scenes"][0]["layers"].append({"id": f"v{len(data['scenes'][0]['layers'])}", "type": "video",
                                            "asset": "clip", "w": 1, "h": 1, **layer})
    if background is not None:
        data["scenes"][-1]["background"] = {"type": "video", "asset": "clip", **background}
    return data


def mixed(tmp: Path, data: dict[str, Any], fmt: str | None = None) -> np.ndarray | None:
    return mix_doc_audio(parse_doc(data), LocalAssets(tmp), fmt)


def seconds(a: float, b: float) -> slice:
    return slice(round(a * RATE), round(b * RATE))


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mov")


def test_the_sound_plays_from_trim_start_at_the_layers_start_until_its_end_at_its_volume(
        tmp_path: Path, clip: Path) -> None:
    out = mixed(tmp_path, doc([{"start": 1.0, "end": 4.0, "trim_start": 0.5, "volume": 0.5}]))
    assert out is not None and out.shape == (2, 6 * RATE)
    t = np.arange(out.shape[1]) / RATE
    want = 0.5 * tone(t - 1.0 + 0.5)  # clip second 0.5 at video second 1
    inside = slice(round(1.0 * RATE) + EDGE, round(4.0 * RATE) - EDGE)
    assert np.abs(out[:, inside] - want[inside]).max() < 1e-3
    assert np.array_equal(out[0], out[1])  # mono heard on both sides at full level
    assert not out[:, seconds(0, 1.0)].any() and not out[:, seconds(4.0, 6.0)].any()
    assert np.abs(out[:, seconds(1.0, 1.0 + DECLICK_SEC)]).max() < np.abs(out[:, inside]).max()  # no click


def test_the_sound_stops_where_the_clip_ends_though_its_last_picture_is_held(tmp_path: Path, clip: Path) -> None:
    out = mixed(tmp_path, doc([{"start": 1.0, "trim_start": 1.0}]))  # 3 s of clip left, 5 s of layer
    assert out is not None
    assert np.abs(out[:, seconds(1.5, 3.9)]).max() > 0.45
    assert not out[:, seconds(4.0 + 1 / RATE, 6.0)].any()


def test_a_loop_wraps_at_trim_end_in_step_with_the_pictures(tmp_path: Path, clip: Path) -> None:
    out = mixed(tmp_path, doc([{"start": 0.5, "trim_start": 1.0, "trim_end": 1.75, "loop": True}]))
    assert out is not None
    t = np.arange(out.shape[1]) / RATE
    want = tone(1.0 + np.mod(t - 0.5, 0.75))
    inside = slice(round(0.5 * RATE) + EDGE, 6 * RATE - EDGE)
    assert np.abs(out[:, inside] - want[inside]).max() < 1e-3
    assert not out[:, seconds(0, 0.5)].any()


def test_at_double_speed_the_sound_runs_twice_as_fast_an_octave_up(tmp_path: Path, clip: Path) -> None:
    out = mixed(tmp_path, doc([{"start": 1.0, "trim_start": 0.5, "speed": 2}]))  # 3.5 s of clip: 1.75 s
    assert out is not None
    t = np.arange(out.shape[1]) / RATE
    want = tone(0.5 + (t - 1.0) * 2)
    inside = slice(round(1.0 * RATE) + EDGE, round(2.75 * RATE) - 64)
    assert np.abs(out[0, inside] - want[inside]).max() < 0.01  # resampled, so not bit for bit
    spectrum = np.abs(np.fft.rfft(out[0, seconds(1.25, 2.25)]))
    assert np.argmax(spectrum) == pytest.approx(2 * TONE, abs=1)  # bins of 1 Hz
    assert not out[:, seconds(2.76, 6.0)].any()


def test_a_slow_clip_is_an_octave_down_and_lasts_twice_as_long(tmp_path: Path, clip: Path) -> None:
    out = mixed(tmp_path, doc([{"start": 0.0, "trim_start": 2.0, "speed": 0.5}]))  # 2 s of clip: 4 s
    assert out is not None
    spectrum = np.abs(np.fft.rfft(out[0, seconds(1.0, 3.0)]))
    assert np.argmax(spectrum) / 2 == pytest.approx(TONE / 2, abs=0.5)  # bins of 0.5 Hz
    assert np.abs(out[:, seconds(3.5, 3.99)]).max() > 0.45 and not out[:, seconds(4.01, 6.0)].any()


def test_muted_hidden_or_soundless_clips_make_no_audio(tmp_path: Path, clip: Path) -> None:
    assert mixed(tmp_path, doc([{"volume": 0}])) is None
    assert mixed(tmp_path, doc([{"hidden": True}])) is None
    make_clip(tmp_path / "mute.mov", sound=None)
    assert mixed(tmp_path, doc([{}], clip="mute.mov")) is None
    muted_square = doc([{"formats": {"1:1": {"volume": 0}}}])
    assert mixed(tmp_path, muted_square) is None
    assert mixed(tmp_path, muted_square, "16:9") is not None


def test_a_group_that_starts_later_cuts_its_childs_sound_in_midway(tmp_path: Path, clip: Path) -> None:
    data = doc()
    data["scenes"][0]["layers"] = [{"id": "g", "type": "group", "start": 2.0, "end": 3.0, "children": [
        {"id": "v", "type": "video", "asset": "clip", "w": 1, "h": 1, "start": 1.0}]}]
    (sound,) = clip_sounds(parse_doc(data))
    assert (sound.start, sound.seconds, sound.elapsed) == (2.0, 1.0, 1.0)
    out = mixed(tmp_path, data)
    assert out is not None
    t = np.arange(out.shape[1]) / RATE
    inside = slice(round(2.0 * RATE) + EDGE, round(3.0 * RATE) - EDGE)
    assert np.abs(out[:, inside] - tone(t - 1.0)[inside]).max() < 1e-3
    assert not out[:, seconds(0, 2.0)].any() and not out[:, seconds(3.0, 6.0)].any()


def test_a_background_clip_sounds_through_its_scene_and_joins_the_soundtrack(tmp_path: Path) -> None:
    make_clip(tmp_path / "clip.mov", seconds=4.0, sound_from=0.25)  # its sound starts 0.25 s in
    make_clip(tmp_path / "music.mov", seconds=6.0, freq=1000.0)
    data = doc(background={"volume": 0.5}, scenes=2, audio=[{"asset": "music", "volume": 0.2}])
    data["assets"]["music"] = {"type": "audio", "key": "music.mov"}
    out = mixed(tmp_path, data)
    assert out is not None
    t = np.arange(out.shape[1]) / RATE
    music = 0.2 * tone(t, 1000.0)
    assert np.abs(out[:, seconds(0, 3.25)] - music[seconds(0, 3.25)]).max() < 1e-3  # the music alone
    inside = slice(round(3.25 * RATE) + 2, 6 * RATE - EDGE)
    assert np.abs(out[:, inside] - (music + 0.5 * tone(t - 3.0))[inside]).max() < 1e-3


# -- a whole MP4 --------------------------------------------------------------------------------

def band_energy(pcm: np.ndarray, a: float, b: float, freq: float = TONE) -> float:
    """The root mean square of what ``pcm`` carries within 20 Hz of ``freq`` between seconds ``a``
    and ``b``."""
    part = pcm[seconds(a, b)].astype(np.float64)
    spectrum = np.fft.rfft(part)
    spectrum[np.abs(np.fft.rfftfreq(len(part), 1 / RATE) - freq) >= 20] = 0
    return float(np.sqrt(np.mean(np.fft.irfft(spectrum, len(part)) ** 2)))


def rendered_sound(tmp: Path, volume: float) -> np.ndarray | None:
    """Render 6 s at 64x64 with the AAC clip as a layer from 1 s to 2.5 s, 0.5 s trimmed off its
    start, and return the MP4's sound (left channel); None when the MP4 has no audio stream."""
    data = doc([{"start": 1.0, "end": 2.5, "trim_start": 0.5, "volume": volume}], clip="clip.mp4")
    out = tmp / f"video{volume}.mp4"
    render_video(data, str(out), RenderSpec("1:1", 64, 30), workers=1, assets=LocalAssets(tmp))
    with av.open(str(out)) as container:
        frames = list(container.decode(*container.streams.video, *container.streams.audio))
    assert sum(isinstance(f, av.VideoFrame) for f in frames) == 180
    sound = [f.to_ndarray()[0] for f in frames if isinstance(f, av.AudioFrame)]
    return np.concatenate(sound) if sound else None


def test_the_mp4_carries_the_clips_tone_only_while_the_layer_shows_scaled_by_volume(tmp_path: Path) -> None:
    make_clip(tmp_path / "clip.mp4", sound="aac")
    loud, soft = rendered_sound(tmp_path, 1.0), rendered_sound(tmp_path, 0.5)
    assert loud is not None and soft is not None
    assert len(loud) == pytest.approx(6 * RATE, abs=1024)
    heard = band_energy(loud, 1.1, 2.4)
    assert heard == pytest.approx(LEVEL / np.sqrt(2), rel=0.1)  # the tone's RMS, as the clip has it
    for a, b in ((0.0, 0.9), (2.6, 6.0)):
        assert band_energy(loud, a, b) < 0.01 * heard and np.sqrt(np.mean(loud[seconds(a, b)] ** 2)) < 1e-3
    audible = np.flatnonzero(np.abs(loud) > 0.05)
    assert (audible[0] / RATE, audible[-1] / RATE) == (pytest.approx(1.0, abs=0.003), pytest.approx(2.5, abs=0.003))
    assert band_energy(soft, 1.1, 2.4) / heard == pytest.approx(0.5, rel=0.05)
    assert rendered_sound(tmp_path, 0.0) is None  # nothing to hear: no audio stream at all
