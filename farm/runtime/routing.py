"""Which queue a render's chunks go to, and which queues a node works: routing by capability.

Queues (RQ lists ``rq:queue:<namespace><name>``):

- ``render`` (``RENDER_QUEUE``): chunks drawn on the CPU, and every stitch. Every render node
  works it; it kept its name so that nodes, dashboards and scalers set up before routing existed
  carry on unchanged.
- ``render-gpu`` (``GPU_QUEUE``): chunks for nodes that draw with the GL rasterizer.
- ``render-nvenc`` (``NVENC_QUEUE``): chunks of renders whose encoder family is NVENC. Only nodes
  that encode with NVENC work it (first); they work the other render queues too, encoding those
  chunks with x264, which every node has.
- ``jobs``: asset imports, stills, brand extraction, generation (unchanged).

Encoder families. The segments of one render are all of one family, since segments of two cannot
be joined into a file that plays everywhere. The family is chosen when the render's chunks are
enqueued: NVENC while a node that encodes with it is live (its chunks go to ``render-nvenc``),
x264 otherwise (for a render in a pool, a node that serves the pool), and recorded on the render
(``reelfarm.farm.services.lifecycle``). When chunks
wait on ``render-nvenc`` past ``gpu_wait_sec`` and no NVENC node is live, or one is live but a
node without NVENC is idle-able (live), the maintenance round moves the *whole render* to x264
(``Router.fall_back``): its family is switched, the segments NVENC already made are deleted and
drawn again, its waiting chunks move to ``render`` and its stitch waits for all of them anew; a
chunk that was drawing meanwhile sees the switch and draws again with x264 before it stores.

A node names its queues with ``--queues``; ``node_queues`` expands them by the rasterizer the node
runs with: on a GL node ``render`` means ``render-gpu`` then ``render`` (GPU work first, CPU work
when there is none), on a CPU node just ``render``. A CPU node never works ``render-gpu``: a node
asked for it whose GL context failed drops it with a logged reason. ``render-cpu`` is accepted as
another name of ``render``.

At enqueue time ``Router.chunk_queue`` picks ``render-gpu`` while a node that works it is live
(heartbeating, ``reelfarm.farm.runtime.nodes``; a node set aside, ``reelfarm.farm.runtime.nodehealth``,
works nothing), unless a CPU-only node is live and the GPU queue's oldest chunk has already waited
``gpu_wait_sec``; otherwise ``render``. Chunks that wait on ``render-gpu`` longer
than ``gpu_wait_sec`` (``REELFARM_GPU_QUEUE_WAIT_SEC``) are moved to ``render`` by the
maintenance round (``Router.reroute``) while a CPU-only node is live; so are retries due on
``render-gpu`` that no GPU node's scheduler picked up. A move takes the job out of its list (or
the scheduled registry) with one atomic command first, so a node that took it meanwhile keeps it,
and rounds on several processes never move a job twice. Stitches and imports are never moved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.services.pools import serves, split_queues
from reelfarm.farm.services.queues import GPU_QUEUE, NVENC_QUEUE, RENDER_QUEUE

log = logging.getLogger("reelfarm.farm")

CPU_ALIAS = "render-cpu"
DEFAULT_GPU_WAIT_SEC = 30.0


def node_queues(requested: Iterable[str], raster_kind: str, encoder: str = "x264") -> tuple[list[str], list[str]]:
    """The queues a node with rasterizer ``raster_kind`` ("cpu" or "gl") and encoder family
    ``encoder`` works, in priority order, and the requested names it dropped (``render-gpu`` on a
    CPU node, ``render-nvenc`` on a node without NVENC)."""
    queues: list[str] = []
    dropped: list[str] = []
    for name in requested:
        name = RENDER_QUEUE if name == CPU_ALIAS else name
        if name == RENDER_QUEUE:
            expanded = ([NVENC_QUEUE] if encoder == "nvenc" else []) + \
                       ([GPU_QUEUE] if raster_kind == "gl" else []) + [RENDER_QUEUE]
        elif (name == GPU_QUEUE and raster_kind != "gl") or (name == NVENC_QUEUE and encoder != "nvenc"):
            dropped.append(name)
            expanded = []
        else:
            expanded = [name]
        queues += [q for q in expanded if q not in queues]
    return queues, dropped


def works(node: dict[str, Any], queue: str) -> bool:
    """Whether a registry entry (``NodeRegistry.nodes``) is live, not set aside
    (``reelfarm.farm.runtime.nodehealth``) and works ``queue``."""
    return bool(node.get("alive")) and not node.get("set_aside") and queue in split_queues(str(node.get("queues", "")))


def serving(nodes: Iterable[dict[str, Any]], pool: str) -> list[dict[str, Any]]:
    """The registry entries of ``nodes`` that serve ``pool`` (``reelfarm.farm.services.pools.serves``)."""
    return [n for n in nodes if serves(str(n.get("tags") or "").split(","), pool)]


class Router:
    """Routing over one Redis and namespace (see the module docstring)."""

    def __init__(self, redis: Any, namespace: str = "", gpu_wait_sec: float = DEFAULT_GPU_WAIT_SEC) -> None:
        self.redis = redis
        self.namespace = namespace
        self.gpu_wait_sec = gpu_wait_sec

    def live(self, nodes: list[dict[str, Any]] | None = None) -> tuple[bool, bool]:
        """(a GPU node is live, a CPU-only node is live), from ``nodes`` (default: the registry now)."""
        nodes = NodeRegistry(self.redis, self.namespace).live_nodes() if nodes is None else nodes
        gpu = any(works(n, GPU_QUEUE) for n in nodes)
        cpu = any(works(n, RENDER_QUEUE) and not works(n, GPU_QUEUE) for n in nodes)
        return gpu, cpu

    def chunk_queue(self, pool: str = "") -> str:
        """The queue for chunks of ``pool`` enqueued now, from the live nodes that serve it (a pool
        whose nodes have no NVENC is x264 whatever runs elsewhere); ``render`` when the registry
        cannot be read."""
        try:
            nodes = serving(NodeRegistry(self.redis, self.namespace).live_nodes(), pool)
            if any(works(n, NVENC_QUEUE) for n in nodes) and self.oldest_wait(NVENC_QUEUE) < self.gpu_wait_sec:
                return NVENC_QUEUE
            gpu, cpu = self.live(nodes)  # one read of the registry per request
            if gpu and cpu and self.oldest_gpu_wait() >= self.gpu_wait_sec:
                return RENDER_QUEUE
        except Exception:  # a registry read must never stop a render request
            log.warning("could not read the node registry; chunks go to %s", RENDER_QUEUE, exc_info=True)
            return RENDER_QUEUE
        return GPU_QUEUE if gpu else RENDER_QUEUE

    def oldest_gpu_wait(self) -> float:
        """Seconds the oldest chunk on ``render-gpu`` has waited (0 when none waits)."""
        return self.oldest_wait(GPU_QUEUE)

    def oldest_wait(self, queue: str) -> float:
        """Seconds the oldest job on ``queue`` has waited (0 when none waits)."""
        head = self.redis.lindex(self._list_key(queue), 0)
        if head is None:
            return 0.0
        enqueued = enqueued_at(self.redis, head)
        return max(0.0, time.time() - enqueued) if enqueued is not None else 0.0

    def reroute(self) -> list[str]:
        """Move chunks that waited on ``render-gpu`` past the wait to ``render``, while a CPU-only
        node is live. Returns the moved job ids (namespaced, as RQ knows them)."""
        _, cpu = self.live()
        if not cpu:
            return []
        moved = self._move_waiting() + self._move_due_retries()
        if moved:
            log.warning("moved %d chunk(s) that waited over %.0f s for a GPU node to %s: %s", len(moved),
                        self.gpu_wait_sec, RENDER_QUEUE, ", ".join(moved))
        return moved

    # -- helpers ----------------------------------------------------------------------------

    def _list_key(self, queue: str) -> str:
        return f"rq:queue:{self.namespace}{queue}"

    def _move_waiting(self) -> list[str]:
        stale: list[str] = []
        cutoff = time.time() - self.gpu_wait_sec
        for raw in self.redis.lrange(self._list_key(GPU_QUEUE), 0, -1):
            enqueued = enqueued_at(self.redis, raw)
            if enqueued is None or enqueued > cutoff:
                break  # the list is in enqueue order: the rest waited less
            stale.append(as_text(raw))
        return [job_id for job_id in reversed(stale)  # pushed to the front: the oldest ends first
                if self.redis.lrem(self._list_key(GPU_QUEUE), 1, job_id) and self.requeue(job_id)]

    def _move_due_retries(self) -> list[str]:
        from rq.registry import ScheduledJobRegistry

        registry = ScheduledJobRegistry(f"{self.namespace}{GPU_QUEUE}", connection=self.redis)
        due = self.redis.zrangebyscore(registry.key, 0, time.time() - self.gpu_wait_sec)
        return [as_text(raw) for raw in due if self.redis.zrem(registry.key, raw) and self.requeue(as_text(raw))]

    def requeue(self, job_id: str) -> bool:
        """Put a job (taken out of its list) at the front of ``render``; False when it is gone."""
        from rq import Queue
        from rq.exceptions import NoSuchJobError
        from rq.job import Job

        try:
            job = Job.fetch(job_id, connection=self.redis)
        except NoSuchJobError:
            return False  # gone with its result; farm.runtime.reconcile enqueues the chunk again if it is still due
        Queue(f"{self.namespace}{RENDER_QUEUE}", connection=self.redis).enqueue_job(job, at_front=True)
        return True


def enqueued_at(redis: Any, job_id: bytes | str) -> float | None:
    """When RQ enqueued the job (epoch seconds), or None when it holds no such time."""
    from rq.utils import utcparse

    raw = redis.hget(f"rq:job:{as_text(job_id)}", "enqueued_at")
    if not raw:
        return None
    try:
        return utcparse(as_text(raw)).timestamp()
    except ValueError:
        return None


def as_text(value: bytes | str) -> str:
    """A Redis answer as text."""
    return value.decode() if isinstance(value, bytes) else value


def expand_names(queues: Sequence[str], namespace: str) -> list[str]:
    """RQ's names of ``queues`` under ``namespace``."""
    return [f"{namespace}{q}" for q in queues]
