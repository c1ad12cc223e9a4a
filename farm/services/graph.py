"""A render's job graph: the import of its remote assets, then its chunks, then a stitch that
depends on every chunk. Built here only, by the render service when a render is requested and by
reconciliation when the queue lost some of it, so a re-enqueued render has the same jobs, ids,
queues and dependencies as the first time. A render in a pool has its stitch, like its chunks, run
by a node of the pool (``JobQueue.stitch_queue``); the import of remote assets runs on the
``jobs`` queue whatever the pool (the nodes that reach the internet; it only stores the files).

Job ids are deterministic (``render-<id>-chunk-3``), so enqueueing one twice replaces rather
than duplicates it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from reelfarm.farm.services.queues import JOBS_QUEUE, RENDER_QUEUE, JobQueue, Turn
from reelfarm.shared.repos.renders import Render

RENDER_CHUNK_TASK = "reelfarm.farm.runtime.tasks.render_chunk"
STITCH_TASK = "reelfarm.farm.runtime.tasks.stitch"
IMPORT_ASSETS_TASK = "reelfarm.farm.runtime.tasks.import_assets"
IMPORT_QUEUE = JOBS_QUEUE  # the nodes that reach the internet (brand extraction); render nodes need not


def chunk_job_id(render_id: str, index: int) -> str:
    return f"render-{render_id}-chunk-{index}"


def chunk_index_of(render_id: str, job_id: str) -> int | None:
    """The index of the render's chunk whose job id is ``job_id``; None for any other job."""
    index = job_id.removeprefix(chunk_job_id(render_id, 0)[:-1])
    return int(index) if index != job_id and index.isdigit() else None


def chunk_of(job_id: str) -> tuple[str, int] | None:
    """The render and chunk index that a chunk's job id (``render-<id>-chunk-3``, or a queue's id
    that ends with one) names; None for any other job."""
    own = job_id[max(job_id.rfind("render-"), 0):]
    head, _, index = own.rpartition("-chunk-")
    render_id = head.removeprefix("render-")
    if not render_id or not index.isdigit() or chunk_job_id(render_id, int(index)) != own:
        return None
    return render_id, int(index)


def stitch_job_id(render_id: str) -> str:
    return f"render-{render_id}-stitch"


def assets_job_id(render_id: str) -> str:
    return f"render-{render_id}-assets"


def render_job_ids(render_id: str, chunks: int) -> list[str]:
    """Every queue job a render may have: the import of its remote assets, its chunks, its stitch."""
    return [assets_job_id(render_id), *(chunk_job_id(render_id, i) for i in range(chunks)), stitch_job_id(render_id)]


@dataclass(frozen=True)
class QueuedTask:
    """One job of the graph: what runs (``task(*args)``), under which id, on which queue, after what."""

    job_id: str
    task: str
    args: tuple[Any, ...]
    queue: str
    depends_on: tuple[str, ...] = ()
    turn: Turn | None = None  # a chunk's place in fair dispatch
    pool: str = ""  # a pooled render's stitch: its pool, so that the repairs keep it among the pool's nodes


@dataclass(frozen=True)
class RenderGraph:
    """The jobs of one render, in the order they are enqueued."""

    assets: QueuedTask | None
    chunks: tuple[QueuedTask, ...]
    stitch: QueuedTask

    def __iter__(self) -> Iterator[QueuedTask]:
        if self.assets is not None:
            yield self.assets
        yield from self.chunks
        yield self.stitch

    def chunk(self, index: int) -> QueuedTask:
        return self.chunks[index]


@dataclass(frozen=True)
class Dispatch:
    """What fair dispatch needs of a render: whose it is, its priority, each chunk's frames."""

    workspace: str
    priority: str
    costs: tuple[int, ...]
    pool: str = ""  # the pool of nodes its chunks run in (``reelfarm.farm.services.pools``)

    def turn(self, render_id: str, index: int) -> Turn:
        cost = self.costs[index] if index < len(self.costs) else 1
        return Turn(self.workspace, render_id, max(1, cost), self.priority, index, self.pool)


