"""Asynchronous jobs (stills, brand extraction, generation): status, stage, progress, result.

Like renders, a job's status only moves forward (``queued -> running -> succeeded | failed |
canceled``) and every transition is a conditional UPDATE, so a retried or late task cannot undo
a newer state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.statuses import LIVE
from reelfarm.shared.tables import jobs


@dataclass(frozen=True)
class Job:
    id: str
    workspace_id: str
    kind: str
    status: str
    stage: str | None
    progress: float
    error: str | None
    result: dict[str, Any] | None
    params: dict[str, Any]
    video_id: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


def create_job(conn: Connection, clock: Clock, *, workspace_id: str, kind: str, params: Mapping[str, Any],
               video_id: str | None = None) -> Job:
    """A ``queued`` job (progress 0, stage null)."""
    job_id = new_id()
    conn.execute(jobs.insert().values(id=job_id, workspace_id=workspace_id, kind=kind, status="queued",
                                      stage=None, progress=0.0, params=dict(params), video_id=video_id,
                                      attempts=0, created_at=clock.now()))
    return _load(conn, job_id)


def get_job(conn: Connection, workspace_id: str, job_id: str) -> Job:
    """Raises NotFound when there is no such job in the workspace."""
    row = conn.execute(select(jobs).where(jobs.c.id == job_id, jobs.c.workspace_id == workspace_id)).first()
    if row is None:
        raise NotFound("job", job_id)
    return Job(**row._mapping)


def find_job(conn: Connection, job_id: str) -> Job | None:
    """The job with this id, whatever its workspace (for tasks, which get bare ids)."""
    row = conn.execute(select(jobs).where(jobs.c.id == job_id)).first()
    return Job(**row._mapping) if row else None


def start_job(conn: Connection, clock: Clock, job_id: str, stage: str) -> Job | None:
    """``queued -> running`` (or a retry of a running job) at ``stage``; None unless the job is live."""
    now = clock.now()
    conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status == "queued")
                 .values(status="running", started_at=now))
    conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status == "running")
                 .values(stage=stage, attempts=jobs.c.attempts + 1))
    job = find_job(conn, job_id)
    return job if job is not None and job.status in LIVE else None


def set_stage(conn: Connection, job_id: str, stage: str, progress: float) -> bool:
    """Move a running job to ``stage`` at ``progress`` (never lowered); False if it is not running."""
    greatest = func.max if conn.dialect.name == "sqlite" else func.greatest
    done = conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status == "running")
                        .values(stage=stage, progress=greatest(jobs.c.progress, progress)))
    return bool(done.rowcount)


def finish_job(conn: Connection, clock: Clock, job_id: str, result: Mapping[str, Any]) -> Job | None:
    """``running -> succeeded`` with ``result``; None if it is no longer live."""
    done = conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status.in_(LIVE)).values(
        status="succeeded", progress=1.0, result=dict(result), error=None, finished_at=clock.now()))
    return _load(conn, job_id) if done.rowcount else None


def fail_job(conn: Connection, clock: Clock, job_id: str, error: str) -> Job | None:
    """``queued|running -> failed`` with ``error``; None if it is no longer live."""
    return _end(conn, clock, job_id, "failed", error)


def cancel_job(conn: Connection, clock: Clock, job_id: str) -> Job | None:
    """``queued|running -> canceled``; None if it is no longer live."""
    return _end(conn, clock, job_id, "canceled", None)


def delete_job(conn: Connection, job_id: str) -> None:
    """Remove a job that was never handed to a queue (the compensation of a failed enqueue)."""
    conn.execute(delete(jobs).where(jobs.c.id == job_id))


def latest_video_job(conn: Connection, video_id: str, kind: str = "generate") -> Job | None:
    """The newest job of ``kind`` that works on the video (its generation or translation)."""
    row = conn.execute(select(jobs).where(jobs.c.video_id == video_id, jobs.c.kind == kind)
                       .order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(1)).first()
    return Job(**row._mapping) if row else None


def stalled_jobs(conn: Connection, *, running_before: datetime, queued_before: datetime) -> list[Job]:
    """Jobs running since before ``running_before`` or queued since before ``queued_before``."""
    rows = conn.execute(select(jobs).where(
        ((jobs.c.status == "running") & (func.coalesce(jobs.c.started_at, jobs.c.created_at) < running_before))
        | ((jobs.c.status == "queued") & (jobs.c.created_at < queued_before))))
    return [Job(**row._mapping) for row in rows]


def _end(conn: Connection, clock: Clock, job_id: str, status: str, error: str | None) -> Job | None:
    done = conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status.in_(LIVE))
                        .values(status=status, error=error, finished_at=clock.now()))
    return _load(conn, job_id) if done.rowcount else None


def _load(conn: Connection, job_id: str) -> Job:
    row = conn.execute(select(jobs).where(jobs.c.id == job_id)).one()
    return Job(**row._mapping)
