"""A render's HLS stream: the finished beginning of a video, playable while the rest renders.

Each chunk's MP4 segment, once stored (drawn by a node, or copied in for reuse), is remuxed into an
MPEG-TS segment at ``renders/<id>/stream/seg<N>.ts`` (``reelfarm.renderer.hls``: stream copy, the
same frames as the final MP4, which stays a stream copy of the chunk segments as before). The
playlist is made when asked for, from the render's plan (its chunks' frame ranges, so the target
duration is fixed when the render starts) and the segments stored so far: only the unbroken run
from the first chunk is listed, so a chunk finished out of order waits for those before it.

- ``running`` or ``queued``: an ``EVENT`` playlist, only ever appended to;
- ``succeeded``: the same with ``#EXT-X-ENDLIST``, every chunk listed (a complete VOD);
- ``failed`` or ``canceled``: the finished run, then ``#EXT-X-ENDLIST``: the stream ends where
  the render stopped, and players stop there rather than wait for frames that will not come.

Sound. A document with audio tracks, or video clips shown with their sound, has its audio mixed
and encoded once per render (``stream_audio``: the same mix the stitch puts in the MP4), stored at
``renders/<id>/stream/audio.m4a`` by the first chunk task that needs it (two nodes finishing their
first chunks at the same moment may both make it: the same bytes, the same key); every segment
carries its slice of those AAC packets, copied. Segments copied in for reuse when the render is
requested wait for that audio: the chunk tasks and the stitch publish every stored chunk whose
stream segment is missing (``publish_stored``), so they appear once the first chunk is drawn.

Listing. The playlist lists the render's ``stream/`` folder once (``Storage.list_keys``, one S3
ListObjects for up to 1000 segments), not one ``exists`` (an S3 HEAD) per segment.

Links. The Render's ``stream_url`` is ``/streams/<render id>.m3u8?expires=..&sig=..``, signed (HMAC
with the service's secret) over the render's id, its workspace's id and the expiry, so it opens
that render only, and not after it expires; the playlist's segment URIs are the storage's own
signed URLs (``/files/...`` or S3's presigned ones), made afresh on each fetch with the
playlist's remaining lifetime, each opening one file.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from itsdangerous import Signer

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.chunks import chunks_from_starts
from reelfarm.renderer.hls import (
    AUDIO_CONTENT_TYPE,
    TS_CONTENT_TYPE,
    AudioSpan,
    Segment,
    media_playlist,
    remux_to_ts,
    target_duration,
)
from reelfarm.renderer.model import Doc
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.statuses import ENDED
from reelfarm.shared.storage import Storage, public_base
from reelfarm.shared.storage_keys import render_prefix, stream_audio_key, stream_folder, stream_segment_key

STREAM_URL_TTL_SEC = 7 * 24 * 3600  # as a render's other URLs
_SALT = "reelfarm.stream"


_SEGMENT_NAME = re.compile(r"seg(\d+)\.ts")


def _indexes(keys: list[str], folder: str) -> set[int]:
    """The chunk indexes of the stream segments (``seg<N>.ts``) directly in ``folder`` among ``keys``."""
    found = set()
    for key in keys:
        if key.startswith(folder + "/") and (match := _SEGMENT_NAME.fullmatch(key[len(folder) + 1:])):
            found.add(int(match.group(1)))
    return found


def published(storage: Storage, render_id: str) -> set[int]:
    """The chunks whose stream segments are stored: one listing of the stream folder."""
    folder = stream_folder(render_id)
    return _indexes(storage.list_keys(folder), folder)


def chunk_ranges(render: renders_repo.Render) -> list[tuple[int, int]] | None:
    """The render's chunks as frame ranges, from its stored plan; None for a render planned before
    plans were stored (it has no stream)."""
    if not render.chunk_starts or not render.frames:
        return None
    return chunks_from_starts(render.chunk_starts, render.frames)


def publish_segment(storage: Storage, render: renders_repo.Render, index: int, mp4_path: str,
                    audio_path: str | None = None) -> bool:
    """Store chunk ``index``'s stream segment, made from its MP4 at ``mp4_path`` (a local file) and,
    for a video with sound, its slice of the render's audio at ``audio_path`` (``stream_audio``).
    False for a render without a stream plan."""
    ranges = chunk_ranges(render)
    if ranges is None or index >= len(ranges):
        return False
    audio = None
    if audio_path is not None:
        start = ranges[index][0] / render.fps if index else None
        end = ranges[index][1] / render.fps if index < len(ranges) - 1 else None
        audio = AudioSpan(audio_path, start, end)
    fd, ts = tempfile.mkstemp(suffix=".ts")
    os.close(fd)
    try:
        remux_to_ts(mp4_path, ts, ranges[index][0] / render.fps, audio)
        storage.put_file(stream_segment_key(render.id, index), ts, TS_CONTENT_TYPE)
    finally:
        os.unlink(ts)
    return True


def stream_audio(storage: Storage, render: renders_repo.Render, doc: Doc, assets: AssetSource) -> str | None:
    """A local copy of the render's encoded audio, mixed and stored the first time it is asked
    for (module docstring); None for a video without sound.

    Raises:
        reelfarm.renderer.errors.AssetError: an audio asset cannot be read (the user's to fix).
    """
    from reelfarm.renderer.audio import clip_sounds  # loads the mixer where a task runs
    from reelfarm.renderer.hls import write_stream_audio
    from reelfarm.renderer.render import mix_doc_audio

    if not doc.audio and not clip_sounds(doc, render.format):
        return None
    key = stream_audio_key(render.id)
    if storage.exists(key):
        return storage.open_local(key)
    samples = mix_doc_audio(doc, assets, render.format)
    if samples is None:  # its clips have no sound
        return None
    fd, path = tempfile.mkstemp(suffix=".m4a")
    os.close(fd)
    try:
        write_stream_audio(samples, path)
        storage.put_file(key, path, AUDIO_CONTENT_TYPE)
    finally:
        os.unlink(path)
    return storage.open_local(key)


def publish_stored(storage: Storage, render: renders_repo.Render, segment_key: Callable[[int], str],
                   audio_path: str | None) -> list[int]:
    """Publish every stored chunk (its MP4 at ``segment_key(index)``, in the render's folder) whose
    stream segment is missing: reused chunks of a video with sound, copied in before its audio
    existed. Returns their indexes. One listing of the render's folder."""
    keys = set(storage.list_keys(render_prefix(render.id)))
    have = _indexes(sorted(keys), stream_folder(render.id))
    done = []
    for index in range(render.chunks or 0):
        if index not in have and segment_key(index) in keys and \
                publish_segment(storage, render, index, storage.open_local(segment_key(index)), audio_path):
            done.append(index)
    return done


class StreamLinks:
    """Signs and checks the playlist links of renders."""

    def __init__(self, secret_key: str, public_url: str, clock: Clock) -> None:
        self.public_url = public_url
        self.clock = clock
        self._signer = Signer(secret_key, salt=_SALT, key_derivation="hmac", digest_method=hashlib.sha256)

    def url(self, render: renders_repo.Render, expires_in: int = STREAM_URL_TTL_SEC) -> str:
        expires = int(self.clock.now().timestamp()) + expires_in
        query = urlencode({"expires": expires, "sig": self._sign(render.id, render.workspace_id, expires)})
        return f"{public_base(self.public_url)}/streams/{render.id}.m3u8?{query}"

    def verify(self, render: renders_repo.Render, expires: str, sig: str) -> int | None:
        """The seconds the link has left when it is genuine and unexpired for this render; else None."""
        try:
            expires_at = int(expires)
        except (TypeError, ValueError):
            return None
        genuine = self._signer.verify_signature(self._value(render.id, render.workspace_id, expires_at), sig)
        left = expires_at - int(self.clock.now().timestamp())
        return left if genuine and left > 0 else None

    def _sign(self, render_id: str, workspace_id: str, expires: int) -> str:
        return self._signer.get_signature(self._value(render_id, workspace_id, expires)).decode("ascii")

    @staticmethod
    def _value(render_id: str, workspace_id: str, expires: int) -> bytes:
        return f"{render_id}\n{workspace_id}\n{expires}".encode()


def playlist(storage: Storage, render: renders_repo.Render, expires_in: int) -> str | None:
    """The render's media playlist now (module docstring); None for a render without a stream."""
    ranges = chunk_ranges(render)
    if ranges is None:
        return None
    durations = [(end - start) / render.fps for start, end in ranges]
    stored = published(storage, render.id)
    listed: list[Segment] = []
    for index, duration in enumerate(durations):
        if index not in stored:
            break
        listed.append(Segment(storage.url(stream_segment_key(render.id, index), expires_in), duration))
    ended = render.status in ENDED
    return media_playlist(listed, target_duration(durations), ended=ended)


def has_stream(render: renders_repo.Render) -> bool:
    """Whether the render's first segment is stored (its ``stream_url`` shows from then on), as its
    row says: reading a render never waits on the storage."""
    return render.stream_at is not None and chunk_ranges(render) is not None


def stream_keys(render: Any) -> list[str]:
    """Every stream file a render may have, for deleting them with its other files."""
    return [*(stream_segment_key(render.id, i) for i in range(render.chunks or 0)), stream_audio_key(render.id)]
