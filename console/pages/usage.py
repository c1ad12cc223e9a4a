"""Usage: what the signed-in person's workspace used on the farm over a period, day by day.

The figures of ``GET /api/v1/usage`` (``UsageService.usage``, grouped by day), for the signed-in
person's workspace only: renders, frames drawn and reused, CPU and GPU seconds, bytes stored and
credits, as totals and one row a day that had any, with what reuse saved
(``usage.reuse_savings``). The period is two dates in a GET form (its address can be kept and
shared within the workspace), the 30 days to today by default, with links for the last 7 and
30 days and the month so far. A date that is not one, or a period the service refuses, is named
beside the form with 400, and no figures.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from flask import g, render_template, request

from reelfarm.console import web
from reelfarm.console.blueprint import blp
from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.farm.services.usage import DEFAULT_DAYS, reuse_savings

FIELDS = {"from": "First day", "to": "Last day"}


@blp.route("/usage")
@web.signed_in
def usage() -> Any:
    svc = web.services()
    today = svc.clock.now().date()
    asked = {name: request.args.get(name, "").strip() for name in FIELDS}
    dates, problems = _dates(asked)
    figures = None
    if not problems:
        try:
            figures = svc.usage.usage(g.workspace.id, dates.get("from"), dates.get("to"), "day")
        except InvalidRequest as refused:
            problems = {d["field"].lstrip("/"): _said(d["message"]) for d in refused.details}
    savings = reuse_savings(figures) if figures else None
    return render_template("console/usage.html", figures=figures, savings=savings, asked=asked, problems=problems,
                           ranges=_ranges(today), title="Usage"), 400 if problems else 200


@blp.app_template_filter("cpu_time")
def cpu_time(seconds: float) -> str:
    """Seconds of CPU (or GPU) as people read them: ``12.3 s``, ``4 min 5 s``, ``2 h 3 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600:,} h {whole % 3600 // 60} min"


def _said(message: str) -> str:
    """The service's message in the form's words."""
    return message.replace("`to`", "the last day").replace("`from`", "the first day")


def _dates(asked: dict[str, str]) -> tuple[dict[str, date], dict[str, str]]:
    """The dates asked for (an empty field: the service's default), and a problem for each that
    is not a date."""
    dates, problems = {}, {}
    for name, text in asked.items():
        if not text:
            continue
        try:
            dates[name] = date.fromisoformat(text)
        except ValueError:
            problems[name] = f"“{text}” is not a date: write it as YYYY-MM-DD."
    return dates, problems


def _ranges(today: date) -> list[tuple[str, date, date]]:
    """The periods offered as links: (label, first day, last day)."""
    return [("Last 7 days", today - timedelta(days=6), today),
            (f"Last {DEFAULT_DAYS} days", today - timedelta(days=DEFAULT_DAYS - 1), today),
            ("This month", today.replace(day=1), today)]
