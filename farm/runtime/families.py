"""Moving a render to another encoder family when no node of its family takes its chunks in time.

A render's chunks wait on ``render-nvenc`` while its family is NVENC (``reelfarm.farm.runtime.routing``).
When the oldest of them has waited past the wait and a node without NVENC is live (or no NVENC
node is), ``fall_back`` moves each such render, whole, to x264: its family is switched (the
lifecycle service deletes the segments NVENC made, to be drawn again), its chunks waiting on
``render-nvenc`` move to ``render``, the ones whose segments were deleted are enqueued again, and
its stitch is registered anew on every chunk not stored. A chunk drawing meanwhile sees the
switch before it stores and draws again with x264. Never a mixture: the stitch checks it too.

Renders in a pool (``reelfarm.farm.services.pools``) are judged by the nodes that serve it: their
chunks wait in the dispatcher's ``render-nvenc@<pool>`` or in a tag set's ready queue
(``render-nvenc@<tags>``), and move to the same pool's CPU queue (``render@<pool>`` while waiting
for their turn; from a tag set's ready queue to ``render@<tags>`` when a node of that set works it,
else to the CPU queue of another live tag set serving the pool), never to another pool's nodes.

Runs in the maintenance round of a farm on RQ, beside ``Router.reroute``; idempotent.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.runtime.poolrounds import node_sets, tag_set_queues, taker
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.reconcile import drop_deferred
from reelfarm.farm.runtime.routing import as_text, enqueued_at, serving, works
from reelfarm.farm.services.graph import chunk_job_id, chunk_of, enqueue_graph, graph_of
from reelfarm.farm.services.lifecycle import RenderLifecycle
from reelfarm.farm.services.pools import ANY, pool_name, queue_key, split_key
from reelfarm.farm.services.queues import NVENC_QUEUE, RENDER_QUEUE
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage_keys import segment_key

log = logging.getLogger("reelfarm.farm")

def stale_renders(queue: RQQueue, known: list[dict[str, Any]] | None = None) -> list[str]:
    """Renders with a chunk waiting for NVENC past the wait while another node serving its pool
    could take it (or none of NVENC serving it is live), oldest first; ``known``: the registry's
    nodes, alive or not (read when not given)."""
    known = NodeRegistry(queue.redis, queue.namespace).nodes() if known is None else known
    nodes = [n for n in known if n.get("alive")]
    cutoff = time.time() - queue.router.gpu_wait_sec
    found: list[str] = []
    if _movable(nodes):
        found += _stale_listed(queue, f"rq:queue:{queue.namespace}{NVENC_QUEUE}", cutoff, None)
    for ready in tag_set_queues(known, (NVENC_QUEUE,)):  # a pool's chunks given out to a tag set
        found += _stale_listed(queue, f"rq:queue:{queue.namespace}{ready}", cutoff,
                               lambda pool: pool is not None and _movable(serving(nodes, pool)))
    for pool in [ANY, *_nvenc_pools(queue)]:  # still waiting for their turn
        if _movable(serving(nodes, pool)):
            found += queue.dispatcher.stale_renders(queue_key(NVENC_QUEUE, pool), cutoff)
    return list(dict.fromkeys(found))


def _movable(nodes: list[dict[str, Any]]) -> bool:
    """Whether moving chunks off NVENC helps, with ``nodes`` serving their pool: one without NVENC
    takes chunks, or none with NVENC is live (but some node is)."""
    nvenc = any(works(n, NVENC_QUEUE) for n in nodes)
    others = any(works(n, RENDER_QUEUE) and not works(n, NVENC_QUEUE) for n in nodes)
    return others or (not nvenc and bool(nodes))


def _nvenc_pools(queue: RQQueue) -> list[str]:
    """The pools with renders waiting for NVENC in the dispatcher (its ``since:render-nvenc@<pool>``)."""
    prefix = queue.dispatcher.key(f"since:{NVENC_QUEUE}@")
    return sorted({as_text(k)[len(prefix):] for k in queue.redis.scan_iter(match=f"{prefix}*")})


def _stale_listed(queue: RQQueue, listed: str, cutoff: float,
                  movable: Callable[[str | None], bool] | None) -> list[str]:
    """Renders of the chunks in the ready list ``listed`` enqueued before ``cutoff`` (with
    ``movable``, only those whose pool, the job's, None when it is gone, it takes)."""
    found: list[str] = []
    for raw in queue.redis.lrange(listed, 0, -1):
        enqueued = enqueued_at(queue.redis, raw)
        if enqueued is None or enqueued > cutoff:
            break  # the list is in enqueue order: the rest waited less
        chunk = chunk_of(as_text(raw))
        if chunk and chunk[0] not in found and (movable is None or movable(_pool_of(queue, as_text(raw)))):
            found.append(chunk[0])
    return found


def _pool_of(queue: RQQueue, rq_id: str) -> str | None:
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    try:
        return str(Job.fetch(rq_id, connection=queue.redis).meta.get("pool") or "")
    except NoSuchJobError:
        return None


def _off_nvenc(queue: RQQueue, rq_id: str, pool: str, known: list[dict[str, Any]]) -> bool:
    """Take the chunk ``rq_id`` out of the NVENC ready list it waits in and put it at the front of
    a CPU queue of its pool; False when it waits in none (or no CPU queue of its pool has a node).
    ``known``: the registry's nodes, alive or not."""
    from rq import Queue
    from rq.job import Job

    redis, ns = queue.redis, queue.namespace
    if redis.lrem(f"rq:queue:{ns}{NVENC_QUEUE}", 1, rq_id):
        return queue.router.requeue(rq_id)
    nodes = [n for n in known if n.get("alive")]
    for ready in tag_set_queues(known, (NVENC_QUEUE,)) if pool else ():
        listed = f"rq:queue:{ns}{ready}"
        if redis.lpos(listed, rq_id) is None:
            continue
        tags = split_key(ready)[1]
        own = queue_key(RENDER_QUEUE, tags)
        live = {pool_name(t): t for t in node_sets(nodes).values()}
        to = own if any(works(n, own) for n in nodes) else taker(nodes, live, RENDER_QUEUE, pool)
        if to is None or not redis.lrem(listed, 1, rq_id):
            return False
        Queue(f"{ns}{to}", connection=redis).enqueue_job(Job.fetch(rq_id, connection=redis), at_front=True)
        return True
    return False


def fall_back(queue: RQQueue, life: RenderLifecycle) -> list[str]:
    """Move the renders ``stale_renders`` finds to x264; returns their ids."""
    moved = []
    known = NodeRegistry(queue.redis, queue.namespace).nodes()
    for render_id in stale_renders(queue, known):
        with life.engine.connect() as conn:
            render = renders_repo.find_render(conn, render_id)
        if render is None or not render.chunks:
            continue
        keys = [segment_key(render_id, i) for i in range(render.chunks)]
        redo = life.switch_family(render_id, keys, to="x264")
        if redo is None:
            continue
        pending = [i for i, key in enumerate(keys) if not life.storage.exists(key)]
        graph = graph_of(render, needs_import=False, pending=pending, stitch_queue=queue.stitch_queue(render.pool))
        for index in pending:
            rq_id = queue.rq_job_id(chunk_job_id(render_id, index))
            if not _off_nvenc(queue, rq_id, render.pool, known) and not queue.retarget(rq_id, RENDER_QUEUE) \
                    and index in redo:
                enqueue_graph(queue, [graph.chunk(index)])
        drop_deferred(queue, graph.stitch.job_id)
        enqueue_graph(queue, [graph.stitch])
        moved.append(render_id)
    if moved:
        log.warning("moved %d render(s) whose chunks no NVENC node took in %.0f s to x264: %s", len(moved),
                    queue.router.gpu_wait_sec, ", ".join(moved))
    return moved
