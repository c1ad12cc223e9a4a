"""``reelfarm worker``: an RQ worker for a farm node.

Beside RQ's work loop (a forked work horse per job, retries, scheduled retries through its
scheduler; ``reelfarm.farm.runtime.rqnode.NodeWorker`` keeps both alive through Redis and PostgreSQL outages) the
node runs one heartbeat thread that

- writes the node's capabilities and current job to Redis every ``HEARTBEAT_SEC`` (``reelfarm.farm.runtime.nodes``);
- every ``TIDY_SEC``: removes scratch folders left on this machine by killed processes
  (``reelfarm.farm.runtime.scratch``);
- every beat: runs the farm's maintenance round (``reelfarm.farm.runtime.maintenance.farm_round``) under the farm's
  Redis locks, so that each chore runs on one process of the farm per period: the repairs (hand
  back the jobs of dead nodes, enqueue again what Redis lost, fail renders past their bound)
  every 30 s, webhook dispatch and chunk rerouting (``reelfarm.farm.runtime.routing``) every 5 s, and the
  retention purge every 5 minutes.

Names: a node is ``--name`` or ``<host>-<n>``, the lowest slot free on its host, so a node started
again (a restart, a crash, a redeploy) comes back as itself and an autoscaled farm's registry stays
as large as the farm (``reelfarm.farm.runtime.nodes.NodeRegistry.claim``). A name is free once no
node of it is alive: a node started under the name of a dead one (killed: its process gone, or
silent for ``ALIVE_SEC``) takes it over at once, clearing what RQ kept of the dead one's registration
and handing back the jobs it was running or had taken (``take_over``); under the name of a live one
it refuses to start.

Rasterizer and queues: the node resolves ``--raster`` (``REELFARM_RASTER``: auto, cpu, gl; auto is GL
on a node with an NVIDIA GPU, never software GL) once, and when that is GL it makes a GL context
in a child process first (``reelfarm.farm.runtime.nodes.probe_gl``; EGL state must not reach the forked work
horses). If none can be made it logs why and draws on the CPU. Its chunks draw with that choice
(``TaskContext.raster``), and its queues follow from it (``reelfarm.farm.runtime.routing.node_queues``): a GL node
works ``render-gpu`` before ``render``; a CPU node never works ``render-gpu``. Each heartbeat
carries the choice and, through nvidia-ml-py, the GPU's memory, utilization and NVENC capacity.

``recover_orphans`` (``reelfarm.farm.runtime.maintenance``) also runs when the worker starts, before it takes a job: a node replacing one
that was killed picks the killed node's chunks up at once. It marks their started-registry
entries expired and lets RQ's own abandoned-job handling do the rest (the job's ``on_failure``
callback, then a retry if it has any left, else the failure handler fails and refunds the render).

Stopping: on SIGTERM the node takes no new job and finishes the one it runs; one still running
``REELFARM_WORKER_GRACE_SEC`` later (default ``STOP_GRACE_SEC``, under the 10 minutes Compose and
Kubernetes give a node before they kill it) is stopped and handed back to its queue for another
node (``reelfarm.farm.runtime.rqnode``). SIGUSR1 writes the stack of every thread of the process it
is sent to (the node, or its work horse) to its log, for a node or a chunk that seems stuck.

Bad nodes and stuck chunks (``reelfarm.farm.runtime.nodehealth``): a node whose chunks fail
``REELFARM_NODE_SETASIDE_AFTER`` (3) times in a row through its own fault is set aside, taking no
job for ``REELFARM_NODE_COOLDOWN_SEC`` (600 s) or until ``reelfarm node clear NAME``; a chunk that
draws no frame for ``REELFARM_CHUNK_STALL_SEC`` (120 s) is stopped and retried.

Connections: the node's main process keeps 2 PostgreSQL connections and opens 3 at most, and its
work horse, one at a time, 1 and 2 (``reelfarm.shared.db.pool_bound``; named ``reelfarm-node`` and
``reelfarm-work`` in ``pg_stat_activity``).

A node never quits on a connection error. It starts by waiting, with backoff, until Redis and
the database answer; afterwards an outage pauses its heartbeats and its maintenance (one warning
when it starts, one line when it ends), and they resume by themselves.
"""

from __future__ import annotations

