"""Moving a render to another encoder family when no node of its family takes its chunks in time.

A render's chunks wait on ``render-nvenc`` while its family is NVENC (``reelfarm.farm.runtime.routing``).
When the oldest of them has waited past the wait and a node without NVENC is live (or no NVENC
node is), ``fall_back`` moves each such render, whole, to x264: its family is switched (the
lifecycle service deletes the segments NVENC made, to be drawn again), its chunks waiting on
``render-nvenc`` move to ``render``, the ones whose segments were deleted are enqueued again, and
its stitch is registered anew on every chunk not stored. A chunk drawing meanwhile sees the
switch before it stores and draws again with x264. Never a mixture: the stitch checks it too.

Runs in the maintenance round of a farm on RQ, beside ``Router.reroute``; idempotent.
"""
from __future__ import annotations

import logging
import time

from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.reconcile import drop_deferred
from reelfarm.farm.runtime.routing import as_text, enqueued_at, works
from reelfarm.farm.services.graph import chunk_job_id, chunk_of, enqueue_graph, graph_of
from reelfarm.farm.services.lifecycle import RenderLifecycle
from reelfarm.farm.services.queues import NVENC_QUEUE, RENDER_QUEUE
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage_keys import segment_key

log = logging.getLogger("reelfarm.farm")

def stale_renders(queue: RQQueue) -> list[str]:
    """Renders with a chunk waiting on ``render-nvenc`` past the wait while another node could
    take it (or none of NVENC is live), oldest first."""
    nodes = NodeRegistry(queue.redis, queue.namespace).live_nodes()
    nvenc = any(works(n, NVENC_QUEUE) for n in nodes)
    others = any(works(n, RENDER_QUEUE) and not works(n, NVENC_QUEUE) for n in nodes)
    if not others and (nvenc or not nodes):
        return []  # NVENC nodes alone: they will get to it; no node at all: moving helps no one
    cutoff = time.time() - queue.router.gpu_wait_sec
    found: list[str] = []
    for raw in queue.redis.lrange(f"rq:queue:{queue.namespace}{NVENC_QUEUE}", 0, -1):
        enqueued = enqueued_at(queue.redis, raw)
        if enqueued is None or enqueued > cutoff:
            break  # the list is in enqueue order: the rest waited less
        chunk = chunk_of(as_text(raw))
        if chunk and chunk[0] not in found:
            found.append(chunk[0])
    for render in queue.dispatcher.stale_renders(NVENC_QUEUE, cutoff):  # still waiting for their turn
        if render not in found:
            found.append(render)
    return found


def fall_back(queue: RQQueue, life: RenderLifecycle) -> list[str]:
    """Move the renders ``stale_renders`` finds to x264; returns their ids."""
    moved = []
    for render_id in stale_renders(queue):
        with life.engine.connect() as conn:
            render = renders_repo.find_render(conn, render_id)
        if render is None or not render.chunks:
            continue
        keys = [segment_key(render_id, i) for i in range(render.chunks)]
        redo = life.switch_family(render_id, keys, to="x264")
        if redo is None:
            continue
        pending = [i for i, key in enumerate(keys) if not life.storage.exists(key)]
        graph = graph_of(render, needs_import=False, pending=pending)
        nvenc_list = f"rq:queue:{queue.namespace}{NVENC_QUEUE}"
        for index in pending:
            rq_id = queue.rq_job_id(chunk_job_id(render_id, index))
            if queue.redis.lrem(nvenc_list, 1, rq_id):
                queue.router.requeue(rq_id)
            elif not queue.retarget(rq_id, RENDER_QUEUE) and index in redo:
                enqueue_graph(queue, [graph.chunk(index)])
        drop_deferred(queue, graph.stitch.job_id)
        enqueue_graph(queue, [graph.stitch])
        moved.append(render_id)
    if moved:
        log.warning("moved %d render(s) whose chunks no NVENC node took in %.0f s to x264: %s", len(moved),
                    queue.router.gpu_wait_sec, ", ".join(moved))
    return moved
