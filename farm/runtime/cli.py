"""The farm's commands: ``reelfarm worker``, ``reelfarm farm status``, ``reelfarm farm reap``,
``reelfarm node check`` (``reelfarm.farm.runtime.nodecheck``) and ``reelfarm node clear``, which
takes a node the farm set aside back into work (``reelfarm.farm.runtime.nodehealth``). The
operator's controls among them (``farm pause``/``resume``, ``node disable``/``enable``/``clear``,
and ``farm render ...``: ``reelfarm.farm.runtime.controlcli``) are recorded in the audit log
(``reelfarm.farm.services.audit``) when they take effect.

``reelfarm/cli.py`` adds ``COMMANDS`` to the ``reelfarm`` group; ``python -m reelfarm.farm.runtime.cli`` runs
them on their own.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from reelfarm.farm.runtime.controlcli import operated, operator_option, render_group
from reelfarm.farm.runtime.controlcli import record as record_entry
from reelfarm.farm.runtime.nodecheck import node_group
from reelfarm.farm.runtime.poolcli import pool_group
from reelfarm.farm.services.audit import operator_name
from reelfarm.renderer.spec import ENCODER_KINDS, RASTER_KINDS

EMBEDDED_NOTE = (
    "REELFARM_REDIS_URL is not set, so this installation runs in embedded mode: `reelfarm serve` "
    "runs renders itself, in a process pool beside the API, from the queue in its database. "
    "A separate worker is only needed in a farm: set REELFARM_REDIS_URL (and a shared database and "
    "storage) on the API and on every worker node."
)


@click.command("worker")
@click.option("--queues", default="render,jobs", show_default=True,
              help="Comma-separated queues to work, in priority order: render (on a GL node: render-gpu, "
                   "then render), render-gpu (GL nodes only), jobs.")
@click.option("--burst", is_flag=True, help="Quit once the queues are empty.")
@click.option("--name", help="Node name, kept across restarts (default: <host>-<n>, the lowest slot free on this "
                             "host). A node of the same name that is alive makes this one refuse to start.")
@click.option("--namespace", default="", help="Prefix of queue names and keys, to share one Redis.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), default=0, show_default=True,
              help="Serve Prometheus metrics on this port (0: off).")
@click.option("--raster", type=click.Choice(RASTER_KINDS), default=None,
              help="Rasterizer for chunks (default: REELFARM_RASTER, else auto: GL on an NVIDIA GPU, else CPU).")
@click.option("--encoder", type=click.Choice(ENCODER_KINDS), default=None,
              help="Encoder for chunks (default: REELFARM_ENCODER, else auto: NVENC where a session opens, else "
                   "x264); nvenc where it cannot be had refuses to start.")
@click.option("--tags", default="", envvar="REELFARM_NODE_TAGS", show_envvar=True,
              help="The node's tags, comma-separated words or name=value (region=eu,customer=acme): it takes the "
                   "chunks of the pools whose tags it all carries first. gpu and nvenc are added from its probe.")
def worker_command(queues: str, burst: bool, name: str | None, namespace: str, metrics_port: int,
                   raster: str | None, encoder: str | None, tags: str) -> None:
    """Run a render node: an RQ worker that heartbeats its capabilities into Redis."""
    from reelfarm.farm.runtime.worker import run_worker
    from reelfarm.renderer.backends import EncoderUnavailable

    settings = _farm_settings()
    names = [q.strip() for q in queues.split(",") if q.strip()]
    if not names:
        raise click.BadParameter("give at least one queue", param_hint="--queues")
    try:
        run_worker(settings, names, burst=burst, name=name, namespace=namespace, metrics_port=metrics_port,
                   raster=raster, encoder=encoder, tags=tags)
    except (ValueError, EncoderUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


def _farm_settings() -> Any:
    """Settings of a farm (``REELFARM_REDIS_URL`` set), with JSON logs on stderr; else a usage error."""
    from reelfarm.shared.config import ConfigError, Settings
    from reelfarm.shared.logs import configure_logging

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    if not settings.redis_url:
        raise click.ClickException(EMBEDDED_NOTE)
    configure_logging(settings.log_level)  # JSON lines on stderr (shared/logs.py)
    return settings


@click.group("farm")
def farm_group() -> None:
    """Inspect the render farm."""


@farm_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (with --watch: one line per round).")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@click.option("--watch", is_flag=True, help="Show it again every --interval seconds, until interrupted (Ctrl-C).")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, metavar="SECONDS",
              help="Seconds between rounds with --watch.")
def status_command(as_json: bool, namespace: str, watch: bool, interval: float) -> None:
    """Nodes, queue depths, and renders in flight with their frames per second."""
    from reelfarm.farm.runtime.status import collect_status
    from reelfarm.farm.runtime.statusview import typed_status
    from reelfarm.farm.runtime.wiring import make_progress, make_redis
    from reelfarm.shared.clock import SystemClock
    from reelfarm.shared.config import ConfigError, Settings
    from reelfarm.shared.db import COMMAND, process_engine

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    engine = process_engine(settings, COMMAND)
    try:
        redis = make_redis(settings.redis_url) if settings.redis_url else None
        progress = make_progress(settings, engine)
        while True:  # a source that cannot be read is named in the status, round after round
            status = typed_status(collect_status(engine, progress, SystemClock(), redis, namespace))
            _show(status, as_json, watch, interval)
            if not watch:
                return
            time.sleep(interval)
    except KeyboardInterrupt:  # the way out of --watch
        return
    finally:
        engine.dispose()


def _show(status: dict[str, Any], as_json: bool, watch: bool, interval: float) -> None:
    import shutil

    from reelfarm.farm.runtime.statusview import status_lines

    if as_json:
        click.echo(json.dumps(status, default=str) if watch else json.dumps(status, indent=2, default=str))
        return
    if watch and sys.stdout.isatty():
        click.clear()
    width = shutil.get_terminal_size((80, 24)).columns
    lines = status_lines(status, width)
    if watch:
        lines = [f"{time.strftime('%H:%M:%S')}, every {interval:g} s (Ctrl-C stops)", *lines, ""]
    click.echo("\n".join(lines))


@farm_group.command("pause")
@click.option("--reason", default="", help="Why, for whoever reads `farm status`.")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@operator_option
@click.option("--json", "as_json", is_flag=True)
def pause_command(reason: str, namespace: str, operator: str | None, as_json: bool) -> None:
    """Stop dispatching render chunks farm-wide (chunks running finish; nothing new starts) until
    `reelfarm farm resume`; renders keep being accepted and wait their turn."""
    from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
    from reelfarm.farm.runtime.wiring import make_redis

    settings = _farm_settings()
    dispatcher = Dispatcher(make_redis(settings.redis_url), namespace, shares=Shares(None))
    before = dispatcher.paused()
    record = dispatcher.pause(operator_name(operator), reason)
    if before is None:
        with operated(namespace, settings) as op:
            record_entry(op, operator, "farm.pause", "farm", reason=reason)
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record["at"]))
    click.echo(json.dumps(record) if as_json else f"dispatch paused since {at} by {record['by']}"
               + (f": {record['reason']}" if record["reason"] else ""))


@farm_group.command("resume")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@operator_option
@click.option("--json", "as_json", is_flag=True)
def resume_command(namespace: str, operator: str | None, as_json: bool) -> None:
    """Dispatch render chunks again after `reelfarm farm pause`."""
    from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
    from reelfarm.farm.runtime.wiring import make_redis

    settings = _farm_settings()
    resumed = Dispatcher(make_redis(settings.redis_url), namespace, shares=Shares(None)).resume()
    if resumed:
        with operated(namespace, settings) as op:
            record_entry(op, operator, "farm.resume", "farm")
    click.echo(json.dumps({"resumed": resumed}) if as_json else
               ("dispatch resumed" if resumed else "dispatch was not paused"))


@farm_group.command("reap")
@click.option("--every", type=float, default=0.0, help="Repeat every this many seconds, until stopped.")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one line per round).")
def reap_command(every: float, namespace: str, as_json: bool) -> None:
    """Repair the farm without a render node: hand back dead nodes' jobs, enqueue again what Redis
    lost, fail and refund renders and jobs stalled past their bound."""
    import dataclasses
    import time

    from reelfarm.farm.runtime.context import configure
    from reelfarm.farm.runtime.maintenance import HANDBACK, REPAIR, Always, farm_round, rq_maintenance, rq_repair
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.runtime.wiring import make_redis, make_task_context
    from reelfarm.shared.db import COMMAND

    settings = _farm_settings()
    queue = RQQueue(make_redis(settings.redis_url), namespace=namespace)
    context = make_task_context(settings, kind=COMMAND)
    configure(context)
    try:
        if every <= 0:
            try:
                result = farm_round(queue, Always((HANDBACK, REPAIR)), rq_repair(queue))
            except Exception as exc:
                raise click.ClickException(f"cannot repair the farm: {exc}") from exc
            _print_round(dataclasses.asdict(result) if result else {}, as_json)
            return
        maintenance = rq_maintenance(queue, owner="reelfarm farm reap")
        while True:
            result = maintenance.run_once()
            if result is not None:
                _print_round(dataclasses.asdict(result), as_json)
            time.sleep(every)
    finally:
        context.engine.dispose()


def _print_round(result: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result))
        return
    click.echo(f"recovered {len(result.get('recovered', []))} orphaned job(s), enqueued again "
               f"{len(result.get('enqueued', []))} lost job(s), reaped {len(result.get('reaped_renders', []))} "
               f"render(s) and {len(result.get('reaped_jobs', []))} job(s)")


@node_group.command("clear")
@click.argument("name")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@operator_option
def clear_command(name: str, namespace: str, operator: str | None) -> None:
    """Take node NAME, set aside for failing chunks, back into work now (its count starts again).

    Fix what made it fail first (`reelfarm farm status` and `reelfarm node check` say why).
    """
    from reelfarm.farm.runtime.nodehealth import NodeHealth
    from reelfarm.farm.runtime.nodes import NodeRegistry
    from reelfarm.farm.runtime.wiring import make_redis

    settings = _farm_settings()
    try:
        before = NodeHealth(NodeRegistry(make_redis(settings.redis_url), namespace)).clear(name)
    except Exception as exc:
        raise click.ClickException(f"cannot reach the farm's Redis: {exc}") from exc
    if before is None:
        raise click.ClickException(f"the farm knows no node {name!r} (namespace {namespace!r}); "
                                   "`reelfarm farm status` lists its nodes")
    with operated(namespace, settings) as op:
        record_entry(op, operator, "node.clear", "node", name, failure=before.failure)
    if before.set_aside(time.time()):
        click.echo(f"node {name} takes work again (it was set aside: {before.failure})")
    else:
        click.echo(f"node {name} was not set aside; its count of failures in a row is back at 0")


@node_group.command("disable")
@click.argument("name")
@click.option("--reason", default="", help="Why, for whoever reads `farm status`.")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@operator_option
def disable_command(name: str, reason: str, namespace: str, operator: str | None) -> None:
    """Take node NAME out of work: it finishes the chunk it has and takes nothing new, across its
    restarts, until `reelfarm node enable NAME` (to drain a node before stopping it, or to keep a
    suspect one idle)."""
    from reelfarm.farm.runtime.nodes import NodeRegistry
    from reelfarm.farm.runtime.wiring import make_redis

    settings = _farm_settings()
    registry = NodeRegistry(make_redis(settings.redis_url), namespace)
    if not registry.known(name):
        raise click.ClickException(f"the farm knows no node {name!r} (namespace {namespace!r}); "
                                   "`reelfarm farm status` lists its nodes")
    before = registry.disabled(name)
    record = registry.disable(name, operator_name(operator), reason)
    if before is None:
        with operated(namespace, settings) as op:
            record_entry(op, operator, "node.disable", "node", name, reason=reason)
    click.echo(f"node {name} takes no new work (disabled by {record['by']}"
               + (f": {record['reason']}" if record["reason"] else "") + "); it finishes the chunk it has")


@node_group.command("enable")
@click.argument("name")
@click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")
@operator_option
def enable_command(name: str, namespace: str, operator: str | None) -> None:
    """Take node NAME, disabled by `reelfarm node disable`, back into work."""
    from reelfarm.farm.runtime.nodes import NodeRegistry
    from reelfarm.farm.runtime.wiring import make_redis

    settings = _farm_settings()
    enabled = NodeRegistry(make_redis(settings.redis_url), namespace).enable(name)
    if enabled:
        with operated(namespace, settings) as op:
            record_entry(op, operator, "node.enable", "node", name)
    click.echo(f"node {name} takes work again" if enabled else f"node {name} was not disabled")


farm_group.add_command(render_group)
farm_group.add_command(pool_group)
COMMANDS = (worker_command, farm_group, node_group)


@click.group()
def _main() -> None:
    """reelfarm farm commands."""


for _command in COMMANDS:
    _main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
