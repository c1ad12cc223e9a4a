"""Workspaces and their credits: the balance lives on the workspace row, every change of it
is a ``credit_ledger`` row written in the same transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import InsufficientCredits, NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos.brand_kits import create_brand_kit
from reelfarm.shared.tables import PLANS, credit_ledger, workspaces

INITIAL_GRANT = "initial_grant"
DEFAULT_BRAND_KIT_NAME = "Default"


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    plan: str
    credits: int
    created_at: datetime
    updated_at: datetime
    dispatch_weight: float | None = None  # the operator's override of the plan's farm weight
    dispatch_cap: int | None = None  # and of its cap on chunks running at once
    cpu_allowance_sec: float | None = None  # CPU seconds its renders may use a month (None: no allowance)
    pools: list[str] | None = None  # the pools of nodes its renders are limited to, default first (None: any)


def create_workspace(conn: Connection, clock: Clock, *, name: str, plan: str,
                     brand_tokens: Mapping[str, Any], credits: int = 0) -> Workspace:
    """A new workspace with a default brand kit holding ``brand_tokens`` (the neutral kit).

    Initial ``credits`` are granted through the ledger, so the balance always equals the sum
    of the workspace's ledger rows.
    """
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}; expected one of {', '.join(PLANS)}")
    if credits < 0:
        raise ValueError("credits must not be negative")
    now = clock.now()
    workspace_id = new_id()
    conn.execute(workspaces.insert().values(id=workspace_id, name=name, plan=plan, credits=0,
                                            created_at=now, updated_at=now))
    create_brand_kit(conn, clock, workspace_id=workspace_id, name=DEFAULT_BRAND_KIT_NAME,
                     tokens=brand_tokens, is_default=True)
    if credits:
        add_credits(conn, clock, workspace_id=workspace_id, delta=credits, reason=INITIAL_GRANT)
    return get_workspace(conn, workspace_id)


def get_workspace(conn: Connection, workspace_id: str) -> Workspace:
    """Raises NotFound when there is no such workspace."""
    row = conn.execute(select(workspaces).where(workspaces.c.id == workspace_id)).first()
    if row is None:
        raise NotFound("workspace", workspace_id)
    return Workspace(**row._mapping)


def add_credits(conn: Connection, clock: Clock, *, workspace_id: str, delta: int, reason: str,
                render_id: str | None = None, version_id: str | None = None) -> int:
    """Change the balance by ``delta`` (negative to debit) and log it; returns the new balance.

    Raises:
        InsufficientCredits: a debit larger than the balance; nothing is changed.
        NotFound: no such workspace.
    """
    if delta == 0:
        raise ValueError("delta must not be zero")
    now = clock.now()
    balance = conn.execute(
        workspaces.update()
        .where(workspaces.c.id == workspace_id, workspaces.c.credits + delta >= 0)
        .values(credits=workspaces.c.credits + delta, updated_at=now)
        .returning(workspaces.c.credits)
    ).scalar()
    if balance is None:
        current = get_workspace(conn, workspace_id).credits
        raise InsufficientCredits(workspace_id, current, -delta)
    conn.execute(credit_ledger.insert().values(
        id=new_id(), workspace_id=workspace_id, delta=delta, reason=reason,
        render_id=render_id, version_id=version_id, created_at=now))
    return int(balance)


def set_plan(conn: Connection, clock: Clock, workspace_id: str, plan: str) -> Workspace:
    """Move the workspace to ``plan`` (its API access, rate limit, farm share and library quota
    follow; the operator's share overrides stay). Raises NotFound."""
    done = conn.execute(workspaces.update().where(workspaces.c.id == workspace_id).values(
        plan=plan, updated_at=clock.now()))
    if not done.rowcount:
        raise NotFound("workspace", workspace_id)
    return get_workspace(conn, workspace_id)


def set_dispatch_share(conn: Connection, clock: Clock, workspace_id: str, *, weight: float | None,
                       cap: int | None) -> Workspace:
    """The operator's overrides of the plan's share of the farm (None: the plan's). Raises NotFound."""
    done = conn.execute(workspaces.update().where(workspaces.c.id == workspace_id).values(
        dispatch_weight=weight, dispatch_cap=cap, updated_at=clock.now()))
    if not done.rowcount:
        raise NotFound("workspace", workspace_id)
    return get_workspace(conn, workspace_id)


def set_pools(conn: Connection, clock: Clock, workspace_id: str, pools: list[str] | None) -> Workspace:
    """The pools of nodes the workspace's renders are limited to (None: any node). Raises NotFound."""
    done = conn.execute(workspaces.update().where(workspaces.c.id == workspace_id).values(
        pools=pools or None, updated_at=clock.now()))
    if not done.rowcount:
        raise NotFound("workspace", workspace_id)
    return get_workspace(conn, workspace_id)


def set_cpu_allowance(conn: Connection, clock: Clock, workspace_id: str, cpu_sec: float | None) -> Workspace:
    """The CPU seconds a month the workspace's renders may use (None: no allowance). Raises NotFound."""
    done = conn.execute(workspaces.update().where(workspaces.c.id == workspace_id).values(
        cpu_allowance_sec=cpu_sec, updated_at=clock.now()))
    if not done.rowcount:
        raise NotFound("workspace", workspace_id)
    return get_workspace(conn, workspace_id)


def workspace_names(conn: Connection, workspace_ids: Iterable[str]) -> dict[str, str]:
    """The names of the given workspaces (operators' views: metrics, farm status)."""
    ids = sorted(set(workspace_ids))
    if not ids:
        return {}
    return dict(conn.execute(select(workspaces.c.id, workspaces.c.name).where(workspaces.c.id.in_(ids))).all())


def ledger_total(conn: Connection, workspace_id: str) -> int:
    """Sum of the workspace's ledger rows; equals its balance (an audit check)."""
    total = conn.execute(select(func.coalesce(func.sum(credit_ledger.c.delta), 0))
                         .where(credit_ledger.c.workspace_id == workspace_id)).scalar_one()
    return int(total)
