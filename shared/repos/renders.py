"""Renders and their credits (their events go to the outbox: ``reelfarm.shared.repos.outbox``).

A render's status only moves forward: ``queued -> running -> succeeded | failed | canceled``
(``queued`` may also go straight to ``failed`` or ``canceled``). Every transition here is a
conditional UPDATE on the current status, so a late or repeated task never undoes a newer
state (a chunk of a canceled render finds nothing to update).

Credits: a version is charged once (``ceil(duration / 60)``) at its first render. The render
that paid carries the amount in ``charged_credits``; later renders of the version are free
while a paid render of it is queued, running or succeeded. When the paid render fails or is
canceled its charge is released: refunded, or, if another live render of the version exists,
handed to that render (a refund row and a charge row in one transaction, balance unchanged), so
a version that ends up with a render has always been paid for once. Callers hold the workspace
row lock (taken first, as everywhere) while deciding, which is what makes "once" hold.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, func, select, update

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.repos.workspaces import add_credits
from reelfarm.shared.statuses import ACTIVE_RENDER_STATUSES, LIVE
from reelfarm.shared.tables import (
    RENDER_CHARGE,
    RENDER_REFUND,
    credit_ledger,
    renders,
    workspaces,
)


@dataclass(frozen=True)
class Render:
    id: str
    workspace_id: str
    video_id: str
    version_id: str
    format: str
    resolution: int
    fps: int
    status: str
    progress: float
    url_key: str | None
    poster_key: str | None
    duration_sec: float | None
    bytes: int | None
    error: str | None
    dedup_hash: str
    charged_credits: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    frames: int | None
    chunks: int | None
    progressed_at: datetime | None
    encoder: str | None = None
    raster: str | None = None
    reused_frames: int = 0
    chunk_starts: list[int] | None = None  # the first frame of each chunk; None: planned before 0006
    priority: str = "normal"  # or "low": yields to the workspace's normal renders (farm.services.fairness)
    stream_at: datetime | None = None  # its stream's first segment stored (farm.services.stream)
    request_id: str | None = None  # the request that asked for it (its tasks' log lines carry it)
    container: str = "mp4"  # or "gif", "webm" (reelfarm.renderer.encode_web)
    transparent: bool = False  # a WebM with alpha where its scenes have no background
    clamped: list[str] | None = None  # the request's values lowered to the container's limits
    captions_key: str | None = None  # the WebVTT file of a render of a video with captions
    pool: str = ""  # the pool of nodes its chunks run in ("": any node; farm.services.pools)


_FIELDS = frozenset(f.name for f in fields(Render))


def render_of(row: Row[Any]) -> Render:
    """A render of its row, reading the columns it knows: a column a later release adds (which this
    release's rows then carry during a rolling upgrade) is left aside, not an error."""
    return Render(**{k: v for k, v in row._mapping.items() if k in _FIELDS})


@dataclass(frozen=True)
class NewRender:
    workspace_id: str
    video_id: str
    version_id: str
    format: str
    resolution: int
    fps: int
    dedup_hash: str
    frames: int
    chunks: int
    chunk_starts: list[int] | None = None
    priority: str = "normal"
    request_id: str | None = None
    container: str = "mp4"
    transparent: bool = False
    clamped: list[str] | None = None
    pool: str = ""
    estimate_cpu_sec: float | None = None  # made under a compute allowance: its estimate, reserved


def insert_render(conn: Connection, clock: Clock, new: NewRender, charged_credits: int = 0) -> Render:
    """A ``queued`` render. The caller holds the workspace lock and has checked for duplicates."""
    now = clock.now()
    render_id = new_id()
    conn.execute(renders.insert().values(
        id=render_id, workspace_id=new.workspace_id, video_id=new.video_id, version_id=new.version_id,
        format=new.format, resolution=new.resolution, fps=new.fps, status="queued", progress=0.0,
        dedup_hash=new.dedup_hash, charged_credits=charged_credits, frames=new.frames, chunks=new.chunks,
        chunk_starts=new.chunk_starts, priority=new.priority, request_id=new.request_id, container=new.container,
        transparent=new.transparent, clamped=new.clamped or None, pool=new.pool, estimate_cpu_sec=new.estimate_cpu_sec, created_at=now,
        progressed_at=now))
    return _load(conn, render_id)


def get_render(conn: Connection, workspace_id: str, render_id: str) -> Render:
    """Raises NotFound when there is no such render in the workspace."""
    row = conn.execute(select(renders).where(renders.c.id == render_id,
                                             renders.c.workspace_id == workspace_id)).first()
    if row is None:
        raise NotFound("render", render_id)
    return render_of(row)


def find_render(conn: Connection, render_id: str) -> Render | None:
    """The render with this id, whatever its workspace (for tasks, which get bare ids)."""
    row = conn.execute(select(renders).where(renders.c.id == render_id)).first()
    return render_of(row) if row else None


def find_active_render(conn: Connection, video_id: str, dedup_hash: str) -> Render | None:
    """The queued, running or succeeded render of the video with this hash (at most one exists)."""
    row = conn.execute(select(renders).where(
        renders.c.video_id == video_id, renders.c.dedup_hash == dedup_hash,
        renders.c.status.in_(ACTIVE_RENDER_STATUSES))).first()
    return render_of(row) if row else None


def version_is_paid(conn: Connection, version_id: str) -> bool:
    """Whether a queued, running or succeeded render of the version carries its charge."""
    row = conn.execute(select(renders.c.id).where(
        renders.c.version_id == version_id, renders.c.charged_credits > 0,
        renders.c.status.in_(ACTIVE_RENDER_STATUSES)).limit(1)).first()
    return row is not None


def list_renders(conn: Connection, workspace_id: str, video_id: str) -> list[Render]:
    """The video's renders, newest first."""
    rows = conn.execute(select(renders).where(renders.c.workspace_id == workspace_id,
                                              renders.c.video_id == video_id)
                        .order_by(renders.c.created_at.desc(), renders.c.id.desc()))
    return [render_of(row) for row in rows]


def list_renders_by_status(conn: Connection, statuses: tuple[str, ...], limit: int = 100) -> list[Render]:
    """Renders in any workspace with one of ``statuses``, oldest first (operators' views)."""
    rows = conn.execute(select(renders).where(renders.c.status.in_(statuses))
                        .order_by(renders.c.created_at).limit(limit))
    return [render_of(row) for row in rows]


def charge_render(conn: Connection, clock: Clock, render: Render, amount: int) -> None:
    """Debit ``amount`` for ``render`` (its version's charge). Raises InsufficientCredits."""
    add_credits(conn, clock, workspace_id=render.workspace_id, delta=-amount, reason=RENDER_CHARGE,
                render_id=render.id, version_id=render.version_id)


def start_render(conn: Connection, clock: Clock, render_id: str, encoder: str | None = None,
                 raster: str | None = None) -> Render | None:
    """Mark a chunk's start: ``queued -> running`` the first time, recording the first chunk's
    ``encoder`` family and ``raster``. None unless the render is live."""
    now = clock.now()
    if encoder is not None:
        conn.execute(update(renders).where(renders.c.id == render_id, renders.c.encoder.is_(None))
                     .values(encoder=encoder))
    if raster is not None:
        conn.execute(update(renders).where(renders.c.id == render_id, renders.c.raster.is_(None))
                     .values(raster=raster))
    conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status == "queued")
                 .values(status="running", started_at=now))
    conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status == "running")
                 .values(progressed_at=now))
    render = find_render(conn, render_id)
    return render if render is not None and render.status in LIVE else None


