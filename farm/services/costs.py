"""What renders cost, from what their tasks recorded on their nodes (``task_costs``, written by
``reelfarm.farm.runtime.accounting``): one render's cost (the Render resource's ``cost``) and a
workspace's usage over a period (``GET /api/v1/usage``, ``reelfarm admin usage``).

A render's cost sums every recorded attempt of its tasks, retries included; while it runs, the
attempts ended so far. ``frames_rendered`` counts the frames of each chunk this render encoded
and stored itself (a chunk stored twice, by a retry, counts once); ``frames_reused`` the frames of
segments reused from an earlier render of the workspace. A render request answered by an
identical render (dedup) creates nothing and runs nothing: it costs nothing beyond that render's.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import Connection, select

from reelfarm.shared.tables import renders, task_costs

GROUPS = ("day", "video")
OPERATOR_GROUPS = (*GROUPS, "workspace")  # across workspaces: the operators' (reelfarm admin usage)
GROUP_KEYS = {"day": "day", "video": "video_id", "workspace": "workspace_id"}


class RenderCost(TypedDict):
    cpu_sec: float
    gpu_sec: float | None
    wall_sec: float
    frames_rendered: int
    frames_reused: int
    storage_bytes: int
    peak_memory_bytes: int


@dataclass(frozen=True)
class Attempt:
    """What one attempt of a render's task recorded (a ``task_costs`` row, as plain values)."""

    render_id: str
    chunk: int | None
    cpu_sec: float
    wall_sec: float
    gpu_sec: float | None
    frames: int
    storage_bytes: int
    peak_memory_bytes: int


def sum_costs(attempts: list[Attempt], reused: dict[str, int]) -> dict[str, RenderCost]:
    """The cost of each render in ``reused`` (render id -> its reused frames) from its attempts:
    seconds and bytes summed over every attempt, peak memory the highest, GPU seconds None when no
    attempt ran on a GPU node, and each chunk's frames once (the most any attempt of it stored)."""
    costs: dict[str, RenderCost] = {
        rid: {"cpu_sec": 0.0, "gpu_sec": None, "wall_sec": 0.0, "frames_rendered": 0, "frames_reused": frames,
              "storage_bytes": 0, "peak_memory_bytes": 0} for rid, frames in reused.items()}
    chunk_frames: dict[tuple[str, int], int] = {}
    for row in attempts:
        if row.render_id not in costs:
            continue
        cost = costs[row.render_id]
        cost["cpu_sec"] += row.cpu_sec
        cost["wall_sec"] += row.wall_sec
        if row.gpu_sec is not None:
            cost["gpu_sec"] = (cost["gpu_sec"] or 0.0) + row.gpu_sec
        cost["storage_bytes"] += row.storage_bytes
        cost["peak_memory_bytes"] = max(cost["peak_memory_bytes"], row.peak_memory_bytes)
        if row.frames and row.chunk is not None:
            key = (row.render_id, row.chunk)
            chunk_frames[key] = max(chunk_frames.get(key, 0), row.frames)
    for (rid, _), frames in chunk_frames.items():
        costs[rid]["frames_rendered"] += frames
    for cost in costs.values():
        cost["cpu_sec"] = round(cost["cpu_sec"], 3)
        cost["wall_sec"] = round(cost["wall_sec"], 3)
        if cost["gpu_sec"] is not None:
            cost["gpu_sec"] = round(cost["gpu_sec"], 3)
    return costs


def render_costs(conn: Connection, reused: dict[str, int]) -> dict[str, RenderCost]:
    """The cost of each render in ``reused`` (render id -> its reused frames), read in one query."""
    if not reused:
        return {}
    rows = conn.execute(select(
        task_costs.c.render_id, task_costs.c.chunk, task_costs.c.cpu_sec, task_costs.c.wall_sec,
        task_costs.c.gpu_sec, task_costs.c.frames, task_costs.c.storage_bytes, task_costs.c.peak_memory_bytes,
    ).where(task_costs.c.render_id.in_(list(reused)))).all()
    return sum_costs([Attempt(*row) for row in rows], reused)


