"""What the farm is doing: nodes with their capabilities (``reelfarm.farm.runtime.nodes``: rasterizer, GPU, memory,
utilization, NVENC), queue depths, each busy workspace's chunks and share, renders in flight
(``reelfarm farm status``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares, workspace_shares
from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.fairness import Load, entitled
from reelfarm.farm.services.progress import ProgressStore
from reelfarm.farm.services.queues import ALL_QUEUES
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import renders as renders_repo

QUEUES = ALL_QUEUES


def collect_status(engine: Engine, progress: ProgressStore, clock: Clock, redis: Any = None,
                   namespace: str = "", queues: tuple[str, ...] = QUEUES) -> dict[str, Any]:
    """A JSON-able snapshot. With ``redis``: RQ nodes and queues; without: the embedded queue."""
    if redis is not None:
        mode, nodes, depths = "farm", NodeRegistry(redis, namespace).nodes(), _rq_depths(redis, namespace, queues)
        loads = Dispatcher(redis, namespace, shares=Shares(engine)).loads()
        held_up = RQQueue(redis, namespace=namespace).held_up
    else:
        mode, nodes, depths = "embedded", [], EmbeddedQueue(engine).depths()
        loads = EmbeddedQueue(engine).loads()
        held_up = EmbeddedQueue(engine).held_up
    return {"mode": mode, "nodes": nodes, "queues": depths, "workspaces": _workspaces(engine, loads),
            "renders": _renders(engine, progress, clock, held_up)}


def _workspaces(engine: Engine, loads: dict[str, Load]) -> list[dict[str, Any]]:
    """Each workspace with work on the farm: chunks running and waiting, its weight and cap, and
    the share of the farm the policy entitles it to now (``reelfarm.farm.services.fairness``)."""
    from sqlalchemy import select

    from reelfarm.shared.tables import workspaces

    if not loads:
        return []
    with engine.connect() as conn:
        names = dict(conn.execute(select(workspaces.c.id, workspaces.c.name)
                                  .where(workspaces.c.id.in_(sorted(loads)))).all())
        shares = workspace_shares(conn, loads)
    share = entitled(shares, loads)
    rows = [{"id": w, "name": names.get(w, "?"), "running": load.running, "waiting": load.waiting,
             "waiting_frames": load.waiting_frames, "weight": shares[w].weight if w in shares else None,
             "cap": shares[w].cap if w in shares else None, "share": round(share.get(w, 0.0), 4)}
            for w, load in loads.items()]
    return sorted(rows, key=lambda r: (-r["waiting_frames"], -r["running"], r["name"]))


def _rq_depths(redis: Any, namespace: str, queues: tuple[str, ...]) -> dict[str, dict[str, int]]:
    from rq import Queue
    from rq.registry import (
        DeferredJobRegistry,
        FailedJobRegistry,
        ScheduledJobRegistry,
        StartedJobRegistry,
    )

    depths = {}
    backlog = Dispatcher(redis, namespace, shares=Shares(None))
    for name in queues:
        full = f"{namespace}{name}"
        depths[name] = {
            "queued": Queue(full, connection=redis).count,
            # chunks bound for it that wait for their turn (reelfarm.farm.runtime.dispatch)
            "waiting": int(redis.llen(backlog.backlog_list(name))),
            # zcard rather than .count: counting a registry makes RQ clean it up, and a status
            # command should only look.
            **{label: int(redis.zcard(registry(full, connection=redis).key)) for label, registry in (
                ("started", StartedJobRegistry), ("deferred", DeferredJobRegistry),
                ("scheduled", ScheduledJobRegistry), ("failed", FailedJobRegistry))},
        }
    return depths


def _renders(engine: Engine, progress: ProgressStore, clock: Clock,
             held_up: Callable[[str], dict[str, Any] | None]) -> list[dict[str, Any]]:
    now = clock.now()
    with engine.connect() as conn:
        live = renders_repo.list_renders_by_status(conn, renders_repo.LIVE)
    rows = []
    for render in live:
        done = min(progress.frames(render.id), render.frames or 0)
        elapsed = (now - render.started_at).total_seconds() if render.started_at else 0.0
        rows.append({"id": render.id, "status": render.status, "format": render.format,
                     "encoder": render.encoder, "raster": render.raster, "reused_frames": render.reused_frames,
                     "resolution": render.resolution, "fps": render.fps, "frames_done": done,
                     "frames_total": render.frames, "chunks": render.chunks,
                     "elapsed_sec": round(elapsed, 1),
                     "frames_per_sec": round(done / elapsed, 1) if elapsed > 0 else 0.0,
                     "held_up": held_up(render.id)})
    return rows