def set_encoder(conn: Connection, render_id: str, family: str, was: str | None = None) -> bool:
    """Give a live render its encoder family: planned at enqueue (``was`` None: only if none is set),
    or switched from ``was``. False when the render is not live or its family is not ``was``."""
    held = renders.c.encoder.is_(None) if was is None else renders.c.encoder == was
    done = conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status.in_(LIVE), held)
                        .values(encoder=family))
    return bool(done.rowcount)


def set_priority(conn: Connection, render_id: str, priority: str, was: str) -> bool:
    """Switch a live render's priority from ``was`` to ``priority``. False when the render is not
    live or its priority is not ``was``."""
    done = conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status.in_(LIVE),
                                              renders.c.priority == was).values(priority=priority))
    return bool(done.rowcount)


def set_reused(conn: Connection, render_id: str, frames: int) -> None:
    """Record the frames the render reused from segments made before."""
    conn.execute(update(renders).where(renders.c.id == render_id).values(reused_frames=frames))


def mark_streaming(conn: Connection, clock: Clock, render_id: str) -> None:
    """The render's stream has its first segment (kept once set)."""
    conn.execute(update(renders).where(renders.c.id == render_id, renders.c.stream_at.is_(None))
                 .values(stream_at=clock.now()))


def touch_render(conn: Connection, clock: Clock, render_id: str, progress: float | None = None) -> None:
    """Record that the render moved forward (and its progress, never lowering it)."""
    values: dict[str, Any] = {"progressed_at": clock.now()}
    if progress is not None:
        values["progress"] = func.max(renders.c.progress, progress) if conn.dialect.name == "sqlite" \
            else func.greatest(renders.c.progress, progress)
    conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status.in_(LIVE)).values(**values))


