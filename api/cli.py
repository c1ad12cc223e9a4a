"""Operator commands: `reelfarm serve`, `reelfarm migrate` and `reelfarm admin ...`."""
from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from reelfarm.api.server import DRAIN_SEC, GRACEFUL_SEC, THREADS
from reelfarm.farm.runtime.controlcli import operator_option
from reelfarm.shared import plans

if TYPE_CHECKING:
    from reelfarm.shared.workspaces import FirstWorkspace

log = logging.getLogger("reelfarm.api")

PLANS = plans.NAMES
DEV_WORKSPACE = "dev"
DEV_CREDITS = 100
DEV_OWNER = "owner@localhost"  # the first console user: an owner and operator of `dev`
FARM_STOP_MARGIN_SEC = 1.0
CONTROL_SOCKET = "gunicorn.ctl"  # in the data folder
UNIX_PATH_MAX = 107  # bytes of a Unix socket's path (sun_path, less its NUL) on Linux  # for handing back tasks still running, before the worker's own deadline


def _settings() -> Any:
    from reelfarm.shared.config import ConfigError, Settings

    try:
        return Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc


def _services(migrate: bool = True, settings: Any = None, threads: int = 0) -> Any:
    """The services of a command (of an API worker serving ``threads`` requests at a time when given)."""
    from reelfarm.api.services import Services
    from reelfarm.shared.db import API, COMMAND

    kind = {"kind": API, "threads": threads} if threads else {"kind": COMMAND}
    return Services.from_settings(settings or _settings(), run_migrations=migrate, **kind)


def _served_settings(host: str, port: int) -> Any:
    """The settings of a server on ``host:port``: without REELFARM_PUBLIC_URL, the URLs it hands
    out (downloads, stills, posters, sign-in links) lead to the address it listens on."""
    import dataclasses

    from reelfarm.shared.config import listen_url

    settings = _settings()
    if settings.public_url_configured:
        return settings
    return dataclasses.replace(settings, public_url=listen_url(host, port))


def _emit(as_json: bool, data: Any, text: str) -> None:
    click.echo(json.dumps(data, default=str) if as_json else text)


def make_serve_command(create_app: Callable[..., Any]) -> click.Command:
    """`reelfarm serve` over the app `create_app` builds: the composition root (``reelfarm/serve.py``)
    passes its factory, which registers the console beside the API."""

    @click.command("serve")
    @click.option("--host", default="127.0.0.1", show_default=True, envvar="REELFARM_HOST", show_envvar=True)
    @click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535),
                  envvar="REELFARM_PORT", show_envvar=True)
    @click.option("--workers", default=2, show_default=True, type=int, help="gunicorn worker processes")
    @click.option("--threads", type=click.IntRange(min=1), default=THREADS, show_default=True,
                  envvar="REELFARM_THREADS", show_envvar=True,
                  help="Request threads of each worker: requests that wait (on a database that does not answer, "
                       "a slow upload or download) hold one each. CPU work is no faster with more: Python runs "
                       "one thread of a process at a time.")
    @click.option("--migrate/--no-migrate", default=True, show_default=True,
                  help="Bring the database schema up to date first (a farm may run `reelfarm migrate` apart).")
    @click.option("--drain-sec", type=click.FloatRange(min=0), default=DRAIN_SEC, show_default=True,
                  envvar="REELFARM_DRAIN_SEC", show_envvar=True,
                  help="On SIGTERM, /readyz answers 503 and the server keeps serving this long, closing each "
                       "connection after its answer, before it stops accepting connections.")
    @click.option("--graceful-sec", type=click.IntRange(min=1), default=GRACEFUL_SEC, show_default=True,
                  envvar="REELFARM_GRACEFUL_SEC", show_envvar=True,
                  help="From SIGTERM to exit, the drain included; a request still running then is logged and cut.")
    def serve_command(host: str, port: int, workers: int, threads: int, migrate: bool, drain_sec: float,
                      graceful_sec: int) -> None:
        """Serve the API with gunicorn (migrations run first unless --no-migrate)."""
        from reelfarm.api.server import STOP_MARGIN_SEC

        if drain_sec + STOP_MARGIN_SEC >= graceful_sec:
            raise click.BadParameter(f"the drain ({drain_sec:g} s) must end more than {STOP_MARGIN_SEC} s before "
                                     f"the graceful timeout ({graceful_sec} s)", param_hint="--drain-sec")
        _metrics_dir()  # before anything imports prometheus_client, and before gunicorn forks
        from reelfarm.api.server import KEEPALIVE_SEC, WORKER_CLASS, Server
        from reelfarm.shared.logs import configure_logging

        services = _services(migrate=migrate, settings=_served_settings(host, port))
        configure_logging(services.settings.log_level)
        _first_start(services)
        services.release_connections()  # the master needs no connection while it serves, only its workers
        apps: list[Any] = []  # in a worker, the app it serves

        def load() -> Any:
            # Runs in each forked worker: its own engine, and its own embedded executor.
            app = create_app(services.settings, _services(settings=services.settings, threads=threads),
                             start_farm=True)
            apps.append(app)
            return app

        def stop_farm(_server: Any, worker: Any) -> None:
            _stop_farm(apps, worker)

        Server({
            "bind": f"{host}:{port}",
            "workers": workers,
            "worker_class": WORKER_CLASS,  # gthread, refusing in the error envelope and draining on SIGTERM
            "keepalive": KEEPALIVE_SEC,
            "threads": threads,
            "accesslog": "-",
            "logger_class": "reelfarm.api.accesslog.JsonGunicornLogger",
            "loglevel": services.settings.log_level.lower(),
            "timeout": 120,
            "graceful_timeout": graceful_sec,
            "child_exit": _forget_worker_metrics,
            "worker_exit": stop_farm,
            **_control_socket(services.settings.data_dir),
        }, load, drain_sec=drain_sec).run()

    return serve_command


