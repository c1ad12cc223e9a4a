"""The farm's maintenance round: every chore that keeps the farm healthy, in one home.

``farm_round`` does, in this order, each chore that its *gate* says is due now:

1. ``handback`` (a farm on RQ only): hand the started jobs of dead nodes back to RQ
   (``recover_orphans``), and the jobs they had taken and not yet started back to the front of
   their queues (``recover_taken``), every ``HANDBACK_SEC``: with a node seen as dead ``ALIVE_SEC``
   after its last heartbeat (``reelfarm.farm.runtime.nodes``), a dead node's chunk is running again
   elsewhere within about 25 s of its death; and forget the nodes gone for ``FORGET_SEC``
   (``NodeRegistry.prune``);
2. ``repair`` (a farm on RQ only): enqueue again the work Redis lost (``reelfarm.farm.runtime.reconcile``), and
   ``reap``: fail and refund renders and jobs stalled past their bound (``reelfarm.farm.runtime.reaper``);
3. ``webhooks``: fan new outbox events out to deliveries and enqueue due retries (``reelfarm.farm.runtime.webhooks``);
4. ``retention``: delete rows past their retention (``reelfarm.farm.runtime.retention``);
5. ``reroute`` (a farm on RQ only): move chunks that waited on ``render-gpu`` past
   ``REELFARM_GPU_QUEUE_WAIT_SEC`` to ``render`` while a CPU-only node is live (``reelfarm.farm.runtime.routing``).

One error policy: a chore that fails is logged with its traceback and the others still run; an
outage (Redis or the database unreachable) ends the round, and ``Maintenance.run_once`` reports
it to the process's outage log (``reelfarm.farm.runtime.resilience.OutageLog``: one line when it
starts, one when it is over, whichever of the process's rounds meets it), never a traceback per round.

Who runs it, and with which gate:

- each ``reelfarm worker``'s heartbeat thread, every beat (5 s), with ``FarmLocks``: one Redis lock
  per chore, taken for the chore's period (which are free is read in one ``MGET`` a round, and only
  those are tried), so one node of the farm does each chore per period
  (repairs and reaping every ``ROUND_SEC``, hand-backs, webhooks and rerouting every 5 s, retention
  every ``reelfarm.farm.runtime.retention.PURGE_EVERY_SEC``), whichever node's beat comes first;
- the embedded executor's timer (``EmbeddedQueue``'s maintenance hook, every ``WEBHOOK_SEC``) with
  ``EveryRound``: reaping and webhooks every round, retention when this process's schedule says;
- an API process serving a farm on RQ (the ``RQQueue``'s maintenance hook, every ``HANDBACK_SEC``), with
  ``FarmLocks`` for the hand-backs and repairs alone, so stalled and lost work is repaired while no node is alive;
- ``reelfarm farm reap``: the repairs at once (``Always``), or every ``--every`` seconds under the lock.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from reelfarm.farm.runtime import retention
from reelfarm.farm.runtime.nodes import NodeRegistry, taken_key, taken_notes
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.reaper import reap
from reelfarm.farm.runtime.reconcile import reconcile
from reelfarm.farm.runtime.resilience import DATABASE, REDIS, Outage, is_outage
from reelfarm.farm.runtime.webhooks import run_webhooks
from reelfarm.farm.services.queues import ALL_QUEUES, JobQueue

log = logging.getLogger("reelfarm.farm")

ROUND_SEC = 30.0  # repairs and reaping, across a farm
WEBHOOK_SEC = 5.0  # webhook dispatch: the first retry of a failed delivery is due after about 5 s
HANDBACK_SEC = 5.0  # looking for dead nodes' jobs costs a few Redis reads
QUEUES = ALL_QUEUES  # render-gpu, render, jobs
HANDBACK, REPAIR, WEBHOOKS, RETENTION, REROUTE = "handback", "repair", "webhooks", "retention", "reroute"
CHORES = (HANDBACK, REPAIR, WEBHOOKS, RETENTION, REROUTE)


class Repair(Protocol):
    """The repairs of a farm's queue (``rq_repair``)."""

    def handback(self) -> list[str]:
        """Hand the jobs of dead nodes back to their queues; their ids."""
        ...

    def reconcile(self) -> list[str]:
        """Enqueue again the work the queue lost; the ids enqueued."""
        ...


