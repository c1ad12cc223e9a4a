"""Putting lost queue entries back: the database is the source of truth, Redis is not.

Redis can lose what it holds: restarted without persistence (as the README's and CI's Redis are),
failed over, flushed. A job can also end in RQ's failed registry while the database still says
its render is running, when the failure could not be recorded because PostgreSQL was down too.
Either way work the database records as ``queued`` or ``running`` has nothing left in the queue
to move it, and without this it would wait for the stall reaper to fail it.

``reconcile`` compares the two and enqueues again what is missing:

- a live render: its asset import (a queued render whose document has remote assets), each chunk
  whose segment is not stored yet, and its stitch, which depends on the chunks not yet done;
- a live job (stills, brand extraction, generation, translation): its one task.

A queue entry counts as missing when RQ has no such job, or has it as failed, stopped or canceled
while the database still calls the work live. Entries that are waiting, deferred, scheduled,
running or finished are left alone.

It is idempotent and safe to run from several processes: job ids are deterministic and
``RQQueue.enqueue`` does nothing for a job that is waiting or running; callers hold a Redis lock
so one process reconciles at a time (``reelfarm.farm.runtime.maintenance``); work younger than ``GRACE`` is not
looked at (the API commits first and enqueues right after); and tasks do nothing for a render or
job that is no longer live, so a race with a task finishing costs at most a no-op run. Each job id
is enqueued again at most ``MAX_REQUEUES`` times a day: past that the render or job is failed
(and refunded) rather than looped, which ``reap`` could not do for work that keeps starting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from reelfarm.farm.runtime.context import TaskContext, current
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.tasks import fail_job
from reelfarm.farm.runtime.tasks import lifecycle as ctx_lifecycle
from reelfarm.farm.services.assets import remote_assets
from reelfarm.farm.services.graph import (
    QueuedTask,
    assets_job_id,
    chunk_job_id,
    enqueue_graph,
    graph_of,
    render_job_ids,
    stitch_job_id,
)
from reelfarm.farm.services.job_lifecycle import JOB_KINDS, job_queue_id
from reelfarm.farm.services.queues import GPU_QUEUE, JOBS_QUEUE, RENDER_QUEUE
from reelfarm.shared import storage_keys
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import videos as videos_repo

log = logging.getLogger("reelfarm.farm")

GRACE = timedelta(seconds=10)
MAX_REQUEUES = 3
REQUEUE_COUNT_TTL_SEC = 24 * 3600
BATCH = 1000
RETRIES = 2
_PRESENT = ("queued", "deferred", "scheduled", "started", "finished")


@dataclass
class Reconciled:
    """What one round enqueued again (queue job ids), and what it gave up on."""

    enqueued: list[str] = field(default_factory=list)
    failed_renders: list[str] = field(default_factory=list)
    failed_jobs: list[str] = field(default_factory=list)


def reconcile(queue: RQQueue, *, grace: timedelta = GRACE) -> Reconciled:
    """Enqueue again the work of live renders and jobs that the queue has lost; uses the task context."""
    ctx = current()
    before = ctx.clock.now() - grace
    with ctx.engine.connect() as conn:
        renders = [r for r in renders_repo.list_renders_by_status(conn, renders_repo.LIVE, limit=BATCH)
                   if r.created_at < before]
        jobs = [j for j in jobs_repo.stalled_jobs(conn, running_before=before, queued_before=before)
                if j.kind in JOB_KINDS]
    done = Reconciled()
    for render in renders:
        _reconcile_render(ctx, queue, render, done)
    for job in jobs:
        _reconcile_job(queue, job, done)
    if done.enqueued:
        log.warning("enqueued again %d job(s) the queue had lost: %s", len(done.enqueued), ", ".join(done.enqueued))
    return done


class _Lost(Exception):
    """A job id was enqueued again too often; the work is failed instead."""


def _reconcile_render(ctx: TaskContext, queue: RQQueue, render: renders_repo.Render, done: Reconciled) -> None:
    chunks = render.chunks or 0
    states = _states(queue, render_job_ids(render.id, chunks))
    pending = [i for i in range(chunks) if not ctx.storage.exists(storage_keys.segment_key(render.id, i))]
    lost_chunks = [i for i in pending if states[chunk_job_id(render.id, i)] not in _PRESENT]
    stitch_state = states[stitch_job_id(render.id)]
    if not lost_chunks and stitch_state in _PRESENT:
        return
    assets_state = states[assets_job_id(render.id)]
    # The same graph as when the render was requested, less the chunks already stored.
    graph = graph_of(render, needs_import=_needs_import(ctx, render, assets_state),
                     chunk_queue=queue.chunk_queue(render.pool) if lost_chunks else RENDER_QUEUE, pending=pending,
                     stitch_queue=queue.stitch_queue(render.pool))
    try:
        if graph.assets is not None and assets_state not in _PRESENT:
            _enqueue(queue, graph.assets, done)
        for index in lost_chunks:
            _enqueue(queue, graph.chunk(index), done)
        if lost_chunks and stitch_state == "deferred":
            drop_deferred(queue, graph.stitch.job_id)  # re-register it on the chunks enqueued anew
            stitch_state = None
        if stitch_state not in _PRESENT:
            _enqueue(queue, graph.stitch, done)
    except _Lost as exc:
        if ctx_lifecycle(ctx).fail(render.id, f"the render's queued work was lost {MAX_REQUEUES} times ({exc}); "
                                   "try again"):
            done.failed_renders.append(render.id)


def _needs_import(ctx: TaskContext, render: renders_repo.Render, state: str | None) -> bool:
    """Whether the chunks must still wait for an import of the document's remote assets."""
    if render.status != "queued" or state == "finished":
        return False  # a chunk has started, so the import is done
    with ctx.engine.connect() as conn:
        doc = videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc
    return bool(remote_assets(doc))


