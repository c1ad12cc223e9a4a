"""Drafts: an animated preview of unsaved values, played as a stream while it is drawn.

A story form (a new video's, or an existing video's fields) can be played before anything is
saved: ``DraftService.start`` takes the workspace and the unsaved document, plans it as a render
is planned (``reelfarm.renderer.chunks.scene_chunks``, so its first chunk is the shortest to
come) at ``DRAFT_RESOLUTION`` p and ``DRAFT_FPS`` fps, and hands its chunks to the render queue
(the embedded executor or RQ) as *low-priority* work in the workspace's line of fair dispatch: a
draft never holds up the workspace's own renders, nor another workspace's. Each chunk task
(``reelfarm.farm.runtime.draft_tasks.draw_draft_chunk``) draws its frames with the renderer's own
``render_segment`` and stores them as an MPEG-TS segment (``reelfarm.renderer.hls.remux_to_ts``)
at ``drafts/<workspace>/<draft>/seg<N>.ts``. The playlist is made when asked for, as a render's
stream is (``reelfarm.renderer.hls.media_playlist``): an ``EVENT`` playlist of the unbroken run of
stored segments from the first, ended once every chunk is stored (or the draft failed).

A draft is never a render: no version is saved, no credit is charged, no event is written, it is
not listed among the video's renders, and it has no MP4 (nothing is stitched). It has the sound a
render would have: each segment carries its own part of the mix (the soundtrack looped or faded to
fit, the clips' sound), mixed and encoded by its chunk task alone.

Bounds, per workspace (``DraftBounds``):

- at most ``live`` (3) drafts at a time: starting one more deletes the oldest (its chunks still
  waiting are dropped, one drawing stops at its next look, its files go);
- at most ``bytes`` (64 MiB) of draft segments: a segment that takes the workspace over deletes
  its oldest other drafts until it fits again, and a draft that alone would not fit fails;
- each draft lives ``ttl_sec`` (10 minutes) from when it was asked for; the retention round
  (``reelfarm.farm.runtime.retention``) deletes expired ones, row and files, and starting a draft
  deletes the workspace's expired ones first.

Links. A draft's ``stream_url`` (``playable`` once its first segment is stored) is ``/app/drafts/<id>.m3u8?expires=..&sig=..``, signed (HMAC with
the service's secret, a salt of its own) over the draft's id, its workspace's id and the expiry,
which is the draft's own: it opens that draft only, and not after it is gone. The segment URIs
are the storage's own signed URLs, one per file, made afresh on each fetch.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from itsdangerous import Signer
from sqlalchemy import Engine

from reelfarm.farm.services.errors import InvalidRequest, QueueUnavailable
from reelfarm.farm.services.queues import RENDER_QUEUE, JobQueue, Turn
from reelfarm.renderer.chunks import chunks_from_starts, scene_chunks
from reelfarm.renderer.errors import DocInvalid
from reelfarm.renderer.hls import Segment, media_playlist, target_duration
from reelfarm.renderer.model import frame_count, parse_doc
from reelfarm.renderer.spec import FORMATS
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import drafts as repo
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.statuses import ENDED
from reelfarm.shared.storage import Storage, public_base
from reelfarm.shared.storage_keys import draft_segment_key

DRAFT_RESOLUTION = 360
DRAFT_FPS = 15
DRAW_TASK = "reelfarm.farm.runtime.draft_tasks.draw_draft_chunk"
DRAFT_PRIORITY = "low"
_SALT = "reelfarm.draft"
TOO_LARGE = "the preview takes more room than a workspace's previews may; shorten the video or play it again"


@dataclass(frozen=True)
class DraftBounds:
    """How many drafts a workspace keeps, how many bytes they may take, and for how long."""

    live: int = 3
    bytes: int = 64 * 1024 * 1024
    ttl_sec: int = 600


def chunk_job_id(draft_id: str, index: int) -> str:
    return f"draft-{draft_id}-chunk-{index}"


def chunk_ranges(draft: repo.Draft) -> list[tuple[int, int]]:
    return chunks_from_starts(draft.chunk_starts, draft.frames)


class DraftLinks:
    """Signs and checks drafts' playlist links."""

    def __init__(self, secret_key: str, public_url: str) -> None:
        self.public_url = public_url
        self._signer = Signer(secret_key, salt=_SALT, key_derivation="hmac", digest_method=hashlib.sha256)

    def url(self, draft: repo.Draft) -> str:
        expires = int(draft.expires_at.timestamp())
        query = urlencode({"expires": expires, "sig": self._sign(draft, expires)})
        return f"{public_base(self.public_url)}/app/drafts/{draft.id}.m3u8?{query}"

    def genuine(self, draft: repo.Draft, expires: str, sig: str) -> bool:
        try:
            expires_at = int(expires)
        except (TypeError, ValueError):
            return False
        return self._signer.verify_signature(self._value(draft, expires_at), sig)

    def _sign(self, draft: repo.Draft, expires: int) -> str:
        return self._signer.get_signature(self._value(draft, expires)).decode("ascii")

    @staticmethod
    def _value(draft: repo.Draft, expires: int) -> bytes:
        return f"{draft.id}\n{draft.workspace_id}\n{expires}".encode()


