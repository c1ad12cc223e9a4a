"""Build the farm's parts from settings, the same way in the API and in the worker.

``REELFARM_REDIS_URL`` set: ``RQQueue`` and ``RedisProgress`` (a farm). Unset: the embedded
``EmbeddedQueue`` on the service's database and ``DatabaseProgress`` (one machine, nothing to
install). The API builds a ``Farm`` with ``make_farm`` and calls ``farm.start()`` in each serving
process (after gunicorn forks its workers): in embedded mode that process's executor runs queued
tasks, and with RQ it repairs the farm on a timer (``reelfarm.farm.runtime.maintenance``); ``reelfarm worker``
builds its task context with ``make_task_context``.

Importing this module hands ``reelfarm.farm.runtime.context`` its builder: a process that runs a task without
having been configured builds its context from the environment's settings.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.runtime.context import TaskContext, configure, set_builder, studio_of
from reelfarm.farm.runtime.dispatch import Shares
from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.maintenance import HANDBACK_SEC, WEBHOOK_SEC, embedded_maintenance, rq_maintenance
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.resilience import redis_client
from reelfarm.farm.services.allowance import ComputeAllowance
from reelfarm.farm.services.collaborators import Collaborators, make_collaborators
from reelfarm.farm.services.estimates import EstimateService
from reelfarm.farm.services.jobs import JobService
from reelfarm.farm.services.progress import DatabaseProgress, MemoryProgress, ProgressStore, RedisProgress
from reelfarm.farm.services.queues import JobQueue
from reelfarm.farm.services.renders import RenderService
from reelfarm.shared.clock import Clock, SystemClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import WORK, process_engine
from reelfarm.shared.storage import Storage, make_storage

log = logging.getLogger("reelfarm.farm")



def make_redis(url: str, serving: bool = False) -> Any:
    """A Redis client whose waits are bounded; ``serving``: for a process that answers requests,
    which skips Redis for a few seconds after it failed (``reelfarm.farm.runtime.resilience.redis_client``)."""
    return redis_client(url, fail_fast=serving)


def make_queue(settings: Settings, engine: Engine, clock: Clock | None = None, serving: bool = False) -> JobQueue:
    """``RQQueue`` when ``settings.redis_url`` is set, else an (unstarted) ``EmbeddedQueue``; each
    with this process's share of the maintenance round as its hook (``reelfarm.farm.runtime.maintenance``)."""
    if settings.redis_url:
        queue = RQQueue(make_redis(settings.redis_url, serving), maintenance_sec=HANDBACK_SEC,
                        gpu_wait_sec=settings.gpu_queue_wait_sec, dispatch=settings.dispatch, shares=Shares(engine),
                        spare_caps=settings.caps == "spare")
        queue.maintenance = rq_maintenance(queue, owner=f"api:{socket.gethostname()}.{os.getpid()}").run_once
        return queue
    embedded = EmbeddedQueue(engine, clock=clock, maintenance_sec=WEBHOOK_SEC, dispatch=settings.dispatch,
                             spare_caps=settings.caps == "spare", task_priority=settings.task_priority)
    embedded.maintenance = embedded_maintenance(embedded)
    return embedded


def make_progress(settings: Settings, engine: Engine | None = None, serving: bool = False) -> ProgressStore:
    """``RedisProgress`` with Redis; else ``DatabaseProgress`` on ``engine`` (visible to every
    process), or ``MemoryProgress`` when no engine is given (one process only)."""
    if settings.redis_url:
        return RedisProgress(make_redis(settings.redis_url, serving))
    if engine is not None:
        return DatabaseProgress(engine)
    return MemoryProgress()


def make_task_context(settings: Settings, engine: Engine | None = None, storage: Storage | None = None,
                      clock: Clock | None = None, progress: ProgressStore | None = None,
                      kind: str = WORK) -> TaskContext:
    """What tasks need, from settings; parts already built may be passed in to be shared. Without
    an engine, one is made for a process of ``kind`` (``reelfarm.shared.db.pool_bound``): by default
    a process that runs tasks one at a time."""
    clock = clock or SystemClock()
    engine = engine or process_engine(settings, kind)
    return TaskContext(engine=engine, storage=storage or make_storage(settings, clock), clock=clock,
                       progress=progress or make_progress(settings, engine), settings=settings,
                       build_studio=lambda: make_collaborators(settings))


set_builder(lambda: make_task_context(Settings.from_env()))


@dataclass
class Farm:
    """The farm as the API sees it."""

    queue: JobQueue
    progress: ProgressStore
    renders: RenderService
    jobs: JobService
    context: TaskContext

    def start(self) -> None:
        """Start this process's share of the farm (``JobQueue.start``)."""
        self.queue.start()

    def stop(self, timeout: float | None = None) -> None:
        self.queue.stop(timeout)


def make_farm(settings: Settings, engine: Engine, storage: Storage, clock: Clock,
              queue: JobQueue | None = None, progress: ProgressStore | None = None,
              studio: Collaborators | None = None) -> Farm:
    """Queue, progress, services and the task context (made this process's), sharing one engine.

    ``studio`` (the studio's collaborators) is built from settings on first use when not given.
    """
    queue = queue or make_queue(settings, engine, clock, serving=True)
    progress = progress or make_progress(settings, engine, serving=True)
    ctx = make_task_context(settings, engine, storage, clock, progress)
    ctx.studio = studio
    configure(ctx)
    return Farm(queue=queue, progress=progress, context=ctx,
                renders=RenderService(engine, queue, storage, clock, progress, settings,
                                      allowance=ComputeAllowance(engine, clock, EstimateService(engine, storage))),
                jobs=JobService(engine, queue, storage, clock, studio=lambda: studio_of(ctx)))
