"""The farm's round of repairs, which needs no live render node to run.

``farm_round`` does, in order: hand the started jobs of dead nodes back to RQ
(``farm.worker.recover_orphans``), enqueue again the work Redis lost (``farm.reconcile``), and
fail and refund renders and jobs past their bound (``farm.reaper``). It takes a Redis lock for
``ROUND_SEC`` first, so of every process that runs it (each ``reelfarm worker``'s heartbeat
thread, ``MaintenanceLoop`` in each API process, ``reelfarm farm reap``) one does the work per
period; the others return at once.

``MaintenanceLoop`` runs the round every ``ROUND_SEC`` in a daemon thread. An outage of Redis or
PostgreSQL pauses it (one warning, one line when it is back, no traceback per round); any other
error is logged with its traceback and the next round runs as usual.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from farm.resilience import Outage, is_outage

log = logging.getLogger("reelfarm.farm")

ROUND_SEC = 30.0
QUEUES = ("render", "jobs")


@dataclass
class RoundResult:
    recovered: list[str] = field(default_factory=list)
    enqueued: list[str] = field(default_factory=list)
    reaped_renders: list[str] = field(default_factory=list)
    reaped_jobs: list[str] = field(default_factory=list)


def lock_key(namespace: str) -> str:
    return f"reelfarm:{namespace}maintenance-lock"


def farm_round(redis: Any, namespace: str = "", owner: str = "", *, queues: Sequence[str] = QUEUES,
               force: bool = False) -> RoundResult | None:
    """One round of repairs, or None when another process holds the round's lock (``force`` skips it).

    Uses the task context (``farm.tasks.current()``) for the database and storage.
    """
    from farm.nodes import NodeRegistry
    from farm.queue import RQQueue
    from farm.reaper import reap
    from farm.reconcile import reconcile
    from farm.worker import recover_orphans

    if not force and not redis.set(lock_key(namespace), owner or "maintenance", nx=True, ex=int(ROUND_SEC)):
        return None
    result = RoundResult()
    with _step("recovering orphaned jobs"):
        result.recovered = recover_orphans(redis, [f"{namespace}{q}" for q in queues], NodeRegistry(redis, namespace))
    with _step("reconciling the queue with the database"):
        result.enqueued = reconcile(RQQueue(redis, namespace=namespace)).enqueued
    with _step("reaping stalled renders and jobs"):
        reaped = reap()
        result.reaped_renders, result.reaped_jobs = reaped.renders, reaped.jobs
    return result


@contextlib.contextmanager
def _step(doing: str) -> Iterator[None]:
    """A failed step must not stop the others; an outage stops the round (the caller waits)."""
    try:
        yield
    except Exception as exc:
        if is_outage(exc):
            raise
        log.exception("farm maintenance failed while %s", doing)


class MaintenanceLoop(threading.Thread):
    """``farm_round`` every ``every`` seconds until ``stop()``; outages pause it quietly."""

    def __init__(self, redis: Any, namespace: str = "", owner: str = "", every: float = ROUND_SEC) -> None:
        super().__init__(name="reelfarm-maintenance", daemon=True)
        self.redis, self.namespace, self.owner, self.every = redis, namespace, owner, every
        self.outage = Outage("Redis or the database (farm maintenance)")
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            self.run_once()

    def run_once(self) -> RoundResult | None:
        try:
            result = farm_round(self.redis, self.namespace, self.owner)
        except Exception as exc:
            if not is_outage(exc):
                log.exception("farm maintenance failed")
                return None
            self.outage.lost(exc, "repairing the farm")
            return None
        self.outage.ok("farm maintenance resumes")
        return result

    def stop(self) -> None:
        self._stop_event.set()


def start_in_api(queue: Any) -> MaintenanceLoop | None:
    """Start the round in an API process when it serves a farm (``queue`` is an ``RQQueue``), so
    stalled and lost work is repaired even while no render node is alive. None otherwise."""
    from farm.queue import RQQueue

    if not isinstance(queue, RQQueue):
        return None
    loop = MaintenanceLoop(queue.redis, queue.namespace, owner=f"api:{socket.gethostname()}.{os.getpid()}")
    loop.start()
    return loop
