"""The operator's render controls, ``reelfarm farm render suspend|resume|priority|requeue``, and
its reading of one render's log lines from every node (``reelfarm farm render logs``)
(``reelfarm.farm.services.rendercontrols``), and what every operator's command shares: who runs
it (``--operator``) and the audit log it writes to (``reelfarm.farm.services.audit``).

On a farm (``REELFARM_REDIS_URL`` set) a control acts on Redis's waiting queues and is seen by
the dispatcher within its next round; in the embedded mode it acts on the database's queue,
which ``reelfarm serve`` claims from every half second.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import click

from reelfarm.farm.services.fairness import PRIORITIES
from reelfarm.shared.statuses import RENDER_STATUSES

OPERATOR_HELP = "Who you are, for the audit log (default: REELFARM_OPERATOR, else user@host)."


def operator_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--operator NAME`` (``REELFARM_OPERATOR``): the actor of the audit log's entry."""
    return click.option("--operator", "operator", envvar="REELFARM_OPERATOR", show_envvar=True, default=None,
                        metavar="NAME", help=OPERATOR_HELP)(command)


def _settings() -> Any:
    from reelfarm.shared.config import ConfigError, Settings

    try:
        return Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc


@dataclass
class Operated:
    """What a control command works with: the database, Redis where there is a farm, the audit log."""

    engine: Any
    redis: Any
    namespace: str
    audit: Any


@contextmanager
def operated(namespace: str = "", settings: Any = None) -> Iterator[Operated]:
    """The database, the farm's Redis (None in the embedded mode) and the audit log, for one command."""
    from reelfarm.farm.runtime.wiring import make_redis
    from reelfarm.farm.services.audit import AuditLog
    from reelfarm.shared.clock import SystemClock
    from reelfarm.shared.db import COMMAND, process_engine

    settings = settings or _settings()
    engine = process_engine(settings, COMMAND)
    redis = make_redis(settings.redis_url) if settings.redis_url else None
    try:
        yield Operated(engine, redis, namespace, AuditLog(engine, SystemClock(), redis, namespace))
    finally:
        engine.dispose()


def record(operated_: Operated, actor: str | None, action: str, target_kind: str, target_id: str | None = None,
           workspace_id: str | None = None, **details: Any) -> None:
    """The audit log's entry of a control that took effect (kept in Redis if the database cannot take it)."""
    from reelfarm.farm.services.audit import AuditEntry, operator_name

    entry = operated_.audit.record(AuditEntry(operator_name(actor), action, target_kind, target_id, workspace_id,
                                              details))
    if operated_.audit.pending():
        click.echo(f"warning: the database cannot take the audit log's entry now; it is kept in Redis "
                   f"(entry {entry.id}) and written at the next operator's command", err=True)


def _controls(op: Operated) -> Any:
    from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
    from reelfarm.farm.runtime.embeddedholds import EmbeddedHolds
    from reelfarm.farm.runtime.renderholds import RedisHolds
    from reelfarm.farm.services.rendercontrols import RenderControls
    from reelfarm.shared.clock import SystemClock

    clock = SystemClock()
    if op.redis is None:
        return RenderControls(op.engine, clock, EmbeddedHolds(op.engine, clock), op.audit)
    holds = RedisHolds(Dispatcher(op.redis, op.namespace, shares=Shares(None)))
    return RenderControls(op.engine, clock, holds, op.audit, rq_id=lambda job_id: f"{op.namespace}{job_id}")


def _run(action: Callable[[Any, str], list[Any]], render_id: str | None, workspace_id: str | None,
         namespace: str, operator: str | None) -> list[Any]:
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.farm.services.errors import StateConflict
    from reelfarm.shared.errors import NotFound

    if (render_id is None) == (workspace_id is None):
        raise click.UsageError("name a render (RENDER_ID) or a workspace (--workspace ID), not both")
    with operated(namespace) as op:
        try:
            return action(_controls(op), operator_name(operator))
        except NotFound as exc:
            raise click.ClickException(f"no {exc.kind} {exc.id}") from exc
        except StateConflict as exc:
            raise click.ClickException(str(exc)) from exc


def _report(done: list[Any], as_json: bool, verb: Callable[[Any], str], unchanged: str, workspace_id: str | None,
            none: str) -> None:
    if as_json:
        click.echo(json.dumps([d.as_dict() for d in done]))
        return
    if not done and workspace_id is not None:
        click.echo(f"workspace {workspace_id} has no {none}")
    for d in done:
        click.echo(f"render {d.render_id}: {verb(d) if d.changed else unchanged}")


@click.group("render")
def render_group() -> None:
    """Suspend, resume, requeue or reprioritise renders on the farm (each recorded in the audit
    log: `reelfarm admin audit`)."""


_NAMESPACE = click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
_WORKSPACE = click.option("--workspace", "workspace_id", default=None, metavar="ID",
                          help="Every live render of this workspace instead of one render (no other workspace's).")


@render_group.command("suspend")
@click.argument("render_id", required=False)
@_WORKSPACE
@click.option("--reason", default="", help="Why, for the audit log and whoever reads the render.")
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def suspend_command(render_id: str | None, workspace_id: str | None, reason: str, namespace: str,
                    operator: str | None, as_json: bool) -> None:
    """Hold back RENDER_ID's chunks still waiting for their turn (or those of every live render of
    --workspace): none is dispatched until `reelfarm farm render resume`. Chunks already handed to
    a node or running finish. The render's API status says held_up "suspended" meanwhile, and it is
    not failed for waiting."""
    done = _run(lambda c, actor: c.suspend(actor, render_id, workspace_id, reason), render_id, workspace_id,
                namespace, operator)
    _report(done, as_json, lambda d: f"suspended ({d.chunks} chunk(s) held back)", "was suspended already",
            workspace_id, "live render")