def complete_render(conn: Connection, clock: Clock, render_id: str, *, url_key: str, poster_key: str,
                    size: int, duration_sec: float, captions_key: str | None = None) -> Render | None:
    """``running -> succeeded`` with its files; None if it is no longer live (canceled meanwhile)."""
    now = clock.now()
    done = conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status.in_(LIVE)).values(
        status="succeeded", progress=1.0, url_key=url_key, poster_key=poster_key, bytes=size,
        captions_key=captions_key, duration_sec=duration_sec, finished_at=now, progressed_at=now, error=None))
    return find_render(conn, render_id) if done.rowcount else None


def fail_render(conn: Connection, clock: Clock, render_id: str, error: str) -> Render | None:
    """``queued|running -> failed`` with ``error`` and the charge released; None if not live."""
    return _end(conn, clock, render_id, "failed", error)


def cancel_render(conn: Connection, clock: Clock, render_id: str) -> Render | None:
    """``queued|running -> canceled`` with the charge released; None if not live."""
    return _end(conn, clock, render_id, "canceled", None)


def _end(conn: Connection, clock: Clock, render_id: str, status: str, error: str | None) -> Render | None:
    render = find_render(conn, render_id)
    if render is None or render.status not in LIVE:
        return None
    lock_workspace(conn, render.workspace_id)  # lock order: the workspace row first
    now = clock.now()
    done = conn.execute(update(renders).where(renders.c.id == render_id, renders.c.status.in_(LIVE))
                        .values(status=status, error=error, finished_at=now, progressed_at=now))
    if not done.rowcount:
        return None
    ended = _load(conn, render_id)
    release_charge(conn, clock, ended)
    return ended


def release_charge(conn: Connection, clock: Clock, render: Render) -> None:
    """Refund a failed or canceled render's charge, or hand it to another live render of the version.

    Idempotent: a render is refunded at most once (also enforced by a unique ledger index).
    """
    if render.charged_credits <= 0 or _has_entry(conn, render.id, RENDER_REFUND):
        return
    add_credits(conn, clock, workspace_id=render.workspace_id, delta=render.charged_credits,
                reason=RENDER_REFUND, render_id=render.id, version_id=render.version_id)
    heir = conn.execute(select(renders).where(
        renders.c.version_id == render.version_id, renders.c.id != render.id,
        renders.c.charged_credits == 0, renders.c.status.in_(ACTIVE_RENDER_STATUSES))
        .order_by(renders.c.created_at, renders.c.id).limit(1)).first()
    if heir is not None and not version_is_paid(conn, render.version_id):
        heir_render = render_of(heir)
        conn.execute(update(renders).where(renders.c.id == heir_render.id)
                     .values(charged_credits=render.charged_credits))
        charge_render(conn, clock, heir_render, render.charged_credits)


def delete_render(conn: Connection, render_id: str) -> None:
    """Undo a render that was never handed to a queue: its row, its ledger rows and their effect.

    The compensating transaction of a request whose enqueue failed; the client got an error and
    never saw the render, so nothing of it should remain.
    """
    render = find_render(conn, render_id)
    if render is None:
        return
    lock_workspace(conn, render.workspace_id)
    net = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                       .where(credit_ledger.c.render_id == render_id)).scalar_one()
    if net:
        conn.execute(update(workspaces).where(workspaces.c.id == render.workspace_id)
                     .values(credits=workspaces.c.credits - int(net)))
    conn.execute(delete(credit_ledger).where(credit_ledger.c.render_id == render_id))
    conn.execute(delete(renders).where(renders.c.id == render_id))


def stalled_renders(conn: Connection, *, running_before: datetime, queued_before: datetime) -> list[Render]:
    """Running renders no chunk has moved since ``running_before``; queued ones idle since ``queued_before``."""
    last = func.coalesce(renders.c.progressed_at, renders.c.created_at)
    rows = conn.execute(select(renders).where(
        ((renders.c.status == "running") & (last < running_before))
        | ((renders.c.status == "queued") & (last < queued_before))))
    return [render_of(row) for row in rows]


def _has_entry(conn: Connection, render_id: str, reason: str) -> bool:
    return conn.execute(select(credit_ledger.c.id).where(credit_ledger.c.render_id == render_id,
                                                         credit_ledger.c.reason == reason)).first() is not None


def _load(conn: Connection, render_id: str) -> Render:
    row = conn.execute(select(renders).where(renders.c.id == render_id)).one()
    return render_of(row)
