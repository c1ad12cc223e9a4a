"""The segments a workspace keeps for reuse (``reelfarm.farm.services.segments``): one row per
(workspace, fingerprint), naming its storage key, when it was kept and when last used."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from reelfarm.shared.clock import Clock
from reelfarm.shared.tables import segments


def kept(conn: Connection, workspace_id: str, fingerprints: list[str]) -> dict[str, str]:
    """``{fingerprint: key}`` of those the workspace keeps."""
    if not fingerprints:
        return {}
    rows = conn.execute(select(segments.c.fingerprint, segments.c.key).where(
        segments.c.workspace_id == workspace_id, segments.c.fingerprint.in_(fingerprints)))
    return {r.fingerprint: r.key for r in rows}


def used(conn: Connection, clock: Clock, workspace_id: str, fingerprints: list[str]) -> None:
    """Mark kept segments used now (the retention sweep counts from the last use)."""
    if fingerprints:
        conn.execute(update(segments).where(segments.c.workspace_id == workspace_id,
                                            segments.c.fingerprint.in_(fingerprints)).values(used_at=clock.now()))


def keep(conn: Connection, clock: Clock, workspace_id: str, fingerprint: str, key: str) -> bool:
    """Record a kept segment; False when the workspace keeps one with that fingerprint already."""
    now = clock.now()
    try:
        with conn.begin_nested():
            conn.execute(insert(segments).values(workspace_id=workspace_id, fingerprint=fingerprint, key=key,
                                                 created_at=now, used_at=now))
    except IntegrityError:
        return False
    return True


def unused_since(conn: Connection, before: datetime, limit: int) -> list[tuple[str, str, str]]:
    """(workspace, fingerprint, key) of kept segments not used since ``before``, oldest first."""
    rows = conn.execute(select(segments.c.workspace_id, segments.c.fingerprint, segments.c.key)
                        .where(segments.c.used_at < before).order_by(segments.c.used_at).limit(limit))
    return [(r.workspace_id, r.fingerprint, r.key) for r in rows]


def forget(conn: Connection, workspace_id: str, fingerprint: str, before: datetime) -> bool:
    """Delete the row if it is still unused since ``before`` (a render may have just reused it)."""
    done = conn.execute(delete(segments).where(segments.c.workspace_id == workspace_id,
                                               segments.c.fingerprint == fingerprint, segments.c.used_at < before))
    return bool(done.rowcount)
