"""Each workspace's share of the farm, as fair dispatch (``reelfarm.farm.runtime.dispatch``) reads it."""
from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import Connection, Engine, select

from reelfarm.farm.runtime.resilience import DATABASE, OUTAGES
from reelfarm.farm.services.fairness import Share, plan_share
from reelfarm.shared.tables import workspaces

SHARES_TTL_SEC = 10.0
DEFAULT_SHARE = plan_share("pro")


def workspace_shares(conn: Connection, workspace_ids: Iterable[str]) -> dict[str, Share]:
    """Each workspace's share of the farm: its plan's, or the operator's overrides."""
    ids = sorted(set(workspace_ids))
    if not ids:
        return {}
    rows = conn.execute(select(workspaces.c.id, workspaces.c.plan, workspaces.c.dispatch_weight,
                               workspaces.c.dispatch_cap).where(workspaces.c.id.in_(ids)))
    return {r.id: plan_share(r.plan, r.dispatch_weight, r.dispatch_cap) for r in rows}


class Shares:
    """Workspaces' shares read from the database, kept ``SHARES_TTL_SEC`` (an operator's change
    applies within that)."""

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine
        self._known: dict[str, tuple[float, Share]] = {}

    def __call__(self, workspace_ids: Iterable[str]) -> dict[str, Share]:
        now = time.monotonic()
        stale = [w for w in set(workspace_ids) if w not in self._known or self._known[w][0] < now]
        if stale and self.engine is not None:
            with self.engine.connect() as conn:
                for workspace, share in workspace_shares(conn, stale).items():
                    self._known[workspace] = (now + SHARES_TTL_SEC, share)
            OUTAGES.ok(DATABASE)
        return {w: self._known[w][1] if w in self._known else DEFAULT_SHARE for w in workspace_ids}
