"""Join rendered MP4 segments by stream copy and add the audio mix; inspect MP4 files.

Segments are rendered in parallel, each starting with an IDR frame (closed GOP), so they
can be joined without re-encoding: packets are copied with their timestamps shifted by
the running duration. The audio is mixed once for the whole timeline (``reelfarm.renderer.audio``)
and encoded here as one AAC stream, interleaved with the video as it is copied.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import numpy as np

from reelfarm.renderer.audio import add_aac_stream, iter_aac_packets
from reelfarm.renderer.encode_web import add_opus_stream, iter_opus_packets, open_output
from reelfarm.renderer.errors import EncodeError, SegmentsMismatch

__all__ = ["check_segments", "concat_segments", "probe"]


@dataclass(frozen=True)
class _Layout:
    """What every segment must share for stream copy to give a valid file."""

    width: int
    height: int
    codec: str
    pix_fmt: str | None
    fps: Fraction
    extradata: bytes  # the SPS and PPS (avcC)
    profile: str | None = None
    level: int | None = None
    time_base: Fraction = Fraction(0)

    @classmethod
    def of(cls, stream: Any) -> _Layout:
        cc = stream.codec_context
        return cls(
            cc.width,
            cc.height,
            cc.name,
            cc.pix_fmt,
            Fraction(stream.average_rate or stream.guessed_rate or 0),
            bytes(cc.extradata or b""),
            cc.profile,
            getattr(cc, "level", None),
            Fraction(stream.time_base or 0),
        )

    def differences(self, other: _Layout) -> list[str]:
        """What differs from ``other``, in words (``profile High vs Constrained Baseline``)."""
        shown = {"extradata": "SPS/PPS"}
        found = []
        for name in ("width", "height", "codec", "pix_fmt", "fps", "profile", "level", "time_base", "extradata"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                found.append(shown[name] if name == "extradata" else f"{name} {mine} vs {theirs}")
        return found


class _AudioFeed:
    """Mux AAC packets lazily, up to the time the video has reached, to interleave them."""

    def __init__(self, output: Any, packets: Iterator[Any]) -> None:
        self._output = output
        self._packets = packets
        self._next: Any = next(self._packets, None)

    def mux_until(self, seconds: float) -> None:
        while self._next is not None and _seconds(self._next) <= seconds:
            self._output.mux(self._next)
            self._next = next(self._packets, None)

    def drain(self) -> None:
        self.mux_until(float("inf"))


def _seconds(packet: Any) -> float:
    """A packet's decode time in seconds (falls back to pts when dts is unset)."""
    ts = packet.dts if packet.dts is not None else packet.pts
    return float(ts * packet.time_base) if ts is not None else 0.0


def _open_segment(path: str) -> Any:
    """Open a segment; a missing or unreadable one is an encoding failure, not a crash."""
    try:
        return av.open(path)
    except (OSError, av.FFmpegError) as exc:
        raise EncodeError(f"cannot read segment {path!r}: {exc}") from exc


def _video_stream(container: Any, path: str) -> Any:
    if not container.streams.video:
        raise EncodeError(f"segment {path!r} has no video stream")
    return container.streams.video[0]


def _check_compatible(layout: _Layout, ref: _Layout, path: str) -> None:
    """Refuse segments that would produce a file players cannot decode past the joint."""
    if layout != ref:
        raise EncodeError(
            f"segment {path!r} was encoded with different settings than the first one "
            f"({layout.width}x{layout.height} {layout.codec} {layout.fps} fps vs "
            f"{ref.width}x{ref.height} {ref.codec} {ref.fps} fps, or different SPS/PPS); "
            "render all segments with the same encoder settings"
        )


def _rescale(ts: int | None, src: Fraction, dst: Fraction) -> int | None:
    return None if ts is None else round(ts * src / dst)