import faulthandler
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.runtime.context import configure
from reelfarm.farm.runtime.dispatch import Shares
from reelfarm.farm.runtime.maintenance import (
    QUEUES,
    FarmLocks,
    Maintenance,
    lock_key,
    recover_orphans,
    recover_taken,
    rq_repair,
)
from reelfarm.farm.runtime.nodehealth import FrameCounter, NodeHealth, StallWatch
from reelfarm.farm.runtime.nodes import (
    Capabilities,
    NodeRegistry,
    detect_capabilities,
    probe_gl,
    sample_gpu,
    taken_key,
)
from reelfarm.farm.runtime.nodespeed import SpeedCheck
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.renderlogs import RenderLogHandler
from reelfarm.farm.runtime.resilience import DATABASE, REDIS, Outage, is_outage, wait_until
from reelfarm.farm.runtime.routing import DEFAULT_GPU_WAIT_SEC, node_queues
from reelfarm.farm.runtime.scratch import remove_stale
from reelfarm.farm.runtime.wiring import make_redis, make_task_context
from reelfarm.farm.services.nodehealth import SetAsidePolicy, StallClock
from reelfarm.farm.services.pools import node_queues_with_pools, node_tags, parse_node_tags, pool_name
from reelfarm.farm.services.progress import RedisProgress
from reelfarm.farm.services.queues import CHUNK_QUEUES
from reelfarm.shared.config import Settings
from reelfarm.shared.db import NODE, migrate, process_engine

log = logging.getLogger("reelfarm.farm")

HEARTBEAT_SEC = 5.0
TIDY_SEC = 30.0  # this machine's stale scratch folders
DEFAULT_QUEUES = ("render", "jobs")
STOP_GRACE_SEC = 540.0  # from SIGTERM until a running job is handed back


class NodeHeartbeat(threading.Thread):
    """The node's heartbeat and maintenance thread (see the module docstring)."""

    def __init__(self, worker: Any, registry: NodeRegistry, caps: Capabilities, queues: Sequence[str],
                 queue_names: Sequence[str], maintenance_lock: str,
                 gpu_wait_sec: float = DEFAULT_GPU_WAIT_SEC, queue: RQQueue | None = None) -> None:
        super().__init__(name="reelfarm-node-heartbeat", daemon=True)
        self.worker = worker
        self.registry = registry
        self.caps = caps
        self.queues = list(queues)
        self.queue_names = list(queue_names)
        self.outage = Outage(REDIS)
        queue = queue or RQQueue(registry.redis, namespace=registry.namespace, gpu_wait_sec=gpu_wait_sec)
        self.maintenance = Maintenance(queue, FarmLocks(registry.redis, maintenance_lock, worker.name),
                                       rq_repair(queue, self.queues), what="node maintenance",
                                       reroute=queue.router.reroute)
        self._stop_event = threading.Event()
        self._since_tidy = 0.0
        self.last_round = time.monotonic()  # the node's /livez: this thread still goes round

    def beat(self) -> None:
        """Write the node's record."""
        began = time.monotonic()
        try:
            state = self.worker.get_state()
            state = getattr(state, "value", state)
            quiet = getattr(self.worker, "frames_quiet", lambda: None)()
            self.registry.beat(self.worker.name, self.caps, queues=self.queues, state=str(state),
                               current_job=self.worker.running_job_id, gpu=sample_gpu(), frames_quiet=quiet)
        except Exception as exc:
            if not is_outage(exc):
                log.exception("node heartbeat failed")
            self.outage.lost(exc, "sending the node's heartbeat")
            return
        self.outage.ok("node heartbeats resume", began=began)

    def maintain(self) -> None:
        """The farm's maintenance round; its locks decide which chores are this node's now."""
        self.maintenance.run_once()

    def tidy(self) -> None:
        """Remove the scratch folders that killed processes left on this machine."""
        try:
            remove_stale()
        except Exception:
            log.exception("removing stale scratch folders failed")

    def run(self) -> None:
        while not self._stop_event.wait(HEARTBEAT_SEC):
            self.last_round = time.monotonic()
            self._since_tidy += HEARTBEAT_SEC
            self.beat()
            if self._since_tidy >= TIDY_SEC:
                self._since_tidy = 0.0
                self.tidy()
            self.maintain()

    def stop(self) -> None:
        self._stop_event.set()


