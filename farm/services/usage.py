"""A workspace's usage over a period: what its renders used on the farm (``reelfarm.farm.services.costs``)
and the credits they took; for ``GET /api/v1/usage``, the console's usage page and the operators'
``reelfarm admin usage``."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.services import costs
from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.shared.clock import Clock

DEFAULT_DAYS = 30  # without `from`: the 30 days that end with `to`
MAX_DAYS = 366  # one answer spans at most a year (longer periods: ask for each year)


class UsageService:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def usage(self, workspace_id: str | None, first: date | None = None, last: date | None = None,
              group_by: str | None = None, *, operator: bool = False) -> dict[str, Any]:
        """Totals over the days ``first`` to ``last`` (UTC, both included; ``last`` defaults to today
        and ``first`` to the 30 days ending with it), for one workspace or (None) every workspace,
        with ``groups`` by day or video when ``group_by`` is given. An ``operator`` may also group by
        workspace, and ask for any length of time.

        Raises InvalidRequest: ``first`` after ``last``, a period longer than a year (but for an
        operator), or an unknown ``group_by``."""
        last = last or self.clock.now().date()
        first = first or last - timedelta(days=DEFAULT_DAYS - 1)
        problems = []
        if first > last:
            problems.append({"field": "/from", "code": "invalid", "message": f"{first} is after `to` ({last})"})
        elif not operator and (last - first).days + 1 > MAX_DAYS:
            problems.append({"field": "/from", "code": "invalid",
                             "message": f"the period is {(last - first).days + 1} days; at most {MAX_DAYS}"})
        allowed = costs.OPERATOR_GROUPS if operator else costs.GROUPS
        if group_by is not None and group_by not in allowed:
            problems.append({"field": "/group_by", "code": "invalid", "message": f"must be one of: {', '.join(allowed)}"})
        if problems:
            raise InvalidRequest(problems)
        with self.engine.connect() as conn:
            figures = costs.usage(conn, workspace_id, costs.day_bounds(first, last), group_by)
        return {"from": first, "to": last, "group_by": group_by, **figures}


def reuse_savings(figures: Mapping[str, Any]) -> dict[str, Any]:
    """What reused frames saved over a period (``UsageService.usage``'s figures): ``frames``
    reused, their ``share`` of the frames the period's renders needed (reused and drawn), and
    ``cpu_sec`` they would have taken at the period's CPU seconds a drawn frame
    (``cpu_ms_per_frame``; None, and so ``cpu_sec``, when no frame was drawn to price them by).
    The CPU a frame takes includes its render's share of the stitch, so the figure is an upper
    bound of what drawing them would have cost."""
    reused, drawn = figures["frames_reused"], figures["frames_rendered"]
    needed = reused + drawn
    per_frame = figures["cpu_sec"] / drawn if drawn else None
    return {"frames": reused, "share": reused / needed if needed else 0.0,
            "cpu_ms_per_frame": None if per_frame is None else round(per_frame * 1000, 1),
            "cpu_sec": None if per_frame is None else round(reused * per_frame, 1)}
