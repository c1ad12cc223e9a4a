"""RQ's scheduler and the Redis repairs a node makes: the scheduler that waits out Redis outages,
the scheduler locks a dead node left, and a job whose end Redis could not record.

``reelfarm.farm.runtime.rqnode``'s ``NodeWorker`` starts ``NodeScheduler`` and calls the others;
its docstring tells the whole story of outages.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from rq import Queue
from rq.scheduler import RQScheduler

from reelfarm.farm.runtime.nodes import pid_exists
from reelfarm.farm.runtime.resilience import REDIS_ERRORS, Backoff, Outage

log = logging.getLogger("reelfarm.farm")


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


def free_dead_scheduler_locks(redis: Any, queue_names: list[str]) -> list[str]:
    """Release the scheduler locks held by schedulers of this machine whose process is gone.

    A killed node's scheduler keeps its queues' locks until they expire (a minute), and RQ tries
    to take them again only in its maintenance, so a node started in its place would leave due
    retries waiting for minutes. Returns the queues whose lock was freed.
    """
    from rq.exceptions import SchedulerNotFound

    freed = []
    for name in queue_names:
        key = RQScheduler.get_locking_key(name)
        holder = redis.get(key)
        if holder is None:
            continue
        holder = holder.decode() if isinstance(holder, bytes) else holder
        try:
            scheduler = RQScheduler.fetch(holder, redis)
        except SchedulerNotFound:
            continue
        if scheduler.hostname == socket.gethostname() and scheduler.pid and not pid_exists(scheduler.pid):
            redis.delete(key)
            freed.append(name)
    if freed:
        log.warning("freed the scheduler locks of %s, held by a scheduler that is gone", ", ".join(freed))
    return freed


class NodeScheduler(RQScheduler):
    """RQ's scheduler whose loop waits out Redis outages instead of ending its process."""

    def work(self) -> None:
        self._install_signal_handlers()
        outage, backoff, born = Outage("Redis (scheduler)"), Backoff(), False
        while not self._stop_requested:
            try:
                if not born:
                    self.register_birth()
                    born = True
                if self.should_reacquire_locks:
                    self.acquire_locks()
                self.heartbeat()
                self.enqueue_scheduled_jobs()
            except REDIS_ERRORS as exc:
                outage.lost(exc, "moving due retries to their queues")
                time.sleep(backoff.next())
                continue
            outage.ok("the scheduler resumes")
            backoff.reset()
            time.sleep(self.interval)
        try:
            self.stop()
        except REDIS_ERRORS:
            pass
