"""Bearer API keys: who is calling, and may their plan use the API."""
from __future__ import annotations

from dataclasses import dataclass

from flask import g, request

from reelfarm.api.errors import Forbidden, Unauthorized
from reelfarm.shared import keys
from reelfarm.shared.workspaces import Workspace

# Endpoint names are "<blueprint>.<MethodView class name>" for flask-smorest routes.
PUBLIC_ENDPOINTS = {"system.Health", "system.File", "system.Stream", "system.StreamPart", "api-docs.openapi_json",
                    "static", "ops.live", "ops.ready", "ops.metrics"}


@dataclass(frozen=True)
class Caller:
    key_id: str
    workspace: Workspace
    key_prefix: str = ""


def authenticate(services) -> Caller:
    """The caller of this request, from `Authorization: Bearer rf_live_...`.

    A malformed key or one whose checksum is wrong is refused before the database is touched.
    """
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Send your API key as `Authorization: Bearer rf_live_...`.")
    if not keys.checksum_ok(token):
        raise Unauthorized("The API key is malformed or mistyped (its checksum does not match).")
    found = services.api_keys.authenticate(token)
    if found is None:
        raise Unauthorized("The API key is unknown, revoked or expired.")
    key, workspace = found
    if services.settings.rate_limit_for(workspace.plan) is None:
        raise Forbidden("The workspace's plan does not include API access; upgrade to Pro, Crypto Pro or Agency.",
                        code="plan_without_api")
    caller = Caller(key.id, workspace, key.prefix)
    g.caller = caller
    return caller


def current_workspace_id() -> str:
    return g.caller.workspace.id
