"""A render's job graph: the import of its remote assets, then its chunks, then a stitch that
depends on every chunk. Built here only, by the render service when a render is requested and by
reconciliation when the queue lost some of it, so a re-enqueued render has the same jobs, ids,
queues and dependencies as the first time.

Job ids are deterministic (``render-<id>-chunk-3``), so enqueueing one twice replaces rather
than duplicates it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from reelfarm.farm.services.queues import JOBS_QUEUE, RENDER_QUEUE

RENDER_CHUNK_TASK = "reelfarm.farm.runtime.tasks.render_chunk"
STITCH_TASK = "reelfarm.farm.runtime.tasks.stitch"
IMPORT_ASSETS_TASK = "reelfarm.farm.runtime.tasks.import_assets"
IMPORT_QUEUE = JOBS_QUEUE  # the nodes that reach the internet (brand extraction); render nodes need not


def chunk_job_id(render_id: str, index: int) -> str:
    return f"render-{render_id}-chunk-{index}"


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


def render_graph(render_id: str, chunks: int, *, needs_import: bool, chunk_queue: str = RENDER_QUEUE,
                 pending: Iterable[int] | None = None) -> RenderGraph:
    """The render's jobs.

    Args:
        chunks: how many chunks the render was planned with.
        needs_import: its document has remote assets not imported yet: every chunk waits for them.
        chunk_queue: the queue chunks go to (``reelfarm.farm.runtime.routing`` picks it; stitches always
            go to ``render``).
        pending: the chunks whose segments are not stored yet (default: all); the stitch waits
            only for those.
    """
    assets = (QueuedTask(assets_job_id(render_id), IMPORT_ASSETS_TASK, (render_id,), IMPORT_QUEUE)
              if needs_import else None)
    first = (assets.job_id,) if assets is not None else ()
    made = tuple(QueuedTask(chunk_job_id(render_id, i), RENDER_CHUNK_TASK, (render_id, i), chunk_queue, first)
                 for i in range(chunks))
    waiting = range(chunks) if pending is None else sorted(set(pending))
    # with no chunk to wait for (all reused) the stitch still waits for the import: it mixes the audio
    after = tuple(made[i].job_id for i in waiting) or first
    stitch = QueuedTask(stitch_job_id(render_id), STITCH_TASK, (render_id,), RENDER_QUEUE, after)
    return RenderGraph(assets, made, stitch)
