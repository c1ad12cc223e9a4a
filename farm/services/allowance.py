"""A workspace's monthly compute allowance: the CPU seconds of the farm its renders may use in a
calendar month (UTC), as an operator set it (``reelfarm admin set-allowance``; none by default).

A render request (a single render, or variants) whose estimate (``reelfarm.farm.services.estimates``)
would take what the workspace's renders used this month past its allowance is refused before
anything is created or charged (``AllowanceExceeded``: 402 ``allowance_exceeded``, naming the
allowance, what is used and the estimate). What is used is what the farm measured this month
(``task_costs``: every task attempt that ended since the first of the month); renders still running
count as far as they have gone. A request answered by identical renders (an estimate of 0) is never
refused: it runs nothing.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, func, select

from reelfarm.farm.services.errors import AllowanceExceeded
from reelfarm.farm.services.estimates import EstimateService, Output
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import workspaces as workspaces_repo
from reelfarm.shared.tables import task_costs


def month_start(now: datetime) -> datetime:
    """The first instant of ``now``'s calendar month, UTC."""
    now = now.astimezone(UTC)
    return datetime(now.year, now.month, 1, tzinfo=UTC)


def used_this_month(conn: Connection, workspace_id: str, now: datetime) -> float:
    """CPU seconds the workspace's render tasks used on the farm since the month began."""
    used = conn.execute(select(func.coalesce(func.sum(task_costs.c.cpu_sec), 0.0)).where(
        task_costs.c.workspace_id == workspace_id, task_costs.c.finished_at >= month_start(now))).scalar_one()
    return round(float(used), 3)


def passes(allowance: float | None, used: float, estimate: float) -> bool:
    """Whether a request estimated at ``estimate`` CPU seconds would pass the allowance."""
    return allowance is not None and estimate > 0 and used + estimate > allowance


class ComputeAllowance:
    """The check a render request passes before anything is made (``RenderService.request_many``)."""

    def __init__(self, engine: Engine, clock: Clock, estimates: EstimateService) -> None:
        self.engine, self.clock, self.estimates = engine, clock, estimates

    def check(self, workspace_id: str, video_id: str, formats: Sequence[str], output: Output) -> None:
        """Raises AllowanceExceeded when the request would pass the workspace's allowance."""
        with self.engine.connect() as conn:
            allowance = workspaces_repo.get_workspace(conn, workspace_id).cpu_allowance_sec
            if allowance is None:
                return
            used = used_this_month(conn, workspace_id, self.clock.now())
        estimate = self.estimates.estimate_variants(workspace_id, video_id, formats, output)["cpu_sec"]
        if passes(allowance, used, estimate):
            raise AllowanceExceeded(allowance, used, estimate)
