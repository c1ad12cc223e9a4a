"""The embedded queue: tasks as rows in ``queued_tasks``, run by a process pool in the serving process.

Nothing to install beyond the database the service already has. Because tasks are rows, work
queued before a restart of ``reelfarm serve`` runs after it, and several gunicorn processes
can share one queue:

- Claiming is atomic: inside ``reelfarm.shared.db.transaction`` (``BEGIN IMMEDIATE`` on SQLite, ``FOR
  UPDATE SKIP LOCKED`` on PostgreSQL) a row moves ``queued -> running`` with an UPDATE guarded by
  ``status = 'queued'``, stamped with the claimer's name and a lease.
- The claimer renews the lease while the task runs. A row whose lease ran out, or whose claimer
  is a process on this host that no longer exists, is reclaimed: queued again if it has
  attempts left, else failed (the failure handler runs). ``start()`` reclaims before anything.
- ``depends_on``: a task with unfinished dependencies is ``deferred``; it becomes ``queued`` when
  the last of them succeeds, and ``canceled`` when one fails or is canceled.
- Tasks run in a ``ProcessPoolExecutor`` with the fork start method (skia holds the GIL while
  drawing, so only processes use every core), never in a request thread. At most
  ``max_running`` tasks run at once across all processes sharing the database, so several
  gunicorn processes do not oversubscribe the cores.
- Pool processes run at ``taskprocess.TASK_NICENESS`` and, on Linux, in the SCHED_IDLE class (and so do
  the encoder threads they start; ``taskprocess.lower_priority``): on a host that also serves requests,
  the scheduler gives request threads the cores first, so the API keeps answering in well under a
  second while renders use whatever is left.
- Stopping (``stop``; ``reelfarm serve`` calls it as each of its processes exits, with what is left
  of the graceful timeout after SIGTERM): nothing new is claimed, running tasks finish and are
  recorded, and those still running at the deadline are handed back (queued again, the attempt
  not counted) after their pool processes are killed, so the next start runs them and nothing
  of a stopped server outlives it. Pool processes ignore SIGINT and SIGTERM (a Ctrl-C in a
  terminal, systemd signalling every process): the serving process decides when a task stops.
"""

from __future__ import annotations

import logging
import os
import queue as stdqueue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, case, delete, func, select, update
from sqlalchemy.exc import OperationalError

from reelfarm.farm.runtime import taskprocess
from reelfarm.farm.runtime.dispatch import DEFAULT_SHARE, THROUGHPUT_WINDOW_SEC, workspace_shares
from reelfarm.farm.runtime.embeddedholds import SUSPENDED_UNTIL, EmbeddedHolds
from reelfarm.farm.runtime.fairrows import (
    Known,
    in_batches,
    kept_line,
    load_ledger,
    running_chunks,
    save_ledger,
    turn_values,
    waiting_chunks,
)
from reelfarm.farm.runtime.nodes import pid_exists
from reelfarm.farm.runtime.queue import DEFAULT_FAILURE_HANDLER, describe_exception, resolve
from reelfarm.farm.runtime.resilience import DATABASE, Outage, is_outage
from reelfarm.farm.services.errors import QueueUnavailable
from reelfarm.farm.services.fairness import Line, Load, pick, place, ranked_below
from reelfarm.farm.services.queues import RENDER_QUEUE, Turn, suspended_held_up
from reelfarm.shared import config
from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.db import transaction
from reelfarm.shared.tables import queued_tasks as tasks

log = logging.getLogger("reelfarm.farm")

_LIVE_NAMES: set[str] = set()  # names of this process's started queues (a stopped one's rows are stale)
_FAILED_DEPENDENCY = "a task it depends on failed or was canceled"
POOL_END_SEC = 5.0  # what ``stop`` waits for the pool's manager thread to end, once nothing runs in it


@dataclass(frozen=True)
class _Claimed:
    id: str
    func: str
    args: list[Any]


_CLAIM_LOCK = 0x7265656C  # PostgreSQL advisory lock that serialises claims ("reel")


