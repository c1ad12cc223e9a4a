"""What a render's task used on its node, measured around it and stored one row an attempt
(``task_costs``; read back by ``reelfarm.farm.services.costs``).

``measured`` wraps one run of a render task (the asset import, a chunk, the stitch) wherever the
queue runs it. Both queues run one task at a time in a process of its own for the task's length
(an RQ work horse forked for the job; an embedded ``ProcessPoolExecutor`` process, which runs
one task at a time), so process-wide figures are the task's:

- ``cpu_sec``: user + system CPU of the process (every thread) and of the child processes it
  waited for (``getrusage`` ``RUSAGE_SELF`` + ``RUSAGE_CHILDREN``, after minus before).
- ``wall_sec``: monotonic seconds from start to end.
- ``gpu_sec``: the wall seconds of a task on a node that draws with the GPU (its rasterizer is
  ``gl``): the time the task held the GPU, not the GPU's busy time, which no portable call reads;
  null on a CPU node.
- ``peak_memory_bytes``: the larger of ``ru_maxrss`` of the process and of its waited-for
  children at the end: a high-water mark of the *process* since it started, so a pool process
  that ran a larger task before reports that task's peak; an upper bound of this task's.
- ``storage_bytes``: bytes the task handed to storage (``put_file``, ``put_bytes``): its
  segment, stream parts, video and poster.
- ``frames``: frames the task encoded and stored (``encoded``): a chunk's frames once its
  segment is stored; 0 for a chunk that stopped, failed or found its render gone.

Every attempt that ends, by returning or raising, writes its row, so a retried chunk costs each
attempt. An attempt whose process died (killed, out of memory, its node lost) writes nothing:
what it used is lost, and the render's cost is what its recorded attempts used. A task run in a
process shared with other work (a test's ``SimpleWorker``) counts that work's CPU too.

Recording is best effort: a database busy or out of reach is tried again for a few seconds, then
the row is lost (logged), never the task.
"""
from __future__ import annotations

import contextvars
import logging
import os
import resource
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from reelfarm.farm.runtime.context import TaskContext, current
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage import Storage
from reelfarm.shared.tables import task_costs

log = logging.getLogger("reelfarm.farm")

TASKS = {"import_assets": "import", "render_chunk": "chunk", "stitch": "stitch"}
GPU_KINDS = ("gl",)
# ru_maxrss is in kilobytes on Linux, in bytes on macOS
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024


@dataclass
class Attempt:
    """One run of a task, as it goes."""

    task: str
    render_id: str
    chunk: int | None
    storage_bytes: int = 0
    frames: int = 0
    id: str = ""
    stored: bool = False  # its row written already (``settle``), to be brought up to date at the end
    settle_hook: Any = None


_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("reelfarm_attempt", default=None)

RECORDING = True
"""Whether ``measured`` measures and stores anything. Only ``benchmarks.accounting`` turns it off, to
measure what accounting costs a render, before its farm forks the task processes (they inherit it).
Not a setting: a farm without it would show every render as costing nothing, and the monthly
allowance would never be reached."""


def settle() -> None:
    """Store the running task's row now, with what it used so far (its end brings it up to date):
    the stitch calls it before it marks the render succeeded, so that a finished render's cost
    never lacks its stitch."""
    if (attempt := _ATTEMPT.get()) is not None and attempt.settle_hook is not None:
        attempt.settle_hook()


def encoded(frames: int) -> None:
    """The running task encoded and stored ``frames`` frames."""
    if (attempt := _ATTEMPT.get()) is not None:
        attempt.frames += frames


