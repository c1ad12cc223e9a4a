"""Read-only views the console shows and the API has no endpoint for.

The credit ledger, each video's picture for the grid (its latest render's poster, else its
latest still), a video's translated copies, and the farm's recent failures. Every query that
reads a workspace's rows is filtered by ``workspace_id``; the farm's failures are for operators
and span workspaces on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from reelfarm.shared.tables import credit_ledger, jobs, renders, videos

LEDGER_LIMIT = 50
POSTER_TTL_SEC = 3600
STILL_TTL_SEC = 600


def ledger(conn: Connection, workspace_id: str, limit: int = LEDGER_LIMIT) -> list[dict[str, Any]]:
    """The latest ledger rows, newest first, with the render's video and format where there is one."""
    query = (select(credit_ledger.c.delta, credit_ledger.c.reason, credit_ledger.c.created_at,
                    credit_ledger.c.render_id, renders.c.video_id, renders.c.format, renders.c.resolution,
                    videos.c.title)
             .select_from(credit_ledger.outerjoin(renders, renders.c.id == credit_ledger.c.render_id)
                          .outerjoin(videos, videos.c.id == renders.c.video_id))
             .where(credit_ledger.c.workspace_id == workspace_id)
             .order_by(credit_ledger.c.created_at.desc(), credit_ledger.c.id.desc()).limit(limit))
    return [dict(row._mapping) for row in conn.execute(query)]


def pictures(conn: Connection, workspace_id: str, video_ids: Sequence[str], storage: Any) -> dict[str, str]:
    """A signed picture URL per video that has one: the latest succeeded render's poster, else
    the first frame of its latest stills job."""
    if not video_ids:
        return {}
    found: dict[str, str] = {}
    posters = conn.execute(
        select(renders.c.video_id, renders.c.poster_key)
        .where(renders.c.workspace_id == workspace_id, renders.c.video_id.in_(list(video_ids)),
               renders.c.status == "succeeded", renders.c.poster_key.is_not(None))
        .order_by(renders.c.finished_at.desc()))
    for video_id, key in posters:
        found.setdefault(video_id, storage.url(key, POSTER_TTL_SEC))
    stills = conn.execute(
        select(jobs.c.video_id, jobs.c.result)
        .where(jobs.c.workspace_id == workspace_id, jobs.c.video_id.in_(list(video_ids)),
               jobs.c.kind == "stills", jobs.c.status == "succeeded")
        .order_by(jobs.c.finished_at.desc()))
    for video_id, result in stills:
        shots = (result or {}).get("stills") or []
        if video_id not in found and shots:
            found[video_id] = storage.url(shots[0]["key"], STILL_TTL_SEC)
    return found


def translations(conn: Connection, workspace_id: str, video_id: str) -> list[dict[str, Any]]:
    """The video's translated copies, oldest first."""
    rows = conn.execute(
        select(videos.c.id, videos.c.title, videos.c.status, videos.c.locale, videos.c.created_at)
        .where(videos.c.workspace_id == workspace_id, videos.c.source_video_id == video_id)
        .order_by(videos.c.created_at, videos.c.id))
    return [dict(row._mapping) for row in rows]


def current_fields(conn: Connection, workspace_id: str, video_id: str) -> dict[str, Any] | None:
    """The field values of the video's current version (what a fields edit starts from)."""
    row = conn.execute(select(videos.c.fields).where(videos.c.workspace_id == workspace_id,
                                                     videos.c.id == video_id)).first()
    return None if row is None else row[0]


def latest_job(conn: Connection, workspace_id: str, video_id: str, kind: str) -> dict[str, Any] | None:
    row = conn.execute(
        select(jobs.c.id, jobs.c.status, jobs.c.created_at)
        .where(jobs.c.workspace_id == workspace_id, jobs.c.video_id == video_id, jobs.c.kind == kind)
        .order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(1)).first()
    return None if row is None else dict(row._mapping)


def failed_renders(conn: Connection, since: datetime | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest failed renders across the farm, with their errors."""
    query = (select(renders.c.id, renders.c.workspace_id, renders.c.video_id, renders.c.format,
                    renders.c.resolution, renders.c.fps, renders.c.error, renders.c.finished_at)
             .where(renders.c.status == "failed").order_by(renders.c.finished_at.desc()).limit(limit))
    if since is not None:
        query = query.where(renders.c.finished_at >= since)
    return [dict(row._mapping) for row in conn.execute(query)]