class EmbeddedQueue:
    """A ``JobQueue`` on the service's own database; see the module docstring."""

    def __init__(self, engine: Engine, *, clock: Clock | None = None, workers: int | None = None,
                 max_running: int | None = None, lease_sec: float = 60.0, poll_sec: float = 0.5,
                 retry_intervals: Sequence[float] = (2, 10, 30), failure_handler: str = DEFAULT_FAILURE_HANDLER,
                 maintenance: Callable[[], Any] | None = None, maintenance_sec: float = 60.0,
                 dispatch: str = "fair", spare_caps: bool = False, task_priority: str | None = None) -> None:
        self.engine = engine
        self.clock = clock or SystemClock()
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.max_running = max_running or self.workers
        self.lease = timedelta(seconds=lease_sec)
        self.poll_sec = poll_sec
        self.retry_intervals = tuple(retry_intervals) or (0,)
        self.failure_handler = failure_handler
        self.maintenance = maintenance
        self.maintenance_sec = maintenance_sec
        self.dispatch = dispatch  # fair (farm.services.fairness) or fifo
        self.spare_caps = spare_caps  # caps give way to places nothing else takes (``fairness.pick``'s ``spare``)
        self.task_priority = task_priority or config.DEFAULT_TASK_PRIORITY  # ``taskprocess.lower_priority``
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._pool: ProcessPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._abandon = threading.Event()  # stop past its deadline: the dispatcher leaves running tasks
        self._wake = threading.Event()
        self._inflight: dict[str, Future[None]] = {}
        self._done: stdqueue.Queue[tuple[str, BaseException | None]] = stdqueue.Queue()
        self._line: Line | None = None  # the fair line as last computed by ``standing``
        self._chunks: Known = {}  # the chunks it was computed from, by id (``kept_line``)
        self._due: Known = {}  # the chunks the dispatcher last found due, by id (``_fair_turns``)
        self._batch = threading.local()  # .conn: this thread's batch transaction (``batch``)
        self._outage = Outage()  # of the dispatcher thread's rounds

    # -- JobQueue ---------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Enqueues of this thread inside it are written together at its end, in one transaction
        (``JobQueue.batch``): a render's tasks take SQLite's write lock once, not once each, which
        under a burst of requests is a turn in the writers' line each, and their rows go in a few
        statements (``_write_tasks``). An error inside it writes none of them."""
        if getattr(self._batch, "pending", None) is not None:  # nested: the outer batch writes
            yield
            return
        pending: list[_NewTask] = []
        self._batch.pending = pending
        try:
            yield
        finally:
            self._batch.pending = None
        if pending:
            with self._guard(), transaction(self.engine) as conn:
                self._write_tasks(conn, pending)
            self._wake.set()

    def enqueue(self, func_path: str, *args: Any, job_id: str, queue: str = "render",
                depends_on: list[str] | None = None, retries: int = 2, turn: Turn | None = None,
                pool: str = "") -> None:
        task = _NewTask(func_path, args, job_id, queue, list(depends_on or []), retries, turn)
        batched = getattr(self._batch, "pending", None)
        if batched is not None:
            batched.append(task)
            return
        with self._guard(), transaction(self.engine) as conn:
            self._write_tasks(conn, [task])
        self._wake.set()

    def _write_tasks(self, conn: Connection, new: list[_NewTask]) -> None:
        """Write ``new`` in its order: one read of the statuses of the tasks and of their
        dependencies, one insert for the tasks new to the table. A task already waiting or running
        is left as it is (enqueueing again changes nothing); a finished one is written over. A task
        depending on one written before it here sees that one's new status."""
        now = self.clock.now()
        status = _statuses(conn, [t.job_id for t in new] + [d for t in new for d in t.deps])
        inserts = []
        for task in new:
            current = status.get(task.job_id)
            if current in ("deferred", "queued", "running"):
                continue  # already waiting or running: enqueueing again changes nothing
            state, error = _initial_status([status[d] for d in task.deps if d in status])
            values = {"func": task.func, "args": list(task.args), "queue": task.queue, "status": state,
                      "depends_on": task.deps, "attempts": 0, "max_attempts": task.retries + 1, "error": error,
                      "claimed_by": None, "lease_until": None, "run_after": now, "updated_at": now,
                      "finished_at": now if state == "canceled" else None, "created_at": now,
                      **turn_values(task.turn)}
            if current is None:
                inserts.append({"id": task.job_id, **values})
            else:
                conn.execute(update(tasks).where(tasks.c.id == task.job_id).values(**values))
            status[task.job_id] = state
        if inserts:
            conn.execute(tasks.insert(), inserts)

    def cancel(self, job_id: str) -> None:
        """Cancels a waiting task (and what depends on it); a running one finishes (its task checks
        the state of the render or job it works for)."""
        with self._guard(), transaction(self.engine) as conn:
            now = self.clock.now()
            done = conn.execute(update(tasks).where(tasks.c.id == job_id, tasks.c.status.in_(("deferred", "queued")))
                                .values(status="canceled", finished_at=now, updated_at=now))
            if done.rowcount:
                self._cascade(conn, [job_id])

    def raise_priority(self, render_id: str, priority: str) -> int:
        """Raises the render's deferred and queued chunks (``JobQueue.raise_priority``); the new
        priority changes their stamp (``fairrows``), so kept lines and the dispatcher's chunks read
        before see it."""
        lower = ranked_below(priority)
        if not lower:
            return 0
        with self._guard(), transaction(self.engine) as conn:
            done = conn.execute(update(tasks).where(
                tasks.c.render_id == render_id, tasks.c.status.in_(("deferred", "queued")),
                tasks.c.priority.in_(lower)).values(priority=priority, updated_at=self.clock.now()))
        return int(done.rowcount)

    def ping(self) -> None:
        with self._guard(), self.engine.connect() as conn:
            conn.execute(select(1))

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Reclaim work of dead processes, fork the pool, start dispatching. Call once per process
        (after gunicorn has forked its workers)."""
        if self._thread is not None:
            return
        _LIVE_NAMES.add(self.name)
        self._reclaim()
        self._pool = self._new_pool()
        self._stopping.clear()
        self._abandon.clear()
        self._thread = threading.Thread(target=self._dispatch, name="reelfarm-embedded-queue", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming, wait for running tasks (up to ``timeout`` seconds) and shut the pool down;
        tasks still running then are handed back (the module docstring's "Stopping")."""
        if self._thread is None:
            return
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._abandon.set()
            self._wake.set()
            self._thread.join()
            self._hand_back()
        self._thread = None
        if self._pool is not None:
            # The pool's manager thread closes its wake-up pipe as it ends, and at interpreter exit
            # concurrent.futures writes to that pipe without the lock the closing holds (CPython
            # 3.11): a serving process that exited while it was still ending printed "OSError: Bad
            # file descriptor". Nothing runs in the pool by now, so it ends in moments; it is given
            # a bound all the same, as a pool process that hung would hold it.
            manager = getattr(self._pool, "_executor_manager_thread", None)
            self._pool.shutdown(wait=timeout is None, cancel_futures=True)
            if manager is not None:
                manager.join(POOL_END_SEC)
            self._pool = None
        _LIVE_NAMES.discard(self.name)

    def chunk_queue(self, pool: str = "") -> str:
        """``render``: every task runs here, whatever its queue or pool (the name only labels the rows)."""
        return RENDER_QUEUE

    def stitch_queue(self, pool: str = "") -> str:
        """``render``, as ``chunk_queue``."""
        return RENDER_QUEUE

    def loads(self) -> dict[str, Load]:
        """Each workspace's chunks running and waiting (queued or deferred on their import)."""
        with self._guard(), self.engine.connect() as conn:
            rows = conn.execute(select(tasks.c.workspace_id, tasks.c.status, func.count(),
                                       func.coalesce(func.sum(tasks.c.cost), 0))
                                .where(tasks.c.workspace_id.is_not(None),
                                       tasks.c.status.in_(("deferred", "queued", "running")))
                                .group_by(tasks.c.workspace_id, tasks.c.status)).all()
        loads: dict[str, Load] = {}
        for workspace, status, count, frames in rows:
            part = Load(int(count), 0, 0) if status == "running" else Load(0, int(count), int(frames))
            loads[workspace] = loads.get(workspace, Load()) + part
        return loads

    def held_up(self, render_id: str) -> dict[str, Any] | None:
        """``suspended`` while an operator holds its chunks back (``embeddedholds``); else None: the
        tasks run in the serving processes themselves, and a task of a process that died is claimed
        again when its lease runs out."""
        with self._guard():
            held = EmbeddedHolds(self.engine, self.clock).suspended(render_id)
        return suspended_held_up(held["chunk"]) if held is not None else None

    def standing(self, render_id: str) -> dict[str, Any] | None:
        with self._guard(), self.engine.connect() as conn:
            waiting = int(conn.execute(select(func.count()).select_from(tasks).where(
                tasks.c.render_id == render_id, tasks.c.status.in_(("deferred", "queued")),
                tasks.c.run_after < SUSPENDED_UNTIL)).scalar_one())  # held back by an operator: not in line
            if not waiting:
                return None
            now = self.clock.now()
            # the line is kept between reads and computed again only when what decides it changed
            self._line, self._chunks = kept_line(conn, self.dispatch, workspace_shares, self._line, DEFAULT_SHARE,
                                                 render_id, self._chunks)
            known = self._line
            done = conn.execute(select(func.coalesce(func.sum(tasks.c.cost), 0)).where(
                tasks.c.status == "succeeded", tasks.c.workspace_id.is_not(None),
                tasks.c.finished_at >= now - timedelta(seconds=THROUGHPUT_WINDOW_SEC))).scalar_one()
        return place(known.frames_ahead(render_id), waiting, float(done) / THROUGHPUT_WINDOW_SEC, now)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Until no task is deferred, queued or running (tests, scripts); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.engine.connect() as conn:
                busy = conn.execute(select(func.count()).select_from(tasks).where(
                    tasks.c.status.in_(("deferred", "queued", "running")))).scalar_one()
            if not busy and not self._inflight:
                return True
            time.sleep(0.1)
        return False

    def depths(self) -> dict[str, dict[str, int]]:
        """Task counts per queue and status (``reelfarm farm status``)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(tasks.c.queue, tasks.c.status, func.count())
                                .group_by(tasks.c.queue, tasks.c.status)).all()
        depths: dict[str, dict[str, int]] = {}
        for queue, status, count in rows:
            depths.setdefault(queue, {})[status] = int(count)
        return depths

    # -- the dispatcher thread --------------------------------------------------------------

    def _dispatch(self) -> None:
        next_lease = next_maintenance = 0.0
        while True:
            stopping = self._stopping.is_set()
            if self._abandon.is_set():
                return
            try:
                self._collect()
                if stopping and not self._inflight:
                    return
                now = time.monotonic()
                touched = now >= next_lease  # whether this round reached the database
                if now >= next_lease:
                    self._renew()
                    self._reclaim()
                    next_lease = now + self.lease.total_seconds() / 4
                if not stopping and now >= next_maintenance:
                    self._maintain()
                    next_maintenance = now + self.maintenance_sec
                free = self.workers - len(self._inflight)
                if not stopping and free > 0:
                    touched = True
                    for task in self._claim(free):
                        self._submit(task)
            except Exception as exc:
                if is_outage(exc):  # once in the process's outage log, not once a round
                    self._outage.lost(exc, "claiming tasks")
                else:
                    log.exception("embedded queue: dispatch round failed")
            else:
                if touched:
                    self._outage.ok("the embedded queue resumes", (DATABASE,), now)
            self._wake.wait(self.poll_sec)
            self._wake.clear()

    def _submit(self, task: _Claimed) -> None:
        assert self._pool is not None
        try:
            future = self._pool.submit(taskprocess.execute, task.func, task.args)
        except RuntimeError:  # a broken pool refuses work: replace it and try once more
            self._pool = self._new_pool()
            future = self._pool.submit(taskprocess.execute, task.func, task.args)
        self._inflight[task.id] = future

        def done(f: Future[None], task_id: str = task.id) -> None:
            self._done.put((task_id, f.exception()))
            self._wake.set()
        future.add_done_callback(done)

    def _collect(self) -> None:
        while True:
            try:
                task_id, exc = self._done.get_nowait()
            except stdqueue.Empty:
                return
            try:  # in flight until its row, and a failure handler, are done with (``wait_idle``)
                if exc is None:
                    self._succeeded(task_id)
                else:
                    if getattr(self._pool, "_broken", False):  # a pool process died: every task in it failed
                        self._pool = self._new_pool()
                    self._attempt_failed(task_id, exc)
            finally:
                self._inflight.pop(task_id, None)

    def _new_pool(self) -> ProcessPoolExecutor:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        return taskprocess.fork_pool(self.workers, self.task_priority)

    # -- row transitions --------------------------------------------------------------------

    def _claim(self, wanted: int) -> list[_Claimed]:
        """Claim up to ``wanted`` runnable rows: tasks that are not render chunks first (stitches,
        jobs, deliveries: short, and they finish what was started), in arrival order; then chunks
        in the order fair dispatch gives (``reelfarm.farm.services.fairness``).

        Whether there is room is read first, outside a write transaction: every enqueue wakes the
        dispatcher of each serving process, and on SQLite a write transaction is a turn in the one
        writers' line, which a burst of requests would otherwise share with dispatchers that find
        the farm full. The write transaction reads it again."""
        with self.engine.connect() as conn:
            if self._running_count(conn) >= self.max_running:
                return []
        with transaction(self.engine) as conn:
            now = self.clock.now()
            if conn.dialect.name == "postgresql":  # one claimer at a time: the policy needs the whole picture
                conn.execute(select(func.pg_advisory_xact_lock(_CLAIM_LOCK)))
            wanted = min(wanted, self.max_running - self._running_count(conn))
            if wanted <= 0:
                return []
            runnable = (tasks.c.status == "queued", tasks.c.run_after <= now)
            plain = conn.execute(select(tasks.c.id).where(*runnable, tasks.c.workspace_id.is_(None))
                                 .order_by(tasks.c.created_at, tasks.c.id).limit(wanted)).scalars().all()
            ids = list(plain)
            if len(ids) < wanted:
                ids += self._fair_turns(conn, wanted - len(ids), now)
            claimed = []
            for task_id in ids:
                done = conn.execute(update(tasks).where(tasks.c.id == task_id, tasks.c.status == "queued").values(
                    status="running", claimed_by=self.name, lease_until=now + self.lease,
                    attempts=tasks.c.attempts + 1, updated_at=now))
                if done.rowcount:
                    row = conn.execute(select(tasks.c.func, tasks.c.args).where(tasks.c.id == task_id)).one()
                    claimed.append(_Claimed(task_id, row.func, list(row.args)))
            return claimed

    @staticmethod
    def _running_count(conn: Connection) -> int:
        return int(conn.execute(select(func.count()).select_from(tasks).where(tasks.c.status == "running")).scalar_one())

    def _fair_turns(self, conn: Connection, slots: int, now: Any) -> list[str]:
        """The chunks fair dispatch gives the next ``slots`` places to; the ledger kept in the table."""
        waiting, self._due = waiting_chunks(conn, now, self._due)
        if not waiting:
            return []
        running = running_chunks(conn)
        shares = workspace_shares(conn, {c.workspace for c in waiting} | set(running))
        ledger = load_ledger(conn)
        chosen = pick(waiting, slots, running=running, shares=lambda w: shares.get(w, DEFAULT_SHARE),
                      ledger=ledger, policy=self.dispatch, spare=self.spare_caps)
        if self.dispatch == "fair":
            live_renders = set(conn.execute(select(tasks.c.render_id).where(
                tasks.c.status.in_(("deferred", "queued", "running")), tasks.c.render_id.is_not(None))).scalars())
            ledger.prune(set(running) | {c.workspace for c in waiting}, live_renders)
            save_ledger(conn, ledger)
        return [c.id for c in chosen]
    def _succeeded(self, task_id: str) -> None:
        with transaction(self.engine) as conn:
            now = self.clock.now()
            conn.execute(update(tasks).where(tasks.c.id == task_id, tasks.c.status == "running",
                                             tasks.c.claimed_by == self.name)
                         .values(status="succeeded", error=None, lease_until=None, finished_at=now, updated_at=now))
            self._promote(conn)

    def _attempt_failed(self, task_id: str, exc: BaseException) -> None:
        reason = describe_exception(exc)
        log.warning("embedded queue: task %s failed: %s", task_id, reason, exc_info=exc)
        with transaction(self.engine) as conn:
            row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
            if row is None or row.status != "running" or row.claimed_by != self.name:
                return  # reclaimed meanwhile: whoever holds it now decides
            final = self._retry_or_fail(conn, row, reason)
        if final is not None:
            self._call_failure_handler(*final)

    def _retry_or_fail(self, conn: Connection, row: Any, reason: str) -> tuple[str, list[Any], str] | None:
        """Queue the row again if it has attempts left; else fail it. Returns what the failure
        handler must be called with (after the transaction) when it failed for good."""
        now = self.clock.now()
        if row.attempts < row.max_attempts:
            delay = self.retry_intervals[min(row.attempts - 1, len(self.retry_intervals) - 1)]
            conn.execute(update(tasks).where(tasks.c.id == row.id).values(
                status="queued", claimed_by=None, lease_until=None, error=reason,
                run_after=now + timedelta(seconds=delay), updated_at=now))
            return None
        conn.execute(update(tasks).where(tasks.c.id == row.id).values(
            status="failed", lease_until=None, error=reason, finished_at=now, updated_at=now))
        self._cascade(conn, [row.id])
        return row.func, list(row.args), reason

    def _call_failure_handler(self, func_path: str, args: list[Any], reason: str) -> None:
        try:
            resolve(self.failure_handler)(func_path, args, reason)
        except Exception:
            log.exception("embedded queue: failure handler for %s%r failed", func_path, tuple(args))

    def _renew(self) -> None:
        if not self._inflight:
            return
        with transaction(self.engine) as conn:
            now = self.clock.now()
            conn.execute(update(tasks).where(tasks.c.id.in_(list(self._inflight)), tasks.c.claimed_by == self.name,
                                             tasks.c.status == "running")
                         .values(lease_until=now + self.lease, updated_at=now))

    def _hand_back(self) -> None:
        """Past ``stop``'s deadline: kill the pool's processes, then queue this process's running
        tasks again with the attempt not counted (a task is idempotent, and was cut, not failed)."""
        pool, running = self._pool, list(self._inflight)
        if pool is not None:
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
                process.join(5)
        if not running:
            return
        with transaction(self.engine) as conn:
            now = self.clock.now()
            done = conn.execute(update(tasks).where(tasks.c.id.in_(running), tasks.c.status == "running",
                                                    tasks.c.claimed_by == self.name)
                                .values(status="queued", claimed_by=None, lease_until=None, run_after=now,
                                        attempts=tasks.c.attempts - 1, updated_at=now))
        log.warning("embedded queue: stopped with %d task(s) still running; %d handed back for the next start: %s",
                    len(running), done.rowcount, ", ".join(running))
        self._inflight.clear()

    def _reclaim(self) -> None:
        """Give back rows whose claimer is gone: its lease ran out, or it is a dead local process."""
        finals = []
        with transaction(self.engine) as conn:
            now = self.clock.now()
            rows = conn.execute(select(tasks).where(tasks.c.status == "running",
                                                    tasks.c.claimed_by != self.name)).all()
            for row in rows:
                if (row.lease_until is not None and row.lease_until < now) or not _claimer_alive(row.claimed_by):
                    log.warning("embedded queue: reclaiming task %s from %s", row.id, row.claimed_by)
                    final = self._retry_or_fail(conn, row, "the process running it stopped")
                    if final is not None:
                        finals.append(final)
        for final in finals:
            self._call_failure_handler(*final)

    def _promote(self, conn: Connection) -> None:
        """Queue deferred rows whose dependencies have all succeeded: every deferred row is looked
        at (one whose dependency ended in a transaction that could not see it yet is found at the
        next success), with one read of their dependencies' statuses for all of them."""
        now = self.clock.now()
        deferred = conn.execute(select(tasks.c.id, tasks.c.depends_on).where(tasks.c.status == "deferred")).all()
        status_of = _statuses(conn, [d for row in deferred for d in row.depends_on or []])
        for row in deferred:
            status, error = _initial_status([status_of[d] for d in row.depends_on or [] if d in status_of])
            if status != "deferred":
                conn.execute(update(tasks).where(tasks.c.id == row.id, tasks.c.status == "deferred").values(
                    status=status, error=error, updated_at=now,  # a suspended render's row stays held back
                    run_after=case((tasks.c.run_after >= SUSPENDED_UNTIL, tasks.c.run_after), else_=now),
                    finished_at=now if status == "canceled" else None))

    def _cascade(self, conn: Connection, ended: list[str]) -> None:
        """Cancel deferred rows that depend on a task that failed or was canceled (transitively)."""
        now = self.clock.now()
        pending = list(ended)
        while pending:
            ended_id = pending.pop()
            for row in conn.execute(select(tasks.c.id, tasks.c.depends_on).where(tasks.c.status == "deferred")).all():
                if ended_id in (row.depends_on or []):
                    conn.execute(update(tasks).where(tasks.c.id == row.id).values(
                        status="canceled", error=_FAILED_DEPENDENCY, finished_at=now, updated_at=now))
                    pending.append(row.id)

    def _maintain(self) -> None:
        """Purge old finished rows and run the maintenance hook (the stalled-render reaper)."""
        now = self.clock.now()
        with transaction(self.engine) as conn:
            conn.execute(delete(tasks).where(tasks.c.status == "succeeded", tasks.c.finished_at < now - timedelta(days=1)))
            conn.execute(delete(tasks).where(tasks.c.status.in_(("failed", "canceled")),
                                             tasks.c.finished_at < now - timedelta(days=7)))
        if self.maintenance is not None:
            try:
                self.maintenance()
            except Exception:
                log.exception("embedded queue: maintenance failed")

    def _guard(self) -> AbstractContextManager[None]:
        return _database_guard()


