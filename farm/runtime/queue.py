"""Job queues: the interface the services enqueue through, and its RQ implementation.

A job is a module-level function named by its dotted path (``reelfarm.farm.runtime.tasks.render_chunk``) with
plain, JSON-able arguments (ids and numbers), under a caller-chosen id that is deterministic
(``render-<id>-chunk-3``), so enqueueing twice replaces rather than duplicates. Jobs run at least
once; the task functions are idempotent.

When a job fails for good (its retries spent, or the process running it died with none left),
the queue calls a *failure handler* ``handler(func_path, args, reason)``, by default
``reelfarm.farm.runtime.tasks.handle_task_failure``, which fails the render or job it belongs to with a message
and refunds. Backends:

- ``RQQueue``: Redis with RQ, for a farm (``reelfarm worker`` on each node).
- ``reelfarm.farm.runtime.embedded.EmbeddedQueue``: rows in the database and a process pool, the embedded default.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC
from types import MappingProxyType
from typing import Any

from reelfarm import PARTS
from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.dispatchlease import DispatchLease, wake
from reelfarm.farm.runtime.resilience import REDIS, Outage, is_database_outage, is_outage
from reelfarm.farm.runtime.routing import DEFAULT_GPU_WAIT_SEC, Router
from reelfarm.farm.services.errors import QueueUnavailable, TaskFailed
from reelfarm.farm.services.fairness import Line
from reelfarm.farm.services.queues import JobQueue, Turn

log = logging.getLogger("reelfarm.farm")

DEFAULT_FAILURE_HANDLER = "reelfarm.farm.runtime.tasks.handle_task_failure"
DEFAULT_RETRY_INTERVALS = (5, 30, 120)
DEFAULT_TIMEOUT_SEC = 600  # one chunk (about 5 s of video) or one stitch; far above either's cost
RESULT_TTL_SEC = 3600
FAILURE_TTL_SEC = 7 * 24 * 3600
RQ_ON_FAILURE = "reelfarm.farm.runtime.queue.on_rq_failure"

FailureHandler = Callable[[str, Sequence[Any], str], None]

__all__ = ["JobQueue", "RQQueue"]  # JobQueue: the services' interface (reelfarm.farm.services.queues)


# The parts were top-level packages before they moved under ``reelfarm``: work that a farm running
# an earlier release queued under the old dotted names (``farm.tasks.render_chunk``), in Redis or in
# the embedded queue's rows, still runs after an upgrade.
FORMER_TOP_LEVEL = frozenset(PARTS)  # every part had its own top-level name


# Then the farm's modules moved into two rooms (``reelfarm.farm.services``, ``reelfarm.farm.runtime``):
# ``reelfarm.farm.tasks.stitch`` is now ``reelfarm.farm.runtime.tasks.stitch``.
FORMER_FARM_MODULES: Mapping[str, str] = MappingProxyType({
    **{m: "services" for m in ("assets", "collaborators", "errors", "graph", "jobs", "lifecycle", "progress",
                               "renders", "resources", "videos")},
    **{m: "runtime" for m in ("cli", "context", "embedded", "maintenance", "metrics", "nodes", "queue", "reaper",
                              "reconcile", "resilience", "retention", "routing", "rqnode", "scratch", "status",
                              "studio_tasks", "tasks", "webhooks", "wiring", "worker")},
})


def task_path(path: str) -> str:
    """The current dotted path of a task or callback that may be named as an earlier release named it:
    ``farm.tasks.stitch`` (before the namespace) and ``reelfarm.farm.tasks.stitch`` (before the farm's
    two rooms) are both ``reelfarm.farm.runtime.tasks.stitch``."""
    if path.split(".", 1)[0] in FORMER_TOP_LEVEL:
        path = f"reelfarm.{path}"
    parts = path.split(".")
    if len(parts) > 3 and parts[:2] == ["reelfarm", "farm"] and parts[2] in FORMER_FARM_MODULES:
        return ".".join([*parts[:2], FORMER_FARM_MODULES[parts[2]], *parts[2:]])
    return path


def resolve(path: str) -> Callable[..., Any]:
    """The function a dotted path names (``package.module.function``; earlier releases' names too)."""
    module, _, name = task_path(path).rpartition(".")
    return getattr(importlib.import_module(module), name)


def describe_exception(exc: BaseException | None) -> str:
    """A short reason for a failure, fit for a user: the message of errors meant for users,
    only the kind of anything else (internals stay in the logs)."""
    from reelfarm.farm.services.lifecycle import OtherEncoderFamily
    from reelfarm.renderer.errors import RendererError  # late: queueing work needs no Skia

    if exc is None:
        return "the process running it stopped"
    if isinstance(exc, (TaskFailed, RendererError, OtherEncoderFamily)):
        return str(exc)
    name = type(exc).__name__
    if name == "AbandonedJobError":
        return "the render node running it stopped"
    if name in ("JobTimeoutException", "TimeoutError"):
        return "it ran past its time limit"
    if name == "BrokenProcessPool":
        return "the process running it crashed"
    return f"an internal error ({name})"


class RQQueue:
    """Jobs in Redis, run by RQ workers (``reelfarm worker``).

    ``namespace`` prefixes queue names and job ids, so that several deployments or test runs
    can share one Redis without seeing each other's jobs. Retries wait ``retry_intervals``
    seconds (RQ's scheduler, which ``reelfarm worker`` runs, moves them back to the queue).

    The tasks run on ``reelfarm worker`` nodes, so ``start`` only runs the ``maintenance`` hook
    (when one is set: the API's share of ``reelfarm.farm.runtime.maintenance``) every ``maintenance_sec`` in a
    daemon thread, and this process's bid to be the farm's dispatcher
    (``reelfarm.farm.runtime.dispatchlease``) in another. Chunks go to the queue ``router`` picks from the nodes' heartbeats
    (``reelfarm.farm.runtime.routing``; ``gpu_wait_sec`` is ``REELFARM_GPU_QUEUE_WAIT_SEC``).
    """

    def __init__(self, redis: Any, *, namespace: str = "", retry_intervals: Sequence[int] = DEFAULT_RETRY_INTERVALS,
                 timeout: int = DEFAULT_TIMEOUT_SEC, failure_handler: str = DEFAULT_FAILURE_HANDLER,
                 maintenance: Callable[[], Any] | None = None, maintenance_sec: float = 30.0,
                 gpu_wait_sec: float = DEFAULT_GPU_WAIT_SEC, dispatch: str = "fair",
                 shares: Callable[[Any], Any] | None = None, spare_caps: bool = False) -> None:
        self.redis = redis
        self.namespace = namespace
        self.router = Router(redis, namespace, gpu_wait_sec)
        self.dispatcher = Dispatcher(redis, namespace, shares=shares or Shares(None), policy=dispatch,
                                     gpu_wait_sec=gpu_wait_sec, spare_caps=spare_caps)
        self.retry_intervals = tuple(retry_intervals) or (0,)
        self.timeout = timeout
        self.failure_handler = failure_handler
        self.maintenance = maintenance
        self.maintenance_sec = maintenance_sec
        self._line: Line | None = None  # the fair line as last computed by ``standing``
        self._outage = Outage()  # of the rounds of fair dispatch
        self._timer: _Every | None = None
        self._lease: DispatchLease | None = None  # this process's bid to be the farm's dispatcher

    def queue_name(self, queue: str) -> str:
        return f"{self.namespace}{queue}"

    def rq_job_id(self, job_id: str) -> str:
        return f"{self.namespace}{job_id}"

    def batch(self) -> AbstractContextManager[None]:
        """Each enqueue is written as it comes (``JobQueue.batch``)."""
        return nullcontext()

    def enqueue(self, func_path: str, *args: Any, job_id: str, queue: str = "render",
                depends_on: list[str] | None = None, retries: int = 2, turn: Turn | None = None,
                pool: str = "") -> None:
        """A chunk (``turn`` given) waits in its workspace's waiting queue for its turn
        (``reelfarm.farm.runtime.dispatch``), then goes to ``queue``; anything else goes to ``queue``."""
        from rq import Callback, Queue, Retry

        retry = None
        if retries > 0:
            intervals = list(self.retry_intervals[:retries])
            retry = Retry(max=retries, interval=intervals + [intervals[-1]] * (retries - len(intervals)))
        with self._guard("enqueue"):
            if self._waiting_or_running(self.rq_job_id(job_id)):
                return  # enqueueing again changes nothing, as with the embedded queue
            name = self.queue_name(queue)
            if turn is not None:
                name = self.dispatcher.hold(self.rq_job_id(job_id), turn, queue)
            Queue(name, connection=self.redis).enqueue_call(
                func=func_path, args=args, job_id=self.rq_job_id(job_id),
                depends_on=[self.rq_job_id(d) for d in depends_on] if depends_on else None,
                retry=retry, timeout=self.timeout, result_ttl=RESULT_TTL_SEC, failure_ttl=FAILURE_TTL_SEC,
                on_failure=Callback(RQ_ON_FAILURE),
                meta={"failure_handler": self.failure_handler, **({"pool": pool} if pool else {})},
                description=f"{func_path}{tuple(args)!r}")
        if turn is not None:
            with self._guard("enqueue"):
                self.dispatcher.arrived(self.rq_job_id(job_id))  # in its waiting queue now, unless deferred
            self._changed()

    def _changed(self) -> None:
        """What waits changed: a chunk's turn may be now, and the published line moves. A round by the
        farm's dispatcher where this process bids for it (woken), else here."""
        if self._lease is not None:
            self.wake()
        else:
            self.dispatch_round()

    def wake(self, free: str | None = None) -> None:
        """Ask the farm's dispatcher for a round now (``reelfarm.farm.runtime.dispatchlease``): a
        chunk was enqueued, or one ended; ``free``: the name of a worker about to take a job."""
        with self._guard("wake"):
            wake(self.redis, self.namespace, free)

    @property
    def dispatching_elsewhere(self) -> bool:
        """Whether this process bids for the farm's dispatch and another process holds it now:
        a round here would first copy the whole backlog (``dispatchmirror``); a wake is what helps."""
        return self._lease is not None and not self._lease.holding and self.dispatcher.policy == "fair"

    def dispatch_round(self, worker: Any = None, wait: float = 0.0, free: Any = ()) -> list[str]:
        """A round of fair dispatch now, if no other process is in one (or, within ``wait``
        seconds, once it is out); never raises (the next round, a moment later, does what this
        one could not). An outage goes to the process's outage log (one line when it starts, one
        when it ends), not a line a round."""
        began = time.monotonic()
        try:
            moved = self.dispatcher.round(worker, wait=wait, free=free)
        except Exception as exc:
            if is_outage(exc):
                self._outage.lost(exc, "dispatching chunks")
            else:
                log.warning("a round of fair dispatch failed", exc_info=True)
            return []
        self._outage.ok("dispatch resumes", (REDIS,), began)
        return moved

    def retarget(self, rq_job_id: str, queue: str) -> bool:
        """Send a chunk still waiting for its turn to ``queue`` instead; False when it is not waiting."""
        return self.dispatcher.retarget(rq_job_id, queue)

    def cancel(self, job_id: str) -> None:
        from rq.command import send_stop_job_command
        from rq.exceptions import InvalidJobOperation, NoSuchJobError
        from rq.job import Job, JobStatus

        with self._guard("cancel"):
            try:
                job = Job.fetch(self.rq_job_id(job_id), connection=self.redis)
            except NoSuchJobError:
                return
            status = job.get_status(refresh=False)
            try:
                if status == JobStatus.STARTED:
                    send_stop_job_command(self.redis, job.id)  # the task would no-op anyway; this saves the work
                elif status not in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.STOPPED):
                    job.cancel()  # a chunk waiting for its turn leaves its waiting queue too
            except InvalidJobOperation:
                pass
            self.dispatcher.forget(job.id)
            if job_id.startswith("render-") and job_id.endswith("-stitch"):  # the render's last job: no hold left
                from reelfarm.farm.runtime.renderholds import RedisHolds

                RedisHolds(self.dispatcher).drop(job_id.removeprefix("render-").removesuffix("-stitch"))
        self._changed()

    def raise_priority(self, render_id: str, priority: str) -> int:
        """Raises the turns of the render's chunks still held for fair dispatch
        (``Dispatcher.raise_priority``); those a round already moved to a ready queue keep their place."""
        with self._guard("raise_priority"):
            raised = self.dispatcher.raise_priority(render_id, priority)
        if raised:
            self._changed()
        return raised

    def ping(self) -> None:
        with self._guard("ping"):
            self.redis.ping()

    def start(self) -> None:
        if self.maintenance is not None and self._timer is None:
            self._timer = _Every(self.maintenance_sec, self.maintenance)
            self._timer.start()
        if self._lease is None:
            self._lease = DispatchLease(self.redis, self.namespace, lambda free: self.dispatch_round(free=free))
            self._lease.start()

    def stop(self, timeout: float | None = None) -> None:
        for timer in (self._timer, self._lease):
            if timer is not None:
                timer.stop(timeout)
        self._timer, self._lease = None, None

    def chunk_queue(self, pool: str = "") -> str:
        return self.router.chunk_queue(pool)

    def stitch_queue(self, pool: str = "") -> str:
        from reelfarm.farm.runtime.poolrounds import stitch_queue

        return stitch_queue(self.redis, self.namespace, pool)

    def loads(self) -> dict[str, Any]:
        with self._guard("loads"):
            return self.dispatcher.loads()

    def standing(self, render_id: str) -> dict[str, Any] | None:
        from datetime import datetime

        from reelfarm.farm.services.fairness import place

        with self._guard("standing"):
            if self.redis.hexists(self.dispatcher.key("suspended"), render_id):
                return None  # held back by an operator (``renderholds``): out of the line until resumed
            if self.dispatcher.policy == "fair":  # what the dispatcher's rounds publish
                found = self.dispatcher.place(render_id)
                if found is None:
                    return None
                return place(found[0], found[1], self.start_rate(), datetime.now(UTC))
            # the line is kept between reads and computed again only when what decides it changed
            self._line = known = self.dispatcher.kept_line(self._line, render_id)
            waiting = known.waiting.get(render_id, 0)
            if not waiting:
                return None
            return place(known.frames_ahead(render_id), waiting, self.start_rate(), datetime.now(UTC))

    def start_rate(self) -> float:
        """Frames a second a start estimate divides by: the farm's recent throughput, else, on a
        farm that finished nothing lately, its live nodes' own measured speed (``speeds``)."""
        from reelfarm.farm.runtime.nodes import NodeRegistry
        from reelfarm.farm.services.queues import CHUNK_QUEUES
        from reelfarm.farm.services.speeds import seeded_rate, start_rate

        throughput = self.dispatcher.throughput()
        if throughput > 0:  # the registry is read only on a cold farm
            return throughput
        return start_rate(throughput, seeded_rate(NodeRegistry(self.redis, self.namespace).live_nodes(), CHUNK_QUEUES))

    def _pool_held_up(self, render_id: str) -> dict[str, Any] | None:
        """``no_node_in_pool`` while the render's chunks wait in a pool no live node serves (``poolrounds``)."""
        from reelfarm.farm.runtime.nodes import NodeRegistry
        from reelfarm.farm.runtime.poolrounds import held_up

        return held_up(self.dispatcher, render_id, NodeRegistry(self.redis, self.namespace).live_nodes())

    def held_up(self, render_id: str) -> dict[str, Any] | None:
        """The earliest chunk of the render still marked as running on a node that is gone, or taken
        by one and never started (until the repair round hands it back:
        ``reelfarm.farm.runtime.maintenance.recover_orphans`` and ``recover_taken``): ``node_stopped``;
        else the earliest on a node not heard from for ``SILENT_SEC`` (``node_silent``, with how long);
        else the earliest running on a live node that says it has drawn no frame of it for a while
        (``no_frames``: its work process frozen or stuck, before the node stops it as stuck).
        Before both, ``suspended`` while an operator holds the render's chunks back; after them,
        ``no_node_in_pool`` while its chunks wait in a pool no live node serves (``poolrounds``)."""
        from rq.executions import Execution
        from rq.registry import StartedJobRegistry

        from reelfarm.farm.runtime.nodes import NodeRegistry, taken_key, taken_notes
        from reelfarm.farm.runtime.poolrounds import tag_set_queues
        from reelfarm.farm.services.graph import chunk_index_of
        from reelfarm.farm.services.queues import CHUNK_QUEUES

        with self._guard("held_up"):
            held = self._suspended_held_up(render_id)
            if held is not None:
                return held
            nodes = NodeRegistry(self.redis, self.namespace)
            stopped: list[int] = []
            silent: list[tuple[int, float]] = []
            frameless: list[tuple[int, float]] = []

            def judge(index: int, node: str, started: bool = True) -> None:
                found = nodes.silence(node)
                if found is not None and found[0] == "dead":
                    stopped.append(index)
                elif found is not None:
                    silent.append((index, found[1]))
                elif started and (quiet := nodes.frames_quiet(node)) is not None:
                    frameless.append((index, quiet))

            for queue in [*CHUNK_QUEUES, *tag_set_queues(nodes.nodes())]:  # the plain ready queues, the pools'
                for entry in self.redis.zrange(StartedJobRegistry(self.queue_name(queue), connection=self.redis).key,
                                               0, -1):
                    text = entry.decode() if isinstance(entry, bytes) else entry
                    job_id, _, execution_id = text.rpartition(":")
                    index = chunk_index_of(render_id, job_id.removeprefix(self.namespace))
                    if index is None:
                        continue
                    execution = Execution(id=execution_id, job_id=job_id, connection=self.redis)
                    try:
                        execution.refresh()
                    except ValueError:
                        continue
                    if execution.worker_name:
                        judge(index, execution.worker_name)
            for job_id, node, _ in taken_notes(self.redis, taken_key(self.namespace)):  # taken, never started
                index = chunk_index_of(render_id, job_id.removeprefix(self.namespace))
                if index is not None:
                    judge(index, node, started=False)
            if stopped:
                chunk = min(stopped)
                return {"chunk": chunk, "reason": "node_stopped",
                        "message": f"waiting for chunk {chunk} (its node stopped)"}
            if silent:
                chunk, quiet = min(silent)
                return {"chunk": chunk, "reason": "node_silent",
                        "message": f"waiting for chunk {chunk} (its node has not been heard from for {quiet:.0f} s)"}
            if frameless:
                chunk, quiet = min(frameless)
                return {"chunk": chunk, "reason": "no_frames",
                        "message": f"waiting for chunk {chunk} (its node is alive but has drawn no frame of it "
                                   f"for {quiet:.0f} s; a chunk that draws none for the stall time is stopped "
                                   "and runs again)"}
            return self._pool_held_up(render_id)  # after a dead node's chunk: that one is handed back first

    def _suspended_held_up(self, render_id: str) -> dict[str, Any] | None:
        """``suspended`` while an operator holds the render's chunks back (``renderholds``)."""
        from reelfarm.farm.runtime.renderholds import RedisHolds
        from reelfarm.farm.services.graph import chunk_index_of
        from reelfarm.farm.services.queues import suspended_held_up

        holds = RedisHolds(self.dispatcher)
        record = holds.suspended(render_id)
        if record is None:
            return None
        parked = [i for i in (chunk_index_of(render_id, rq_id.removeprefix(self.namespace))
                              for rq_id in holds.parked(render_id)) if i is not None]
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record["at"])) if record.get("at") else None
        return suspended_held_up(min(parked) if parked else 0, since)

    def _waiting_or_running(self, rq_job_id: str) -> bool:
        from rq.exceptions import NoSuchJobError
        from rq.job import Job, JobStatus

        try:
            status = Job.fetch(rq_job_id, connection=self.redis).get_status(refresh=False)
        except NoSuchJobError:
            return False
        return status in (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED, JobStatus.STARTED)

    def _guard(self, action: str) -> AbstractContextManager[None]:
        return _redis_guard(action)


