"""The audio mix, on real WAV files made with numpy and decoded through PyAV."""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest

from reelfarm.renderer.audio import decode_audio, encode_audio_into, mix_audio
from reelfarm.renderer.concat import probe
from reelfarm.renderer.encode import X264Encoder, encode_frames
from reelfarm.renderer.errors import AssetError, RendererError

RATE = 48000


@dataclass
class Track:
    asset: str
    start: float = 0.0
    volume: float = 1.0
    fade_in: float = 0.0
    fade_out: float = 0.0
    fit: str = "loop"


def sine(seconds: float, amplitude: float, rate: int = RATE, freq: float = 440.0) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def write_wav(path: Path, channels: list[np.ndarray], rate: int = RATE) -> Path:
    """16-bit PCM WAV with the `wave` module: what users upload most after MP3."""
    pcm = np.round(np.stack(channels, axis=1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(len(channels))
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())
    return path


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Asset id -> file: a stereo 44.1 kHz sine (so resampling is exercised) and a mono one."""
    return {
        "stereo": write_wav(tmp_path / "stereo.wav", [sine(2, 0.8, 44100)] * 2, 44100),
        "mono": write_wav(tmp_path / "mono.wav", [sine(2, 0.5)]),
        "long": write_wav(tmp_path / "long.wav", [sine(4, 0.5)] * 2),
    }


def mix(files: dict[str, Path], tracks: list[Track], duration: float) -> np.ndarray:
    return mix_audio(tracks, lambda asset: str(files[asset]), duration, RATE)


def test_shape_and_dtype(files: dict[str, Path]) -> None:
    out = mix(files, [Track("stereo")], 1.2345)
    assert out.shape == (2, round(1.2345 * RATE)) and out.dtype == np.float32
    assert mix(files, [], 0.5).shape == (2, RATE // 2)


def test_sine_at_half_volume_has_expected_rms(files: dict[str, Path]) -> None:
    out = mix(files, [Track("stereo", volume=0.5)], 2.0)
    middle = out[:, RATE // 4 : -RATE // 4]  # away from resampler edges
    expected = 0.8 * 0.5 / np.sqrt(2)
    assert rms(middle[0]) == pytest.approx(expected, rel=0.01)
    assert rms(middle[1]) == pytest.approx(expected, rel=0.01)


def test_mono_is_duplicated_at_full_level(files: dict[str, Path]) -> None:
    out = mix(files, [Track("mono")], 2.0)
    np.testing.assert_array_equal(out[0], out[1])
    assert rms(out[0]) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_start_offsets_the_track_and_the_timeline_cuts_it(files: dict[str, Path]) -> None:
    """A 2 s file from 0.5 s under a 2 s video: cut by the video's end, over a 1 s fade."""
    out = mix(files, [Track("mono", start=0.5)], 2.0)
    assert np.all(out[:, : RATE // 2] == 0)
    assert rms(out[0, RATE // 2 : RATE]) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)
    assert out[0, -1] == 0 and rms(out[0, RATE:]) < 0.5 / np.sqrt(2) * 0.6


def test_negative_start_trims_the_file(files: dict[str, Path]) -> None:
    """Starting 1.5 s before the timeline leaves 0.5 s of a 2 s file to play (once: not looped)."""
    out = mix(files, [Track("mono", start=-1.5, fit="once")], 1.0)
    assert rms(out[0, : RATE // 2 - 100]) > 0.3
    assert np.all(out[:, RATE // 2 :] == 0)


def test_fades_are_silent_at_the_ends_and_linear(files: dict[str, Path]) -> None:
    out = mix(files, [Track("long", fade_in=1.0, fade_out=1.0)], 4.0)
    full = 0.5 / np.sqrt(2)
    assert out[0, 0] == 0 and out[0, -1] == 0
    assert np.abs(out[:, :48]).max() < 0.5 * 48 / RATE + 1e-6  # amplitude * envelope
    assert np.abs(out[:, -48:]).max() < 0.5 * 48 / RATE + 1e-6
    half = out[0, int(0.4 * RATE) : int(0.6 * RATE)]  # fade-in passes 0.5 at 0.5 s
    assert rms(half) == pytest.approx(full * 0.5, rel=0.05)
    assert rms(out[0, int(1.5 * RATE) : int(2.5 * RATE)]) == pytest.approx(full, rel=0.01)


def test_fade_out_applies_to_the_part_that_plays(files: dict[str, Path]) -> None:
    """A 4 s track under a 1.5 s video fades out by the end of the video, not of the file."""
    out = mix(files, [Track("long", fade_out=0.5)], 1.5)
    assert out[0, -1] == 0
    assert np.abs(out[:, -48:]).max() < 0.5 * 48 / (0.5 * RATE) + 1e-6  # amplitude * envelope
    assert rms(out[0, : RATE // 2]) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_sum_is_clipped(files: dict[str, Path]) -> None:
    out = mix(files, [Track("stereo", volume=1.0), Track("stereo", volume=1.0)], 1.0)
    assert out.max() <= 1.0 and out.min() >= -1.0
    assert out.max() == pytest.approx(1.0)


def test_corrupt_file_raises_asset_error(tmp_path: Path) -> None:
    bad = tmp_path / "song.mp3"
    bad.write_bytes(b"definitely not audio " * 200)
    with pytest.raises(AssetError, match="'music'") as err:
        mix_audio([Track("music")], lambda _: str(bad), 1.0)
    assert isinstance(err.value, RendererError)
    assert "upload" in str(err.value)


def test_missing_file_and_video_only_file_raise_asset_error(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="not found"):
        mix_audio([Track("gone")], lambda _: str(tmp_path / "gone.wav"), 1.0)
    video = tmp_path / "video.mp4"
    frame = np.zeros((90, 160, 4), np.uint8)
    encode_frames(X264Encoder(), str(video), 160, 90, 30, [frame] * 3)
    with pytest.raises(AssetError, match="no audio stream"):
        mix_audio([Track("clip")], lambda _: str(video), 1.0)


def test_file_without_samples_raises_asset_error(tmp_path: Path) -> None:
    empty = write_wav(tmp_path / "empty.wav", [np.zeros(0, np.float32)])
    with pytest.raises(AssetError, match="no audio samples"):
        mix_audio([Track("silence")], lambda _: str(empty), 1.0)


def test_decode_audio_stops_at_the_limit(files: dict[str, Path]) -> None:
    out = decode_audio(str(files["long"]), RATE, skip=RATE, limit=RATE // 2)
    assert out.shape == (2, RATE // 2)


def test_encode_audio_into_writes_aac_of_the_right_length(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    samples = mix(files, [Track("stereo", volume=0.5)], 2.0)
    path = tmp_path / "audio.m4a"
    with av.open(str(path), "w", format="mp4") as container:
        encode_audio_into(container, samples, RATE)
    info = probe(str(path))
    assert info["has_audio"] and info["audio_codec"] == "aac"
    assert (info["audio_rate"], info["audio_channels"]) == (48000, 2)
    assert info["audio_duration"] == pytest.approx(2.0, abs=1024 / RATE)
    back = decode_audio(str(path), RATE)
    assert rms(back[:, RATE // 4 : RATE]) == pytest.approx(0.8 * 0.5 / np.sqrt(2), rel=0.05)
