"""`reelfarm admin usage`: what renders used on the farm and cost, per workspace, for operators; and
`reelfarm admin set-allowance`: a workspace's monthly compute allowance."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from typing import Any

import click

from reelfarm.farm.runtime.controlcli import operator_option

FIGURES = ("renders", "frames_rendered", "frames_reused", "cpu_sec", "gpu_sec", "storage_bytes", "credits")


@click.command("usage")
@click.option("--workspace", "workspace_id", default=None, metavar="ID",
              help="One workspace (default: every workspace, one row each).")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]), default=None, metavar="YYYY-MM-DD",
              help="The first day counted (UTC); default: 29 days before today.")
@click.option("--until", type=click.DateTime(formats=["%Y-%m-%d"]), default=None, metavar="YYYY-MM-DD",
              help="The last day counted (UTC); default: today.")
@click.option("--by", "group_by", type=click.Choice(("workspace", "day", "video")), default=None,
              help="One row per workspace, day or video (default: per workspace without --workspace).")
@click.option("--json", "as_json", is_flag=True, help="The totals and rows as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="The rows as CSV, a header first.")
def usage_command(workspace_id: str | None, since: datetime | None, until: datetime | None, group_by: str | None,
                  as_json: bool, as_csv: bool) -> None:
    """What renders used on the farm's nodes (frames drawn and reused, CPU and GPU seconds, bytes
    stored) and the credits they took, over days since --since (UTC)."""
    from reelfarm.farm.services.errors import InvalidRequest

    if as_json and as_csv:
        raise click.UsageError("--json or --csv, not both")
    group_by = group_by or (None if workspace_id else "workspace")
    try:
        found = _services().usage.usage(workspace_id, since.date() if since else None, until.date() if until else None,
                                        group_by, operator=True)
    except InvalidRequest as exc:
        raise click.ClickException(str(exc)) from exc
    rows = found["groups"] if found["groups"] is not None else [{k: found[k] for k in FIGURES}]
    if as_json:
        click.echo(json.dumps(found, default=str))
    elif as_csv:
        click.echo(_csv(rows), nl=False)
    else:
        click.echo(_table(found, rows))


@click.command("set-allowance")
@click.option("--workspace", "workspace_id", required=True, metavar="ID")
@click.option("--cpu-sec", type=click.FloatRange(min=0), default=None,
              help="CPU seconds of the farm the workspace's renders may use a calendar month (UTC).")
@click.option("--none", "no_allowance", is_flag=True, help="No allowance (as every workspace has by default).")
@operator_option
@click.option("--json", "as_json", is_flag=True)
def set_allowance_command(workspace_id: str, cpu_sec: float | None, no_allowance: bool, operator: str | None,
                          as_json: bool) -> None:
    """Set a workspace's monthly compute allowance: a render (or variants) whose estimate would take
    its CPU seconds this month past it is refused with 402 allowance_exceeded. Prints the allowance
    and what is used this month. Recorded in the audit log (`admin audit`)."""
    from reelfarm.farm.services.allowance import used_this_month
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.shared.errors import NotFound

    if no_allowance == (cpu_sec is not None):
        raise click.UsageError("give --cpu-sec N or --none")
    services = _services()
    try:  # the entry with the change, or neither
        ws = services.workspace_controls.set_allowance(operator_name(operator), workspace_id, cpu_sec)
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    with services.engine.connect() as conn:
        used = used_this_month(conn, ws.id, services.clock.now())
    allowance = ws.cpu_allowance_sec
    text = (f"no allowance; {used:.1f} CPU s used this month" if allowance is None
            else f"allowance {allowance:g} CPU s a month; {used:.1f} used this month")
    if as_json:
        click.echo(json.dumps({"workspace_id": ws.id, "cpu_allowance_sec": allowance, "used_cpu_sec": used}))
    else:
        click.echo(text)


def _services() -> Any:
    """The services of a command, on the environment's settings (the database migrated first)."""
    from reelfarm.api.services import Services
    from reelfarm.shared.config import ConfigError, Settings
    from reelfarm.shared.db import COMMAND

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    return Services.from_settings(settings, run_migrations=True, kind=COMMAND)


def _csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def _table(found: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    head = f"{found['from']} to {found['to']}"
    lines = [head]
    key = next((k for k in ("workspace_id", "day", "video_id") if rows and k in rows[0]), None)
    for row in rows:
        label = row[key] if key else "total"
        lines.append(f"{label}\t{row['renders']} renders\t{row['frames_rendered']} frames rendered\t"
                     f"{row['frames_reused']} reused\t{row['cpu_sec']:.1f} CPU s\t{row['gpu_sec']:.1f} GPU s\t"
                     f"{row['storage_bytes']} bytes\t{row['credits']} credits")
    if key:
        lines.append(f"total\t{found['renders']} renders\t{found['frames_rendered']} frames rendered\t"
                     f"{found['frames_reused']} reused\t{found['cpu_sec']:.1f} CPU s\t{found['gpu_sec']:.1f} GPU s\t"
                     f"{found['storage_bytes']} bytes\t{found['credits']} credits")
    return "\n".join(lines)


COMMANDS = (usage_command, set_allowance_command)  # of `reelfarm admin` (reelfarm.api.cli)
