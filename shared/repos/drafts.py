"""A workspace's drafts (``reelfarm.farm.services.drafts``): one row per draft, with its unsaved
document, its low-resolution plan, how many of its chunks' segments are stored and what they take."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, case, delete, func, insert, select, update

from reelfarm.shared.clock import Clock
from reelfarm.shared.ids import new_id
from reelfarm.shared.statuses import LIVE
from reelfarm.shared.tables import drafts


@dataclass(frozen=True)
class Draft:
    id: str
    workspace_id: str
    status: str
    format: str
    resolution: int
    fps: int
    frames: int
    chunk_starts: list[int]
    doc: dict[str, Any]
    stored: int
    bytes: int
    error: str | None
    created_at: datetime
    expires_at: datetime

    @property
    def chunks(self) -> int:
        return len(self.chunk_starts)


@dataclass(frozen=True)
class NewDraft:
    workspace_id: str
    format: str
    resolution: int
    fps: int
    frames: int
    chunk_starts: list[int]
    doc: dict[str, Any]


def _draft(row: Any) -> Draft:
    return Draft(id=row.id, workspace_id=row.workspace_id, status=row.status, format=row.format,
                 resolution=int(row.resolution), fps=int(row.fps), frames=int(row.frames),
                 chunk_starts=[int(s) for s in row.chunk_starts], doc=dict(row.doc), stored=int(row.stored),
                 bytes=int(row.bytes), error=row.error, created_at=row.created_at, expires_at=row.expires_at)


def insert_draft(conn: Connection, clock: Clock, new: NewDraft, ttl: timedelta) -> Draft:
    now = clock.now()
    draft_id = new_id()
    conn.execute(insert(drafts).values(
        id=draft_id, workspace_id=new.workspace_id, status="queued", format=new.format, resolution=new.resolution,
        fps=new.fps, frames=new.frames, chunk_starts=list(new.chunk_starts), doc=new.doc, stored=0, bytes=0,
        created_at=now, expires_at=now + ttl))
    found = find_draft(conn, draft_id)
    assert found is not None
    return found


def find_draft(conn: Connection, draft_id: str) -> Draft | None:
    """The draft, whichever workspace's (tasks and signed links); None when it is gone."""
    row = conn.execute(select(drafts).where(drafts.c.id == draft_id)).first()
    return _draft(row) if row is not None else None


def get_draft(conn: Connection, workspace_id: str, draft_id: str) -> Draft | None:
    """The workspace's draft; None when it is gone or another workspace's."""
    row = conn.execute(select(drafts).where(drafts.c.id == draft_id, drafts.c.workspace_id == workspace_id)).first()
    return _draft(row) if row is not None else None


def workspace_drafts(conn: Connection, workspace_id: str) -> list[Draft]:
    """The workspace's drafts, oldest first."""
    rows = conn.execute(select(drafts).where(drafts.c.workspace_id == workspace_id)
                        .order_by(drafts.c.created_at, drafts.c.id))
    return [_draft(r) for r in rows]


def expired(conn: Connection, now: datetime, limit: int) -> list[Draft]:
    """Drafts past their expiry, oldest first."""
    rows = conn.execute(select(drafts).where(drafts.c.expires_at <= now).order_by(drafts.c.expires_at).limit(limit))
    return [_draft(r) for r in rows]


def start(conn: Connection, draft_id: str) -> bool:
    """``queued -> running``; False when it was not queued."""
    return conn.execute(update(drafts).where(drafts.c.id == draft_id, drafts.c.status == "queued")
                        .values(status="running")).rowcount > 0


def count_segment(conn: Connection, draft: Draft, size: int) -> Draft | None:
    """One more chunk's segment of ``draft`` stored (``size`` bytes); it succeeds with its last.
    None when the draft is no longer live (its segment is not counted)."""
    done = conn.execute(update(drafts).where(drafts.c.id == draft.id, drafts.c.status.in_(LIVE)).values(
        stored=drafts.c.stored + 1, bytes=drafts.c.bytes + size,
        status=case((drafts.c.stored + 1 >= draft.chunks, "succeeded"), else_="running")))
    return find_draft(conn, draft.id) if done.rowcount else None


def fail(conn: Connection, draft_id: str, message: str, dropped: bool = False) -> bool:
    """A live draft fails with ``message``; ``dropped``: its segments are deleted too (nothing of
    it is stored or counted any more). False when it was not live."""
    values: dict[str, Any] = {"status": "failed", "error": message}
    if dropped:
        values.update(stored=0, bytes=0)
    return conn.execute(update(drafts).where(drafts.c.id == draft_id, drafts.c.status.in_(LIVE))
                        .values(**values)).rowcount > 0


def workspace_bytes(conn: Connection, workspace_id: str) -> int:
    return int(conn.execute(select(func.coalesce(func.sum(drafts.c.bytes), 0))
                            .where(drafts.c.workspace_id == workspace_id)).scalar_one())


def delete_draft(conn: Connection, draft_id: str) -> bool:
    return conn.execute(delete(drafts).where(drafts.c.id == draft_id)).rowcount > 0
