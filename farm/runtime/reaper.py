"""The bound on how long a render or job may stay unfinished.

Queues retry and reclaim what they can, but a task can still be lost (Redis flushed, a deferred
stitch whose chunk was dropped, a bug). So no render stays ``running`` longer than
``STALL_AFTER`` without a chunk moving it forward (each chunk start and end, and the stitch,
stamp ``progressed_at``; a chunk is about 5 s of video and has a 10-minute queue timeout), and
none stays ``queued`` longer than ``QUEUED_MAX``, unless an operator suspended it
(``reelfarm.farm.services.rendercontrols``: the audit log's last word on it is a suspend). Past that, ``reap`` fails it with a message
and refunds it (``render.failed`` is emitted). Jobs get the same treatment from their
``started_at`` / ``created_at``.

``reap`` runs in the embedded queue's maintenance round and in every ``reelfarm worker``'s
heartbeat thread (one node at a time, under a Redis lock); it is idempotent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from reelfarm.farm.runtime.context import current
from reelfarm.farm.runtime.tasks import fail_job, fail_render
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo

log = logging.getLogger("reelfarm.farm")

STALL_AFTER = timedelta(minutes=15)
QUEUED_MAX = timedelta(hours=6)
JOB_MAX = timedelta(minutes=15)


@dataclass
class Reaped:
    renders: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)


def reap(*, stall_after: timedelta = STALL_AFTER,
         queued_max: timedelta = QUEUED_MAX, job_max: timedelta = JOB_MAX) -> Reaped:
    """Fail (and refund) renders and jobs left unfinished past their bound; uses the task context."""
    ctx = current()
    now = ctx.clock.now()
    reaped = Reaped()
    with ctx.engine.connect() as conn:
        stalled = renders_repo.stalled_renders(conn, running_before=now - stall_after, queued_before=now - queued_max)
        stuck_jobs = jobs_repo.stalled_jobs(conn, running_before=now - job_max, queued_before=now - queued_max)
    held = _suspended(ctx.engine, [r.id for r in stalled])
    for render in stalled:
        if render.id in held:  # an operator holds it back; its resume starts its clock again
            continue
        bound = stall_after if render.status == "running" else queued_max
        verb = "made no progress" if render.status == "running" else "waited in the queue"
        if fail_render(render.id, f"the render {verb} for {_minutes(bound)}; try again"):
            log.warning("reaped render %s (%s past %s)", render.id, render.status, bound)
            reaped.renders.append(render.id)
    for job in stuck_jobs:
        if fail_job(job.id, f"the job did not finish within {_minutes(job_max if job.status == 'running' else queued_max)}; try again"):
            reaped.jobs.append(job.id)
    return reaped


def _suspended(engine: Any, render_ids: list[str]) -> set[str]:
    """Renders an operator suspended; none when the audit log cannot be read (a database not
    migrated yet): the bound applies as before."""
    from reelfarm.farm.services.rendercontrols import suspended_renders

    try:
        return suspended_renders(engine, render_ids)
    except Exception:
        log.warning("cannot read which renders are suspended", exc_info=True)
        return set()


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} minutes" if minutes < 120 else f"{minutes // 60} hours"
