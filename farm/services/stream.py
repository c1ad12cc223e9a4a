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

Links. The Render's ``stream_url`` is ``/streams/<render id>.m3u8?expires=..&sig=..``, signed (HMAC
with the service's secret) over the render's id, its workspace's id and the expiry, so it opens
that render only, and not after it expires; the playlist's segment URIs are the storage's own
signed URLs (``/files/...`` or S3's presigned ones), made afresh on each fetch with the
playlist's remaining lifetime, each opening one file.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any
from urllib.parse import urlencode

from itsdangerous import Signer

from reelfarm.renderer.chunks import chunks_from_starts
from reelfarm.renderer.hls import TS_CONTENT_TYPE, Segment, media_playlist, remux_to_ts, target_duration
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage import Storage, public_base

STREAM_URL_TTL_SEC = 7 * 24 * 3600  # as a render's other URLs
_SALT = "reelfarm.stream"


def stream_segment_key(render_id: str, index: int) -> str:
    return f"renders/{render_id}/stream/seg{index}.ts"


def chunk_ranges(render: renders_repo.Render) -> list[tuple[int, int]] | None:
    """The render's chunks as frame ranges, from its stored plan; None for a render planned before
    plans were stored (it has no stream)."""
    if not render.chunk_starts or not render.frames:
        return None
    return chunks_from_starts(render.chunk_starts, render.frames)


def publish_segment(storage: Storage, render: renders_repo.Render, index: int, mp4_path: str) -> None:
    """Store chunk ``index``'s stream segment, made from its MP4 at ``mp4_path`` (a local file)."""
    ranges = chunk_ranges(render)
    if ranges is None or index >= len(ranges):
        return
    fd, ts = tempfile.mkstemp(suffix=".ts")
    os.close(fd)
    try:
        remux_to_ts(mp4_path, ts, ranges[index][0] / render.fps)
        storage.put_file(stream_segment_key(render.id, index), ts, TS_CONTENT_TYPE)
    finally:
        os.unlink(ts)


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
    listed: list[Segment] = []
    for index, duration in enumerate(durations):
        key = stream_segment_key(render.id, index)
        if not storage.exists(key):
            break
        listed.append(Segment(storage.url(key, expires_in), duration))
    ended = render.status in ("succeeded", "failed", "canceled")
    return media_playlist(listed, target_duration(durations), ended=ended)


def has_stream(render: renders_repo.Render) -> bool:
    """Whether the render's first segment is stored (its ``stream_url`` shows from then on), as its
    row says: reading a render never waits on the storage."""
    return render.stream_at is not None and chunk_ranges(render) is not None


def stream_keys(render: Any) -> list[str]:
    """Every stream file a render may have, for deleting them with its other files."""
    return [stream_segment_key(render.id, i) for i in range(render.chunks or 0)]
