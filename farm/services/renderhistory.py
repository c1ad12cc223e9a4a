"""The farm's recent renders as an operator reads them (``reelfarm farm render history``, the
operator API's ``GET /operator/renders``): each render's outcome, how long it waited for its first
chunk and how long it drew, the nodes that worked on it and how many of its tasks ran more than
once, from the renders table and what each task attempt recorded (``task_costs``,
``reelfarm.farm.runtime.accounting``). An attempt whose process died recorded nothing, so a retry
after a killed node shows as one attempt fewer than ran; the render's log lines
(``reelfarm farm render logs``) say the rest.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select

from reelfarm.shared.tables import renders, task_costs

HISTORY_LIMIT = 200


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round(max(0.0, (end - start).total_seconds()), 3)


def render_history(engine: Engine, *, workspace_id: str | None = None, status: str | None = None,
                   limit: int = 20) -> list[dict[str, Any]]:
    """The newest ``limit`` renders (of one workspace, of one status, where given), newest first."""
    limit = max(1, min(limit, HISTORY_LIMIT))
    query = select(renders.c.id, renders.c.workspace_id, renders.c.video_id, renders.c.status, renders.c.error,
                   renders.c.format, renders.c.resolution, renders.c.fps, renders.c.frames, renders.c.chunks,
                   renders.c.reused_frames, renders.c.created_at, renders.c.started_at, renders.c.finished_at)
    if workspace_id:
        query = query.where(renders.c.workspace_id == workspace_id)
    if status:
        query = query.where(renders.c.status == status)
    query = query.order_by(renders.c.created_at.desc(), renders.c.id.desc()).limit(limit)
    with engine.connect() as conn:
        rows = conn.execute(query).all()
        ids = [row.id for row in rows]
        attempts = conn.execute(select(task_costs.c.render_id, task_costs.c.task, task_costs.c.chunk,
                                       task_costs.c.node, task_costs.c.outcome)
                                .where(task_costs.c.render_id.in_(ids))).all() if ids else []
    by_render: dict[str, list[Any]] = defaultdict(list)
    for attempt in attempts:
        by_render[attempt.render_id].append(attempt)
    return [_entry(row, by_render[row.id]) for row in rows]


def _entry(row: Any, attempts: list[Any]) -> dict[str, Any]:
    runs: dict[tuple[str, int | None], int] = defaultdict(int)
    for attempt in attempts:
        runs[(attempt.task, attempt.chunk)] += 1
    return {
        "id": row.id, "workspace_id": row.workspace_id, "video_id": row.video_id, "status": row.status,
        "error": row.error, "format": row.format, "resolution": row.resolution, "fps": row.fps,
        "frames": row.frames, "chunks": row.chunks, "frames_reused": row.reused_frames,
        "created_at": row.created_at.isoformat(), "waited_sec": _seconds(row.created_at, row.started_at),
        "drew_sec": _seconds(row.started_at, row.finished_at),
        "nodes": sorted({a.node for a in attempts}),
        "attempts": len(attempts),
        "retried_tasks": sum(1 for n in runs.values() if n > 1),
        "failed_attempts": sum(1 for a in attempts if a.outcome == "failed"),
    }


def shown(entry: dict[str, Any]) -> str:
    """One render as a line for people."""
    waited = "-" if entry["waited_sec"] is None else f"{entry['waited_sec']:.1f}s"
    drew = "-" if entry["drew_sec"] is None else f"{entry['drew_sec']:.1f}s"
    retried = f", {entry['retried_tasks']} task(s) retried" if entry["retried_tasks"] else ""
    return (f"{entry['created_at'][:19]}  {entry['id']}  {entry['status']:9}  {entry['format']} "
            f"{entry['resolution']}p{entry['fps']}  waited {waited}, drew {drew}  "
            f"nodes {', '.join(entry['nodes']) or '-'}{retried}"
            + (f"  error: {entry['error']}" if entry["error"] else ""))