def _copy_segment(
    output: Any,
    out_stream: Any,
    path: str,
    ref: _Layout,
    tb: Fraction,
    offset: int,
    audio: _AudioFeed | None,
) -> int:
    """Copy one segment's video packets shifted to start at ``offset`` (in ``tb``).

    Returns where the next segment starts: this segment's last pts plus one frame.
    """
    frame = round(1 / (ref.fps * tb))
    end = offset
    with _open_segment(path) as seg:
        stream = _video_stream(seg, path)
        _check_compatible(_Layout.of(stream), ref, path)
        src, shift = Fraction(stream.time_base), None
        for packet in seg.demux(stream):
            if packet.size == 0 or packet.pts is None:
                continue
            pts, dts = round(packet.pts * src / tb), _rescale(packet.dts, src, tb)  # pts is set (checked above)
            if shift is None:
                if not packet.is_keyframe:
                    raise EncodeError(f"segment {path!r} does not start with a keyframe")
                shift = offset - pts
            packet.pts, packet.dts = pts + shift, (dts if dts is not None else pts) + shift
            packet.duration = frame
            packet.time_base = tb
            end = max(end, packet.pts + frame)
            if audio is not None:
                audio.mux_until(_seconds(packet))
            packet.stream = out_stream
            output.mux(packet)
    return end


def check_segments(segment_paths: Sequence[str], names: Sequence[str] | None = None) -> None:
    """Refuse, before anything is written, segments whose codec parameters differ from the first's.

    ``names`` are how the message names the segments (default: their paths).

    Raises:
        SegmentsMismatch: naming every segment that differs, and how.
        EncodeError: a segment cannot be read.
    """
    names = list(names or segment_paths)
    layouts = []
    for path in segment_paths:
        with _open_segment(path) as seg:
            layouts.append(_Layout.of(_video_stream(seg, path)))
    odd = [(names[i], layout.differences(layouts[0])) for i, layout in enumerate(layouts) if layout != layouts[0]]
    if odd:
        detail = "; ".join(f"{name}: {', '.join(diff)}" for name, diff in odd)
        raise SegmentsMismatch(f"segments were encoded with different codec parameters than {names[0]} ({detail}); "
                               "joining them would make a file players cannot decode", [name for name, _ in odd])


def concat_segments(
    segment_paths: Sequence[str],
    out_path: str,
    audio: np.ndarray | None = None,
    rate: int = 48000,
    container: str = "mp4",
) -> None:
    """Join MP4 (or, with ``container`` "webm", VP9 WebM) segments (each starting with a keyframe) into ``out_path`` without re-encoding.

    Timestamps continue across joints (frame i of the result is at i/fps), colour tags and
    SPS/PPS come from the first segment, and ``audio`` (float32 (2, n) at ``rate``), if
    given, is encoded once as AAC over the whole timeline. The file is written with
    faststart. Segments with different encoder settings are refused (EncodeError); on any
    failure the partly written ``out_path`` is removed.
    """
    if not segment_paths:
        raise ValueError("concat_segments needs at least one segment")
    check_segments(segment_paths)
    with _open_segment(segment_paths[0]) as first:
        template = _video_stream(first, segment_paths[0])
        ref, tb = _Layout.of(template), Fraction(template.time_base)
        if ref.fps <= 0:
            raise EncodeError(f"segment {segment_paths[0]!r} has no frame rate")
        output = open_output(out_path, container)
        try:
            _write(output, template, segment_paths, ref, tb, audio, rate, container)
            output.close()
        except av.FFmpegError as exc:
            _discard(output, out_path)
            raise EncodeError(f"joining segments into {out_path!r} failed: {exc}") from exc
        except BaseException:
            _discard(output, out_path)
            raise


def _discard(output: Any, path: str) -> None:
    """Close and delete a half-written output: a failed join must not leave a broken file."""
    with contextlib.suppress(Exception):
        output.close()
    with contextlib.suppress(OSError):
        os.remove(path)


