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

A stream whose segments are made apart, with nothing shared between them (a draft's: any node draws
any chunk, and nothing is stitched), carries each segment's own part of the mix instead
(``AudioPart``, from ``segment_sound``): the mix is computable for any span of the timeline
(``reelfarm.renderer.audio``), and each segment encodes its span with two AAC frames of the mix
before and after it, on the timeline's grid of 1024-sample frames, and keeps the packets that start
in its own grid span. So the segments' packets follow each other with no gap or overlap, and each
was encoded from the sound around it as one long encoding would have been (an AAC frame decodes
overlapped with the one before); the joints are inaudible, not bit-exact.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import numpy as np

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


def remux_to_ts(src: str, dst: str, offset_sec: float, audio: AudioSpan | AudioPart | None = None) -> None:
    """Copy the video stream of the MP4 ``src`` into the MPEG-TS ``dst``, its timestamps moved
    ``offset_sec`` later (the segment's start on the video's timeline), with ``audio``'s packets
    (copied from the render's audio, or encoded from the segment's own part; interleaved by time)
    when the video has sound."""
    with av.open(src) as source, av.open(dst, "w", format="mpegts") as out:
        stream = source.streams.video[0]
        copy = out.add_stream_from_template(stream)
        sound: _AudioCopy | _AudioEncode | None = None
        if isinstance(audio, AudioSpan):
            sound = _AudioCopy(audio, out)
        elif audio is not None:
            sound = _AudioEncode(audio, out)
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


AAC_FRAME = 1024  # samples per AAC-LC frame: the grid the segments' packets are cut on
_ROLL = 2 * AAC_FRAME  # encoded either side of a segment's part and dropped


@dataclass(frozen=True)
class AudioPart:
    """A segment's own part of the mix (``segment_sound``): ``samples`` (float32 (2, n) at 48 kHz)
    from timeline sample ``at``, encoded with the segment; the packets kept are those that start in
    [``keep_from``, ``keep_to``) (timeline samples; None: open, for the first and last segment)."""

    samples: Any
    at: int
    keep_from: int | None
    keep_to: int | None

    def holds(self, pts: int) -> bool:
        return (self.keep_from is None or pts >= self.keep_from) and (self.keep_to is None or pts < self.keep_to)


def segment_sound(doc: Any, assets: Any, fmt: str | None, frames: range, fps: int, last: bool,
                  rate: int = 48000) -> AudioPart | None:
    """The part of ``doc``'s mix (as heard in format ``fmt``) that the segment of ``frames`` carries
    when segments are made apart (module docstring); None for a document with nothing to hear.
    ``last``: the video's last segment, which keeps every packet to the end."""
    from reelfarm.renderer.render import mix_doc_audio  # the mixer, loaded where a segment has sound

    total = round(doc.duration * rate)
    s0, s1 = round(frames.start * rate / fps), round(frames.stop * rate / fps)
    k0, k1 = _on_grid(s0), _on_grid(s1)
    first = max(0, k0 - _ROLL)
    end = total if last else min(total, k1 + _ROLL)
    samples = mix_doc_audio(doc, assets, fmt, first=first, count=max(0, end - first))
    if samples is None:
        return None
    return AudioPart(samples, first, k0 if s0 > 0 else None, None if last else k1)


def _on_grid(sample: int) -> int:
    return -(-sample // AAC_FRAME) * AAC_FRAME


class _AudioEncode:
    """Encodes an ``AudioPart`` into a TS muxer's AAC stream, muxing the packets it keeps."""

    def __init__(self, part: AudioPart, out: Any) -> None:
        from reelfarm.renderer.audio import add_aac_stream

        self._stream = add_aac_stream(out)
        self._lead = round(TS_LEAD_SEC * 48000)
        self._out = out
        self._packets = (p for p in self._encoded(part) if p.pts is not None and part.holds(p.pts))
        self._next = next(self._packets, None)

    def _encoded(self, part: AudioPart) -> Any:
        samples = part.samples
        for start in range(0, samples.shape[1], AAC_FRAME):
            chunk = np.ascontiguousarray(samples[:, start : start + AAC_FRAME], dtype=np.float32)
            frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
            frame.sample_rate = 48000
            frame.pts = part.at + start
            yield from self._stream.encode(frame)
        yield from self._stream.encode(None)

    def mux_until(self, at_sec: float) -> None:
        """Mux the kept packets that start before ``at_sec`` on the TS timeline."""
        while self._next is not None and (self._next.pts + self._lead) / 48000 <= at_sec:
            packet, self._next = self._next, next(self._packets, None)
            packet.pts += self._lead
            packet.dts = packet.pts
            self._out.mux(packet)

    def close(self) -> None:
        self._packets.close()


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


SUBTITLES_GROUP = "subs"
WEBVTT_CONTENT_TYPE = "text/vtt"


def ts_timestamp_map() -> str:
    """The WebVTT header line (RFC 8216 3.5) that puts a stream's cue times on its segments' clock:
    the video's second 0 is MPEG-TS time ``TS_LEAD_SEC`` (90 kHz)."""
    return f"X-TIMESTAMP-MAP=MPEGTS:{round(TS_LEAD_SEC * 90000)},LOCAL:00:00:00.000"


def master_playlist(media_uri: str, subtitles_uri: str, *, width: int, height: int, bandwidth: int,
                    language: str | None = None) -> str:
    """A multivariant playlist: the one video rendition (``media_uri``) with a ``SUBTITLES`` rendition
    (``subtitles_uri``, shown by default) in the group ``SUBTITLES_GROUP``."""
    lang = f',LANGUAGE="{language}"' if language else ""
    return "\n".join([
        "#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-INDEPENDENT-SEGMENTS",
        (f'#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="{SUBTITLES_GROUP}",NAME="Captions"{lang},DEFAULT=YES,'
         f'AUTOSELECT=YES,URI="{subtitles_uri}"'),
        f'#EXT-X-STREAM-INF:BANDWIDTH={bandwidth},RESOLUTION={width}x{height},SUBTITLES="{SUBTITLES_GROUP}"',
        media_uri]) + "\n"


def subtitles_playlist(vtt_uri: str, duration_sec: float) -> str:
    """The media playlist of a subtitles rendition: one WebVTT segment spanning the whole video (its
    cues are known before any frame is drawn), complete from the start."""
    return "\n".join(["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{max(1, math.ceil(duration_sec - 1e-9))}",
                      "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD", f"#EXTINF:{duration_sec:.6f},", vtt_uri,
                      "#EXT-X-ENDLIST"]) + "\n"
