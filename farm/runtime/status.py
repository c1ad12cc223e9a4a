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
    """A JSON-able snapshot. With ``redis``: RQ nodes and queues; without: the embedded queue.

    Each part is read from its own source, and a source that cannot be read costs only what comes
    from it: with the database down a farm's nodes, queues and workspaces' loads (all in Redis) are
    still shown; with Redis down, the renders in flight. ``unavailable`` names each source that
    could not be read and why, in a sentence (``{}`` when every one was)."""
    unavailable: dict[str, str] = {}

    def part(source: str, read: Callable[[], Any], otherwise: Any) -> Any:
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - shown as the source's state, not raised
            unavailable.setdefault(source, describe_source_error(source, exc, engine))
            return otherwise

    if redis is not None:
        mode = "farm"
        registry = NodeRegistry(redis, namespace)
        nodes = part("redis", registry.nodes, [])
        disabled = part("redis", registry.disabled_all, {})
        nodes = [{**node, "disabled": disabled.get(node["name"])} for node in nodes]
        depths = part("redis", lambda: _rq_depths(redis, namespace, queues), {})
        dispatcher = Dispatcher(redis, namespace, shares=Shares(engine))
        loads = part("redis", dispatcher.loads, {})
        paused = part("redis", dispatcher.paused, None)
        rq_held_up = RQQueue(redis, namespace=namespace).held_up

        def held_up(render_id: str) -> dict[str, Any] | None:
            return part("redis", lambda: rq_held_up(render_id), None)
    else:
        mode, nodes, paused = "embedded", [], None
        embedded = EmbeddedQueue(engine)
        depths = part("database", embedded.depths, {})
        loads = part("database", embedded.loads, {})
        held_up = embedded.held_up
    workspaces = part("database", lambda: _workspaces(engine, loads), _unnamed(loads))
    def frames_of(render_id: str) -> int | None:
        return part("redis" if redis is not None else "database", lambda: progress.frames(render_id), None)

    renders = part("database", lambda: _renders(engine, frames_of, clock, held_up), [])
    return {"mode": mode, "paused": paused, "nodes": nodes, "queues": depths, "workspaces": workspaces,
            "renders": renders, "unavailable": unavailable}


def describe_source_error(source: str, exc: BaseException, engine: Engine) -> str:
    """One sentence on why ``source`` could not be read: a database without the farm's tables
    (``REELFARM_DATABASE_URL`` unset, or another database) is said as such, not as a SQL error."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if source == "database" and ("no such table" in text or "does not exist" in text and "relation" in text):
        where = engine.url.render_as_string(hide_password=True)
        return (f"the database {where} has none of the farm's tables: set REELFARM_DATABASE_URL to the farm's "
                f"database (or run `reelfarm migrate` on this one)")
    return f"{'the database' if source == 'database' else 'Redis'} cannot be read ({text[:200]})"


def _unnamed(loads: dict[str, Load]) -> list[dict[str, Any]]:
    """The workspaces' loads when their names, weights and caps (in the database) cannot be read."""
    rows = [{"id": w, "name": None, "running": load.running, "waiting": load.waiting,
             "waiting_frames": load.waiting_frames, "weight": None, "cap": None, "share": None}
            for w, load in loads.items()]
    return sorted(rows, key=lambda r: (-r["waiting_frames"], -r["running"], r["id"]))


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


def _renders(engine: Engine, frames_of: Callable[[str], int | None], clock: Clock,
             held_up: Callable[[str], dict[str, Any] | None]) -> list[dict[str, Any]]:
    now = clock.now()
    with engine.connect() as conn:
        live = renders_repo.list_renders_by_status(conn, renders_repo.LIVE)
    rows = []
    for render in live:
        drawn = frames_of(render.id)
        done = min(drawn, render.frames or 0) if drawn is not None else None
        elapsed = (now - render.started_at).total_seconds() if render.started_at else 0.0
        rows.append({"id": render.id, "status": render.status, "format": render.format,
                     "encoder": render.encoder, "raster": render.raster, "reused_frames": render.reused_frames,
                     "resolution": render.resolution, "fps": render.fps, "frames_done": done,
                     "frames_total": render.frames, "chunks": render.chunks,
                     "elapsed_sec": round(elapsed, 1),
                     "frames_per_sec": None if done is None else round(done / elapsed, 1) if elapsed > 0 else 0.0,
                     "held_up": held_up(render.id)})
    return rows