@render_group.command("resume")
@click.argument("render_id", required=False)
@_WORKSPACE
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def resume_command(render_id: str | None, workspace_id: str | None, namespace: str, operator: str | None,
                   as_json: bool) -> None:
    """Put a suspended render's held-back chunks (or those of every suspended render of
    --workspace) back in line, where their arrival and priority place them."""
    done = _run(lambda c, actor: c.resume(actor, render_id, workspace_id), render_id, workspace_id, namespace,
                operator)
    _report(done, as_json, lambda d: f"resumed ({d.chunks} chunk(s) back in line)", "was not suspended",
            workspace_id, "suspended render")


@render_group.command("priority")
@click.argument("priority", type=click.Choice(PRIORITIES))
@click.argument("render_id", required=False)
@_WORKSPACE
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def priority_command(priority: str, render_id: str | None, workspace_id: str | None, namespace: str,
                     operator: str | None, as_json: bool) -> None:
    """Give RENDER_ID (or every live render of --workspace) PRIORITY in its workspace's line: low
    renders wait while a normal render of the workspace waits. Its chunks still waiting take it
    at the next dispatch round; those dispatched keep their place."""
    done = _run(lambda c, actor: c.set_priority(actor, priority, render_id, workspace_id), render_id, workspace_id,
                namespace, operator)
    _report(done, as_json, lambda d: f"priority {priority} ({d.chunks} chunk(s) waiting changed)",
            f"is {priority} already", workspace_id, "live render")


@render_group.command("requeue")
@click.argument("render_id")
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def requeue_command(render_id: str, namespace: str, operator: str | None, as_json: bool) -> None:
    """Start RENDER_ID again from its unfinished chunks: a failed render is queued again (free: its
    charge was refunded and is not taken again) and ends as any render does; a queued or running
    one whose work the queue lost or gave up on gets it back now, without waiting for the repair
    round. Chunks already stored are not drawn again."""
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.farm.services.errors import StateConflict
    from reelfarm.shared.errors import NotFound

    settings = _settings()
    with operated(namespace, settings) as op:
        enqueue = _enqueuer(op, settings)
        try:
            done = _controls(op).requeue(operator_name(operator), render_id, enqueue)
        except NotFound as exc:
            raise click.ClickException(f"no {exc.kind} {exc.id}") from exc
        except StateConflict as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(done.as_dict()))
    elif done.changed:
        click.echo(f"render {render_id}: requeued ({done.chunks} job(s) enqueued again"
                   + (", reopened from failed" if done.details.get("was") == "failed" else "") + ")")
    else:
        click.echo(f"render {render_id}: nothing to requeue (its work is waiting or running)")


@render_group.command("history")
@click.option("--workspace", "workspace_id", default=None, help="Only this workspace's renders.")
@click.option("--status", type=click.Choice(RENDER_STATUSES), default=None)
@click.option("--limit", type=click.IntRange(min=1, max=200), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def history_command(workspace_id: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """The farm's recent renders, newest first: outcome, time waiting for the first chunk and
    drawing, the nodes that worked on each and its retried tasks (``reelfarm.farm.services.renderhistory``)."""
    from reelfarm.farm.services.renderhistory import render_history, shown

    with operated() as op:
        found = render_history(op.engine, workspace_id=workspace_id, status=status, limit=limit)
    if as_json:
        click.echo(json.dumps(found))
        return
    for entry in found:
        click.echo(shown(entry))
    if not found:
        click.echo("no renders")


@render_group.command("logs")
@click.argument("render_id")
@_NAMESPACE
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the last N lines.")
@click.option("--json", "as_json", is_flag=True, help="The lines as the nodes wrote them, one JSON object each.")
def logs_command(render_id: str, namespace: str, limit: int | None, as_json: bool) -> None:
    """Every log line of RENDER_ID's work, from every node that worked on it, oldest first: time,
    level, node, task and message (``reelfarm.farm.runtime.renderlogs``; the last 2,000 lines,
    kept a week). In the embedded mode a render's lines are the server's own output."""
    from reelfarm.farm.runtime.renderlogs import render_log_lines, shown

    with operated(namespace) as op:
        if op.redis is None:
            raise click.ClickException("the embedded mode keeps no copy of a render's lines: they are in the "
                                       "output of `reelfarm serve` (search it for the render's id)")
        lines = render_log_lines(op.redis, op.namespace, render_id, limit)
    if not lines:
        raise click.ClickException(f"no lines of render {render_id} (unknown, or more than a week old)")
    for line in lines:
        click.echo(json.dumps(line) if as_json else shown(line))


def _enqueuer(op: Operated, settings: Any) -> Callable[[Any], list[str]]:
    """Puts a render's unfinished work back in the farm's queue (``reelfarm.farm.runtime.requeue``)."""
    from reelfarm.farm.runtime.embedded import EmbeddedQueue
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.runtime.requeue import requeue_render
    from reelfarm.farm.runtime.wiring import make_task_context
    from reelfarm.shared.clock import SystemClock

    queue = RQQueue(op.redis, namespace=op.namespace) if op.redis is not None else EmbeddedQueue(op.engine)
    ctx = make_task_context(settings, engine=op.engine, clock=SystemClock())

    def enqueue(render: Any) -> list[str]:
        ctx.progress.set_total(render.id, render.frames or 0)
        return requeue_render(ctx, queue, render)

    return enqueue