def take_over(worker: Any, registry: NodeRegistry, namespace: str) -> None:
    """The node took the name of a dead node (``NodeRegistry.claim``): clear what RQ kept of the dead
    node's registration (RQ refuses a name while its worker key lives, up to ``worker_ttl`` + 60 s), and
    hand back the jobs it was running or had taken, as the hand-back round would for a dead node (the
    name is alive again, so the round no longer can)."""
    worker.forget_namesake()
    queues = [f"{namespace}{q}" for q in QUEUES]
    recovered = recover_orphans(registry.redis, queues, registry, gone={worker.name}) + \
        recover_taken(registry.redis, taken_key(namespace), registry, gone={worker.name})
    log.info("node %s takes over the name of a node that is gone%s", worker.name,
             f"; its jobs {', '.join(recovered)} are handed back" if recovered else "")


def choose_node_raster(kind: str) -> tuple[Any, str]:
    """The node's rasterizer choice for ``kind`` and its GL renderer's name ("" on the CPU); a GL
    choice whose context cannot be made becomes the CPU, with the reason logged."""
    from reelfarm.renderer.backends import RasterChoice, choose_raster

    choice = choose_raster(kind)
    if choice.kind != "gl":
        return choice, ""
    ok, detail = probe_gl(choice.gpu_index, choice.hardware_only)
    if ok:
        return choice, detail
    log.warning("no GL context on this node (%s); its chunks draw on the CPU and it does not work render-gpu",
                detail)
    return RasterChoice("cpu", choice.gpu_index), ""


def _queues_for(raster_kind: str, requested: Sequence[str], encoder: str = "x264") -> list[str]:
    """The requested queues this node can work with its rasterizer and encoder. Raises ValueError
    for none."""
    queues, dropped = node_queues(requested, raster_kind, encoder)
    if dropped:
        log.warning("this node (raster %s, encoder %s) does not work %s", raster_kind, encoder, ", ".join(dropped))
    if not queues:
        raise ValueError("no queue left to work: render-gpu needs a node that draws with GL")
    return queues


def stop_grace_sec(environ: Mapping[str, str] = os.environ) -> float:
    """``REELFARM_WORKER_GRACE_SEC``, else ``STOP_GRACE_SEC``. Raises ValueError for a value that is
    not a number of seconds, 0 or more."""
    raw = environ.get("REELFARM_WORKER_GRACE_SEC", "").strip()
    if not raw:
        return STOP_GRACE_SEC
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"REELFARM_WORKER_GRACE_SEC must be a number of seconds, 0 or more, not {raw!r}")
    return seconds


def _reach_redis_and_database(settings: Settings) -> tuple[Any, Engine]:
    """Redis and the database (migrated), waiting out an outage of either at start."""
    assert settings.redis_url
    redis = make_redis(settings.redis_url)
    engine = process_engine(settings, NODE)
    wait_until(redis.ping, Outage(REDIS), doing="starting the node")
    wait_until(lambda: migrate(engine), Outage(DATABASE), doing="starting the node")
    return redis, engine