Reroute = Callable[[], list[str]]  # -> chunks moved from render-gpu to render


@dataclass
class RoundResult:
    recovered: list[str] = field(default_factory=list)
    enqueued: list[str] = field(default_factory=list)
    reaped_renders: list[str] = field(default_factory=list)
    reaped_jobs: list[str] = field(default_factory=list)
    rerouted: list[str] = field(default_factory=list)


class Gate(Protocol):
    def due(self, chore: str) -> bool:
        """Whether ``chore`` (``REPAIR``, covering the reaping too, ``WEBHOOKS``, ``RETENTION``,
        ``REROUTE``) runs now."""
        ...


def lock_key(namespace: str) -> str:
    return f"reelfarm:{namespace}maintenance-lock"


class FarmLocks:
    """One process of the farm per chore and period: a Redis ``SET NX`` that expires with the period
    (``lock`` for the repairs, ``lock:webhooks`` and ``lock:retention`` for the others)."""

    PERIODS: ClassVar[dict[str, float]] = {HANDBACK: HANDBACK_SEC, REPAIR: ROUND_SEC, WEBHOOKS: WEBHOOK_SEC,
               RETENTION: retention.PURGE_EVERY_SEC, REROUTE: WEBHOOK_SEC}

    def __init__(self, redis: Any, lock: str, owner: str, chores: Sequence[str] = CHORES) -> None:
        self.redis, self.lock, self.owner, self.chores = redis, lock, owner, tuple(chores)

    def due(self, chore: str) -> bool:
        if chore not in self.chores:
            return False
        return bool(self.redis.set(self.key(chore), self.owner or "maintenance", nx=True,
                                   ex=int(self.PERIODS[chore])))

    def key(self, chore: str) -> str:
        return self.lock if chore == REPAIR else f"{self.lock}:{chore}"

    def round(self) -> Gate:
        """The locks for one round: which are free is read in one command (``MGET``), and only those
        are tried, so a node whose beat finds every chore taken by others sends one command, not one
        a chore."""
        return _LockRound(self)


class _LockRound:
    def __init__(self, locks: FarmLocks) -> None:
        self.locks = locks
        self._held: set[str] | None = None

    def due(self, chore: str) -> bool:
        if chore not in self.locks.chores:
            return False
        if self._held is None:
            values = self.locks.redis.mget([self.locks.key(c) for c in self.locks.chores])
            self._held = {c for c, value in zip(self.locks.chores, values) if value is not None}
        return chore not in self._held and self.locks.due(chore)


class EveryRound:
    """The embedded executor's gate: every chore each round, retention when this process's
    schedule (``reelfarm.farm.runtime.retention.SCHEDULE``) says it is due."""

    def due(self, chore: str) -> bool:
        return retention.SCHEDULE.due() if chore == RETENTION else True


class Always:
    """Run the given chores now (``reelfarm farm reap``)."""

    def __init__(self, chores: Sequence[str] = CHORES) -> None:
        self.chores = tuple(chores)

    def due(self, chore: str) -> bool:
        return chore in self.chores


def farm_round(queue: JobQueue, gate: Gate, repair: Repair | None = None,
               reroute: Reroute | None = None) -> RoundResult | None:
    """One round of the chores ``gate`` lets run (module docstring); None when none was due.

    Uses the task context (``reelfarm.farm.runtime.context.current()``) for the database and storage. Raises only
    for an outage.
    """
    result, ran = RoundResult(), False
    if repair is not None and gate.due(HANDBACK):
        ran = True
        with _step("hand-back of dead nodes' jobs"):
            result.recovered = repair.handback()
    if gate.due(REPAIR):
        ran = True
        if repair is not None:
            with _step("queue repair"):
                result.enqueued = repair.reconcile()
        with _step("reaping"):
            reaped = reap()
            result.reaped_renders, result.reaped_jobs = reaped.renders, reaped.jobs
    if gate.due(WEBHOOKS):
        ran = True
        with _step("webhook dispatch"):
            run_webhooks(queue)
    if gate.due(RETENTION):
        ran = True
        with _step("retention purge"):
            retention.purge()
    if reroute is not None and gate.due(REROUTE):
        ran = True
        with _step("chunk rerouting"):
            result.rerouted = reroute()
    return result if ran else None