def render_cost(conn: Connection, render_id: str, reused_frames: int) -> RenderCost:
    return render_costs(conn, {render_id: reused_frames})[render_id]


# -- usage ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Period:
    """From ``start`` (included) to ``end`` (excluded); either open."""

    start: datetime | None
    end: datetime | None


def _zero() -> dict[str, Any]:
    return {"renders": 0, "frames_rendered": 0, "frames_reused": 0, "cpu_sec": 0.0, "gpu_sec": 0.0,
            "storage_bytes": 0, "credits": 0}


def usage(conn: Connection, workspace_id: str | None, period: Period, group_by: str | None = None) -> dict[str, Any]:
    """A workspace's totals over ``period`` (every workspace's when ``workspace_id`` is None), and
    its ``groups`` by day or by video when ``group_by`` is given (else ``groups`` is None).

    ``renders``, ``frames_reused`` and ``credits`` (charged, less refunds of failed renders) count
    the renders created in the period; ``frames_rendered``, ``cpu_sec``, ``gpu_sec`` and
    ``storage_bytes`` what their tasks recorded as ending in it."""
    made = select(renders.c.id, renders.c.workspace_id, renders.c.video_id, renders.c.created_at,
                  renders.c.reused_frames, renders.c.charged_credits, renders.c.status)
    used = select(task_costs.c.render_id, task_costs.c.workspace_id, task_costs.c.video_id, task_costs.c.chunk,
                  task_costs.c.finished_at,
                  task_costs.c.cpu_sec, task_costs.c.gpu_sec, task_costs.c.storage_bytes, task_costs.c.frames)
    if workspace_id is not None:
        made = made.where(renders.c.workspace_id == workspace_id)
        used = used.where(task_costs.c.workspace_id == workspace_id)
    if period.start is not None:
        made = made.where(renders.c.created_at >= period.start)
        used = used.where(task_costs.c.finished_at >= period.start)
    if period.end is not None:
        made = made.where(renders.c.created_at < period.end)
        used = used.where(task_costs.c.finished_at < period.end)
    totals = _zero()
    groups: dict[str, dict[str, Any]] = {}

    def bucket(row: Any, when: datetime) -> list[dict[str, Any]]:
        if group_by is None:
            return [totals]
        key = {"video": row.video_id, "workspace": row.workspace_id}.get(group_by) or when.date().isoformat()
        return [totals, groups.setdefault(key, _zero())]

    for row in conn.execute(made):
        for figures in bucket(row, row.created_at):
            figures["renders"] += 1
            figures["frames_reused"] += row.reused_frames
            figures["credits"] += 0 if row.status in ("failed", "canceled") else row.charged_credits
    seen: set[tuple[str, int]] = set()
    for task in conn.execute(used.order_by(task_costs.c.finished_at)):
        frames = 0
        if task.frames and task.chunk is not None and (task.render_id, task.chunk) not in seen:
            seen.add((task.render_id, task.chunk))
            frames = task.frames
        for figures in bucket(task, task.finished_at):
            figures["frames_rendered"] += frames
            figures["cpu_sec"] += task.cpu_sec
            figures["gpu_sec"] += task.gpu_sec or 0.0
            figures["storage_bytes"] += task.storage_bytes
    for figures in [totals, *groups.values()]:
        figures["cpu_sec"] = round(figures["cpu_sec"], 3)
        figures["gpu_sec"] = round(figures["gpu_sec"], 3)
    out: dict[str, Any] = dict(totals)
    out["groups"] = None if group_by is None else [
        {GROUP_KEYS[group_by]: key, **figures} for key, figures in sorted(groups.items())]
    return out


def day_bounds(first: date | None, last: date | None) -> Period:
    """The period from the start of day ``first`` to the end of day ``last`` (UTC)."""
    from datetime import UTC, time

    return Period(datetime.combine(first, time(), UTC) if first else None,
                  datetime.combine(last, time(), UTC) + timedelta(days=1) if last else None)