def _write(
    output: Any,
    template: Any,
    paths: Sequence[str],
    ref: _Layout,
    tb: Fraction,
    audio: np.ndarray | None,
    rate: int,
    container: str = "mp4",
) -> None:
    """Add the streams, copy every segment in order, then flush the remaining audio (AAC in an
    MP4, Opus in a WebM)."""
    out_video = output.add_stream_from_template(template)
    feed = None
    if audio is not None and container == "webm":
        feed = _AudioFeed(output, iter_opus_packets(add_opus_stream(output, rate), audio, rate))
    elif audio is not None:
        out_audio = add_aac_stream(output, rate)
        feed = _AudioFeed(output, iter_aac_packets(out_audio, audio, rate))
    offset = 0
    for path in paths:
        offset = _copy_segment(output, out_video, path, ref, tb, offset, feed)
    if feed is not None:
        feed.drain()


# --------------------------------------------------------------------------------------
# probe
# --------------------------------------------------------------------------------------

_PRIMARIES = {1: "bt709", 2: "unspecified", 5: "bt470bg", 6: "smpte170m", 9: "bt2020"}
_TRC = {
    1: "bt709",
    2: "unspecified",
    6: "smpte170m",
    13: "iec61966-2-1",
    16: "smpte2084",
    18: "arib-std-b67",
}
_MATRIX = {0: "rgb", 1: "bt709", 2: "unspecified", 5: "bt470bg", 6: "smpte170m", 9: "bt2020nc"}
_RANGE = {0: "unspecified", 1: "tv", 2: "pc"}


def _stream_seconds(stream: Any) -> float | None:
    if stream.duration is None or stream.time_base is None:
        return None
    return float(stream.duration * stream.time_base)


def _count_packets(container: Any, stream: Any) -> int:
    """Frame count when the header has none: one video packet is one frame."""
    return sum(1 for p in container.demux(stream) if p.size > 0)


def _video_info(container: Any, stream: Any) -> dict[str, Any]:
    cc = stream.codec_context
    rate = stream.average_rate or stream.guessed_rate
    return {
        "width": cc.width,
        "height": cc.height,
        "fps": float(rate) if rate else None,
        "frames": stream.frames or _count_packets(container, stream),
        "video_duration": _stream_seconds(stream),
        "codec": cc.name,
        "profile": cc.profile,
        "pix_fmt": cc.pix_fmt,
        "color_primaries": _PRIMARIES.get(cc.color_primaries, str(cc.color_primaries)),
        "color_trc": _TRC.get(cc.color_trc, str(cc.color_trc)),
        "colorspace": _MATRIX.get(cc.colorspace, str(cc.colorspace)),
        "color_range": _RANGE.get(cc.color_range, str(cc.color_range)),
    }


def _audio_info(stream: Any | None) -> dict[str, Any]:
    if stream is None:
        return {
            "has_audio": False,
            "audio_codec": None,
            "audio_rate": None,
            "audio_channels": None,
            "audio_duration": None,
        }
    cc = stream.codec_context
    return {
        "has_audio": True,
        "audio_codec": cc.name,
        "audio_rate": cc.sample_rate,
        "audio_channels": cc.layout.nb_channels,
        "audio_duration": _stream_seconds(stream),
    }


def probe(path: str) -> dict[str, Any]:
    """Describe a media file for tests and the CLI.

    Keys: width, height, fps, frames, duration (container, seconds), video_duration,
    codec, profile, pix_fmt, color_primaries, color_trc, colorspace, color_range
    (names as ffprobe prints them), has_audio, audio_codec, audio_rate, audio_channels,
    audio_duration. Video keys are None for a file without video.
    """
    with av.open(path) as container:
        info: dict[str, Any] = {
            "duration": container.duration / 1_000_000 if container.duration else 0.0,
        }
        video = container.streams.video[0] if container.streams.video else None
        if video is not None:
            info.update(_video_info(container, video))
        else:
            info.update(
                dict.fromkeys(
                    [
                        "width",
                        "height",
                        "fps",
                        "frames",
                        "video_duration",
                        "codec",
                        "profile",
                        "pix_fmt",
                        "color_primaries",
                        "color_trc",
                        "colorspace",
                        "color_range",
                    ]
                )
            )
        info.update(_audio_info(container.streams.audio[0] if container.streams.audio else None))
    return info