def dispatch_of(workspace_id: str, priority: str, chunk_starts: Sequence[int] | None, frames: int | None,
                chunks: int, pool: str = "") -> Dispatch:
    """A render's ``Dispatch`` from its row's plan (``chunk_starts`` and ``frames``; a render planned
    before plans were stored is costed as equal pieces)."""
    total = int(frames or 0)
    if chunk_starts:
        ends = [*chunk_starts[1:], total]
        costs = tuple(max(1, end - start) for start, end in zip(chunk_starts, ends))
    else:
        costs = tuple(max(1, total // max(1, chunks)) for _ in range(chunks))
    return Dispatch(workspace_id, priority or "normal", costs, pool)


def render_graph(render_id: str, chunks: int, *, needs_import: bool, chunk_queue: str = RENDER_QUEUE,
                 pending: Iterable[int] | None = None, dispatch: Dispatch | None = None,
                 stitch_queue: str = RENDER_QUEUE) -> RenderGraph:
    """The render's jobs.

    Args:
        chunks: how many chunks the render was planned with.
        needs_import: its document has remote assets not imported yet: every chunk waits for them.
        chunk_queue: the queue chunks go to (``reelfarm.farm.runtime.routing`` picks it).
        pending: the chunks whose segments are not stored yet (default: all); the stitch waits
            only for those.
        stitch_queue: the queue the stitch goes to: ``render``, or for a render in a pool the ready
            queue of nodes serving the pool (``JobQueue.stitch_queue``), so that its segments and its
            file stay on the pool's nodes as its chunks do.
        dispatch: whose render it is and what its chunks cost: chunks then wait for their turn
            under fair dispatch (None: they go to their queue at once).
    """
    assets = (QueuedTask(assets_job_id(render_id), IMPORT_ASSETS_TASK, (render_id,), IMPORT_QUEUE)
              if needs_import else None)
    first = (assets.job_id,) if assets is not None else ()
    made = tuple(QueuedTask(chunk_job_id(render_id, i), RENDER_CHUNK_TASK, (render_id, i), chunk_queue, first,
                            dispatch.turn(render_id, i) if dispatch is not None else None)
                 for i in range(chunks))
    waiting = range(chunks) if pending is None else sorted(set(pending))
    # with no chunk to wait for (all reused) the stitch still waits for the import: it mixes the audio
    after = tuple(made[i].job_id for i in waiting) or first
    pool = dispatch.pool if dispatch is not None else ""
    stitch = QueuedTask(stitch_job_id(render_id), STITCH_TASK, (render_id,), stitch_queue, after,
                        pool=pool if stitch_queue != RENDER_QUEUE else "")
    return RenderGraph(assets, made, stitch)


def graph_of(render: Render, *, needs_import: bool, chunk_queue: str = RENDER_QUEUE,
             pending: Iterable[int] | None = None, stitch_queue: str = RENDER_QUEUE) -> RenderGraph:
    """``render_graph`` of a render's row: its chunks as planned, dispatched by its workspace,
    priority and chunk sizes; its stitch on ``stitch_queue`` (``JobQueue.stitch_queue`` of its pool)."""
    chunks = render.chunks or 0
    return render_graph(render.id, chunks, needs_import=needs_import, chunk_queue=chunk_queue, pending=pending,
                        dispatch=dispatch_of(render.workspace_id, render.priority, render.chunk_starts,
                                             render.frames, chunks, render.pool),
                        stitch_queue=stitch_queue)


def enqueue_graph(queue: JobQueue, tasks: Iterable[QueuedTask], retries: int = 2) -> None:
    """Hand tasks of a graph to the queue in the graph's order, as the graph says (id, queue,
    dependencies, turn), written together where the queue can (``JobQueue.batch``)."""
    with queue.batch():
        for task in tasks:
            pooled = {"pool": task.pool} if task.pool else {}
            queue.enqueue(task.task, *task.args, job_id=task.job_id, queue=task.queue,
                          depends_on=list(task.depends_on) or None, retries=retries, turn=task.turn, **pooled)
