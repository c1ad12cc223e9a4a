"""Idempotency records: one row per (workspace, key), a lock while the first request runs, then its answer.

The primary key (workspace_id, key) is the lock: of several requests inserting the same key at
once, exactly one insert succeeds. A record lives ``KEY_TTL``; ``purge_expired`` deletes older ones
(``reelfarm.farm.runtime.retention`` calls it in batches).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from reelfarm.shared.db import transaction
from reelfarm.shared.tables import idempotency_records as records

KEY_TTL = timedelta(hours=24)  # API.md: a key's first answer is replayed for 24 h
_CLAIM_ATTEMPTS = 3


@dataclass(frozen=True)
class Fingerprint:
    """What a key is bound to: the request's method, path and body hash."""

    method: str
    path: str
    body_hash: str


@dataclass(frozen=True)
class Record:
    workspace_id: str
    key: str
    fingerprint: Fingerprint
    status_code: int | None
    response_body: bytes | None
    response_headers: dict[str, str] | None
    locked_until: datetime | None
    created_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming a key: ``claimed`` (run the request), or the record standing in the way."""

    claimed: bool
    record: Record | None = None


def claim_key(engine: Engine, workspace_id: str, key: str, fingerprint: Fingerprint, now: datetime,
              lease: timedelta, ttl: timedelta) -> Claim:
    """Claim ``key`` for a request, or return the record that holds it.

    A record older than ``ttl`` is forgotten, and an unfinished one whose lease ran out (its
    request crashed) is taken over, so in both cases the key is claimed afresh.
    """
    for _ in range(_CLAIM_ATTEMPTS):
        try:
            with transaction(engine) as conn:
                conn.execute(records.insert().values(
                    workspace_id=workspace_id, key=key, method=fingerprint.method, path=fingerprint.path,
                    body_hash=fingerprint.body_hash, locked_until=now + lease, created_at=now))
            return Claim(True)
        except IntegrityError:
            pass  # the key is taken: see by whom
        with transaction(engine) as conn:
            record = _get(conn, workspace_id, key, lock=True)
            if record is None:
                continue  # released in between: try the insert again
            if record.created_at + ttl <= now:
                _delete(conn, workspace_id, key)
                continue
            if _stale(record, now) and record.fingerprint == fingerprint:
                conn.execute(update(records).where(_match(workspace_id, key)).values(locked_until=now + lease))
                return Claim(True)
            return Claim(False, record)
    raise RuntimeError(f"could not claim idempotency key after {_CLAIM_ATTEMPTS} attempts")


def complete_key(engine: Engine, workspace_id: str, key: str, status_code: int, body: bytes,
                 headers: dict[str, str], now: datetime) -> None:
    """Store the answer of the request that claimed ``key``, to be replayed to later ones."""
    with transaction(engine) as conn:
        conn.execute(update(records).where(_match(workspace_id, key)).values(
            status_code=status_code, response_body=body, response_headers=headers,
            locked_until=None, completed_at=now))


def release_key(engine: Engine, workspace_id: str, key: str) -> None:
    """Forget an unfinished claim (the request failed with 5xx): the client may retry with the key."""
    with transaction(engine) as conn:
        conn.execute(delete(records).where(_match(workspace_id, key), records.c.completed_at.is_(None)))


def purge_expired(engine: Engine, before: datetime, limit: int | None = None) -> int:
    """Delete records created before ``before``, at most ``limit`` of them (None: all); returns how many.

    One short transaction; a caller working off a backlog calls it again while it returns ``limit``.
    """
    expired = records.c.created_at < before
    query = delete(records).where(expired)
    if limit is not None:
        # DELETE has no LIMIT on PostgreSQL: delete what a limited SELECT picks, with the condition
        # repeated so that a row changed in between is judged again as it is now.
        batch = select(records.c.workspace_id, records.c.key).where(expired).limit(limit)
        query = query.where(tuple_(records.c.workspace_id, records.c.key).in_(batch))
    with transaction(engine) as conn:
        return conn.execute(query).rowcount or 0


def _stale(record: Record, now: datetime) -> bool:
    return record.completed_at is None and (record.locked_until is None or record.locked_until <= now)


def _match(workspace_id: str, key: str) -> Any:
    return (records.c.workspace_id == workspace_id) & (records.c.key == key)


def _delete(conn: Connection, workspace_id: str, key: str) -> None:
    conn.execute(delete(records).where(_match(workspace_id, key)))


def _get(conn: Connection, workspace_id: str, key: str, lock: bool = False) -> Record | None:
    query = select(records).where(_match(workspace_id, key))
    row = conn.execute(query.with_for_update() if lock else query).first()
    if row is None:
        return None
    m = row._mapping
    return Record(workspace_id=m["workspace_id"], key=m["key"],
                  fingerprint=Fingerprint(m["method"], m["path"], m["body_hash"]),
                  status_code=m["status_code"], response_body=m["response_body"],
                  response_headers=m["response_headers"], locked_until=m["locked_until"],
                  created_at=m["created_at"], completed_at=m["completed_at"])
