"""Read-only views that no API endpoint serves: the console's lists and the farm's figures.

``ReadModels(engine, storage)``: the credit ledger, each video's picture for the grid (in its own
format: a poster or a still, the current version's first), how each video was made (its first
version's source and a translated copy's original), a video's translated copies, its current
fields and latest job. Each of these takes the workspace id and filters every query by it, so one
workspace never reads another's rows. ``failed_renders`` is for operators and spans
workspaces on purpose.

``FarmFigures(engine, waiting=None)``: the farm-wide totals ``/metrics`` reports (renders by
status, credits charged and refunded, webhook deliveries by outcome, the oldest undelivered
event and overdue retry) and the jobs waiting per queue, read together and kept for
``cache_sec`` so frequent scrapes cost the database little. Operators' figures: no workspace
is named in them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, and_, func, select

from reelfarm.shared.statuses import RENDER_STATUSES
from reelfarm.shared.storage import Storage
from reelfarm.shared.tables import (
    RENDER_CHARGE,
    RENDER_REFUND,
    credit_ledger,
    event_outbox,
    jobs,
    queued_tasks,
    renders,
    task_costs,
    versions,
    videos,
    webhook_deliveries,
    workspaces,
)

LEDGER_LIMIT = 50
POSTER_TTL_SEC = 3600
STILL_TTL_SEC = 600
FIGURES_CACHE_SEC = 10.0


class ReadModels:
    """The console's read-only lists, each scoped to a workspace (but the operators' failures)."""

    def __init__(self, engine: Engine, storage: Storage) -> None:
        self.engine = engine
        self.storage = storage

    def workspace_names(self, workspace_ids: Sequence[str]) -> dict[str, str]:
        """The names of the given workspaces, for operators' views (``/metrics``)."""
        from reelfarm.shared.repos.workspaces import workspace_names

        with self.engine.connect() as conn:
            return workspace_names(conn, workspace_ids)

    def ledger(self, workspace_id: str, limit: int = LEDGER_LIMIT) -> list[dict[str, Any]]:
        """The latest ledger rows, newest first, with the render's video and format where there is one."""
        query = (select(credit_ledger.c.delta, credit_ledger.c.reason, credit_ledger.c.created_at,
                        credit_ledger.c.render_id, renders.c.video_id, renders.c.format, renders.c.resolution,
                        videos.c.title)
                 .select_from(credit_ledger.outerjoin(renders, renders.c.id == credit_ledger.c.render_id)
                              .outerjoin(videos, videos.c.id == renders.c.video_id))
                 .where(credit_ledger.c.workspace_id == workspace_id)
                 .order_by(credit_ledger.c.created_at.desc(), credit_ledger.c.id.desc()).limit(limit))
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def pictures(self, workspace_id: str, video_ids: Sequence[str]) -> dict[str, str]:
        """A signed picture URL per video that has one in its own format (a 9:16 video never gets
        a 16:9 poster): a succeeded render's poster of the current version, else a still of the
        current version, else an older version's poster, else an older still; the newest of each."""
        if not video_ids:
            return {}
        ids = list(video_ids)
        with self.engine.connect() as conn:
            posters = conn.execute(
                select(renders.c.video_id, renders.c.poster_key, renders.c.version_id, videos.c.current_version_id)
                .select_from(renders.join(videos, videos.c.id == renders.c.video_id))
                .where(renders.c.workspace_id == workspace_id, videos.c.workspace_id == workspace_id,
                       renders.c.video_id.in_(ids), renders.c.status == "succeeded",
                       renders.c.poster_key.is_not(None), renders.c.format == videos.c.default_format)
                .order_by(renders.c.finished_at.desc(), renders.c.id)).all()
            stills = conn.execute(
                select(jobs.c.video_id, jobs.c.params, jobs.c.result, videos.c.default_format,
                       videos.c.current_version_id)
                .select_from(jobs.join(videos, videos.c.id == jobs.c.video_id))
                .where(jobs.c.workspace_id == workspace_id, videos.c.workspace_id == workspace_id,
                       jobs.c.video_id.in_(ids), jobs.c.kind == "stills", jobs.c.status == "succeeded")
                .order_by(jobs.c.finished_at.desc(), jobs.c.id)).all()
        best: dict[str, tuple[int, str, int]] = {}  # video id: (rank, key, seconds the URL lasts)
        for video_id, key, version_id, current in posters:
            _keep(best, video_id, (0 if version_id == current else 2, key, POSTER_TTL_SEC))
        for video_id, params, result, fmt, current in stills:
            shots = (result or {}).get("stills") or []
            params = params or {}
            if shots and params.get("format") == fmt:
                rank = 1 if params.get("version_id") == current else 3
                _keep(best, video_id, (rank, shots[0]["key"], STILL_TTL_SEC))
        return {video_id: self.storage.url(key, ttl) for video_id, (_, key, ttl) in best.items()}

    def origins(self, workspace_id: str, video_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """How each video was made, for the grid's labels: ``source``, its first version's
        (``story``, ``generate``, ``translate``, ``doc``; None before it has one), and
        ``original_title``, a translated copy's original's (None when there is none)."""
        if not video_ids:
            return {}
        original = videos.alias("original")
        query = (select(videos.c.id, versions.c.source, original.c.title)
                 .select_from(videos.outerjoin(versions, and_(versions.c.video_id == videos.c.id,
                                                              versions.c.number == 1))
                              .outerjoin(original, and_(original.c.id == videos.c.source_video_id,
                                                        original.c.workspace_id == workspace_id)))
                 .where(videos.c.workspace_id == workspace_id, videos.c.id.in_(list(video_ids))))
        with self.engine.connect() as conn:
            return {video_id: {"source": source, "original_title": title}
                    for video_id, source, title in conn.execute(query)}

    def translations(self, workspace_id: str, video_id: str) -> list[dict[str, Any]]:
        """The video's translated copies, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(videos.c.id, videos.c.title, videos.c.status, videos.c.locale, videos.c.created_at)
                .where(videos.c.workspace_id == workspace_id, videos.c.source_video_id == video_id)
                .order_by(videos.c.created_at, videos.c.id))
            return [dict(row._mapping) for row in rows]

    def current_fields(self, workspace_id: str, video_id: str) -> dict[str, Any] | None:
        """The field values of the video's current version (what a fields edit starts from)."""
        with self.engine.connect() as conn:
            row = conn.execute(select(videos.c.fields).where(videos.c.workspace_id == workspace_id,
                                                             videos.c.id == video_id)).first()
        return None if row is None else row[0]

    def latest_job(self, workspace_id: str, video_id: str, kind: str) -> dict[str, Any] | None:
        """The video's newest job of ``kind`` (id, status, created_at, and the ``version_id`` it
        was made for, None when its kind names none), or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(jobs.c.id, jobs.c.status, jobs.c.created_at, jobs.c.params)
                .where(jobs.c.workspace_id == workspace_id, jobs.c.video_id == video_id, jobs.c.kind == kind)
                .order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(1)).first()
        if row is None:
            return None
        found = dict(row._mapping)
        params = found.pop("params") or {}
        return {**found, "version_id": params.get("version_id") if isinstance(params, dict) else None}

    def failed_renders(self, since: datetime | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """The latest failed renders across the farm, with their errors (operators only)."""
        query = (select(renders.c.id, renders.c.workspace_id, workspaces.c.name.label("workspace_name"),
                        renders.c.video_id, renders.c.format, renders.c.resolution, renders.c.fps, renders.c.error,
                        renders.c.finished_at)
                 .join(workspaces, workspaces.c.id == renders.c.workspace_id)
                 .where(renders.c.status == "failed").order_by(renders.c.finished_at.desc()).limit(limit))
        if since is not None:
            query = query.where(renders.c.finished_at >= since)
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]


def _keep(best: dict[str, tuple[int, str, int]], video_id: str, found: tuple[int, str, int]) -> None:
    """Keep ``found`` for the video unless it already has a picture of the same or a better rank
    (the rows come newest first)."""
    if video_id not in best or found[0] < best[video_id][0]:
        best[video_id] = found


@dataclass(frozen=True)
class Totals:
    """Farm-wide totals from the database."""

    renders: dict[str, int]            # by status (every one, 0 when none), all time
    charged: int                       # credits charged for renders (a positive number)
    refunded: int                      # credits refunded for renders (a positive number)
    deliveries: dict[str, int]         # webhook delivery attempts kept, by state
    oldest_event: datetime | None      # the oldest event not yet dispatched
    oldest_due: datetime | None        # the most overdue pending delivery
    oldest_queued: dict[str, datetime] = field(default_factory=dict)  # per workspace: its oldest render not started
    used: dict[str, WorkspaceUse] = field(default_factory=dict)  # per workspace: what its render tasks used, all time


@dataclass(frozen=True)
class WorkspaceUse:
    """What a workspace's render tasks used on the farm, all time (``task_costs``, every attempt)."""

    cpu_sec: float = 0.0
    gpu_sec: float = 0.0
    wall_sec: float = 0.0
    frames: int = 0  # frames encoded and stored
    storage_bytes: int = 0

    def __add__(self, other: WorkspaceUse) -> WorkspaceUse:
        return WorkspaceUse(self.cpu_sec + other.cpu_sec, self.gpu_sec + other.gpu_sec, self.wall_sec + other.wall_sec,
                            self.frames + other.frames, self.storage_bytes + other.storage_bytes)


@dataclass(frozen=True)
class Figures:
    """What one read found; a part that could not be read (its server down) is None."""

    taken_at: datetime
    totals: Totals | None
    waiting: dict[str, tuple[int, datetime | None]] | None  # per queue: jobs waiting, since when the oldest


class FarmFigures:
    """The farm-wide figures behind ``/metrics``, read at most every ``cache_sec`` seconds.

    ``waiting`` counts the jobs waiting per queue where they live (RQ in a farm); without it,
    the embedded queue's table is counted.
    """

    def __init__(self, engine: Engine, waiting: Callable[[], dict[str, tuple[int, datetime | None]]] | None = None,
                 cache_sec: float = FIGURES_CACHE_SEC) -> None:
        self.engine = engine
        self.cache_sec = cache_sec
        self._waiting = waiting or self.waiting_tasks
        self._cached: tuple[float, Figures] | None = None
        self._lock = threading.Lock()

    def read(self) -> Figures:
        """The figures, from the cache when it is younger than ``cache_sec``."""
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached[0] > self.cache_sec:
                self._cached = (now, self._read())
            return self._cached[1]

    def _read(self) -> Figures:
        taken_at = datetime.now(UTC)
        try:
            totals: Totals | None = self.totals()
        except Exception:  # noqa: BLE001 - an unreachable database shows in /readyz, not as missing figures
            totals = None
        try:
            waiting: dict[str, tuple[int, datetime | None]] | None = self._waiting()
        except Exception:  # noqa: BLE001 - likewise for Redis
            waiting = None
        return Figures(taken_at, totals, waiting)

    def totals(self) -> Totals:
        with self.engine.connect() as conn:
            by_status = conn.execute(select(renders.c.status, func.count()).group_by(renders.c.status)).all()
            charged = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                                   .where(credit_ledger.c.reason == RENDER_CHARGE)).scalar_one()
            refunded = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                                    .where(credit_ledger.c.reason == RENDER_REFUND)).scalar_one()
            outcomes = conn.execute(select(webhook_deliveries.c.state, func.count())
                                    .group_by(webhook_deliveries.c.state)).all()
            oldest_event = conn.execute(select(func.min(event_outbox.c.created_at))
                                        .where(event_outbox.c.dispatched_at.is_(None))).scalar_one()
            oldest_due = conn.execute(select(func.min(webhook_deliveries.c.next_attempt_at))
                                      .where(webhook_deliveries.c.state == "pending")).scalar_one()
            queued = conn.execute(select(renders.c.workspace_id, func.min(renders.c.created_at))
                                  .where(renders.c.status == "queued").group_by(renders.c.workspace_id)).all()
            used = conn.execute(select(
                task_costs.c.workspace_id, func.sum(task_costs.c.cpu_sec), func.coalesce(func.sum(task_costs.c.gpu_sec), 0),
                func.sum(task_costs.c.wall_sec), func.sum(task_costs.c.frames), func.sum(task_costs.c.storage_bytes),
            ).group_by(task_costs.c.workspace_id)).all()
        counts = {status: int(n) for status, n in by_status}
        return Totals(renders={status: counts.get(status, 0) for status in RENDER_STATUSES}, charged=abs(int(charged)),
                      refunded=abs(int(refunded)), deliveries={state: int(n) for state, n in outcomes},
                      oldest_event=oldest_event, oldest_due=oldest_due,
                      oldest_queued={str(workspace): since for workspace, since in queued},
                      used={str(w): WorkspaceUse(float(cpu or 0), float(gpu or 0), float(wall or 0), int(frames or 0),
                                                 int(stored or 0)) for w, cpu, gpu, wall, frames, stored in used})

    def waiting_tasks(self) -> dict[str, tuple[int, datetime | None]]:
        """Per queue of the embedded farm: tasks waiting to run and the earliest they could."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(queued_tasks.c.queue, func.count(), func.min(queued_tasks.c.run_after))
                                .where(queued_tasks.c.status == "queued").group_by(queued_tasks.c.queue)).all()
        return {name: (int(count), first) for name, count, first in rows}