class _CountingStorage:
    """The task context's storage, counting the bytes stored through it for the running attempt."""

    def __init__(self, inner: Storage, attempt: Attempt) -> None:
        self._inner = inner
        self._attempt = attempt

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        self._inner.put_bytes(key, data, content_type)
        self._attempt.storage_bytes += len(data)

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str) -> None:
        self._inner.put_file(key, path, content_type)
        self._attempt.storage_bytes += os.path.getsize(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def node_name() -> str:
    """The node running the task: the RQ worker's name in a work horse, else ``<host>:<pid>`` of
    the process that serves the embedded queue (the pool process's parent)."""
    rq = sys.modules.get("rq")  # loaded in a work horse; importing it in an embedded task process cost ~0.1 s
    try:
        job = rq.get_current_job() if rq is not None else None
    except Exception:  # noqa: BLE001 - not under RQ
        job = None
    if job is not None and getattr(job, "worker_name", None):
        return str(job.worker_name)
    return f"{socket.gethostname()}:{os.getppid()}"


def node_kind(ctx: TaskContext) -> str:
    """The rasterizer the node chose (``gl``: the GPU), as the render records it; ``cpu`` where the
    node chose none up front (its chunks resolve the settings' choice themselves)."""
    return str(ctx.raster.kind) if ctx.raster is not None else "cpu"


def _cpu() -> tuple[float, int]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
            max(own.ru_maxrss, kids.ru_maxrss) * _MAXRSS_UNIT)


@contextmanager
def measured(task: str, render_id: str, chunk: int | None = None) -> Iterator[Attempt]:
    """Measure the task run inside and store its row when it ends (module docstring); with
    ``RECORDING`` off, only run it."""
    if not RECORDING:
        yield Attempt(TASKS.get(task, task), render_id, chunk)
        return
    ctx = current()
    attempt = Attempt(TASKS.get(task, task), render_id, chunk, id=str(uuid.uuid4()))
    token = _ATTEMPT.set(attempt)
    storage = ctx.storage
    ctx.storage = cast(Storage, _CountingStorage(storage, attempt))
    started, cpu_before, clock_before = ctx.clock.now(), _cpu()[0], time.monotonic()

    def row(outcome: str) -> dict[str, Any]:
        cpu_after, peak = _cpu()
        wall = time.monotonic() - clock_before
        kind = node_kind(ctx)
        return {"task": attempt.task, "chunk": chunk, "outcome": outcome, "node": node_name()[:200],
                "node_kind": kind[:20], "cpu_sec": round(max(0.0, cpu_after - cpu_before), 4),
                "wall_sec": round(wall, 4), "gpu_sec": round(wall, 4) if kind in GPU_KINDS else None,
                "peak_memory_bytes": int(peak), "storage_bytes": attempt.storage_bytes,
                "frames": attempt.frames, "started_at": started, "finished_at": ctx.clock.now()}

    attempt.settle_hook = lambda: _store(ctx, attempt, row("running"))
    outcome = "failed"
    try:
        yield attempt
        outcome = "finished"
    finally:
        ctx.storage = storage
        _ATTEMPT.reset(token)
        _store(ctx, attempt, row(outcome))


STORE_TRIES = 8  # a busy database (SQLite's lock while other tasks write) is tried again, for about 6 s


def _store(ctx: TaskContext, attempt: Attempt, row: dict[str, Any]) -> None:
    for tried in range(1, STORE_TRIES + 1):
        try:
            _write(ctx, attempt, row)
            return
        except Exception as exc:  # noqa: BLE001 - the task's work matters more than its accounting
            if tried == STORE_TRIES:
                log.warning("render %s: what its %s task used was not recorded: %s", attempt.render_id,
                            attempt.task, exc)
                return
            time.sleep(min(1.0, 0.05 * 2 ** tried))


def _write(ctx: TaskContext, attempt: Attempt, row: dict[str, Any]) -> None:
    with ctx.engine.begin() as conn:
        if attempt.stored:
            conn.execute(task_costs.update().where(task_costs.c.id == attempt.id).values(**row))
            return
        render = renders_repo.find_render(conn, attempt.render_id)
        if render is None:
            return  # deleted meanwhile: nobody can be shown its cost
        conn.execute(task_costs.insert().values(id=attempt.id, workspace_id=render.workspace_id,
                                                video_id=render.video_id, render_id=attempt.render_id, **row))
    attempt.stored = True
