"""Documenting the error statuses each operation can answer, in one vocabulary.

Every authenticated operation can answer 429 (rate limit); every POST takes `Idempotency-Key`
and can answer 400, 409 and 422 for it; an operation that can answer 412 takes `If-Match`. Each documented error carries an example envelope with
that status's code (``reelfarm.api.examples.error``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask_smorest import Blueprint

from reelfarm.api import examples
from reelfarm.api.preconditions import IF_MATCH_PARAMETER
from reelfarm.api.schemas.common import ErrorEnvelopeSchema

DESCRIPTIONS = {
    400: "Invalid request: every problem is listed in `error.details` (JSON pointers).",
    401: "Missing, unknown, revoked or expired API key.",
    402: "Not enough credits (`insufficient_credits`), or past the monthly compute allowance (`allowance_exceeded`).",
    403: "The workspace's plan does not include this.",
    404: "No such object in this workspace.",
    405: "Method not allowed.",
    409: "The object's state does not allow this now.",
    412: "`version_conflict`: `If-Match` names a version that is no longer the video's current one (someone "
         "changed it since it was read); nothing was saved. `details[0].current_version` and `ETag` name the "
         "current version.",
    422: "The `Idempotency-Key` was already used with a different method, path or body.",
    429: "Rate limit of the API key exceeded; retry after `Retry-After` seconds.",
    413: "Request body larger than the limit.",
    415: "Request body is not JSON.",
    500: "Unexpected error; logged with the request id.",
    503: "The queue is unavailable; nothing was created. Retry later.",
}
AUTHED = (401, 403, 429, 500)
WITH_BODY = (400, 413, 415)
IDEMPOTENT = (400, 409, 422)  # every POST: a malformed, in-use or mismatched Idempotency-Key

_INT = {"schema": {"type": "integer", "minimum": 0}}
RATE_LIMIT_HEADERS = {
    "RateLimit-Limit": {"description": "Requests allowed per window for this API key.", **_INT},
    "RateLimit-Remaining": {"description": "Requests left in the current window.", **_INT},
    "RateLimit-Reset": {"description": "Seconds until the current window resets.", **_INT},
    "RateLimit-Policy": {"description": "The limit and window, e.g. `600;w=60`.", "schema": {"type": "string"}},
}
RETRY_AFTER = {"Retry-After": {"description": "Whole seconds to wait (at least 1).",
                               "schema": {"type": "integer", "minimum": 1}}}
CURRENT_ETAG = {"ETag": {"description": "The video's current version, `\"v<number>\"`.",
                         "schema": {"type": "string", "pattern": '^"v[1-9][0-9]*"$'}}}
POST_DESCRIPTIONS = {
    400: DESCRIPTIONS[400] + " Also a malformed `Idempotency-Key` (field `Idempotency-Key`).",
    409: DESCRIPTIONS[409] + " Or `idempotency_key_in_use`: a request with this `Idempotency-Key` is"
                             " still executing; retry after `Retry-After` seconds.",
}
IDEMPOTENCY_KEY_PARAMETER = {
    "in": "header", "name": "Idempotency-Key", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"},
    "description": "1 to 255 printable ASCII characters, scoped to the workspace. Repeating a request with "
                   "the same key, method, path and body within 24 h returns the first answer (same status "
                   "and body) with `Idempotent-Replayed: true`; nothing is created or charged again. "
                   "5xx answers are not stored, so such a request may be retried with the same key.",
}


def errors(blp: Blueprint, *statuses: int) -> Callable[[Any], Any]:
    """Document `statuses` (plus the ones every authenticated operation can give) on a view, and the
    headers that can lead to them: `Idempotency-Key` on a POST, `If-Match` where 412 is one."""
    def decorate(view: Any) -> Any:
        post = view.__name__ == "post"
        documented = set(statuses) | set(AUTHED) | (set(IDEMPOTENT) if post else set())
        for status in sorted(documented):
            description = (POST_DESCRIPTIONS if post else {}).get(status, DESCRIPTIONS[status])
            headers = {429: {**RATE_LIMIT_HEADERS, **RETRY_AFTER}, 409: RETRY_AFTER if post else None,
                       412: CURRENT_ETAG, 503: RETRY_AFTER}.get(status)
            view = blp.alt_response(status, schema=ErrorEnvelopeSchema, description=description,
                                    headers=headers, example=examples.error(status))(view)
        parameters = ([IDEMPOTENCY_KEY_PARAMETER] if post else []) + ([IF_MATCH_PARAMETER] if 412 in statuses else [])
        if parameters:
            view = blp.doc(parameters=parameters)(view)
        return view
    return decorate