class _Every(threading.Thread):
    """Calls ``action`` every ``seconds`` (and at once when poked) until stopped."""

    def __init__(self, seconds: float, action: Callable[[], Any], name: str = "reelfarm-maintenance") -> None:
        super().__init__(name=name, daemon=True)
        self.seconds, self.action = seconds, action
        self._stopped = threading.Event()
        self._poked = threading.Event()

    def run(self) -> None:
        while True:
            self._poked.wait(self.seconds)
            self._poked.clear()
            if self._stopped.is_set():
                return
            self.action()

    def poke(self) -> None:
        """Run the action now rather than at the next period (requests coalesce)."""
        self._poked.set()

    def stop(self, timeout: float | None = None) -> None:
        self._stopped.set()
        self._poked.set()
        self.join(timeout)


@contextmanager
def _redis_guard(action: str) -> Iterator[None]:
    """Turns Redis connection trouble into QueueUnavailable."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise QueueUnavailable(f"the job queue (Redis) cannot be reached ({action}): {exc}") from exc


def on_rq_failure(job: Any, connection: Any, exc_type: Any = None, exc_value: BaseException | None = None,
                  tb: Any = None) -> None:
    """RQ's ``on_failure`` callback: hand a failure that will not be retried to the failure handler.

    RQ calls it on every failure, also those it is about to retry (``retries_left`` > 0), and for
    jobs whose worker died (``AbandonedJobError``, from the started-job registry's cleanup).
    A failure caused by a database outage, or one that cannot be recorded because of one, is not
    the work's fault: the render or job is left live, and ``reelfarm.farm.runtime.reconcile`` enqueues it again
    (RQ calls the job failed, which it counts as a lost queue entry).
    """
    if job.retries_left:
        log.info("job %s failed (%s); RQ retries it, %s left", job.id, describe_exception(exc_value),
                 job.retries_left)
        return
    if exc_value is not None and is_database_outage(exc_value):
        log.warning("job %s failed for good while the database was unreachable; its render or job stays "
                    "live and reelfarm.farm.runtime.reconcile enqueues it again", job.id)
        return
    handler = resolve(job.meta.get("failure_handler") or DEFAULT_FAILURE_HANDLER)
    try:
        handler(job.func_name, list(job.args), describe_exception(exc_value))
    except Exception as exc:
        if not is_database_outage(exc):
            raise
        log.warning("the failure of job %s could not be recorded (the database is unreachable); "
                    "reelfarm.farm.runtime.reconcile enqueues it again", job.id)
