"""What the farm is doing: nodes with their capabilities (``reelfarm.farm.runtime.nodes``: rasterizer, GPU, memory,
utilization, NVENC), queue depths, renders in flight (``reelfarm farm status``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.nodes import NodeRegistry
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
    else:
        mode, nodes, depths = "embedded", [], EmbeddedQueue(engine).depths()
    return {"mode": mode, "nodes": nodes, "queues": depths, "renders": _renders(engine, progress, clock)}


def _rq_depths(redis: Any, namespace: str, queues: tuple[str, ...]) -> dict[str, dict[str, int]]:
    from rq import Queue
    from rq.registry import (
        DeferredJobRegistry,
        FailedJobRegistry,
        ScheduledJobRegistry,
        StartedJobRegistry,
    )

    depths = {}
    for name in queues:
        full = f"{namespace}{name}"
        depths[name] = {
            "queued": Queue(full, connection=redis).count,
            # zcard rather than .count: counting a registry makes RQ clean it up, and a status
            # command should only look.
            **{label: int(redis.zcard(registry(full, connection=redis).key)) for label, registry in (
                ("started", StartedJobRegistry), ("deferred", DeferredJobRegistry),
                ("scheduled", ScheduledJobRegistry), ("failed", FailedJobRegistry))},
        }
    return depths


def _renders(engine: Engine, progress: ProgressStore, clock: Clock) -> list[dict[str, Any]]:
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
                     "frames_per_sec": round(done / elapsed, 1) if elapsed > 0 else 0.0})
    return rows
