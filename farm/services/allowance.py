"""A workspace's monthly compute allowance: the CPU seconds of the farm its renders may use in a
calendar month (UTC), as an operator set it (``reelfarm admin set-allowance``; none by default).

A render request (a single render, or variants) whose estimate (``reelfarm.farm.services.estimates``)
would take what the workspace's renders used this month past its allowance is refused before
anything is created or charged (``AllowanceExceeded``: 402 ``allowance_exceeded``, naming the
allowance, what is used and the estimate). What is used is what the farm measured this month
(``task_costs``: every task attempt that ended since the first of the month) and what the renders in
flight have reserved: a render made under an allowance keeps its estimate (``renders.estimate_cpu_sec``),
and until it ends, what its tasks have not used of it yet counts as used. The decision is taken in
the transaction that makes the renders, with the workspace locked: of requests made at the same
moment, each is decided after the renders of the ones before it exist, so together they cannot pass
the allowance. A request answered by identical renders (an estimate of 0) is never refused: it runs
nothing.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, func, select

from reelfarm.farm.services.errors import AllowanceExceeded
from reelfarm.farm.services.estimates import EstimateService, Output
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import workspaces as workspaces_repo
from reelfarm.shared.statuses import LIVE
from reelfarm.shared.tables import renders, task_costs


def month_start(now: datetime) -> datetime:
    """The first instant of ``now``'s calendar month, UTC."""
    now = now.astimezone(UTC)
    return datetime(now.year, now.month, 1, tzinfo=UTC)


def used_this_month(conn: Connection, workspace_id: str, now: datetime) -> float:
    """CPU seconds the workspace's render tasks used on the farm since the month began."""
    used = conn.execute(select(func.coalesce(func.sum(task_costs.c.cpu_sec), 0.0)).where(
        task_costs.c.workspace_id == workspace_id, task_costs.c.finished_at >= month_start(now))).scalar_one()
    return round(float(used), 3)


def reserved(conn: Connection, workspace_id: str) -> float:
    """CPU seconds the workspace's renders in flight may still use: each one's estimate (kept when it
    was made under the allowance) less what its tasks have used so far, never below 0."""
    live = conn.execute(select(renders.c.id, renders.c.estimate_cpu_sec).where(
        renders.c.workspace_id == workspace_id, renders.c.status.in_(LIVE),
        renders.c.estimate_cpu_sec.is_not(None))).all()
    if not live:
        return 0.0
    spent = dict(conn.execute(select(task_costs.c.render_id, func.sum(task_costs.c.cpu_sec)).where(
        task_costs.c.render_id.in_([r.id for r in live])).group_by(task_costs.c.render_id)).all())
    return round(sum(max(0.0, float(r.estimate_cpu_sec) - float(spent.get(r.id) or 0.0)) for r in live), 3)


def passes(allowance: float | None, used: float, estimate: float) -> bool:
    """Whether a request estimated at ``estimate`` CPU seconds would pass the allowance."""
    return allowance is not None and estimate > 0 and used + estimate > allowance


@dataclass(frozen=True)
class Quote:
    """A request's estimate, made before the transaction that makes its renders: the whole, and
    each new render's (by format), which that render keeps as its reservation."""

    cpu_sec: float
    per_format: dict[str, float]


class ComputeAllowance:
    """The check a render request passes before anything is made (``RenderService.request_many``):
    ``quote`` estimates it (outside any transaction: the estimate reads much), ``enforce`` decides in
    the transaction that makes the renders, with the workspace locked, so that requests made at the
    same moment are decided one after the other, each counting the renders the ones before it made."""

    def __init__(self, engine: Engine, clock: Clock, estimates: EstimateService) -> None:
        self.engine, self.clock, self.estimates = engine, clock, estimates

    def quote(self, workspace_id: str, video_id: str, formats: Sequence[str], output: Output) -> Quote | None:
        """The request's estimate; None when the workspace has no allowance."""
        with self.engine.connect() as conn:
            if workspaces_repo.get_workspace(conn, workspace_id).cpu_allowance_sec is None:
                return None
        estimate = self.estimates.estimate_variants(workspace_id, video_id, formats, output)
        return Quote(float(estimate["cpu_sec"]), {one["format"]: float(one["cpu_sec"]) for one in estimate["renders"]
                                                  if one["existing_render_id"] is None})

    def gate(self, workspace_id: str, quote: Quote) -> Gate:
        """The decision on ``quote``, for the transaction that makes its renders (``Gate``)."""
        return Gate(self, workspace_id, quote)

    def enforce(self, conn: Connection, workspace_id: str, quote: Quote) -> None:
        """Raises AllowanceExceeded when the request would take what the workspace used this month,
        and what its renders in flight have reserved, past its allowance (as it stands now).
        ``conn``: the transaction that makes the renders, holding the workspace's lock."""
        allowance = workspaces_repo.get_workspace(conn, workspace_id).cpu_allowance_sec
        if allowance is None:
            return
        used = round(used_this_month(conn, workspace_id, self.clock.now()) + reserved(conn, workspace_id), 3)
        if passes(allowance, used, quote.cpu_sec):
            raise AllowanceExceeded(allowance, used, quote.cpu_sec)


@dataclass
class Gate:
    """One request's decision under the allowance, taken in the transaction that makes its renders
    (the workspace locked) just before its first new render is inserted, once: a request that finds
    only renders already made, by another request a moment before, runs nothing and is never refused."""

    allowance: ComputeAllowance
    workspace_id: str
    quote: Quote
    passed: bool = False

    def before_insert(self, conn: Connection) -> None:
        """Raises AllowanceExceeded (see ``ComputeAllowance.enforce``)."""
        if not self.passed:
            self.allowance.enforce(conn, self.workspace_id, self.quote)
            self.passed = True

    def estimate(self, fmt: str) -> float | None:
        """What the new render in ``fmt`` keeps reserved."""
        return self.quote.per_format.get(fmt)
