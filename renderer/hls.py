"""HLS from a render's segments: each chunk's MP4 remuxed (stream copy, no second encode) into an
MPEG-TS segment at its place on the video's timeline, and the media playlist (RFC 8216) that lists
them.

MPEG-TS rather than fMP4: a chunk's MP4 is already a closed GOP that starts with an IDR frame, so
the TS segment is the same bitstream with timestamps moved to the chunk's start (FFmpeg's muxer
converts H.264 to Annex B by itself); no init segment is needed, and every HLS client, FFmpeg's
demuxer included, plays it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import av

TS_CONTENT_TYPE = "video/mp2t"
# Every segment's timestamps start this much later than its place on the video's timeline. A chunk's
# first frames decode before they show (B-frames: the first DTS is below 0), and a muxer moves a
# file's negative timestamps up by itself, which would move the first segment alone and leave
# two segments with the same DTS where they meet; a common lead keeps every DTS positive and the
# run of them increasing across segments. Players show the stream from its first timestamp.
TS_LEAD_SEC = 1.0
PLAYLIST_CONTENT_TYPE = "application/vnd.apple.mpegurl"


def remux_to_ts(src: str, dst: str, offset_sec: float) -> None:
    """Copy the video stream of the MP4 ``src`` into the MPEG-TS ``dst``, its timestamps moved
    ``offset_sec`` later (the segment's start on the video's timeline)."""
    with av.open(src) as source, av.open(dst, "w", format="mpegts") as out:
        stream = source.streams.video[0]
        copy = out.add_stream_from_template(stream)
        offset = round((offset_sec + TS_LEAD_SEC) / stream.time_base) if stream.time_base else 0
        for packet in source.demux(stream):
            if packet.dts is None:  # the demuxer's flush packet
                continue
            packet.dts += offset
            if packet.pts is not None:
                packet.pts += offset
            packet.stream = copy
            out.mux(packet)


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