def run_worker(settings: Settings, queues: Sequence[str] = DEFAULT_QUEUES, *, burst: bool = False,
               name: str | None = None, namespace: str = "", metrics_port: int = 0,
               raster: str | None = None, encoder: str | None = None, tags: str = "") -> bool:
    """Work the given queues until stopped (or, with ``burst``, until they are empty).

    Returns whether any job was processed. Requires ``settings.redis_url``. With ``metrics_port``
    the node serves Prometheus metrics there (``reelfarm.farm.runtime.metrics``). ``raster`` (default
    ``settings.raster``) picks the rasterizer and, with it, the render queues (module docstring);
    ``encoder`` (default ``settings.encoder``) the encoder family every chunk of this node uses;
    ``tags`` the pools it serves (``reelfarm.farm.services.pools``: it works its tag set's ready
    queues first).

    Raises:
        ValueError: no Redis URL, no queue left to work (``render-gpu`` alone on a CPU node), or a
            ``REELFARM_WORKER_GRACE_SEC`` that is not a number of seconds.
        EncoderUnavailable: ``nvenc`` asked for where its probe failed (the reason is the message).
    """
    from rq import Queue

    from reelfarm.farm.runtime.metrics import (  # late: Prometheus only on a node
        MeteredWorker,
        describe_node,
        serve_metrics,
    )
    from reelfarm.farm.runtime.nodeprobe import NodeProbe, NodeState, read_node_state
    from reelfarm.farm.runtime.rqnode import stack_stream

    if not settings.redis_url:
        raise ValueError("run_worker needs REELFARM_REDIS_URL")
    from reelfarm.renderer.backends import choose_encoder

    grace = stop_grace_sec()
    if (stream := stack_stream()) is not None:  # module docstring: where a stuck node is
        faulthandler.register(signal.SIGUSR1, file=stream, all_threads=True)
    family = choose_encoder(encoder or settings.encoder)  # before anything else: a refusal takes nothing
    choice, gl_renderer = choose_node_raster(raster or settings.raster)
    carried = node_tags(parse_node_tags(tags), choice.kind, family.family)  # PoolError (a ValueError): a bad tag
    queues = node_queues_with_pools(_queues_for(choice.kind, queues, family.family), carried, CHUNK_QUEUES)
    redis, engine = _reach_redis_and_database(settings)
    caps = replace(detect_capabilities(choice.kind, gl_renderer, family.family), tags=pool_name(carried))
    registry = NodeRegistry(redis, namespace)
    name, before = registry.claim(name, caps, queues)  # NameTaken (a ValueError): a live node has the name
    remove_stale()
    context = make_task_context(settings, engine=engine,
                                progress=RedisProgress(redis, prefix=f"reelfarm:{namespace}progress:"))
    stall = StallWatch(FrameCounter(), StallClock(settings.chunk_stall_sec))
    context.raster, context.encoder, context.frames_drawn = choice, family, stall.frames.add
    configure(context)
    queue_names = [f"{namespace}{q}" for q in queues]
    farm_queue = RQQueue(redis, namespace=namespace, gpu_wait_sec=settings.gpu_queue_wait_sec,
                         dispatch=settings.dispatch, shares=Shares(engine), spare_caps=settings.caps == "spare")
    health = NodeHealth(registry, SetAsidePolicy(settings.node_setaside_after, settings.node_cooldown_sec))
    # RQ lengthens its client's socket timeout for its wait for a job (BLPOP, 60 s), for connections
    # made from then on: on a client of its own, no connection made before (10 s) is handed to that
    # wait, and the node's other commands keep their shorter timeout
    rq_redis = make_redis(settings.redis_url)
    worker = MeteredWorker([Queue(q, connection=rq_redis) for q in queue_names], connection=rq_redis,
                           name=name, database=engine, stop_grace_sec=grace, dispatch=farm_queue,
                           health=health, stall=stall, taken=taken_key(namespace))
    if before.score is not None:
        take_over(worker, registry, namespace)
    logging.getLogger().addHandler(RenderLogHandler(redis, namespace, worker.name))  # each render's lines, farm-wide
    heartbeat = NodeHeartbeat(worker, registry, caps, queues, queue_names, maintenance_lock=lock_key(namespace),
                              gpu_wait_sec=settings.gpu_queue_wait_sec, queue=farm_queue)
    if metrics_port:
        describe_node(worker.name, choice.kind, family.family)

        def state() -> NodeState:
            return read_node_state(registry, worker.name)

        serve_metrics(metrics_port, queue=farm_queue, engine=engine, node=state,
                      probe=NodeProbe(lambda: worker.name, state, lambda: heartbeat.last_round))
    log.info("node %s: %d cores, raster %s%s, encoder %s, GPU %s, NVENC %s; queues %s", worker.name, caps.cores,
             caps.raster, f" ({gl_renderer})" if gl_renderer else "", caps.encoder, caps.gpu or "none",
             "yes" if caps.nvenc else "no", ", ".join(queue_names))
    heartbeat.beat()
    SpeedCheck(redis, registry.key(worker.name), choice.kind).start()  # a cold farm's start estimates
    recover_orphans(redis, queue_names, registry)
    heartbeat.start()
    farm_queue.start()  # its bid to be the farm's dispatcher (reelfarm.farm.runtime.dispatchlease)
    try:
        return bool(worker.work(burst=burst, with_scheduler=True, logging_level=settings.log_level))
    finally:
        farm_queue.stop(5)
        heartbeat.stop()
        try:
            registry.mark_stopped(worker.name)
        except Exception:  # noqa: BLE001
            log.warning("could not mark node %s stopped", worker.name)
        engine.dispose()
