"""Row locks shared by the repositories (``SELECT ... FOR UPDATE``; SQLite ignores the clause,
its write transactions are already serialised by ``BEGIN IMMEDIATE``)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from reelfarm.shared.errors import NotFound
from reelfarm.shared.tables import workspaces


def lock_workspace(conn: Connection, workspace_id: str) -> None:
    """Hold the workspace row until the transaction ends; serialises credit and default-kit changes.

    Raises:
        NotFound: no such workspace.
    """
    found = conn.execute(select(workspaces.c.id).where(workspaces.c.id == workspace_id)
                         .with_for_update()).first()
    if found is None:
        raise NotFound("workspace", workspace_id)
