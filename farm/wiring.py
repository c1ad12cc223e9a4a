"""Build the farm's parts from settings, the same way in the API and in the worker.

``REELFARM_REDIS_URL`` set: ``RQQueue`` and ``RedisProgress`` (a farm). Unset: the embedded
``EmbeddedQueue`` on the service's database and ``DatabaseProgress`` (one machine, nothing to
install). The API builds a ``Farm`` with ``make_farm`` and, in embedded mode, calls
``farm.start()`` in each serving process (after gunicorn forks its workers) so that process's
executor runs queued tasks; ``reelfarm worker`` does the same for RQ with ``make_task_context``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from farm.embedded import EmbeddedQueue
from farm.jobs import JobService
from farm.nodes import NodeRegistry
from farm.progress import DatabaseProgress, MemoryProgress, ProgressStore, RedisProgress
from farm.queue import JobQueue, RQQueue
from farm.renders import RenderService
from farm.tasks import TaskContext, configure, studio_of
from shared.clock import Clock, SystemClock
from shared.config import Settings
from shared.db import make_engine
from shared.storage import Storage, make_storage

log = logging.getLogger("reelfarm.farm")

REDIS_CONNECT_TIMEOUT_SEC = 2.0
REDIS_TIMEOUT_SEC = 10.0
# How often outbox events are turned into webhook deliveries (and due retries sent): the first
# retry of a failed delivery is due after about 5 s.
WEBHOOK_DISPATCH_SEC = 5.0


def make_redis(url: str) -> Any:
    """A Redis client that fails fast when the server is down (the API answers 503 rather than hang)."""
    from redis import Redis

    return Redis.from_url(url, socket_connect_timeout=REDIS_CONNECT_TIMEOUT_SEC,
                          socket_timeout=REDIS_TIMEOUT_SEC, health_check_interval=30)


def make_queue(settings: Settings, engine: Engine, clock: Clock | None = None) -> JobQueue:
    """``RQQueue`` when ``settings.redis_url`` is set, else an (unstarted) ``EmbeddedQueue``."""
    if settings.redis_url:
        return RQQueue(make_redis(settings.redis_url))
    queue = EmbeddedQueue(engine, clock=clock, maintenance_sec=WEBHOOK_DISPATCH_SEC)
    queue.maintenance = lambda: _maintain(queue)
    return queue


def make_progress(settings: Settings, engine: Engine | None = None) -> ProgressStore:
    """``RedisProgress`` with Redis; else ``DatabaseProgress`` on ``engine`` (visible to every
    process), or ``MemoryProgress`` when no engine is given (one process only)."""
    if settings.redis_url:
        return RedisProgress(make_redis(settings.redis_url))
    if engine is not None:
        return DatabaseProgress(engine)
    return MemoryProgress()


def make_task_context(settings: Settings, engine: Engine | None = None, storage: Storage | None = None,
                      clock: Clock | None = None, progress: ProgressStore | None = None) -> TaskContext:
    """What tasks need, from settings; parts already built may be passed in to be shared."""
    clock = clock or SystemClock()
    engine = engine or make_engine(settings.database_url)
    return TaskContext(engine=engine, storage=storage or make_storage(settings, clock), clock=clock,
                       progress=progress or make_progress(settings, engine), settings=settings)


@dataclass
class Farm:
    """The farm as the API sees it."""

    queue: JobQueue
    progress: ProgressStore
    renders: RenderService
    jobs: JobService
    context: TaskContext

    def start(self) -> None:
        """Start this process's embedded executor (a no-op with RQ, whose workers run elsewhere)."""
        if isinstance(self.queue, EmbeddedQueue):
            self.queue.start()

    def stop(self, timeout: float | None = None) -> None:
        if isinstance(self.queue, EmbeddedQueue):
            self.queue.stop(timeout)


def make_farm(settings: Settings, engine: Engine, storage: Storage, clock: Clock,
              queue: JobQueue | None = None, progress: ProgressStore | None = None, studio: Any = None) -> Farm:
    """Queue, progress, services and the task context (made this process's), sharing one engine.

    ``studio`` (a ``farm.studio.Studio``) is built from settings on first use when not given.
    """
    queue = queue or make_queue(settings, engine, clock)
    progress = progress or make_progress(settings, engine)
    context = TaskContext(engine=engine, storage=storage, clock=clock, progress=progress, settings=settings,
                          studio=studio)
    configure(context)
    return Farm(queue=queue, progress=progress, context=context,
                renders=RenderService(engine, queue, storage, clock, progress, settings, slots=make_slots(queue)),
                jobs=JobService(engine, queue, storage, clock, studio=lambda: studio_of(context)))


def make_slots(queue: JobQueue) -> Callable[[], int]:
    """How many chunks can run at once: the embedded executor's limit, or the live render nodes."""
    if isinstance(queue, EmbeddedQueue):
        return lambda: queue.max_running
    if isinstance(queue, RQQueue):
        def live_nodes() -> int:
            try:
                nodes = NodeRegistry(queue.redis, queue.namespace).nodes()
            except Exception:  # a registry read must never stop a render request
                return 1
            return max(1, sum(1 for n in nodes if n.get("alive") and "render" in str(n.get("queues", "render"))))
        return live_nodes
    return lambda: 1


def _maintain(queue: JobQueue) -> None:
    """The embedded executor's periodic round: reap stalled renders, dispatch webhook events, and
    every few minutes delete rows past their retention (``farm.retention``)."""
    from farm.reaper import reap
    from farm.retention import purge_if_due
    from farm.webhooks import run_webhooks

    reap()
    run_webhooks(queue)
    try:
        purge_if_due()
    except Exception:  # housekeeping: it is tried again next time and must never stop the round
        log.exception("retention purge failed")
