"""RQ's scheduler and the Redis repairs a node makes: the scheduler that waits out Redis outages,
the scheduler locks a dead node left, the registration of a dead node whose name a new one took, and
a job whose end Redis could not record.

``reelfarm.farm.runtime.rqnode``'s ``NodeWorker`` starts ``NodeScheduler`` and calls the others;
its docstring tells the whole story of outages.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import UTC, datetime
from typing import Any

from rq import Queue
from rq.scheduler import SCHEDULER_KEY_TEMPLATE, RQScheduler
from rq.utils import utcparse

from reelfarm.farm.runtime.nodes import pid_exists
from reelfarm.farm.runtime.resilience import REDIS, REDIS_ERRORS, Backoff, Outage

log = logging.getLogger("reelfarm.farm")

SCHEDULER_FIELDS = ("name", "hostname", "pid", "last_heartbeat")
SCHEDULER_STALE_SEC = 15.0  # RQ's scheduler beats every second; its lock and record live 61 s


def hand_back(redis: Any, job_id: str, queue_name: str) -> bool:
    """Put a job that was running when Redis went away back on its queue, if Redis still calls it
    started (it is idempotent, so running it again is safe). Returns whether it was put back."""
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus
    from rq.registry import StartedJobRegistry

    try:
        job = Job.fetch(job_id, connection=redis)
    except NoSuchJobError:
        return False  # Redis came back empty: farm.runtime.reconcile re-creates it from the database
    if job.get_status() != JobStatus.STARTED:
        return False  # its end was recorded after all
    started = StartedJobRegistry(queue_name, connection=redis)
    for entry in redis.zrange(started.key, 0, -1):
        text_ = entry.decode() if isinstance(entry, bytes) else entry
        if text_.rpartition(":")[0] == job_id:
            redis.zrem(started.key, entry)
    Queue(queue_name, connection=redis).enqueue_job(job)
    log.warning("job %s was running when Redis went away; handed back to its queue", job_id)
    return True


def forget_worker(redis: Any, key: str, queue_names: list[str]) -> None:
    """Remove RQ's registration of a dead worker (its key ``rq:worker:<name>``, and its entries in RQ's
    sets of workers, for ``queue_names`` and the queues its record names), whose name a new node took
    (``reelfarm.farm.runtime.nodes.NodeRegistry.claim``): RQ refuses to register a name while its worker
    key lives ("There exists an active worker named ..."), and a killed worker's key lives ``worker_ttl``
    + 60 s."""
    from rq.worker_registration import REDIS_WORKER_KEYS, WORKERS_BY_QUEUE_KEY

    before = redis.hget(key, "queues")
    listed = (before.decode() if isinstance(before, bytes) else before or "").split(",")
    with redis.pipeline() as pipe:
        pipe.srem(REDIS_WORKER_KEYS, key)
        for name in sorted({*queue_names, *(q for q in listed if q)}):
            pipe.srem(WORKERS_BY_QUEUE_KEY % name, key)
        pipe.delete(key)
        pipe.execute()


def free_dead_scheduler_locks(redis: Any, queue_names: list[str]) -> list[str]:
    """Release the scheduler locks whose holder is gone; never raises. Returns the queues whose lock
    was freed.

    A killed node's scheduler keeps its queues' locks until they expire (a minute), and RQ tries
    to take them again only in its maintenance, so a node started in its place would leave due
    retries waiting for minutes. A holder is gone when its process on this machine is, or when its
    record (``rq:scheduler:<name>``) says it last beat over ``SCHEDULER_STALE_SEC`` ago or is a
    fragment without its name, host and pid: what a heartbeat of RQ's leaves when it writes into a
    record that had expired (``RQScheduler.fetch`` fails on it with ``KeyError: 'name'``). A lock
    whose record expired altogether is left to expire with it.
    """
    freed: dict[str, str] = {}
    for name in queue_names:
        key = RQScheduler.get_locking_key(name)
        try:
            why = _gone_holder(redis, key)
            if why and redis.delete(key):
                freed[name] = why
        except REDIS_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a holder's record of a shape we do not know: leave it
            log.warning("could not judge the scheduler lock of %s (%s: %s); leaving it to expire", name,
                        type(exc).__name__, exc)
    if freed:
        log.warning("freed the scheduler locks of %s", "; ".join(f"{q} ({why})" for q, why in freed.items()))
    return list(freed)


def _gone_holder(redis: Any, lock: str) -> str:
    """Why the holder of scheduler lock ``lock`` is gone; "" when it is not (or there is none)."""
    holder = redis.get(lock)
    if holder is None:
        return ""
    holder = holder.decode() if isinstance(holder, bytes) else holder
    values = redis.hmget(SCHEDULER_KEY_TEMPLATE % holder, SCHEDULER_FIELDS)
    record = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in zip(SCHEDULER_FIELDS, values) if v}
    if not record:
        return ""  # its record expired: so does the lock, within RQ's lock TTL
    beat = _beat_age(record.get("last_heartbeat"))
    if not all(record.get(k) for k in ("name", "hostname", "pid")):
        if beat is None or beat > SCHEDULER_STALE_SEC:
            return f"held by scheduler {holder}, of which only a fragment of a record is left"
        return ""  # a fragment that still beats: its scheduler lives
    if record["hostname"] == socket.gethostname() and record["pid"].isdigit() and not pid_exists(int(record["pid"])):
        return f"held by scheduler {holder}, whose process {record['pid']} is gone"
    if beat is not None and beat > SCHEDULER_STALE_SEC:
        return f"held by scheduler {holder} on {record['hostname']}, silent for {beat:.0f} s"
    return ""


def _beat_age(stamp: str | None) -> float | None:
    """Seconds since an RQ heartbeat stamp; None when there is none, or it cannot be read."""
    if not stamp:
        return None
    try:
        return (datetime.now(UTC) - utcparse(stamp).replace(tzinfo=UTC)).total_seconds()
    except ValueError:
        return None


class NodeScheduler(RQScheduler):
    """RQ's scheduler whose loop waits out Redis outages instead of ending its process.

    After an outage it registers again, and takes its locks again, before its next heartbeat: RQ's
    heartbeat writes one field into its record, and into a record that expired meanwhile (an outage
    over a minute, or Redis restarted empty) that leaves a fragment no other scheduler can read
    (``free_dead_scheduler_locks``); and it would warn of each lock it finds expired.
    It stops, releasing its locks, once the node that forked it is gone (a node killed with SIGKILL
    leaves its scheduler running otherwise, its locks held for as long as it runs).
    """

    def work(self) -> None:
        self._install_signal_handlers()
        outage, backoff, born = Outage(REDIS), Backoff(), False
        parent = os.getppid()
        while not self._stop_requested and os.getppid() == parent:
            began = time.monotonic()
            try:
                if not born:
                    self.register_birth()
                    if outage.down:  # its locks may be gone with the outage: take them as at a start
                        self.acquire_locks()
                    born = True
                if self.should_reacquire_locks:
                    self.acquire_locks()
                self.heartbeat()
                self.enqueue_scheduled_jobs()
            except REDIS_ERRORS as exc:
                outage.lost(exc, "moving due retries to their queues")
                born = False
                time.sleep(backoff.next())
                continue
            outage.ok("the scheduler resumes", began=began)
            backoff.reset()
            time.sleep(self.interval)
        if os.getppid() != parent:
            log.warning("the node of scheduler %s is gone; the scheduler stops and releases its locks", self.name)
        try:
            self.stop()
        except REDIS_ERRORS:
            pass