@contextlib.contextmanager
def _step(chore: str) -> Iterator[None]:
    """A failed chore must not stop the others; an outage stops the round (the caller waits)."""
    try:
        yield
    except Exception as exc:
        if is_outage(exc):
            raise
        log.exception("farm maintenance: %s failed", chore)


def recover_orphans(redis: Any, queue_names: Sequence[str], registry: NodeRegistry,
                    gone: Collection[str] = ()) -> list[str]:
    """Give RQ the started jobs of dead farm nodes (and of the nodes named in ``gone``: a dead node
    whose name a new node took, ``reelfarm.farm.runtime.worker.take_over``) to handle as abandoned,
    now. Returns their ids.

    It runs in threads (a node's heartbeat thread, each API process's timer): RQ's clean-up calls
    the job's failure callback under a death penalty, SIGALRM by default, which only a main thread
    may set; a timer thread's penalty (``TimerDeathPenalty``) works in any thread.
    """
    from rq.executions import Execution
    from rq.registry import StartedJobRegistry
    from rq.timeouts import TimerDeathPenalty

    recovered: list[str] = []
    for queue_name in queue_names:
        started = StartedJobRegistry(queue_name, connection=redis, death_penalty_class=TimerDeathPenalty)
        dead: dict[bytes | str, int] = {}
        for entry in redis.zrange(started.key, 0, -1):
            text = entry.decode() if isinstance(entry, bytes) else entry
            job_id, _, execution_id = text.rpartition(":")
            execution = Execution(id=execution_id, job_id=job_id, connection=redis)
            try:
                execution.refresh()
            except ValueError:
                continue  # its record expired: RQ's own cleanup will see the entry expire too
            if execution.worker_name and (execution.worker_name in gone or registry.is_dead(execution.worker_name)):
                log.warning("job %s was running on %s, which is gone; handing it back", job_id, execution.worker_name)
                dead[entry] = 0
                recovered.append(job_id)
        if dead:
            redis.zadd(started.key, dead, xx=True)
            started.cleanup()
            for entry in dead:
                _run_now(redis, queue_name, (entry.decode() if isinstance(entry, bytes) else entry).rpartition(":")[0])
    return recovered


def recover_taken(redis: Any, key: str, registry: NodeRegistry, gone: Collection[str] = ()) -> list[str]:
    """Put the jobs that dead nodes (and the nodes named in ``gone``, as ``recover_orphans``) took and
    never started back at the front of their queues, their retries unspent (they never ran); drop the
    notes of jobs that started or are gone. Returns the ids put back. ``key``: the farm's taken key
    (``reelfarm.farm.runtime.nodes.taken_key``).

    A note is claimed by deleting it, so of two rounds at once only one puts a job back.
    """
    from rq import Queue
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus
    from rq.registry import StartedJobRegistry

    recovered: list[str] = []
    for job_id, node, queue_name in taken_notes(redis, key):
        try:
            job = Job.fetch(job_id, connection=redis)
        except NoSuchJobError:
            redis.hdel(key, job_id)
            continue
        started = job_id in StartedJobRegistry(queue_name, connection=redis)
        if started or job.get_status() != JobStatus.QUEUED:
            redis.hdel(key, job_id)  # it started (a dead node's started job is recover_orphans'), or ended
            continue
        if (node not in gone and not registry.is_dead(node)) or not redis.hdel(key, job_id):
            continue  # its node lives (it may be waiting for the database), or another round took it
        queue = Queue(queue_name, connection=redis)
        redis.lrem(queue.intermediate_queue_key, 0, job_id)
        queue.push_job_id(job_id, at_front=True)
        log.warning("job %s was taken by %s, which is gone, before it started; back at the front of %s",
                    job_id, node, queue_name)
        recovered.append(job_id)
    return recovered