def _statuses(conn: Connection, ids: list[str]) -> dict[str, str]:
    """The status of each of these tasks that exists, by id."""
    found: dict[str, str] = {}
    for batch in in_batches(list(dict.fromkeys(ids))):
        rows = conn.execute(select(tasks.c.id, tasks.c.status).where(tasks.c.id.in_(batch)))
        found.update((id_, status) for id_, status in rows)
    return found


@dataclass(frozen=True)
class _NewTask:
    """A task to enqueue, as ``enqueue`` was given it."""

    func: str
    args: tuple[Any, ...]
    job_id: str
    queue: str
    deps: list[str]
    retries: int
    turn: Turn | None


def _initial_status(deps: list[str]) -> tuple[str, str | None]:
    """From the statuses of a task's dependencies that exist: ``queued`` when every one succeeded
    (a missing one, purged after success, counts as succeeded), ``canceled`` when one failed or was
    canceled, else ``deferred``."""
    statuses = set(deps)
    if statuses & {"failed", "canceled"}:
        return "canceled", _FAILED_DEPENDENCY
    if statuses - {"succeeded"}:
        return "deferred", None
    return "queued", None


@contextmanager
def _database_guard() -> Iterator[None]:
    """Turns a database that cannot be reached into QueueUnavailable."""
    try:
        yield
    except OperationalError as exc:
        raise QueueUnavailable(f"the job queue (database) cannot be reached: {exc.orig}") from exc


def _claimer_alive(claimed_by: str | None) -> bool:
    """False only when the claimer is certainly gone: a process on this host that no longer
    exists, or a queue of this process that was stopped. Other hosts are judged by their lease."""
    if not claimed_by:
        return False
    host, _, rest = claimed_by.partition(":")
    pid_text, _, _ = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return claimed_by in _LIVE_NAMES
    return pid_exists(pid)
