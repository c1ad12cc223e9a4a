"""What every view of the operator API (``reelfarm.api.operator``, ``reelfarm.api.operatorpools``)
shares: its blueprint, who is asking (an operator key, else 404 or 401) and the JSON body."""
from __future__ import annotations

import hmac
from typing import Any

from flask import Blueprint, request

from reelfarm.api.errors import NotFoundError, Unauthorized, ValidationFailed
from reelfarm.api.services import services

blp = Blueprint("operator", __name__, url_prefix="/api/v1/operator")


def _actor() -> str:
    """The operator key's ``key:<name>``; 404 without operator keys, 401 for any other credential."""
    keys = services().settings.operator_keys
    if not keys:
        raise NotFoundError("There is no operator API here (REELFARM_OPERATOR_KEYS is not set).")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        for name, key in keys:
            if hmac.compare_digest(given.strip().encode(), key.encode()):
                return f"key:{name}"
    raise Unauthorized("The operator API needs an operator key (Authorization: Bearer ...).",
                       headers={"WWW-Authenticate": 'Bearer realm="operator"'})


def _body() -> dict[str, Any]:
    found = request.get_json(silent=True) if request.data else {}
    if not isinstance(found, dict):
        raise ValidationFailed("The body must be a JSON object.", [{"field": "", "code": "invalid_type",
                                                                   "message": "expected an object"}])
    return found
