"""A workspace's API keys as its people manage them: create (the plaintext shown once), list, revoke;
and the one check of a request's key (``authenticate``, for ``reelfarm.api.auth``).

``ApiKeyService(engine, clock)``: each method takes the workspace id and is one transaction; a key
of another workspace is ``NotFound``, like one that never existed. Only the key's SHA-256 is
stored (``reelfarm.shared.repos.api_keys``); the plaintext leaves ``create`` and nothing keeps it.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import api_keys as repo
from reelfarm.shared.repos import workspaces
from reelfarm.shared.repos.api_keys import ApiKey
from reelfarm.shared.repos.workspaces import Workspace

__all__ = ["ApiKey", "ApiKeyService"]


class ApiKeyService:
    """Create, list and revoke the keys of one workspace at a time."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def create(self, workspace_id: str, name: str, expires_in: timedelta | None = None) -> tuple[ApiKey, str]:
        """A new key: its record and the plaintext (never stored). ``expires_in`` None: it never
        expires. Raises NotFound (workspace)."""
        expires_at = self.clock.now() + expires_in if expires_in is not None else None
        with transaction(self.engine) as conn:
            workspaces.get_workspace(conn, workspace_id)
            return repo.create_api_key(conn, self.clock, workspace_id=workspace_id, name=name, expires_at=expires_at)

    def list(self, workspace_id: str) -> list[ApiKey]:
        """The workspace's keys, revoked and expired ones included, oldest first."""
        with self.engine.connect() as conn:
            return repo.list_api_keys(conn, workspace_id)

    def get(self, workspace_id: str, key_id: str) -> ApiKey:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            return repo.get_api_key(conn, workspace_id, key_id)

    def revoke(self, workspace_id: str, key_id: str) -> ApiKey:
        """Revoke the workspace's key (revoking twice keeps the first time). Raises NotFound."""
        with transaction(self.engine) as conn:
            repo.get_api_key(conn, workspace_id, key_id)
            return repo.revoke_api_key(conn, self.clock, key_id)

    def revoke_any(self, key_id: str) -> ApiKey:
        """Revoke a key of whichever workspace (an operator's ``reelfarm admin revoke-key``). Raises NotFound."""
        with transaction(self.engine) as conn:
            return repo.revoke_api_key(conn, self.clock, key_id)

    def authenticate(self, plaintext: str) -> tuple[ApiKey, Workspace] | None:
        """The active key with this plaintext and its workspace, the key marked as used now; None
        for a key unknown, revoked or expired."""
        now = self.clock.now()
        with self.engine.connect() as conn:  # a read: most requests write nothing here
            key = repo.authenticate(conn, plaintext, now)
            if key is None:
                return None
            workspace = workspaces.get_workspace(conn, key.workspace_id)
        if repo.touch_due(key, now):
            # At most one write a minute per key: on SQLite every write waits its turn for the
            # file's one write lock, and a burst of requests would queue behind their own touches.
            with transaction(self.engine) as conn:
                repo.touch_api_key(conn, key.id, now)
        return key, workspace
