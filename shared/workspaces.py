"""Workspaces as an operator manages them (``reelfarm admin``): create one, the first one of a
database, grant or take credits, set a workspace's share of the render farm.

``WorkspaceService(engine, clock)``: each method is one transaction. These act across
workspaces, so only operator commands reach them; a workspace's own people use
``reelfarm.shared.accounts`` and ``reelfarm.shared.apikeys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select, text

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import api_keys, users
from reelfarm.shared.repos import workspaces as repo
from reelfarm.shared.repos.workspaces import Workspace
from reelfarm.shared.tables import workspaces as workspaces_table

__all__ = ["FIRST_WORKSPACE_LOCK_ID", "FirstWorkspace", "Workspace", "WorkspaceService"]

FIRST_WORKSPACE_LOCK_ID = 0x72660031  # PostgreSQL advisory lock: one first workspace


@dataclass(frozen=True)
class FirstWorkspace:
    """What ``WorkspaceService.create_first`` made: secrets for the person who asked, never for a log."""

    workspace: Workspace
    key: str     # the API key's plaintext, shown once
    owner: str   # the first console user's email
    link: str    # their one-time sign-in link (a day)


class WorkspaceService:
    """Create workspaces, change their credits and their share of the farm."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def any(self) -> bool:
        """Whether the database holds a workspace at all."""
        with self.engine.connect() as conn:
            return conn.execute(select(workspaces_table.c.id).limit(1)).first() is not None

    def get(self, workspace_id: str) -> Workspace:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            return repo.get_workspace(conn, workspace_id)

    def create(self, name: str, plan: str, brand_tokens: Mapping[str, Any], credits: int = 0) -> Workspace:
        """A workspace whose default brand kit holds ``brand_tokens``, ``credits`` granted through the ledger."""
        with transaction(self.engine) as conn:
            return repo.create_workspace(conn, self.clock, name=name, plan=plan, brand_tokens=brand_tokens,
                                         credits=credits)

    def create_first(self, name: str, plan: str, brand_tokens: Mapping[str, Any], credits: int,
                     owner: str, public_url: str = "") -> FirstWorkspace | None:
        """On a database with no workspace, one with an API key and an owner and operator with a
        one-time sign-in link on ``public_url``; None where a workspace exists. Processes doing this at once create
        one: the check and the creation hold the database's write lock (SQLite) or an advisory
        lock (PostgreSQL)."""
        with transaction(self.engine) as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": FIRST_WORKSPACE_LOCK_ID})
            if conn.execute(select(func.count()).select_from(workspaces_table)).scalar_one():
                return None
            ws = repo.create_workspace(conn, self.clock, name=name, plan=plan, brand_tokens=brand_tokens,
                                       credits=credits)
            _, key = api_keys.create_api_key(conn, self.clock, workspace_id=ws.id, name=name)
            user = users.create_user(conn, self.clock, workspace_id=ws.id, email=owner, role="owner",
                                     is_operator=True)
            token = users.issue_link(conn, self.clock, user.id)
        return FirstWorkspace(ws, key, owner, users.link_url(public_url, token))

    def add_credits(self, workspace_id: str, amount: int) -> int:
        """Grant (or, negative, take) credits; the new balance. Raises NotFound or InsufficientCredits."""
        with transaction(self.engine) as conn:
            return repo.add_credits(conn, self.clock, workspace_id=workspace_id, delta=amount,
                                    reason="admin_grant" if amount >= 0 else "admin_debit")

    def set_plan(self, workspace_id: str, plan: str) -> Workspace:
        """Move the workspace to another plan. Raises NotFound."""
        with transaction(self.engine) as conn:
            return repo.set_plan(conn, self.clock, workspace_id, plan)

    def set_share(self, workspace_id: str, *, weight: float | None = None, cap: int | None = None,
                  plan_default: bool = False) -> Workspace:
        """Override the plan's weight and cap on the farm; the one not given stays as it is, and
        ``plan_default`` takes both back to the plan's. Raises NotFound."""
        with transaction(self.engine) as conn:
            current = repo.get_workspace(conn, workspace_id)
            return repo.set_dispatch_share(
                conn, self.clock, workspace_id,
                weight=None if plan_default else (weight if weight is not None else current.dispatch_weight),
                cap=None if plan_default else (cap if cap is not None else current.dispatch_cap))