class DraftService:
    """Starts, reads, serves and deletes drafts (module docstring)."""

    def __init__(self, engine: Engine, queue: JobQueue, storage: Storage, clock: Clock, secret_key: str,
                 public_url: str, bounds: DraftBounds | None = None) -> None:
        self.engine = engine
        self.queue = queue
        self.storage = storage
        self.clock = clock
        self.bounds = bounds or DraftBounds()
        self.links = DraftLinks(secret_key, public_url)

    def start(self, workspace_id: str, doc: dict[str, Any], fmt: str) -> dict[str, Any]:
        """A new draft of the unsaved ``doc`` in ``fmt``, its chunks queued; the workspace's oldest
        draft goes when it already has as many as its bound.

        Raises:
            InvalidRequest: the document cannot be drawn, or ``fmt`` is not a format.
            QueueUnavailable: the queue is down; nothing was kept.
        """
        if fmt not in FORMATS:
            raise InvalidRequest([{"field": "/format", "code": "invalid_choice",
                                   "message": f"must be one of {', '.join(FORMATS)}"}])
        try:
            parsed = parse_doc(doc)
        except DocInvalid as exc:
            raise InvalidRequest([{"field": "/doc", "code": "invalid", "message": str(exc)}]) from exc
        chunks = scene_chunks(parsed, DRAFT_FPS)
        new = repo.NewDraft(workspace_id=workspace_id, format=fmt, resolution=DRAFT_RESOLUTION, fps=DRAFT_FPS,
                            frames=frame_count(parsed.duration, DRAFT_FPS), chunk_starts=[a for a, _ in chunks],
                            doc=dict(doc))
        self.queue.ping()
        with transaction(self.engine) as conn:
            lock_workspace(conn, workspace_id)
            mine = repo.workspace_drafts(conn, workspace_id)
            now = self.clock.now()
            gone = [d for d in mine if d.expires_at <= now]
            kept = [d for d in mine if d.expires_at > now]
            gone += kept[:max(0, len(kept) - self.bounds.live + 1)]
            for old in gone:
                repo.delete_draft(conn, old.id)
            draft = repo.insert_draft(conn, self.clock, new, timedelta(seconds=self.bounds.ttl_sec))
        self._clear(gone)
        try:
            for index, (first, end) in enumerate(chunks):
                self.queue.enqueue(DRAW_TASK, draft.id, index, job_id=chunk_job_id(draft.id, index),
                                   queue=RENDER_QUEUE, retries=1,
                                   turn=Turn(workspace_id, draft.id, max(1, end - first), DRAFT_PRIORITY, index))
        except QueueUnavailable:
            self.discard(draft)
            raise
        return self._resource(draft)

    def get(self, workspace_id: str, draft_id: str) -> dict[str, Any]:
        """The workspace's draft. Raises NotFound (another workspace's, expired or deleted)."""
        with self.engine.connect() as conn:
            draft = repo.get_draft(conn, workspace_id, draft_id)
        if draft is None or draft.expires_at <= self.clock.now():
            raise NotFound("draft", draft_id)
        return self._resource(draft)

    def playlist(self, draft_id: str, expires: str, sig: str) -> str | None:
        """The draft's HLS playlist behind its signed link: None when the link is not genuine for
        this draft (a 403). Raises NotFound for no such draft, or one expired or deleted."""
        with self.engine.connect() as conn:
            draft = repo.find_draft(conn, draft_id)
        if draft is None:
            raise NotFound("draft", draft_id)
        if not self.links.genuine(draft, expires, sig):
            return None
        left = int((draft.expires_at - self.clock.now()).total_seconds())
        if left <= 0:
            raise NotFound("draft", draft_id)
        ranges = chunk_ranges(draft)
        durations = [(end - start) / draft.fps for start, end in ranges]
        listed = []
        for index, duration in enumerate(durations):
            key = draft_segment_key(draft.workspace_id, draft.id, index)
            if not self.storage.exists(key):
                break
            listed.append(Segment(self.storage.url(key, left), duration))
        ended = draft.status in ENDED
        return media_playlist(listed, target_duration(durations), ended=ended)

    def sweep(self, limit: int = 500) -> int:
        """Delete up to ``limit`` expired drafts, rows and files; returns how many went."""
        return delete_expired(self.engine, self.storage, self.clock, limit)

    def discard(self, draft: repo.Draft) -> bool:
        """Delete a draft: its row, then its waiting chunks and its files. False when it was gone."""
        with transaction(self.engine) as conn:
            deleted = repo.delete_draft(conn, draft.id)
        self._clear([draft])
        return deleted

    def _clear(self, gone: list[repo.Draft]) -> None:
        """Drop the queued chunks and the files of drafts whose rows are deleted."""
        for draft in gone:
            for index in range(draft.chunks):
                try:
                    self.queue.cancel(chunk_job_id(draft.id, index))
                except QueueUnavailable:
                    pass  # a chunk that runs finds its draft gone and stores nothing
                self.storage.delete(draft_segment_key(draft.workspace_id, draft.id, index))

    def _resource(self, draft: repo.Draft) -> dict[str, Any]:
        first = self.storage.exists(draft_segment_key(draft.workspace_id, draft.id, 0))
        return {"id": draft.id, "status": draft.status, "format": draft.format, "resolution": draft.resolution,
                "fps": draft.fps, "duration_sec": draft.frames / draft.fps, "chunks": draft.chunks,
                "stored": draft.stored, "bytes": draft.bytes, "error": draft.error,
                "created_at": draft.created_at, "expires_at": draft.expires_at,
                "stream_url": self.links.url(draft), "playable": first}


