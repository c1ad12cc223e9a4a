"""The queues the services hand work to: their names, and the interface every backend implements
(``reelfarm.farm.runtime.queue.RQQueue``, ``reelfarm.farm.runtime.embedded.EmbeddedQueue``).
The services know only this; the runtime provides it."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

RENDER_QUEUE = "render"  # stitches, and chunks when no GPU node takes them
GPU_QUEUE = "render-gpu"  # chunks, while a node that rasterizes on a GPU is live
NVENC_QUEUE = "render-nvenc"  # chunks of renders encoded with NVENC, while a node that encodes with it is live
JOBS_QUEUE = "jobs"  # brand extraction, generation, stills, asset imports: the nodes that reach the internet
ALL_QUEUES = (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE, JOBS_QUEUE)
CHUNK_QUEUES = (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)  # where a render's chunks may run


def family_of(chunk_queue: str) -> str:
    """The encoder family of a render whose chunks go to ``chunk_queue``."""
    return "nvenc" if chunk_queue == NVENC_QUEUE else "x264"


@dataclass(frozen=True)
class Turn:
    """What fair dispatch (``reelfarm.farm.services.fairness``) knows of a render chunk: whose it is,
    what it costs in frames, its render's priority and its place in the render."""

    workspace: str
    render: str
    cost: int
    priority: str = "normal"
    index: int = 0
    pool: str = ""  # the pool of nodes it runs in (``reelfarm.farm.services.pools``; "": any node)


class JobQueue(Protocol):
    """Where the services hand work to the farm."""

    def enqueue(self, func_path: str, *args: Any, job_id: str, queue: str = "render",
                depends_on: list[str] | None = None, retries: int = 2, turn: Turn | None = None,
                pool: str = "") -> None:
        """Run ``func_path(*args)`` once every job in ``depends_on`` has succeeded.

        A failure is retried up to ``retries`` more times; after that the failure handler runs.
        A job with a ``turn`` (a render chunk) waits for its turn under fair dispatch once it is
        ready; any other job goes to its queue at once. ``pool``: a pooled render's stitch, on the
        ready queue of a tag set serving it (``stitch_queue``), carries its pool, so that a repair
        moving it off a tag set with no live node keeps it in the pool.

        Raises:
            QueueUnavailable: the backend cannot be reached (nothing was enqueued by this call).
        """
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Enqueues made inside ``with queue.batch():`` in this thread are written together, as one
        (all or nothing) where the backend can (the embedded queue: one database transaction, one
        turn of the write lock, instead of one per task); RQ writes each as it comes.

        Raises:
            QueueUnavailable: the backend cannot be reached (nothing of the batch was enqueued
                where it is written together).
        """
        ...

    def cancel(self, job_id: str) -> None:
        """Drop the job if it has not run; best effort for a running one. Unknown ids are ignored.

        Raises:
            QueueUnavailable: the backend cannot be reached.
        """
        ...

    def raise_priority(self, render_id: str, priority: str) -> int:
        """The render's chunks still waiting for their turn (or for a dependency, before it) take
        ``priority`` where theirs is lower: their places in line are those of a render asked for at
        it. Chunks already dispatched or running are left as they are; a priority is never lowered.
        Returns how many chunks were raised.

        Raises:
            QueueUnavailable: the backend cannot be reached (some chunks may have been raised).
        """
        ...

    def ping(self) -> None:
        """Raises QueueUnavailable when the backend cannot be reached."""
        ...

    def start(self) -> None:
        """Start this process's share of the farm's work (the embedded executor; for RQ, whose
        nodes run the tasks, the API's repair timer), and its maintenance hook. Idempotent."""
        ...

    def stop(self, timeout: float | None = None) -> None:
        """Stop what ``start`` started, waiting up to ``timeout`` seconds for running tasks."""
        ...

    def chunk_queue(self, pool: str = "") -> str:
        """The queue a render's chunks in ``pool`` go to now (``reelfarm.farm.runtime.routing``)."""
        ...

    def stitch_queue(self, pool: str = "") -> str:
        """The queue a render's stitch in ``pool`` goes to: ``render`` for the pool of any node,
        else the ready queue of a live tag set serving the pool (the pool's own while none does)."""
        ...

    def loads(self) -> dict[str, Any]:
        """Each workspace's ``reelfarm.farm.services.fairness.Load``: chunks running and waiting.

        Raises:
            QueueUnavailable: the backend cannot be reached.
        """
        ...

    def held_up(self, render_id: str) -> dict[str, Any] | None:
        """The render's earliest chunk that cannot finish where it runs now, and why
        (``{"chunk": N, "reason": "node_stopped", "message": ...}``), or that waits because an
        operator suspended the render (``suspended_held_up``); None when none is.

        Raises:
            QueueUnavailable: the backend cannot be reached.
        """
        ...

    def standing(self, render_id: str) -> dict[str, Any] | None:
        """Where the render stands while chunks of it wait for their turn
        (``reelfarm.farm.services.fairness.place``, from the ``Line`` the queue keeps); None when none waits.

        Raises:
            QueueUnavailable: the backend cannot be reached.
        """
        ...


def suspended_held_up(chunk: int, since: str | None = None) -> dict[str, Any]:
    """A render's ``held_up`` while an operator holds its waiting chunks back (``reelfarm farm
    render suspend``): ``chunk`` is the earliest of them."""
    return {"chunk": chunk, "reason": "suspended",
            "message": f"suspended by the farm's operator{f' since {since}' if since else ''}: its chunks "
                       "waiting are not dispatched until it is resumed"}