def _reconcile_job(queue: RQQueue, job: jobs_repo.Job, done: Reconciled) -> None:
    job_id = job_queue_id(job.id)
    if _states(queue, [job_id])[job_id] in _PRESENT:
        return
    try:
        _enqueue(queue, QueuedTask(job_id, JOB_KINDS[job.kind].task, (job.id,), JOBS_QUEUE), done)
    except _Lost as exc:
        if fail_job(job.id, f"the job's queued work was lost {MAX_REQUEUES} times ({exc}); try again"):
            done.failed_jobs.append(job.id)


def _enqueue(queue: RQQueue, task: QueuedTask, done: Reconciled) -> None:
    job_id, redis = task.job_id, queue.redis
    counter = f"reelfarm:{queue.namespace}requeued:{job_id}"
    with redis.pipeline() as pipe:
        pipe.incr(counter)
        pipe.expire(counter, REQUEUE_COUNT_TTL_SEC)
        count = int(pipe.execute()[0])
    if count > MAX_REQUEUES:
        raise _Lost(job_id)
    _forget_failure(queue, job_id, task.queue)
    enqueue_graph(queue, [task], RETRIES)
    done.enqueued.append(job_id)


def _states(queue: RQQueue, job_ids: list[str]) -> dict[str, str | None]:
    """RQ's status of each job (``None`` when Redis has no such job)."""
    from rq.job import Job

    jobs = Job.fetch_many([queue.rq_job_id(j) for j in job_ids], connection=queue.redis)
    return {job_id: (_status(job) if job is not None else None) for job_id, job in zip(job_ids, jobs)}


def _status(job: Any) -> str | None:
    status = job.get_status(refresh=False)
    return getattr(status, "value", status)


def _forget_failure(queue: RQQueue, job_id: str, queue_name: str) -> None:
    """Take a failed job out of RQ's failed registry before it is enqueued under the same id (a
    chunk may have failed on either render queue)."""
    from rq.registry import FailedJobRegistry

    names_ = (RENDER_QUEUE, GPU_QUEUE) if queue_name in (RENDER_QUEUE, GPU_QUEUE) else (queue_name,)
    for name in names_:
        registry = FailedJobRegistry(queue.queue_name(name), connection=queue.redis)
        queue.redis.zrem(registry.key, queue.rq_job_id(job_id))


def drop_deferred(queue: RQQueue, job_id: str) -> None:
    """Cancel a job RQ holds deferred on its dependencies, so it can be enqueued on new ones."""
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    from rq.job import Job

    try:
        Job.fetch(queue.rq_job_id(job_id), connection=queue.redis).cancel()
    except (NoSuchJobError, InvalidJobOperation):
        pass
