"""Joining real x264 segments by stream copy, with and without an audio mix."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.renderer.concat import check_segments, concat_segments, probe
from reelfarm.renderer.encode import X264Encoder, encode_frames
from reelfarm.renderer.errors import EncodeError, SegmentsMismatch

W, H, FPS, RATE = 160, 90, 30, 48000
SEGMENTS = [(30, (200, 30, 30)), (45, (30, 200, 30)), (15, (30, 30, 200))]  # 1 s, 1.5 s, 0.5 s
TOTAL = sum(n for n, _ in SEGMENTS)
STARTS = [0, 30, 75]


def segment_frames(n: int, rgb: tuple[int, int, int], width: int = W) -> Any:
    """A solid colour per segment (to check order) with a moving bar (to give P/B frames)."""
    buf = np.empty((H, width, 4), np.uint8)
    for i in range(n):
        buf[..., :3] = rgb
        buf[..., 3] = 255
        x = (i * 4) % (width - 16)
        buf[30:60, x : x + 16, :3] = 240
        yield buf


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = tmp_path_factory.mktemp("segments")
    paths = []
    for k, (n, rgb) in enumerate(SEGMENTS):
        path = str(folder / f"seg{k}.mp4")
        encode_frames(X264Encoder(threads=1), path, W, H, FPS, segment_frames(n, rgb))
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def tone() -> np.ndarray:
    t = np.arange(round(TOTAL / FPS * RATE)) / RATE
    wave = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    return np.stack([wave, wave])


@pytest.fixture(scope="module")
def joined(segments: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("joined") / "video.mp4"
    concat_segments(segments, str(path))
    return path


@pytest.fixture(scope="module")
def joined_with_audio(
    segments: list[str], tone: np.ndarray, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("joined") / "video-audio.mp4"
    concat_segments(segments, str(path), audio=tone, rate=RATE)
    return path


def video_packets(path: str | Path) -> list[Any]:
    with av.open(str(path)) as container:
        return [p for p in container.demux(video=0) if p.size]


def decode_video(path: str | Path) -> list[av.VideoFrame]:
    with av.open(str(path)) as container:
        return list(container.decode(video=0))


def test_each_segment_starts_with_a_keyframe(segments: list[str]) -> None:
    for path, (n, _) in zip(segments, SEGMENTS, strict=True):
        assert video_packets(path)[0].is_keyframe
        assert probe(path)["frames"] == n


def test_joined_file_has_every_frame_at_exact_times(joined: Path) -> None:
    info = probe(str(joined))
    assert (info["width"], info["height"], info["fps"]) == (W, H, 30.0)
    assert info["frames"] == TOTAL
    assert info["video_duration"] == pytest.approx(TOTAL / FPS)
    frames = decode_video(joined)
    assert len(frames) == TOTAL
    assert [f.time for f in frames] == pytest.approx([i / FPS for i in range(TOTAL)], abs=1e-9)
    assert all(frames[i].key_frame for i in STARTS)


def test_pts_are_continuous_across_joints(joined: Path) -> None:
    packets = video_packets(joined)
    pts = sorted(p.pts for p in packets)
    step = pts[1] - pts[0]
    assert step > 0 and all(b - a == step for a, b in pairwise(pts))
    dts = [p.dts for p in packets]
    assert all(b > a for a, b in pairwise(dts))


def test_segments_keep_their_order(joined: Path) -> None:
    frames = decode_video(joined)
    for start, (_, rgb) in zip(STARTS, SEGMENTS, strict=True):
        corner = frames[start].to_ndarray(format="rgb24")[2:10, 2:10].reshape(-1, 3).mean(axis=0)
        assert np.abs(corner - rgb).max() < 12


def test_video_is_copied_not_reencoded(joined: Path, segments: list[str]) -> None:
    source = [bytes(p) for path in segments for p in video_packets(path)]
    assert [bytes(p) for p in video_packets(joined)] == source


def test_format_and_colour_tags_are_preserved(joined: Path) -> None:
    info = probe(str(joined))
    assert (info["codec"], info["profile"], info["pix_fmt"]) == ("h264", "High", "yuv420p")
    assert (info["color_primaries"], info["color_trc"], info["colorspace"]) == ("bt709",) * 3
    assert info["color_range"] == "tv"
    assert info["has_audio"] is False


def test_faststart_puts_the_index_first(joined: Path) -> None:
    data = joined.read_bytes()
    assert data.index(b"moov") < data.index(b"mdat")


def test_audio_mix_is_muxed_as_aac_over_the_timeline(joined_with_audio: Path) -> None:
    info = probe(str(joined_with_audio))
    assert info["frames"] == TOTAL
    assert info["has_audio"] and info["audio_codec"] == "aac"
    assert (info["audio_rate"], info["audio_channels"]) == (RATE, 2)
    assert info["audio_duration"] == pytest.approx(TOTAL / FPS, abs=1024 / RATE)
    frames = decode_video(joined_with_audio)
    assert [f.time for f in frames] == pytest.approx([i / FPS for i in range(TOTAL)], abs=1e-9)


def test_audio_level_survives_aac(joined_with_audio: Path) -> None:
    with av.open(str(joined_with_audio)) as container:
        samples = np.concatenate([f.to_ndarray() for f in container.decode(audio=0)], axis=1)
    middle = samples[:, RATE // 2 : 2 * RATE]
    assert float(np.sqrt(np.mean(middle**2))) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_audio_and_video_are_interleaved(joined_with_audio: Path) -> None:
    """Audio goes in as the video is copied, not all after it."""
    with av.open(str(joined_with_audio)) as container:
        kinds = [p.stream.type for p in container.demux() if p.size]
    first_half = kinds[: len(kinds) // 2]
    assert "audio" in first_half and "video" in first_half


def test_segments_with_other_settings_are_refused(segments: list[str], tmp_path: Path) -> None:
    other = str(tmp_path / "wide.mp4")
    encode_frames(X264Encoder(threads=1), other, 320, H, FPS, segment_frames(5, (0, 0, 0), 320))
    with pytest.raises(SegmentsMismatch, match="different codec parameters"):
        concat_segments([segments[0], other], str(tmp_path / "out.mp4"))
    assert not (tmp_path / "out.mp4").exists()  # nothing is written


def test_segments_of_two_encoder_settings_are_named_with_what_differs(segments: list[str], tmp_path: Path) -> None:
    """Same size and frame rate, other x264 settings (ultrafast: no CABAC, another profile and SPS/PPS),
    as a segment of another encoder family would be."""
    other = str(tmp_path / "ultrafast.mp4")
    encode_frames(X264Encoder(threads=1, preset="ultrafast"), other, W, H, FPS, segment_frames(30, (9, 9, 9)))
    assert probe(other)["profile"] != probe(segments[0])["profile"]
    with pytest.raises(SegmentsMismatch) as caught:
        check_segments([segments[0], segments[1], other], names=["one", "two", "three"])
    assert caught.value.segments == ["three"]
    message = str(caught.value)
    assert "three: profile" in message and "SPS/PPS" in message and "one" in message and "two:" not in message
    check_segments(segments)  # the same settings pass


def test_missing_segment_is_an_encode_error(segments: list[str], tmp_path: Path) -> None:
    with pytest.raises(EncodeError, match="cannot read segment"):
        concat_segments([segments[0], str(tmp_path / "lost.mp4")], str(tmp_path / "out.mp4"))


def test_no_segments_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        concat_segments([], str(tmp_path / "out.mp4"))
