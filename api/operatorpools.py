"""The operator API's pools of a workspace (``reelfarm farm pool show|set|clear`` over HTTP): which
pools of render nodes its renders are limited to (``reelfarm.farm.services.pools``).

- ``GET /workspaces/<id>/pools``: ``{"workspace_id", "pools"}``, its default first.
- ``PUT /workspaces/<id>/pools`` with ``{"pools": ["region=eu", "gpu,region=eu"]}``: limits it to
  those (each problem of the list in the one 400 envelope, code ``unknown_pool``).
- ``DELETE /workspaces/<id>/pools``: any node again.

A change is recorded in the audit log (``workspace.set_pools``, actor ``key:<name>``) in its own
transaction; an unknown workspace is a 404 and records nothing.
"""
from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from reelfarm.api.errors import NotFoundError, ValidationFailed
from reelfarm.api.operatorbase import _actor, _body, blp
from reelfarm.api.services import services
from reelfarm.farm.services.pools import PoolError, parse_pools
from reelfarm.shared.errors import NotFound


def _answer(workspace_id: str, pools: list[str] | None) -> Response:
    return jsonify({"workspace_id": workspace_id, "pools": list(pools or [])})


def _pools(body: dict[str, Any]) -> list[str]:
    given = body.get("pools")
    if not isinstance(given, list) or not given or not all(isinstance(p, str) for p in given):
        raise ValidationFailed("The body names no pools.", [{
            "field": "/pools", "code": "invalid_type",
            "message": "a list of one pool or more, each tags comma-separated (region=eu,gpu); "
                       "DELETE clears them"}])
    try:
        return parse_pools(given)
    except PoolError as exc:
        raise ValidationFailed("The pools are not well formed.", [
            {"field": "/pools", "code": "unknown_pool", "message": p} for p in exc.problems]) from exc


def _set(workspace_id: str, pools: list[str] | None) -> Response:
    actor = _actor()
    try:
        found = services().workspace_controls.set_pools(actor, workspace_id, pools)
    except NotFound as exc:
        raise NotFoundError(f"No workspace {workspace_id}.") from exc
    return _answer(found.id, found.pools)


@blp.get("/workspaces/<workspace_id>/pools")
def workspace_pools(workspace_id: str) -> Response:
    from reelfarm.shared.repos.workspaces import get_workspace

    _actor()
    try:
        with services().engine.connect() as conn:
            found = get_workspace(conn, workspace_id)
    except NotFound as exc:
        raise NotFoundError(f"No workspace {workspace_id}.") from exc
    return _answer(found.id, found.pools)


@blp.put("/workspaces/<workspace_id>/pools")
def set_workspace_pools(workspace_id: str) -> Response:
    _actor()
    return _set(workspace_id, _pools(_body()))


@blp.delete("/workspaces/<workspace_id>/pools")
def clear_workspace_pools(workspace_id: str) -> Response:
    return _set(workspace_id, None)
