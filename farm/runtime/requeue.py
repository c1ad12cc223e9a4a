"""An operator's requeue of one render (``reelfarm farm render requeue``): its unfinished work
enqueued again now, on the RQ farm or the embedded queue.

What is enqueued is what the repair round (``reelfarm.farm.runtime.reconcile``) would put back,
without waiting for it: each chunk whose segment is not stored and whose job the queue does not
hold waiting or running (lost, failed, stopped, canceled), the asset import its chunks wait on
where it has not run, and the stitch. Chunks whose segments are stored are not drawn again. On
RQ the day's count of repairs of the render's jobs starts again (an operator's requeue is not a
loop the repair round must break).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from reelfarm.farm.runtime.context import TaskContext
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.assets import remote_assets
from reelfarm.farm.services.graph import chunk_job_id, enqueue_graph, graph_of, render_job_ids, stitch_job_id
from reelfarm.shared import storage_keys
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.tables import queued_tasks

RETRIES = 2
_HELD = ("deferred", "queued", "running")


def requeue_render(ctx: TaskContext, queue: Any, render: renders_repo.Render) -> list[str]:
    """Enqueue again the live ``render``'s unfinished work the queue does not hold; returns the
    job ids enqueued (none: its work is waiting or running already)."""
    if isinstance(queue, RQQueue):
        from reelfarm.farm.runtime.reconcile import Reconciled, _reconcile_render

        queue.redis.delete(*(f"reelfarm:{queue.namespace}requeued:{j}"
                             for j in render_job_ids(render.id, render.chunks or 0)))
        done = Reconciled()
        _reconcile_render(ctx, queue, render, done)
        return done.enqueued
    return _requeue_rows(ctx, queue, render)


def _requeue_rows(ctx: TaskContext, queue: Any, render: renders_repo.Render) -> list[str]:
    """The embedded queue's side: its rows of the render's tasks that ended are written over."""
    chunks = render.chunks or 0
    ids = render_job_ids(render.id, chunks)
    with ctx.engine.connect() as conn:
        states = dict(conn.execute(select(queued_tasks.c.id, queued_tasks.c.status)
                                   .where(queued_tasks.c.id.in_(ids))).all())
        doc = videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc
    pending = [i for i in range(chunks) if not ctx.storage.exists(storage_keys.segment_key(render.id, i))]
    lost = [i for i in pending if states.get(chunk_job_id(render.id, i)) not in _HELD]
    stitch = states.get(stitch_job_id(render.id))
    if not lost and stitch in (*_HELD, "succeeded"):
        return []
    graph = graph_of(render, needs_import=bool(remote_assets(doc)) and render.started_at is None,
                     chunk_queue=queue.chunk_queue(render.pool), pending=pending,
                     stitch_queue=queue.stitch_queue(render.pool))
    tasks = [graph.chunk(i) for i in lost]
    if graph.assets is not None and states.get(graph.assets.job_id) not in (*_HELD, "succeeded"):
        tasks.insert(0, graph.assets)
    if stitch not in _HELD:
        tasks.append(graph.stitch)
    enqueue_graph(queue, tasks, RETRIES)
    return [t.job_id for t in tasks]