def segment_stored(engine: Engine, storage: Storage, draft: repo.Draft, size: int,
                   bounds: DraftBounds | None = None) -> bool:
    """Count a chunk's segment (``size`` bytes, stored) of ``draft`` and keep the workspace within
    its byte bound: its oldest other drafts go first; a draft that alone passes it fails, its
    segments deleted. False when the draft is gone or failed (the caller's segment is not kept)."""
    cap = (bounds or DraftBounds()).bytes
    with transaction(engine) as conn:
        lock_workspace(conn, draft.workspace_id)
        counted = repo.count_segment(conn, draft, size)
        if counted is None:
            return False
        evicted, dropped = [], []
        if counted.bytes > cap:
            repo.fail(conn, draft.id, TOO_LARGE, dropped=True)
            dropped.append(counted)
        else:
            total = repo.workspace_bytes(conn, draft.workspace_id)
            for old in repo.workspace_drafts(conn, draft.workspace_id):
                if total <= cap:
                    break
                if old.id != draft.id:
                    total -= old.bytes
                    evicted.append(old)
                    repo.delete_draft(conn, old.id)
    for old in evicted + dropped:
        for index in range(old.chunks):
            storage.delete(draft_segment_key(old.workspace_id, old.id, index))
    return not dropped


def delete_expired(engine: Engine, storage: Storage, clock: Clock, limit: int) -> int:
    """Delete up to ``limit`` drafts past their expiry, each row then its files (the retention
    round's chore; a chunk still queued finds its draft gone and does nothing). Returns how many."""
    with engine.connect() as conn:
        stale = repo.expired(conn, clock.now(), limit)
    gone = 0
    for draft in stale:
        with transaction(engine) as conn:
            deleted = repo.delete_draft(conn, draft.id)
        for index in range(draft.chunks):
            storage.delete(draft_segment_key(draft.workspace_id, draft.id, index))
        gone += deleted
    return gone
