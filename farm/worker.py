"""``reelfarm worker``: an RQ worker for a farm node.

Beside RQ's work loop (a forked work horse per job, retries, scheduled retries through its
scheduler; ``farm.rqnode.NodeWorker`` keeps both alive through Redis and PostgreSQL outages) the
node runs one heartbeat thread that

- writes the node's capabilities and current job to Redis every ``HEARTBEAT_SEC`` (``farm.nodes``);
- every ``MAINTENANCE_SEC``: removes scratch folders left on this machine by killed processes
  (``farm.scratch``); and, on one process of the farm at a time (a Redis lock), runs the farm's
  round of repairs (``farm.maintenance``: hand back the jobs of dead nodes, enqueue again what
  Redis lost, fail renders past their bound) and, at most every 5 minutes across the farm,
  deletes rows past their retention (``farm.retention``).

``recover_orphans`` also runs when the worker starts, before it takes a job: a node replacing one
that was killed picks the killed node's chunks up at once. It marks their started-registry
entries expired and lets RQ's own abandoned-job handling do the rest (the job's ``on_failure``
callback, then a retry if it has any left, else the failure handler fails and refunds the render).

A node never quits on a connection error. It starts by waiting, with backoff, until Redis and
the database answer; afterwards an outage pauses its heartbeats and its maintenance (one warning
when it starts, one line when it ends), and they resume by themselves.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from farm.nodes import Capabilities, NodeRegistry, detect_capabilities
from farm.resilience import Outage, is_outage, wait_until
from shared.config import Settings

log = logging.getLogger("reelfarm.farm")

HEARTBEAT_SEC = 5.0
MAINTENANCE_SEC = 30.0
DEFAULT_QUEUES = ("render", "jobs")


def recover_orphans(redis: Any, queue_names: Sequence[str], registry: NodeRegistry) -> list[str]:
    """Give RQ the started jobs of dead farm nodes to handle as abandoned, now. Returns their ids."""
    from rq.executions import Execution
    from rq.registry import StartedJobRegistry

    recovered: list[str] = []
    for queue_name in queue_names:
        started = StartedJobRegistry(queue_name, connection=redis)
        dead: dict[bytes | str, int] = {}
        for entry in redis.zrange(started.key, 0, -1):
            text = entry.decode() if isinstance(entry, bytes) else entry
            job_id, _, execution_id = text.rpartition(":")
            execution = Execution(id=execution_id, job_id=job_id, connection=redis)
            try:
                execution.refresh()
            except ValueError:
                continue  # its record expired: RQ's own cleanup will see the entry expire too
            if execution.worker_name and registry.is_dead(execution.worker_name):
                log.warning("job %s was running on %s, which is gone; handing it back", job_id, execution.worker_name)
                dead[entry] = 0
                recovered.append(job_id)
        if dead:
            redis.zadd(started.key, dead, xx=True)
            started.cleanup()
    return recovered


class NodeHeartbeat(threading.Thread):
    """The node's heartbeat and maintenance thread (see the module docstring)."""

    def __init__(self, worker: Any, registry: NodeRegistry, caps: Capabilities, queues: Sequence[str],
                 queue_names: Sequence[str], maintenance_lock: str) -> None:
        super().__init__(name="reelfarm-node-heartbeat", daemon=True)
        self.worker = worker
        self.registry = registry
        self.caps = caps
        self.queues = list(queues)
        self.queue_names = list(queue_names)
        self.maintenance_lock = maintenance_lock
        self.outage = Outage("Redis (node heartbeat)")
        self.maintenance_outage = Outage("Redis or the database (node maintenance)")
        self._stop_event = threading.Event()
        self._since_maintenance = 0.0

    def beat(self) -> None:
        """Write the node's record; the first beat after a Redis outage also brings the maintenance
        round forward, so work Redis lost is enqueued again at once rather than a round later."""
        was_down = self.outage.down
        try:
            state = self.worker.get_state()
            state = getattr(state, "value", state)
            job = self.worker.get_current_job_id()
            self.registry.beat(self.worker.name, self.caps, queues=self.queues, state=str(state),
                               current_job=job.decode() if isinstance(job, bytes) else job)
        except Exception as exc:
            if not is_outage(exc):
                log.exception("node heartbeat failed")
            self.outage.lost(exc, "sending the node's heartbeat")
            return
        self.outage.ok("node heartbeats resume")
        if was_down:
            self._since_maintenance = MAINTENANCE_SEC

    def maintain(self) -> None:
        """Remove this machine's stale scratch folders; then, if no other process is doing it right
        now, the farm's round of repairs and, every few minutes across the farm, the retention purge."""
        from farm.maintenance import farm_round
        from farm.retention import PURGE_EVERY_SEC, purge
        from farm.scratch import remove_stale

        try:
            remove_stale()
        except Exception:
            log.exception("removing stale scratch folders failed")
        try:
            farm_round(self.registry.redis, self.registry.namespace, self.worker.name, queues=self.queues)
            redis = self.registry.redis
            if redis.set(self.maintenance_lock + ":retention", self.worker.name, nx=True, ex=int(PURGE_EVERY_SEC)):
                purge()
        except Exception as exc:
            if not is_outage(exc):
                log.exception("node maintenance failed")
                return
            self.maintenance_outage.lost(exc, "maintaining the farm")
            return
        self.maintenance_outage.ok("node maintenance resumes")

    def deliver_webhooks(self) -> None:
        """Turn outbox events into deliveries and send due retries, on one node per beat."""
        if self.outage.down:
            return
        try:
            redis = self.registry.redis
            if not redis.set(self.maintenance_lock + ":webhooks", self.worker.name, nx=True, ex=int(HEARTBEAT_SEC)):
                return
            from farm.queue import RQQueue
            from farm.webhooks import run_webhooks

            run_webhooks(RQQueue(redis, namespace=self.registry.namespace))
        except Exception as exc:
            if not is_outage(exc):
                log.exception("webhook dispatch failed")

    def run(self) -> None:
        while not self._stop_event.wait(HEARTBEAT_SEC):
            self._since_maintenance += HEARTBEAT_SEC
            self.beat()
            self.deliver_webhooks()
            if self._since_maintenance >= MAINTENANCE_SEC:
                self._since_maintenance = 0.0
                self.maintain()

    def stop(self) -> None:
        self._stop_event.set()


def worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:6]}"


def run_worker(settings: Settings, queues: Sequence[str] = DEFAULT_QUEUES, *, burst: bool = False,
               name: str | None = None, namespace: str = "", metrics_port: int = 0) -> bool:
    """Work the given queues until stopped (or, with ``burst``, until they are empty).

    Returns whether any job was processed. Requires ``settings.redis_url``. With ``metrics_port``
    the node serves Prometheus metrics there (``farm.metrics``).
    """
    from rq import Queue

    from farm.progress import RedisProgress
    from farm.metrics import MeteredWorker, serve_metrics
    from farm.scratch import remove_stale
    from farm.tasks import configure
    from farm.wiring import make_redis, make_task_context
    from shared.db import make_engine, migrate

    if not settings.redis_url:
        raise ValueError("run_worker needs REELFARM_REDIS_URL")
    redis = make_redis(settings.redis_url)
    engine = make_engine(settings.database_url)
    wait_until(redis.ping, Outage("Redis"), doing="starting the node")
    wait_until(lambda: migrate(engine), Outage("the database"), doing="starting the node")
    remove_stale()
    configure(make_task_context(settings, engine=engine,
                                progress=RedisProgress(redis, prefix=f"reelfarm:{namespace}progress:")))
    queue_names = [f"{namespace}{q}" for q in queues]
    worker = MeteredWorker([Queue(q, connection=redis) for q in queue_names], connection=redis,
                           name=name or worker_name(), database=engine)
    if metrics_port:
        serve_metrics(metrics_port)
    registry = NodeRegistry(redis, namespace)
    caps = detect_capabilities()
    heartbeat = NodeHeartbeat(worker, registry, caps, queues, queue_names,
                              maintenance_lock=f"reelfarm:{namespace}maintenance-lock")
    log.info("node %s: %d cores, GPU %s, NVENC %s; queues %s", worker.name, caps.cores, caps.gpu or "none",
             "yes" if caps.nvenc else "no", ", ".join(queue_names))
    heartbeat.beat()
    recover_orphans(redis, queue_names, registry)
    heartbeat.start()
    try:
        return bool(worker.work(burst=burst, with_scheduler=True, logging_level=settings.log_level))
    finally:
        heartbeat.stop()
        try:
            registry.mark_stopped(worker.name)
        except Exception:  # noqa: BLE001
            log.warning("could not mark node %s stopped", worker.name)
        engine.dispose()
