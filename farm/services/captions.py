"""A render's captions outside its pictures: the WebVTT file it publishes, and its stream's subtitles.

A video's document carries its captions' cues (``reelfarm.renderer.captions``; a story's ``captions``
field puts the cues of the uploaded file there), so everything here is made from the render's
version's document, never from the file it was uploaded as, and only ever for that render:

- The stitch stores ``renders/<id>/captions.vtt`` (``publish_captions``): the cues the video shows
  (those starting before its end, each cut at the end), as WebVTT. The Render's ``captions_url``
  is its signed URL, given once the render succeeded.
- The render's stream (``reelfarm.farm.services.stream``): for a video with captions, the signed
  ``stream_url`` (``/streams/<id>.m3u8``) answers a multivariant playlist (``stream_master``) with
  the one video rendition, ``/streams/<id>/video.m3u8`` (the media playlist a video without
  captions answers at the first address), and a ``SUBTITLES`` rendition,
  ``/streams/<id>/captions.m3u8``: one WebVTT segment spanning the video,
  ``/streams/<id>/captions.vtt``, with the ``X-TIMESTAMP-MAP`` that puts its cues on the
  segments' clock. The cues are known before any frame is drawn, so the subtitles are complete
  while the video still renders. The three links carry the ``expires`` and ``sig`` of the link
  they came from: one signature, over the render's id, its workspace and the expiry, opens them all.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from reelfarm.renderer.captions import Captions, shown_cues, write_webvtt
from reelfarm.renderer.hls import master_playlist, subtitles_playlist, ts_timestamp_map
from reelfarm.renderer.spec import frame_size
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage import Storage, public_base
from reelfarm.shared.storage_keys import captions_key

WEBVTT_TYPE = "text/vtt"
STREAM_PARTS = ("video.m3u8", "captions.m3u8", "captions.vtt")
# EXT-X-STREAM-INF must name a peak bit rate; the frames' size decides most of it
_BANDWIDTH = {720: 3_000_000, 1080: 6_000_000, 2160: 20_000_000}


def doc_captions(doc: Mapping[str, Any]) -> Captions | None:
    """The captions of a document (as stored, valid), or None where it has none."""
    raw = doc.get("captions")
    return Captions.from_json(raw) if raw else None


def captions_webvtt(doc: Mapping[str, Any], stream: bool = False) -> str | None:
    """The WebVTT of the cues ``doc`` shows, on the stream's clock when ``stream``; None without captions."""
    captions = doc_captions(doc)
    if captions is None:
        return None
    header = [ts_timestamp_map()] if stream else []
    return write_webvtt(shown_cues(captions, float(doc["duration"])), header)


def publish_captions(storage: Storage, render_id: str, doc: Mapping[str, Any]) -> str | None:
    """Store the render's WebVTT file; its key, or None for a video without captions."""
    text = captions_webvtt(doc)
    if text is None:
        return None
    key = captions_key(render_id)
    storage.put_bytes(key, text.encode("utf-8"), WEBVTT_TYPE)
    return key


def _part_url(public_url: str, render_id: str, part: str, expires: str, sig: str) -> str:
    return f"{public_base(public_url)}/streams/{render_id}/{part}?{urlencode({'expires': expires, 'sig': sig})}"


def stream_master(public_url: str, render: renders_repo.Render, doc: Mapping[str, Any], expires: str, sig: str) -> str:
    """The multivariant playlist of a render of a video with captions (module docstring)."""
    width, height = frame_size(render.format, render.resolution)
    return master_playlist(_part_url(public_url, render.id, "video.m3u8", expires, sig),
                           _part_url(public_url, render.id, "captions.m3u8", expires, sig),
                           width=width, height=height, bandwidth=_BANDWIDTH.get(render.resolution, 6_000_000),
                           language=doc.get("locale"))


def stream_subtitles(public_url: str, render: renders_repo.Render, doc: Mapping[str, Any], expires: str,
                     sig: str) -> str:
    """The subtitles rendition's media playlist: one WebVTT segment over the whole video."""
    return subtitles_playlist(_part_url(public_url, render.id, "captions.vtt", expires, sig), float(doc["duration"]))
