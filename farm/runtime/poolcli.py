"""The operator's pools command, ``reelfarm farm pool set|clear|show``: which pools of render nodes a
workspace's renders are limited to (``reelfarm.farm.services.pools``).

``set`` and ``clear`` are recorded in the audit log (``workspace.set_pools``, in the change's own
transaction: ``reelfarm.farm.services.workspacecontrols``); the operator API does the same at
``/api/v1/operator/workspaces/<id>/pools``. A render asked for afterwards runs in the pool it names
(one of these) or, naming none, in the first; renders already asked for keep the pool they were
asked in. On a farm, ``show`` also lists the live nodes that serve each pool.
"""
from __future__ import annotations

import json
from typing import Any

import click

from reelfarm.farm.runtime.controlcli import operated, operator_option

_WORKSPACE = click.option("--workspace", "workspace_id", required=True, metavar="ID",
                          help="The workspace whose renders are limited.")
_NAMESPACE = click.option("--namespace", default="", help="Prefix of queue names and keys (as given to the workers).")


@click.group("pool")
def pool_group() -> None:
    """Limit a workspace's renders to pools of render nodes (nodes tagged with `reelfarm worker
    --tags`); each change is recorded in the audit log (`reelfarm admin audit`)."""


def _set(workspace_id: str, pools: list[str] | None, namespace: str, operator: str | None) -> dict[str, Any]:
    from reelfarm.farm.services.audit import operator_name
    from reelfarm.farm.services.workspacecontrols import WorkspaceControls
    from reelfarm.shared.clock import SystemClock
    from reelfarm.shared.errors import NotFound

    with operated(namespace) as op:
        try:
            found = WorkspaceControls(op.engine, SystemClock()).set_pools(operator_name(operator), workspace_id, pools)
        except NotFound as exc:
            raise click.ClickException(f"no workspace {workspace_id}") from exc
        return _shown(op, found.id, found.pools)


def _shown(op: Any, workspace_id: str, pools: list[str] | None) -> dict[str, Any]:
    """The workspace's pools and, on a farm, the live nodes that serve each (None in the embedded mode)."""
    from reelfarm.farm.runtime.nodes import NodeRegistry
    from reelfarm.farm.services.pools import serves

    shown: dict[str, Any] = {"workspace_id": workspace_id, "pools": list(pools or []), "nodes": None}
    if op.redis is not None:
        disabled = {n.decode() if isinstance(n, bytes) else n
                    for n in op.redis.hkeys(f"reelfarm:{op.namespace}nodes:disabled")}
        live = [n for n in NodeRegistry(op.redis, op.namespace).live_nodes()
                if not n.get("set_aside") and n["name"] not in disabled]
        shown["nodes"] = {p: sorted(n["name"] for n in live if serves(str(n.get("tags") or "").split(","), p))
                          for p in shown["pools"]}
    return shown


def _echo(shown: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(shown))
        return
    if not shown["pools"]:
        click.echo(f"workspace {shown['workspace_id']}: any node")
        return
    for i, pool in enumerate(shown["pools"]):
        served = "" if shown["nodes"] is None else \
            f" ({', '.join(shown['nodes'][pool]) or 'no live node serves it'})"
        click.echo(f"workspace {shown['workspace_id']}: {pool}{' (default)' if i == 0 else ''}{served}")


@pool_group.command("set")
@_WORKSPACE
@click.option("--pool", "pools", multiple=True, required=True, metavar="TAGS",
              help="A pool: tags comma-separated (region=eu,gpu); repeat for more. The first is the default "
                   "of a render that names none.")
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def set_command(workspace_id: str, pools: tuple[str, ...], namespace: str, operator: str | None,
                as_json: bool) -> None:
    """Limit the workspace's renders to the pools given: a render names one of them (its `pool`),
    else runs in the first, and its chunks go only to nodes carrying every tag of its pool.
    Renders already asked for keep theirs."""
    from reelfarm.farm.services.pools import PoolError, parse_pools

    try:
        parsed = parse_pools(pools)
    except PoolError as exc:
        raise click.BadParameter("; ".join(exc.problems), param_hint="--pool") from exc
    _echo(_set(workspace_id, parsed, namespace, operator), as_json)


@pool_group.command("clear")
@_WORKSPACE
@_NAMESPACE
@operator_option
@click.option("--json", "as_json", is_flag=True)
def clear_command(workspace_id: str, namespace: str, operator: str | None, as_json: bool) -> None:
    """Let the workspace's renders run on any node again (and ask for any pool)."""
    _echo(_set(workspace_id, None, namespace, operator), as_json)


@pool_group.command("show")
@_WORKSPACE
@_NAMESPACE
@click.option("--json", "as_json", is_flag=True)
def show_command(workspace_id: str, namespace: str, as_json: bool) -> None:
    """The pools the workspace's renders are limited to, its default first, and on a farm the live
    nodes that serve each."""
    from reelfarm.shared.errors import NotFound
    from reelfarm.shared.repos.workspaces import get_workspace

    with operated(namespace) as op:
        with op.engine.connect() as conn:
            try:
                found = get_workspace(conn, workspace_id)
            except NotFound as exc:
                raise click.ClickException(f"no workspace {workspace_id}") from exc
        _echo(_shown(op, found.id, found.pools), as_json)