def _run_now(redis: Any, queue_name: str, job_id: str) -> None:
    """A dead node's job that RQ scheduled for a retry goes to the front of its queue at once.

    Its retry is spent (a chunk that kills its node every time must not loop), but waiting for the
    retry interval would only delay it, and the due retry would wait on the dead node's scheduler
    lock until it expires.
    """
    from rq import Queue
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus
    from rq.registry import ScheduledJobRegistry

    try:
        job = Job.fetch(job_id, connection=redis)
    except NoSuchJobError:
        return
    if job.get_status() != JobStatus.SCHEDULED:
        return
    ScheduledJobRegistry(queue_name, connection=redis).remove(job)
    Queue(queue_name, connection=redis).enqueue_job(job, at_front=True)


@dataclass
class rq_repair:  # named as the function it was: a Repair of a farm on RQ
    """The repairs of a farm on RQ: dead nodes' jobs handed back; lost work enqueued again."""

    queue: RQQueue
    queues: Sequence[str] = QUEUES

    def handback(self) -> list[str]:
        from reelfarm.farm.runtime.poolrounds import rescue_stranded, tag_set_queues
        from reelfarm.farm.services.queues import CHUNK_QUEUES

        registry = NodeRegistry(self.queue.redis, self.queue.namespace)
        registry.prune()
        pooled = tag_set_queues(registry.nodes(), [q for q in self.queues if q in CHUNK_QUEUES])  # pools' ready queues
        recovered = (recover_orphans(self.queue.redis, [self.queue.queue_name(q) for q in [*self.queues, *pooled]],
                                     registry)
                     + recover_taken(self.queue.redis, taken_key(self.queue.namespace), registry))
        if pooled:
            rescue_stranded(self.queue.dispatcher, registry.nodes())
        return recovered

    def reconcile(self) -> list[str]:
        return reconcile(self.queue).enqueued


class Maintenance:
    """``farm_round`` with its error policy: outages pause it quietly (one line when one starts,
    one when it is over), anything else is logged and the next round runs as usual."""

    def __init__(self, queue: JobQueue, gate: Gate, repair: Repair | None = None,
                 what: str = "farm maintenance", reroute: Reroute | None = None) -> None:
        self.queue, self.gate, self.repair, self.reroute = queue, gate, repair, reroute
        self.what = what
        self.outage = Outage()  # Redis or the database, as each error says

    def run_once(self) -> RoundResult | None:
        gate = _Recorded(self.gate.round() if isinstance(self.gate, FarmLocks) else self.gate)
        began = time.monotonic()
        try:
            result = farm_round(self.queue, gate, self.repair, self.reroute)
        except Exception as exc:
            if not is_outage(exc):
                log.exception("%s failed", self.what)
                return None
            self.outage.lost(exc, f"running {self.what}")
            return None
        # what this round reached: Redis on a farm on RQ (its locks, its repairs), the database
        # through the chores that always read it
        used = ((REDIS,) if self.repair is not None else ()) + \
            ((DATABASE,) if gate.ran & {REPAIR, WEBHOOKS, RETENTION} else ())
        self.outage.ok(f"{self.what} resumes", used, began)
        return result


class _Recorded:
    """A gate that remembers which chores it let run."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.ran: set[str] = set()

    def due(self, chore: str) -> bool:
        if self.gate.due(chore):
            self.ran.add(chore)
            return True
        return False


def embedded_maintenance(queue: JobQueue) -> Callable[[], RoundResult | None]:
    """The embedded executor's maintenance hook: the round with ``EveryRound``."""
    return Maintenance(queue, EveryRound(), what="embedded maintenance").run_once


def rq_maintenance(queue: RQQueue, owner: str, chores: Sequence[str] = (HANDBACK, REPAIR),
                   queues: Sequence[str] = QUEUES) -> Maintenance:
    """A farm's round under its locks (the API's share by default: the hand-backs and repairs)."""
    return Maintenance(queue, FarmLocks(queue.redis, lock_key(queue.namespace), owner, chores),
                       rq_repair(queue, queues), reroute=lambda: queue.router.reroute() + _fall_back(queue))


def _fall_back(queue: RQQueue) -> list[str]:
    """Renders moved off NVENC (``reelfarm.farm.runtime.families``), with the task context's lifecycle."""
    from reelfarm.farm.runtime.context import current
    from reelfarm.farm.runtime.families import fall_back
    from reelfarm.farm.runtime.tasks import lifecycle

    return fall_back(queue, lifecycle(current()))
