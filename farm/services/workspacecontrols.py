"""An operator's controls on a workspace (``reelfarm admin set-plan``, ``admin share`` and
``admin set-allowance``), each
written in one transaction with its audit log entry (``reelfarm.farm.services.audit``): the
change and its record, or neither."""
from __future__ import annotations

from sqlalchemy import Engine

from reelfarm.farm.services.audit import AuditEntry, write_entry
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import workspaces as repo
from reelfarm.shared.workspaces import Workspace


class WorkspaceControls:
    """A workspace's plan, farm share and compute allowance, as an operator sets them."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine, self.clock = engine, clock

    def set_plan(self, actor: str, workspace_id: str, plan: str) -> Workspace:
        """Move the workspace to ``plan``, recorded with the plan it had. Raises NotFound."""
        with transaction(self.engine) as conn:
            was = repo.get_workspace(conn, workspace_id).plan
            found = repo.set_plan(conn, self.clock, workspace_id, plan)
            write_entry(conn, self.clock, AuditEntry(actor, "workspace.set_plan", "workspace", found.id, found.id,
                                                     {"plan": plan, "was": was}))
        return found

    def set_share(self, actor: str, workspace_id: str, *, weight: float | None = None, cap: int | None = None,
                  plan_default: bool = False) -> Workspace:
        """The operator's weight and cap on the farm (``WorkspaceService.set_share``), recorded. Raises NotFound."""
        with transaction(self.engine) as conn:
            current = repo.get_workspace(conn, workspace_id)
            found = repo.set_dispatch_share(
                conn, self.clock, workspace_id,
                weight=None if plan_default else (weight if weight is not None else current.dispatch_weight),
                cap=None if plan_default else (cap if cap is not None else current.dispatch_cap))
            write_entry(conn, self.clock, AuditEntry(
                actor, "workspace.share", "workspace", found.id, found.id,
                {"weight": found.dispatch_weight, "cap": found.dispatch_cap,
                 "was": {"weight": current.dispatch_weight, "cap": current.dispatch_cap}}))
        return found

    def set_allowance(self, actor: str, workspace_id: str, cpu_sec: float | None) -> Workspace:
        """The workspace's monthly compute allowance in CPU seconds (None: none), recorded with the
        one it had. Raises NotFound."""
        with transaction(self.engine) as conn:
            was = repo.get_workspace(conn, workspace_id).cpu_allowance_sec
            found = repo.set_cpu_allowance(conn, self.clock, workspace_id, cpu_sec)
            write_entry(conn, self.clock, AuditEntry(actor, "workspace.set_allowance", "workspace", found.id, found.id,
                                                     {"cpu_sec": cpu_sec, "was": was}))
        return found

    def set_pools(self, actor: str, workspace_id: str, pools: list[str] | None) -> Workspace:
        """Limit the workspace's renders to the node ``pools`` (written forms: ``pools.parse_pools``;
        the first is the default of a render that names none), or, None or empty, let them run on any
        node; recorded with the pools it had. Renders already asked for keep their pool. Raises NotFound."""
        with transaction(self.engine) as conn:
            was = repo.get_workspace(conn, workspace_id).pools
            found = repo.set_pools(conn, self.clock, workspace_id, list(pools or []) or None)
            write_entry(conn, self.clock, AuditEntry(actor, "workspace.set_pools", "workspace", found.id, found.id,
                                                     {"pools": found.pools, "was": was}))
        return found