@click.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date, then exit (a farm's one-shot migration job)."""
    from alembic.runtime.migration import MigrationContext

    from reelfarm.shared.db import COMMAND, migrate, process_engine
    from reelfarm.shared.logs import configure_logging

    settings = _settings()
    configure_logging(settings.log_level)
    engine = process_engine(settings, COMMAND)
    try:
        migrate(engine)
        with engine.connect() as conn:
            revision = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    click.echo(f"database schema at revision {revision}")


def _control_socket(data_dir: Any) -> dict[str, Any]:
    """gunicorn's control socket (``gunicornc``) in this server's data folder, not gunicorn's one
    path in the home folder, which every server on the machine shares and a stopping server
    removes; none where the path is too long for a Unix socket."""
    path = data_dir / CONTROL_SOCKET
    if len(os.fsencode(path)) > UNIX_PATH_MAX:
        log.info("no gunicorn control socket: %s is longer than a Unix socket path may be", path)
        return {"control_socket_disable": True}
    return {"control_socket": str(path)}


def _metrics_dir() -> None:
    """Put prometheus-client in multiprocess mode, on a directory of this server's own, so that
    /metrics adds up every gunicorn worker (prometheus-client reads this variable itself)."""
    path = tempfile.mkdtemp(prefix="reelfarm-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    master = os.getpid()

    def remove() -> None:
        if os.getpid() == master:  # not in the forked workers, which inherit this hook
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)


def _stop_farm(apps: list[Any], worker: Any) -> None:
    """As a worker exits: stop its share of the farm. The embedded executor lets running tasks
    finish until the master's deadline (stopped by SIGTERM: the graceful timeout, less a margin)
    and hands back those still running then; stopped otherwise (SIGINT, SIGQUIT), it hands them
    back at once. Either way the next start runs them."""
    import math
    import time

    stop_by = getattr(worker, "_stop_by", math.inf)  # EnvelopeWorker's, set by SIGTERM
    timeout = max(0.0, stop_by - time.monotonic() - FARM_STOP_MARGIN_SEC) if math.isfinite(stop_by) else 0.0
    for app in apps:
        app.extensions["reelfarm"].farm.stop(timeout)


def _forget_worker_metrics(_server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def is_embedded(settings: Any) -> bool:
    """The embedded default (SQLite and no Redis), where a first start makes a workspace to try."""
    return settings.redis_url is None and settings.database_url.startswith("sqlite")


def create_first_workspace(services: Any, *, name: str = DEV_WORKSPACE, plan: str = "pro",
                           credits: int = DEV_CREDITS, owner: str = DEV_OWNER) -> FirstWorkspace | None:
    """On a database with no workspace, create one with an API key and an owner and operator with a
    sign-in link (a day, once); None where a workspace exists (``WorkspaceService.create_first``:
    processes doing this at once create one)."""
    from reelfarm.renderer.tokens import NEUTRAL_BRAND

    base = services.settings.public_url.rstrip("/")  # where this server is reached (serve sets it)
    return services.workspaces.create_first(name, plan, NEUTRAL_BRAND, credits, owner, public_url=base)


def _first_start(services: Any) -> None:
    """The embedded default's first start creates the workspace `dev` and prints its key and a
    sign-in link once, to the terminal of the person trying it. A farm (PostgreSQL or Redis)
    creates nothing and prints no secret: its output goes to a log pipeline; ``reelfarm admin
    init`` makes the first workspace there."""
    if not is_embedded(services.settings):
        if not services.workspaces.any():
            log.info("the database has no workspace yet; create the first with `reelfarm admin init`")
        return
    first = create_first_workspace(services)
    if first is None:
        return
    base = services.settings.public_url.rstrip("/")
    ws = first.workspace
    click.echo(f"Created workspace '{ws.name}' (plan {ws.plan}, {ws.credits} credits).")
    click.echo(f"API key (shown once, keep it): {first.key}")
    click.echo(f"Try: curl -H 'Authorization: Bearer {first.key}' {base}/api/v1/stories")
    click.echo(f"Console sign-in link for {first.owner} (works once, for a day): {first.link}")


@click.group("admin")
def admin_group() -> None:
    """Workspaces, keys and credits (operators only)."""


@admin_group.command("init")
@click.option("--name", default=DEV_WORKSPACE, show_default=True)
@click.option("--plan", type=click.Choice(PLANS), default="pro", show_default=True)
@click.option("--credits", "credits_", type=click.IntRange(min=0), default=DEV_CREDITS, show_default=True)
@click.option("--owner", default=DEV_OWNER, show_default=True, help="The email of the first console user.")
@click.option("--json", "as_json", is_flag=True)
def init(name: str, plan: str, credits_: int, owner: str, as_json: bool) -> None:
    """Create the first workspace, its API key and its owner's sign-in link, on a database that has
    no workspace; prints the key and the link once (to this terminal, not a server's log)."""
    services = _services()
    first = create_first_workspace(services, name=name, plan=plan, credits=credits_, owner=owner)
    if first is None:
        raise click.ClickException("the database already has a workspace; add others with "
                                   "`reelfarm admin create-workspace`")
    ws, link = first.workspace, first.link
    _emit(as_json, {"id": ws.id, "name": ws.name, "plan": ws.plan, "credits": ws.credits,
                    "key": first.key, "owner": first.owner, "link": link},
          f"Created workspace '{ws.name}' ({ws.id}, plan {ws.plan}, {ws.credits} credits).\n"
          f"API key (shown once, keep it): {first.key}\n"
          f"Console sign-in link for {first.owner} (works once, for a day): {link}")


@admin_group.command("create-workspace")
@click.argument("name")
@click.option("--plan", type=click.Choice(PLANS), required=True)
@click.option("--credits", "credits_", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def create_workspace(name: str, plan: str, credits_: int, as_json: bool) -> None:
    """Create a workspace with the neutral brand kit; prints its id."""
    from reelfarm.renderer.tokens import NEUTRAL_BRAND

    ws = _services().workspaces.create(name, plan, NEUTRAL_BRAND, credits=credits_)
    _emit(as_json, {"id": ws.id, "name": ws.name, "plan": ws.plan, "credits": ws.credits}, ws.id)


@admin_group.command("create-key")
@click.argument("workspace_id")
@click.option("--name", required=True)
@click.option("--expires-in-days", type=click.IntRange(min=1), default=None)
@click.option("--json", "as_json", is_flag=True)
def create_key(workspace_id: str, name: str, expires_in_days: int | None, as_json: bool) -> None:
    """Create an API key; the key is printed once and never stored. A workspace whose plan has no
    API gets its key all the same (for when it moves to one), with a warning that it answers 403."""
    from reelfarm.shared.errors import NotFound

    services = _services()
    try:
        record, key = services.api_keys.create(workspace_id, name, timedelta(days=expires_in_days)
                                               if expires_in_days else None)
        plan = services.workspaces.get(workspace_id).plan
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    if not plans.PLANS[plan].api:
        click.echo(f"warning: workspace {workspace_id} is on plan {plan}, which has no API: this key is answered "
                   f"403 plan_without_api until the workspace moves to a plan with one "
                   f"(`reelfarm admin set-plan {workspace_id} pro`)", err=True)
    _emit(as_json, {"id": record.id, "key": key, "prefix": record.prefix, "expires_at": record.expires_at,
                    "plan": plan, "api": plans.PLANS[plan].api}, key)


@admin_group.command("set-plan")
@click.argument("workspace_id")
@click.argument("plan", type=click.Choice(PLANS))
@operator_option
@click.option("--json", "as_json", is_flag=True)
def set_plan(workspace_id: str, plan: str, operator: str | None, as_json: bool) -> None:
    """Move a workspace to another plan: its API access, rate limit, farm share (unless overridden by
    `admin share`) and media quota follow at once; prints what the plan allows. Recorded in the
    audit log (`admin audit`) with the plan it had."""
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.shared.errors import NotFound

    services = _services()
    try:  # the entry with the change, or neither
        ws = services.workspace_controls.set_plan(operator_name(operator), workspace_id, plan)
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    found = plans.PLANS[ws.plan]
    _emit(as_json, {"workspace_id": ws.id, "plan": ws.plan, "api": found.api, "rate_limit": found.rate_limit,
                    "locales": found.locales},
          f"plan {ws.plan}: API {'yes' if found.api else 'no'}"
          + (f", {found.rate_limit} requests a minute a key" if found.rate_limit else ""))


@admin_group.command("revoke-key")
@click.argument("key_id")
@click.option("--json", "as_json", is_flag=True)
def revoke_key(key_id: str, as_json: bool) -> None:
    """Revoke a key; the next request with it gets 401."""
    from reelfarm.shared.errors import NotFound

    try:
        record = _services().api_keys.revoke_any(key_id)
    except NotFound as exc:
        raise click.ClickException(f"no key {key_id}") from exc
    _emit(as_json, {"id": record.id, "revoked_at": record.revoked_at}, f"revoked {record.id}")


@admin_group.command("add-credits")
@click.argument("workspace_id")
@click.argument("amount", type=int)
@click.option("--json", "as_json", is_flag=True)
def add_credits(workspace_id: str, amount: int, as_json: bool) -> None:
    """Add (or, negative, remove) credits; prints the new balance."""
    from reelfarm.shared.errors import InsufficientCredits, NotFound

    try:
        balance = _services().workspaces.add_credits(workspace_id, amount)
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    except InsufficientCredits as exc:
        raise click.ClickException(str(exc)) from exc
    _emit(as_json, {"workspace_id": workspace_id, "credits": balance}, str(balance))


@admin_group.command("share")
@click.argument("workspace_id")
@click.option("--weight", type=click.FloatRange(min=0.01), default=None, help="share against other workspaces")
@click.option("--cap", type=click.IntRange(min=1), default=None, help="chunks running at once, at most")
@click.option("--plan-default", is_flag=True, help="back to the plan's weight and cap")
@operator_option
@click.option("--json", "as_json", is_flag=True)
def share(workspace_id: str, weight: float | None, cap: int | None, plan_default: bool, operator: str | None,
          as_json: bool) -> None:
    """Set a workspace's share of the render farm (weight and cap); prints the share in force.
    Recorded in the audit log (`admin audit`)."""
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.farm.services.fairness import plan_share
    from reelfarm.shared.errors import NotFound

    if plan_default and (weight is not None or cap is not None):
        raise click.UsageError("--plan-default takes no --weight or --cap")
    services = _services()
    try:  # the entry with the change, or neither
        ws = services.workspace_controls.set_share(operator_name(operator), workspace_id, weight=weight, cap=cap,
                                                   plan_default=plan_default)
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    found = plan_share(ws.plan, ws.dispatch_weight, ws.dispatch_cap)
    _emit(as_json, {"workspace_id": ws.id, "plan": ws.plan, "weight": found.weight, "cap": found.cap,
                    "overridden": ws.dispatch_weight is not None or ws.dispatch_cap is not None},
          f"weight {found.weight:g}, cap {found.cap}")


@admin_group.command("list-keys")
@click.argument("workspace_id")
@click.option("--json", "as_json", is_flag=True)
def list_keys(workspace_id: str, as_json: bool) -> None:
    """List a workspace's keys (prefixes only; keys are never stored)."""
    records = _services().api_keys.list(workspace_id)
    rows = [{"id": r.id, "name": r.name, "prefix": r.prefix, "created_at": r.created_at,
             "expires_at": r.expires_at, "revoked_at": r.revoked_at, "last_used_at": r.last_used_at}
            for r in records]
    text = "\n".join(f"{r['id']}\t{r['prefix']}…\t{r['name']}\t"
                     f"{'revoked' if r['revoked_at'] else 'active'}" for r in rows)
    _emit(as_json, rows, text or "no keys")


@admin_group.command("create-user")
@click.argument("email")
@click.option("--workspace", "workspace_id", required=True, help="The workspace id the person belongs to.")
@click.option("--role", type=click.Choice(("owner", "member")), default="member", show_default=True)
@click.option("--operator", is_flag=True, help="May see the console's farm pages.")
@click.option("--json", "as_json", is_flag=True)
def create_user(email: str, workspace_id: str, role: str, operator: bool, as_json: bool) -> None:
    """Add a console user; prints their one-time sign-in link (valid a day) to set a password."""
    from reelfarm.shared.errors import NotFound

    services = _services()
    try:
        made = services.accounts.create_user(workspace_id, email, role=role, is_operator=operator,
                                             public_url=services.settings.public_url)
    except NotFound as exc:
        raise click.ClickException(f"no workspace {workspace_id}") from exc
    except ValueError as exc:  # EmailTaken is one
        raise click.ClickException(f"cannot add {email}: {exc}") from exc
    user = made.user
    _emit(as_json, {"id": user.id, "email": user.email, "role": user.role, "operator": user.is_operator,
                    "link": made.link}, made.link)


@admin_group.command("sign-in-link")
@click.argument("email")
@click.option("--json", "as_json", is_flag=True)
def sign_in_link(email: str, as_json: bool) -> None:
    """A new one-time sign-in link (valid a day) for a console user who forgot their password: it
    lets them set a new one. Earlier links and the current password keep working until it is used."""
    services = _services()
    made = services.accounts.new_link(email, public_url=services.settings.public_url)
    if made is None:
        raise click.ClickException(f"no console user has the email address {email}")
    _emit(as_json, {"id": made.user.id, "email": made.user.email, "link": made.link}, made.link)


@admin_group.command("audit")
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=50, show_default=True)
@click.option("--action", default=None, help="One control (render.suspend), or every control of a kind (render.).")
@click.option("--target", default=None, metavar="KIND[:ID]",
              help="What it acted on: workspace, node, farm or render, and its id (render:ID).")
@click.option("--workspace", "workspace_id", default=None, metavar="ID", help="Controls concerning this workspace.")
@click.option("--actor", default=None, help="Controls by this operator.")
@click.option("--json", "as_json", is_flag=True)
def audit(limit: int, action: str | None, target: str | None, workspace_id: str | None, actor: str | None,
          as_json: bool) -> None:
    """What operators did, newest first: when, who, which control, on what, with its details."""
    kind, _, target_id = (target or "").partition(":")
    entries = _services().audit_log.entries(limit, action=action, target_kind=kind or None,
                                         target_id=target_id or None, workspace_id=workspace_id, actor=actor)
    rows = [e.as_dict() for e in entries]
    text = "\n".join(f"{r['at']}\t{r['actor']}\t{r['action']}\t{r['target_kind']}"
                     f"{':' + r['target_id'] if r['target_id'] else ''}\t{json.dumps(r['details'])}" for r in rows)
    _emit(as_json, rows, text or "no entries")


COMMANDS = (migrate_command, admin_group)  # `serve`: reelfarm/serve.py


def _add_backup_commands() -> None:
    from reelfarm.api.backupcli import COMMANDS as BACKUP_COMMANDS
    from reelfarm.api.usagecli import COMMANDS as USAGE_COMMANDS

    for command in (*BACKUP_COMMANDS, *USAGE_COMMANDS):
        admin_group.add_command(command)


_add_backup_commands()
