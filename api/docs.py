"""Documenting the error statuses each operation can answer, in one vocabulary."""
from __future__ import annotations

from typing import Any, Callable

from flask_smorest import Blueprint

from api.schemas import ErrorEnvelopeSchema

DESCRIPTIONS = {
    400: "Invalid request: every problem is listed in `error.details` (JSON pointers).",
    401: "Missing, unknown, revoked or expired API key.",
    402: "Not enough credits.",
    403: "The workspace's plan does not include this.",
    404: "No such object in this workspace.",
    405: "Method not allowed.",
    409: "The object's state does not allow this now.",
    413: "Request body larger than the limit.",
    415: "Request body is not JSON.",
    500: "Unexpected error; logged with the request id.",
    503: "The queue is unavailable; nothing was created. Retry later.",
}
AUTHED = (401, 403, 500)
WITH_BODY = (400, 413, 415)


def errors(blp: Blueprint, *statuses: int) -> Callable[[Any], Any]:
    """Document `statuses` (plus the ones every authenticated operation can give) on a view."""
    def decorate(view: Any) -> Any:
        for status in sorted(set(statuses) | set(AUTHED)):
            view = blp.alt_response(status, schema=ErrorEnvelopeSchema, description=DESCRIPTIONS[status])(view)
        return view
    return decorate
