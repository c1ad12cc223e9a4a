"""RQ's worker and scheduler, kept alive through Redis and PostgreSQL outages of any length.

RQ's ``Worker`` leaves its work loop on the first Redis error it does not expect there ("found an
unhandled exception, quitting...") and on any Redis timeout; its scheduler is a forked child that
dies on any Redis error, and the worker restarts it only in its maintenance, every 10 minutes. A
render node must instead wait for its servers and carry on:

- ``NodeWorker`` wraps the steps of RQ's work loop that talk to Redis. Waiting for a job retries
  with backoff; heartbeats and the horse monitor's bookkeeping are skipped while Redis is away
  (the horse keeps rendering); RQ's maintenance is put off. Before it takes a job, and before it
  starts one, it waits until the database answers, so no job starts only to fail on a missing
  database and spend a retry. When Redis is back it says so, registers the worker again if Redis
  lost its record (restarted empty), and hands back to the queue a job whose end it could not
  record (tasks are idempotent; a job Redis lost altogether is re-created from the database by
  ``reelfarm.farm.runtime.reconcile``).
- ``NodeScheduler`` (moves due retries to their queues; ``reelfarm.farm.runtime.rqscheduler``)
  retries its loop with backoff instead of dying; RQ's maintenance, every ``MAINTENANCE_INTERVAL_SEC``
  here, restarts it should it die anyway.

Stopping (a deploy, a scale-down: SIGTERM). RQ's warm shutdown takes no new job and lets the
running one finish. The work horse ignores SIGTERM, so a signal sent to every process of the node
(systemd, ``docker kill``) drains it too. A job still running ``stop_grace_sec`` after the signal
(``reelfarm worker``: ``REELFARM_WORKER_GRACE_SEC``), or when a second SIGTERM or SIGINT asks for
a cold shutdown, is stopped and handed back to the front of its queue with its retries unspent,
so another node runs it at once instead of after the farm's repair round notices a dead node.
The node's scheduler process gets ``SCHEDULER_STOP_SEC`` to stop before it is killed, and a node
still running ``STOP_STACKS_AFTER_SEC`` after its grace period writes every thread's stack to its
log (as SIGUSR1 makes any node do at any time: ``reelfarm worker``).

Taken, not started. Between taking a job from its queue and registering it as started (RQ's
started registry, where a dead node's jobs are found) a node does some work of its own: waiting
for the database, fetching the job, preparing its execution. A node that dies there leaves the job
in no list RQ looks at soon: a one-queue node's job waits in RQ's intermediate list until RQ's
clean-up fails it a minute or two later (a retry spent), and a node of several queues pops it
outright, so it would wait for the stall reaper. ``NodeWorker`` notes each job it takes under the
farm's taken key (``reelfarm.farm.runtime.nodes.taken_key``) and clears the note once the job is
registered as started; the farm's hand-back round puts the job of a dead node back at the front of
its queue, its retries unspent (it never ran). A node waiting out a database outage with a job in
hand is alive (its heartbeats go on), so its job stays with it.

Bad nodes and stuck chunks (``reelfarm.farm.runtime.nodehealth``). ``NodeWorker`` counts the failures
of its chunks that are its own fault; set aside after ``REELFARM_NODE_SETASIDE_AFTER`` of them in a
row, it takes no job until an operator clears it or its cool-down is over, and the chunk whose
failure set it aside goes back to the front of its queue with its retries unspent. Its horse
monitor stops a chunk that drew no frame for ``REELFARM_CHUNK_STALL_SEC``.

Each outage is logged once when it starts and once when it ends (``reelfarm.farm.runtime.resilience.Outage``).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from rq import Worker
from rq.job import Job
from sqlalchemy import Engine, text

from reelfarm.farm.runtime.nodehealth import (
    SET_ASIDE_POLL_SEC,
    NodeHealth,
    StallWatch,
    counts_against_node,
    describe_death,
    describe_failure,
    is_chunk,
)
from reelfarm.farm.runtime.queue import task_path
from reelfarm.farm.runtime.resilience import (
    DATABASE,
    MAX_WAIT_SEC,
    REDIS,
    REDIS_ERRORS,
    Backoff,
    Outage,
    OutageAwareLog,
    is_database_outage,
    is_outage,
    wait_until,
)
from reelfarm.farm.runtime.rqscheduler import NodeScheduler, forget_worker, free_dead_scheduler_locks, hand_back
from reelfarm.farm.services.nodehealth import Standing

log = logging.getLogger("reelfarm.farm")

MAINTENANCE_INTERVAL_SEC = 60  # RQ's registry cleanup and scheduler restart (RQ's default: 600)
# RQ waits for a job for this less 15 s at a time and runs its maintenance only in between (RQ's
# default, 420 s, could put a scheduler restart off for 7 minutes).
WORKER_TTL_SEC = 75
SCHEDULER_STOP_SEC = 10.0  # from SIGTERM to the node's scheduler process until it is killed
STOP_STACKS_AFTER_SEC = 30.0  # still running this long after its grace period: a node logs its threads' stacks


def stack_stream() -> Any:
    """Where a node writes its threads' stacks (``faulthandler`` needs a real file): its standard
    error, or the process's own where that was replaced (``click.testing``); None without either."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return None


