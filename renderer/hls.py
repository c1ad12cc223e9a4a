"""HLS from a render's segments: each chunk's MP4 remuxed (stream copy, no second encode) into an
MPEG-TS segment at its place on the video's timeline, and the media playlist (RFC 8216) that lists
them.

MPEG-TS rather than fMP4: a chunk's MP4 is already a closed GOP that starts with an IDR frame, so
the TS segment is the same bitstream with timestamps moved to the chunk's start (FFmpeg's muxer
converts H.264 to Annex B by itself); no init segment is needed, and every HLS client, FFmpeg's
demuxer included, plays it.

Sound: the document's audio is mixed and encoded to AAC once for the whole render
(``write_stream_audio``, the same mix as the final MP4's), and each segment carries the slice of
those packets that falls in its time span, copied (``AudioSpan``): no segment re-encodes audio,
so the sound runs on across segment boundaries without a gap or a restarted fade.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av

TS_CONTENT_TYPE = "video/mp2t"
# Every segment's timestamps start this much later than its place on the video's timeline. A chunk's
# first frames decode before they show (B-frames: the first DTS is below 0), and a muxer moves a
# file's negative timestamps up by itself, which would move the first segment alone and leave
# two segments with the same DTS where they meet; a common lead keeps every DTS positive and the
# run of them increasing across segments. Players show the stream from its first timestamp.
TS_LEAD_SEC = 1.0
PLAYLIST_CONTENT_TYPE = "application/vnd.apple.mpegurl"
AUDIO_CONTENT_TYPE = "audio/mp4"


@dataclass(frozen=True)
class AudioSpan:
    """The part of the render's encoded audio (an M4A from ``write_stream_audio``) a segment
    carries: the packets that start in [``start_sec``, ``end_sec``) of the video's timeline.
    ``start_sec`` None for the first segment (the encoder's priming packet, which starts before
    0, with it), ``end_sec`` None for the last (every packet left)."""

    path: str
    start_sec: float | None
    end_sec: float | None

    def holds(self, at_sec: float) -> bool:
        return (self.start_sec is None or at_sec >= self.start_sec) and (self.end_sec is None or at_sec < self.end_sec)


def write_stream_audio(samples: Any, dst: str) -> None:
    """Encode the render's audio mix (float32 (2, n) at 48 kHz, ``reelfarm.renderer.audio``) once
    into the M4A ``dst``, as the final MP4's audio stream is encoded."""
    from reelfarm.renderer.audio import encode_audio_into

    with av.open(dst, "w", format="mp4") as out:
        encode_audio_into(out, samples)


def remux_to_ts(src: str, dst: str, offset_sec: float, audio: AudioSpan | None = None) -> None:
    """Copy the video stream of the MP4 ``src`` into the MPEG-TS ``dst``, its timestamps moved
    ``offset_sec`` later (the segment's start on the video's timeline), with ``audio``'s packets
    (copied, interleaved by time) when the video has sound."""
    with av.open(src) as source, av.open(dst, "w", format="mpegts") as out:
        stream = source.streams.video[0]
        copy = out.add_stream_from_template(stream)
        sound = _AudioCopy(audio, out) if audio is not None else None
        base = stream.time_base or Fraction(1, 90000)
        offset = round((offset_sec + TS_LEAD_SEC) / base)
        try:
            for packet in source.demux(stream):
                if packet.dts is None:  # the demuxer's flush packet
                    continue
                if sound is not None:
                    sound.mux_until(float((packet.dts + offset) * base))
                packet.dts += offset
                if packet.pts is not None:
                    packet.pts += offset
                packet.stream = copy
                out.mux(packet)
            if sound is not None:
                sound.mux_until(math.inf)
        finally:
            if sound is not None:
                sound.close()


class _AudioCopy:
    """Copies an ``AudioSpan``'s packets into a TS muxer, on the stream's timeline plus the lead."""

    def __init__(self, span: AudioSpan, out: Any) -> None:
        self._source = av.open(span.path)
        stream = self._source.streams.audio[0]
        self._copy = out.add_stream_from_template(stream)
        self._base: Fraction = stream.time_base or Fraction(1, 48000)
        self._lead = round(TS_LEAD_SEC / self._base)
        self._out = out
        self._packets = (p for p in self._source.demux(stream)
                         if p.dts is not None and span.holds(float(p.dts * self._base)))
        self._next = next(self._packets, None)

    def mux_until(self, at_sec: float) -> None:
        """Mux the packets that start before ``at_sec`` on the TS timeline."""
        while self._next is not None and float((self._next.dts or 0) * self._base) + TS_LEAD_SEC <= at_sec:
            packet, self._next = self._next, next(self._packets, None)
            packet.dts = (packet.dts or 0) + self._lead
            if packet.pts is not None:
                packet.pts += self._lead
            packet.stream = self._copy
            self._out.mux(packet)

    def close(self) -> None:
        self._source.close()


@dataclass(frozen=True)
class Segment:
    uri: str
    duration_sec: float


def target_duration(durations: Sequence[float]) -> int:
    """``#EXT-X-TARGETDURATION``: the longest segment rounded up to whole seconds (RFC 8216 4.3.3.1),
    known from the render's plan before any segment exists."""
    return max(1, math.ceil(max(durations, default=1.0) - 1e-9))


def media_playlist(segments: Sequence[Segment], target: int, *, ended: bool) -> str:
    """A media playlist of ``segments`` from the start: an ``EVENT`` playlist (only ever appended to)
    while more may come, closed with ``#EXT-X-ENDLIST`` once ``ended``. Players start at the
    beginning (``#EXT-X-START:TIME-OFFSET=0``), not at the live edge."""
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{target}", "#EXT-X-MEDIA-SEQUENCE:0",
             "#EXT-X-PLAYLIST-TYPE:EVENT", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-START:TIME-OFFSET=0"]
    for segment in segments:
        lines += [f"#EXTINF:{segment.duration_sec:.6f},", segment.uri]
    if ended:
        lines.append("#EXT-X-ENDLIST")
    return "\n".join(lines) + "\n"
