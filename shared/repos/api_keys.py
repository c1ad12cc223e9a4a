"""API keys of a workspace: only the SHA-256 of a key is stored; the plaintext is returned once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, or_, select

from reelfarm.shared import keys
from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import api_keys

TOUCH_INTERVAL = timedelta(seconds=60)


@dataclass(frozen=True)
class ApiKey:
    id: str
    workspace_id: str
    name: str
    prefix: str
    key_hash: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    def is_active(self, now: datetime) -> bool:
        """Neither revoked nor past its expiry."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


def create_api_key(conn: Connection, clock: Clock, *, workspace_id: str, name: str,
                   expires_at: datetime | None = None) -> tuple[ApiKey, str]:
    """A new key for the workspace: its record and the plaintext, which is never stored."""
    plaintext = keys.generate_key()
    key_id = new_id()
    conn.execute(api_keys.insert().values(
        id=key_id, workspace_id=workspace_id, name=name, prefix=keys.key_prefix(plaintext),
        key_hash=keys.hash_key(plaintext), created_at=clock.now(), expires_at=expires_at))
    return _get(conn, key_id), plaintext


def find_api_key(conn: Connection, key_hash: str) -> ApiKey | None:
    """The key with this hash, active or not."""
    row = conn.execute(select(api_keys).where(api_keys.c.key_hash == key_hash)).first()
    return None if row is None else ApiKey(**row._mapping)


def authenticate(conn: Connection, plaintext: str, now: datetime) -> ApiKey | None:
    """The active key matching ``plaintext``, or None.

    A key with a wrong checksum is refused before the database is touched; the stored hash is
    compared in constant time as well as looked up.
    """
    if not keys.checksum_ok(plaintext):
        return None
    digest = keys.hash_key(plaintext)
    found = find_api_key(conn, digest)
    if found is None or not keys.constant_time_equals(found.key_hash, digest):
        return None
    return found if found.is_active(now) else None


def touch_due(key: ApiKey, now: datetime) -> bool:
    """Whether ``touch_api_key`` would record this use (the last one is ``TOUCH_INTERVAL`` old)."""
    return key.last_used_at is None or key.last_used_at <= now - TOUCH_INTERVAL


def touch_api_key(conn: Connection, key_id: str, now: datetime) -> None:
    """Record a use; writes at most once per ``TOUCH_INTERVAL`` so busy keys cost few writes."""
    conn.execute(api_keys.update().where(
        api_keys.c.id == key_id,
        or_(api_keys.c.last_used_at.is_(None), api_keys.c.last_used_at <= now - TOUCH_INTERVAL),
    ).values(last_used_at=now))


def revoke_api_key(conn: Connection, clock: Clock, key_id: str) -> ApiKey:
    """Revoke the key; revoking twice keeps the first time. Raises NotFound."""
    _get(conn, key_id)
    conn.execute(api_keys.update().where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                 .values(revoked_at=clock.now()))
    return _get(conn, key_id)


def get_api_key(conn: Connection, workspace_id: str, key_id: str) -> ApiKey:
    """The workspace's key with this id, active or not. Raises NotFound (also for another
    workspace's key)."""
    row = conn.execute(select(api_keys).where(api_keys.c.workspace_id == workspace_id,
                                              api_keys.c.id == key_id)).first()
    if row is None:
        raise NotFound("api_key", key_id)
    return ApiKey(**row._mapping)


def list_api_keys(conn: Connection, workspace_id: str) -> list[ApiKey]:
    """The workspace's keys, revoked and expired ones included, oldest first."""
    rows = conn.execute(select(api_keys).where(api_keys.c.workspace_id == workspace_id)
                        .order_by(api_keys.c.created_at, api_keys.c.id))
    return [ApiKey(**row._mapping) for row in rows]


def _get(conn: Connection, key_id: str) -> ApiKey:
    row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).first()
    if row is None:
        raise NotFound("api_key", key_id)
    return ApiKey(**row._mapping)