class NodeJob(Job):
    """RQ's ``Job``, reading a task or callback queued under an earlier release's dotted name
    (``farm.tasks.render_chunk``) as the same function under its current one. In a node's work
    horse, a failure is first put to the node (``failure_judge``, ``NodeWorker.perform_job``): one
    that sets the node aside is the node's, not the job's, and runs no failure callback."""

    failure_judge: Callable[[Any, BaseException | None], bool] | None = None

    def execute_failure_callback(self, death_penalty_class: Any, *exc_info: Any) -> None:
        if self.failure_judge is not None and self.failure_judge(self, exc_info[1] if len(exc_info) > 1 else None):
            return  # the job goes back to its queue (NodeWorker.handle_job_failure)
        super().execute_failure_callback(death_penalty_class, *exc_info)

    def _deserialize_data(self) -> None:
        super()._deserialize_data()
        if isinstance(self._func_name, str):
            self._func_name = task_path(self._func_name)

    def restore(self, raw_data: Any) -> None:
        super().restore(raw_data)
        for attr in ("_success_callback_name", "_failure_callback_name", "_stopped_callback_name"):
            name = getattr(self, attr, None)
            if isinstance(name, str):
                setattr(self, attr, task_path(name))


class NodeWorker(Worker):
    """RQ's forking ``Worker`` that never quits on a connection error (see the module docstring)."""

    job_class = NodeJob
    max_connection_wait_time = MAX_WAIT_SEC  # RQ's own reconnect backoff while waiting for a job (60 s)

    def __init__(self, *args: Any, database: Engine | None = None, stop_grace_sec: float | None = None,
                 dispatch: Any = None, health: NodeHealth | None = None, stall: StallWatch | None = None,
                 taken: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL_SEC)
        kwargs.setdefault("worker_ttl", WORKER_TTL_SEC)
        if stall is not None:
            kwargs.setdefault("job_monitoring_interval", stall.monitor_sec)
        super().__init__(*args, **kwargs)
        self.database = database
        self.dispatch = dispatch  # an RQQueue: a round of fair dispatch before each job is taken
        self.stop_grace_sec = stop_grace_sec  # None: a warm shutdown waits for the job however long it runs
        self.redis_outage = Outage(REDIS)
        self.database_outage = Outage(DATABASE)
        self.log = OutageAwareLog(self.log, self.redis_outage)  # type: ignore[assignment]
        self._interrupted: list[tuple[str, str]] = []  # (job id, queue name) whose end went unrecorded
        self._running: tuple[Any, Any] | None = None  # (job, queue) a work horse runs now
        self._handing_back: str | None = None  # the job whose horse this node stopped
        self._grace: threading.Timer | None = None
        self.health = health  # counts this node's chunk failures; None: it is never set aside
        self.stall = stall  # watches the running chunk's frames; None: a chunk is never stopped as stuck
        self._aside: Standing | None = None  # the standing this node idles under while it is set aside
        self._disabled: dict[str, Any] | None = None  # the operator's record while this node is disabled
        self._set_aside_job: str | None = None  # the job whose failure set this node aside: handed back
        self._horse_death: tuple[str, str] | None = None  # (job id, why) of the horse that just died
        self._stuck: tuple[str, str] | None = None  # (job id, why) of the chunk this node stopped as stuck
        self.taken = taken  # the farm's taken key (``nodes.taken_key``); None: jobs taken are not noted

    @property
    def running_job_id(self) -> str | None:
        """The job a work horse of this node runs now, as the node's main process knows it (no
        Redis read: the heartbeat asks every beat)."""
        running = self._running
        return str(running[0].id) if running is not None else None

    # -- the work loop's steps ----------------------------------------------------------------

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        backoff = Backoff()
        while not self._stop_requested:
            if not self.wait_for_database(stop=lambda: self._stop_requested):
                break
            try:
                self._recover_from_redis_outage()
                if self._set_aside_now():
                    if timeout is None:
                        return None  # a burst node set aside leaves: it would take nothing
                    self._idle_a_moment()
                    continue
                if self.dispatch is not None:
                    self._dispatch_before_taking(burst=timeout is None)
                result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
                if result is not None and self._set_aside_now():
                    # disabled while it waited for a job: the job goes back first in line, untouched
                    result[1].push_job_id(result[0].id, at_front=True)
                    log.warning("job %s handed back to %s: node %s takes no job", result[0].id, result[1].name,
                                self.name)
                    continue
                if result is not None:
                    self._note_taken(*result)
                return result
            except REDIS_ERRORS as exc:
                self.redis_outage.lost(exc, "waiting for jobs")
                time.sleep(backoff.next())
        return None

    def _note_taken(self, job: Any, queue: Any) -> None:
        """Note the job as taken by this node until it is registered as started (module docstring)."""
        if self.taken is None:
            return
        try:
            self.connection.hset(self.taken, job.id, f"{self.name}\n{queue.name}")
        except REDIS_ERRORS as exc:  # Redis went away just after the job was taken: RQ's clean-up, then
            self.redis_outage.lost(exc, f"noting job {job.id} as taken")  # reconcile, cover it

    def prepare_execution(self, job: Any) -> Any:
        """RQ's: the job registered as started (where a dead node's job is found); then the note of it
        as taken is cleared."""
        execution = super().prepare_execution(job)
        if self.taken is not None:
            try:
                self.connection.hdel(self.taken, job.id)
            except REDIS_ERRORS as exc:  # the hand-back round drops a note of a job that started
                self.redis_outage.lost(exc, f"clearing job {job.id} as taken")
        return execution

    def _dispatch_before_taking(self, burst: bool) -> None:
        """A round of fair dispatch with this worker as a free place: the farm's dispatcher's, woken
        with this worker's name, where another process holds the dispatch (a round here would copy
        the backlog first: ``reelfarm.farm.runtime.dispatchmirror``); else one here. A burst worker
        (a script's, a test's) runs its rounds itself: it leaves when its queues are empty, so while
        chunks wait for their turn and its queues are empty it waits for the lock (held at most
        ``LOCK_MS`` by a process that died in a round) rather than leave."""
        from reelfarm.farm.runtime.dispatch import LOCK_MS

        if not burst and self.dispatch.dispatching_elsewhere:
            self.dispatch.wake(free=self.name)
            return
        empty = burst and not any(queue.count for queue in self.queues)
        self.dispatch.dispatch_round(self, wait=LOCK_MS / 1000 + 1 if empty and self.dispatch.dispatcher.held() else 0)

    def _set_aside_now(self) -> bool:
        """Whether this node is set aside now (by its failures, or disabled by an operator: ``reelfarm
        node disable``); its state says so, and the log when it starts and ends."""
        if self.health is None:
            return False
        disabled = self.health.registry.disabled(self.name)
        if disabled is not None:
            if self._disabled is None:
                reason = f": {disabled['reason']}" if disabled.get("reason") else ""
                log.warning("node %s takes no job: disabled by %s%s", self.name, disabled["by"], reason)
                self.set_state(f"disabled by {disabled['by']}{reason}")
            self._disabled = disabled
            return True
        if self._disabled is not None:
            log.warning("node %s takes jobs again: enabled by an operator", self.name)
            self._disabled = None
        standing, now = self.health.standing(self.name), time.time()
        if standing.set_aside(now):
            if self._aside is None:
                log.warning("node %s takes no job until %s (set aside: %s)", self.name,
                            time.strftime("%H:%M:%S", time.localtime(standing.until)), standing.failure)
                self.set_state(f"set aside: {standing.failure}")
            self._aside = standing
            return True
        if self._aside is not None:
            log.warning("node %s takes jobs again: %s", self.name,
                        "cleared by an operator" if now < self._aside.until else "its cool-down is over")
            self._aside = None
        return False

    def _idle_a_moment(self) -> None:
        """Set aside: keep the worker's heartbeat and RQ's maintenance, then look again."""
        self.heartbeat()
        if self.should_run_maintenance_tasks:
            self.run_maintenance_tasks()
        time.sleep(SET_ASIDE_POLL_SEC)

    def execute_job(self, job: Any, queue: Any) -> None:
        self.wait_for_database()
        self._running, self._stuck = (job, queue), None
        if self.stall is not None:
            self.stall.restart()
        try:
            super().execute_job(job, queue)
        except REDIS_ERRORS as exc:
            if self._horse_pid:
                self.wait_for_horse()  # the horse renders on; its result is in storage and the database
                self._horse_pid = 0
            self.redis_outage.lost(exc, f"running job {job.id}")
            self._interrupted.append((job.id, queue.name))
        finally:
            self._running = None
            if self._grace is not None:
                self._grace.cancel()
            if self.dispatch is not None and is_chunk(job.func_name):
                self._wake_dispatcher()

    def _wake_dispatcher(self) -> None:
        """A chunk ended: its place, and its workspace's share, are free for the farm's dispatcher."""
        try:
            self.dispatch.wake()
        except Exception as exc:  # noqa: BLE001 - the dispatcher's sweep moves the chunks anyway
            if not is_outage(exc):
                log.warning("could not wake the farm's dispatcher (%s)", exc)

    def handle_job_failure(self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = "") -> None:
        died, self._horse_death = self._horse_death, None
        if job.id == self._handing_back:
            self._handing_back = None
            self._hand_back_stopped(job, queue)
            return
        if died is not None and died[0] == job.id:
            exc_string = f"{died[1]}; {exc_string}"
            if counts_against_node(job.func_name, None):
                self._count_failure(job, died[1])
        if job.id == self._set_aside_job:
            self._set_aside_job = None
            self._hand_back_stopped(job, queue, f"node {self.name} was set aside")
            return
        super().handle_job_failure(job, queue, started_job_registry=started_job_registry, exc_string=exc_string)

    def handle_work_horse_killed(self, job: Any, retpid: Any, ret_val: Any, rusage: Any) -> None:
        stuck, self._stuck = self._stuck, None
        why = stuck[1] if stuck is not None and stuck[0] == job.id else describe_death(ret_val)
        self._horse_death = (job.id, why)
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)

    # -- in the work horse --------------------------------------------------------------------

    def perform_job(self, job: Any, queue: Any) -> bool:
        job.failure_judge = self._judge_failure
        return bool(super().perform_job(job, queue))

    def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any) -> None:
        """RQ's; then the node's success count, and the chunks that waited on the job (an asset
        import), in their waiting queues now, told to the dispatcher, whose copy takes them in at
        its next round rather than its sweep (``reelfarm.farm.runtime.dispatchmirror``)."""
        dependents: list[str] = []
        if self.dispatch is not None:
            try:
                dependents = [d.decode() if isinstance(d, bytes) else d
                              for d in self.connection.smembers(job.dependents_key)]
            except REDIS_ERRORS:
                dependents = []
        super().handle_job_success(job, queue, started_job_registry)
        if self.health is not None and is_chunk(job.func_name):
            try:
                self.health.succeeded(self.name)
            except Exception:  # the count is advisory; the job's end is recorded
                log.warning("could not record on node %s that job %s succeeded", self.name, job.id, exc_info=True)
        if dependents:
            try:
                self.dispatch.dispatcher.arrived(*dependents)
            except REDIS_ERRORS:
                pass  # the dispatcher's sweep finds them
            self._wake_dispatcher()

    def _judge_failure(self, job: Any, exc: BaseException | None) -> bool:
        """Before the job's failure callback: count a failure that is this node's fault; True when
        it set the node aside (the job then goes back to its queue, its retries unspent)."""
        return exc is not None and counts_against_node(job.func_name, exc) and \
            self._count_failure(job, describe_failure(exc))

    def _count_failure(self, job: Any, failure: str) -> bool:
        """Count a chunk failure against this node; True when it set the node aside."""
        if self.health is None:
            return False
        try:
            standing = self.health.failed(self.name, failure)
        except Exception:  # the count never changes what becomes of the job
            log.warning("could not count job %s's failure against node %s", job.id, self.name, exc_info=True)
            return False
        if standing.set_aside(time.time()):
            self._set_aside_job = job.id
            return True
        return False

    def check_for_suspension(self, burst: bool) -> None:
        wait_until(lambda: super(NodeWorker, self).check_for_suspension(burst), self.redis_outage,
                   doing="checking for suspension", is_down=_redis_down)

    def run_maintenance_tasks(self) -> None:
        try:
            super().run_maintenance_tasks()
        except Exception as exc:
            if not is_outage(exc):
                raise
            (self.redis_outage if _redis_down(exc) else self.database_outage).lost(exc, "running RQ's maintenance")

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if pipeline is not None:
            super().heartbeat(timeout, pipeline)
            return
        self._while_redis_up("sending a heartbeat", lambda: super(NodeWorker, self).heartbeat(timeout))

    def frames_quiet(self) -> float | None:
        """How long the chunk this node runs has drawn no frame, once that is ``quiet_report_sec``
        or more (else None, as for a job that is no chunk): what the node's heartbeat carries."""
        running = self._running
        if self.stall is None or running is None or not is_chunk(running[0].func_name):
            return None
        quiet = self.stall.quiet_sec()
        return quiet if quiet >= self.stall.quiet_report_sec else None

    def maintain_heartbeats(self, job: Any) -> None:
        self._while_redis_up("keeping a job's heartbeat", lambda: super(NodeWorker, self).maintain_heartbeats(job))
        self._stop_if_stuck(job)

    def _stop_if_stuck(self, job: Any) -> None:
        """Each time RQ's horse monitor wakes: stop a chunk that drew no frame for the stall time,
        unless the database does not answer (a chunk waiting out an outage is not stuck)."""
        if self.stall is None or self._stuck is not None or not self.horse_pid or not is_chunk(job.func_name):
            return
        if job.id == self._handing_back or not self.stall.stalled():
            return
        if not self._database_answers():
            self.stall.restart()
            return
        self.stop_stuck_chunk(job, f"no frame drawn for {self.stall.clock.after_sec:g} s")

    def stop_stuck_chunk(self, job: Any, why: str) -> None:
        """Kill the horse of a stuck chunk; RQ retries the chunk as one whose horse died."""
        log.warning("job %s on node %s is stuck (%s): stopping it", job.id, self.name, why)
        self._stuck = (job.id, why)
        self.kill_horse(signal.SIGKILL)

    def set_current_job_working_time(self, current_job_working_time: float, pipeline: Any = None) -> None:
        self.current_job_working_time = current_job_working_time
        self._while_redis_up("recording a job's working time", lambda: super(NodeWorker, self)
                             .set_current_job_working_time(current_job_working_time, pipeline))

    def teardown(self) -> None:
        try:
            super().teardown()
        except REDIS_ERRORS as exc:
            log.warning("worker %s stopped without recording it in Redis (%s)", self.name, exc)

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO", *args: Any,
                         **kwargs: Any) -> None:
        self.scheduler = NodeScheduler(self.queues, connection=self.connection,
                                       logging_level=logging_level if logging_level is not None else self.log.level,
                                       serializer=self.serializer)
        free_dead_scheduler_locks(self.connection, self.queue_names())
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            if burst:
                try:
                    self.scheduler.register_birth()
                    self.scheduler.enqueue_scheduled_jobs()
                finally:
                    self.scheduler.release_locks()
                    self.scheduler.register_death()
            else:
                self.scheduler.start()

    # -- stopping -----------------------------------------------------------------------------

    def setup_work_horse_signals(self) -> None:
        """In the horse: SIGINT and SIGTERM are the node's to act on (see the module docstring)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def stop_scheduler(self) -> None:
        """Stop the node's scheduler process: SIGTERM, and SIGKILL ``SCHEDULER_STOP_SEC`` later.

        RQ's own waits for it without end, inside the node's SIGTERM handler: a scheduler that does
        not stop (one forked while another thread of the node held a lock it then waits for) kept a
        stopping node alive until its orchestrator killed it (Compose: 10 minutes, exit 137). The
        locks of a killed scheduler are freed by the next node's start (``free_dead_scheduler_locks``)
        or expire within a minute."""
        process = getattr(self.scheduler, "_process", None)
        if process is None or not process.pid:
            return
        try:
            os.kill(process.pid, signal.SIGTERM)
        except OSError:
            pass
        process.join(SCHEDULER_STOP_SEC)
        if process.is_alive():
            log.warning("the scheduler of node %s (process %s) did not stop %g s after SIGTERM; killing it",
                        self.name, process.pid, SCHEDULER_STOP_SEC)
            process.kill()
            process.join(SCHEDULER_STOP_SEC)

    def request_stop(self, signum: int, frame: Any) -> None:
        # RQ stops an idle worker by raising StopRequested from this handler, wherever the main
        # thread is; inside a garbage collector's callback or a broad except it is swallowed (seen:
        # in a gc callback) and the node would work on until killed. Marked first, the stop stands:
        # RQ's loop checks it before each wait for a job.
        self._stop_requested = True
        grace = self.stop_grace_sec if self._grace is None else None
        stream = stack_stream() if grace is not None else None
        if grace is not None and stream is not None:  # a stop that overruns its grace period says where it is
            faulthandler.dump_traceback_later(grace + STOP_STACKS_AFTER_SEC, file=stream)
        super().request_stop(signum, frame)  # idle: raises StopRequested
        running = self._running
        if running is None or self.stop_grace_sec is None or self._grace is not None:
            return
        log.info("node %s stops after job %s, or hands it back in %g s", self.name, running[0].id,
                 self.stop_grace_sec)
        self._grace = threading.Timer(self.stop_grace_sec, self._grace_over, args=(running[0].id,))
        self._grace.daemon = True
        self._grace.start()

    def request_force_stop(self, signum: int, frame: Any) -> None:
        running, before = self._running, self._handing_back
        if running is not None and self.horse_pid:
            self._handing_back = running[0].id
        try:
            super().request_force_stop(signum, frame)
        except SystemExit:
            if running is not None and self._handing_back == running[0].id:
                self._handing_back = None
                self._hand_back_stopped(*running)
            raise
        self._handing_back = before  # a repeat of the first signal, ignored

    def _grace_over(self, job_id: str) -> None:
        """The grace period is over: stop the horse; its job goes back to its queue (``handle_job_failure``)."""
        running = self._running
        if running is None or running[0].id != job_id or not self.horse_pid:
            return
        log.warning("job %s still running %g s after node %s was asked to stop; stopping it", job_id,
                    self.stop_grace_sec, self.name)
        self._handing_back = job_id
        self.kill_horse(signal.SIGKILL)

    def _hand_back_stopped(self, job: Any, queue: Any, why: str = "") -> None:
        """Put a job whose horse this node stopped (or whose failure set the node aside) at the front of
        its queue, its retries unspent (it is idempotent); left to the farm's repair round when Redis
        cannot be reached."""
        try:
            with self.connection.pipeline() as pipe:
                self.cleanup_execution(job, pipeline=pipe)
                pipe.execute()
            job.started_at = job.ended_at = None
            queue._enqueue_job(job, at_front=True)  # as RQ's retry: its dependencies were met when it started
        except REDIS_ERRORS as exc:
            log.warning("could not hand job %s back (%s); the farm's repair round will", job.id, exc)
            return
        log.warning("job %s handed back to %s: %s", job.id, queue.name,
                    why or f"node {self.name} stopped before it ended")

    # -- outages ------------------------------------------------------------------------------

    def wait_for_database(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Return once the database answers (True), or when ``stop()`` (False)."""
        if self.database is None:
            return True
        return wait_until(self._ping_database, self.database_outage, doing="waiting to take a job", stop=stop,
                          is_down=is_database_outage, resumed="taking jobs again")

    def _ping_database(self) -> None:
        assert self.database is not None
        with self.database.connect() as conn:
            conn.execute(text("SELECT 1"))

    def _database_answers(self) -> bool:
        """Whether the database can be reached (an error it answers with is an answer)."""
        if self.database is None:
            return True
        try:
            self._ping_database()
        except Exception as exc:  # noqa: BLE001 - any other error is the database answering
            return not is_database_outage(exc)
        return True

    def _while_redis_up(self, doing: str, call: Callable[[], Any]) -> None:
        try:
            call()
        except REDIS_ERRORS as exc:
            self.redis_outage.lost(exc, doing)

    def _recover_from_redis_outage(self) -> None:
        """After an outage: log it, register again if Redis lost this worker, hand back interrupted jobs."""
        if not self.redis_outage.down and not self._interrupted:
            return
        self.connection.ping()
        self.redis_outage.ok("heartbeats and work resume")
        # a heartbeat during the outage may have made the worker's hash again, half: look for the
        # registration itself
        from rq.worker_registration import REDIS_WORKER_KEYS

        if not self.connection.sismember(REDIS_WORKER_KEYS, self.key):
            self._register_again()
        while self._interrupted:
            job_id, queue_name = self._interrupted[0]
            try:
                hand_back(self.connection, job_id, queue_name)
            except REDIS_ERRORS:
                raise
            except Exception:  # a job that cannot be read back is left to RQ's cleanup and the reconciler
                log.exception("could not hand job %s back to its queue", job_id)
            self._interrupted.pop(0)

    def forget_namesake(self) -> None:
        """Remove RQ's registration of a dead node whose name this one took (``forget_worker``)."""
        forget_worker(self.connection, self.key, self.queue_names())

    def _register_again(self) -> None:
        from rq import worker_registration

        with self.connection.pipeline() as pipe:
            pipe.hset(self.key, mapping=self.serialize())
            worker_registration.register(self, pipe)
            pipe.expire(self.key, self.worker_ttl + 60)
            pipe.execute()
        log.warning("worker %s registered again (Redis had lost its record)", self.name)


def _redis_down(exc: BaseException) -> bool:
    return isinstance(exc, REDIS_ERRORS)
