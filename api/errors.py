"""The one error envelope, and the only place errors become HTTP responses.

    ApiError                      every error a client sees: status, code, message, details
    ├── ValidationFailed          400 validation_failed (details: one entry per problem)
    ├── Unauthorized              401 unauthorized
    ├── InsufficientCreditsError  402 insufficient_credits | allowance_exceeded (the monthly compute allowance)
    ├── Forbidden                 403 plan_without_api | plan_feature_unavailable
    ├── NotFoundError             404 not_found
    ├── ConflictError             409 conflict | video_not_ready | idempotency_key_in_use
    ├── PreconditionFailed        412 version_conflict (If-Match names another version: api/preconditions.py)
    ├── PayloadTooLarge           413 payload_too_large (a body, or a file however it came, past a limit)
    ├── QuotaExceededError        413 quota_exceeded (the media library's bytes)
    ├── IdempotencyMismatch       422 idempotency_key_mismatch (api/idempotency.py)
    ├── RateLimited               429 rate_limited (with Retry-After)
    ├── Unavailable               503 unavailable
    └── (werkzeug HTTP errors)    405, 413, 415, 500 ... mapped by status

Views and services raise domain errors; `to_api_error` maps them, so no view builds a response
for an error and no trace ever reaches a client.

A file past a limit is one answer however it arrives (an upload, a presigned upload's declared
`bytes`, an address the server fetches, or a body past the upload's length limit): 413
`payload_too_large`, whose `details[0]` points at what was too large (`/file`, `/bytes`, `/url`)
and whose message names the limit. Services say it as a `too_large` detail; `refusal` turns one
into this answer, so the code a client branches on is always `payload_too_large`.

An unreachable database is an outage, not a bug: whatever raised it (a view, authentication, a
service), `handle_unexpected` recognises it (`reelfarm.shared.db.database_outage`) and answers 503
`unavailable` with `Retry-After`, logging one warning line per request, not a traceback, so
clients and alerts can tell "down" from "broken".
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from flask import Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from reelfarm.shared.db import database_outage

log = logging.getLogger("reelfarm.api")

_STATUS_CODES = {
    400: "validation_failed", 401: "unauthorized", 402: "insufficient_credits", 403: "forbidden",
    404: "not_found", 405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
    415: "unsupported_media_type", 422: "validation_failed", 429: "rate_limited", 500: "internal_error",
    503: "unavailable",
}
_MESSAGES = {
    404: "No such resource in this workspace.",
    405: "This method is not allowed on this resource.",
    413: "The request body is too large.",
    415: "Send JSON with Content-Type: application/json.",
    500: "Something went wrong on our side; it has been logged with the request id.",
}
DATABASE_RETRY_AFTER_SEC = 5
API_BASE = "/api/v1"


class ApiError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None,
                 code: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code:
            self.code = code
        self.headers = dict(headers or {})


class ValidationFailed(ApiError):
    status, code = 400, "validation_failed"


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class InsufficientCreditsError(ApiError):
    status, code = 402, "insufficient_credits"


def allowance_exceeded(error: Any) -> InsufficientCreditsError:
    """402 ``allowance_exceeded`` for a ``farm.services.errors.AllowanceExceeded``: its one detail
    carries the allowance, the CPU seconds used this month and the request's estimate."""
    return InsufficientCreditsError(str(error), [{
        "field": "/", "code": "allowance_exceeded", "message": str(error), "allowance_cpu_sec": error.allowance,
        "used_cpu_sec": error.used, "estimate_cpu_sec": error.estimate}], code="allowance_exceeded")


class Forbidden(ApiError):
    status, code = 403, "plan_without_api"


class NotFoundError(ApiError):
    status, code = 404, "not_found"


class ConflictError(ApiError):
    status, code = 409, "conflict"


class PreconditionFailed(ApiError):
    status, code = 412, "version_conflict"


class PayloadTooLarge(ApiError):
    status, code = 413, "payload_too_large"


class QuotaExceededError(ApiError):
    status, code = 413, "quota_exceeded"


class RateLimited(ApiError):
    status, code = 429, "rate_limited"


class Unavailable(ApiError):
    status, code = 503, "unavailable"


def detail(field: str, code: str, message: str) -> dict[str, str]:
    return {"field": field, "code": code, "message": message}


def invalid(details: Iterable[dict[str, str]], message: str | None = None) -> ValidationFailed:
    details = list(details)
    return ValidationFailed(message or f"The request has {len(details)} problem(s); see details.", details)


TOO_LARGE_FIELDS = frozenset({"/file", "/bytes", "/url"})
"""Where a file past a limit is pointed at: an upload's part, a presigned upload's size, a fetched address."""


def refusal(details: Iterable[dict[str, str]]) -> ApiError:
    """A service's refusal as the client sees it: 413 ``payload_too_large`` for a file past a limit
    (a ``too_large`` detail on ``/file``, ``/bytes`` or ``/url``), else 400 ``validation_failed``."""
    details = list(details)
    large = [d for d in details if d.get("code") == "too_large" and d.get("field") in TOO_LARGE_FIELDS]
    if not large:
        return invalid(details)
    return PayloadTooLarge(f"The file is too large: {large[0]['message']}.",
                           [{**d, "code": "payload_too_large"} for d in large])


def upload_too_large(limit: int) -> PayloadTooLarge:
    """The answer to an upload whose body passed its length limit before it was read."""
    return PayloadTooLarge(f"The file is too large: an upload is at most {limit} bytes.",
                           [detail("/file", "payload_too_large", f"an upload is at most {limit} bytes")])


def envelope(status: int, code: str, message: str, details: Any = None,
             headers: Mapping[str, str] | None = None) -> Response:
    body = {"error": {"code": code, "message": message, "details": details,
                      "request_id": getattr(g, "request_id", None)}}
    response = jsonify(body)
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def handle_api_error(error: ApiError) -> Response:
    return envelope(error.status, error.code, error.message, error.details, error.headers)


def handle_http_exception(error: HTTPException) -> Response:
    """Werkzeug's and flask-smorest's HTTP errors, in our envelope."""
    status = error.code or 500
    data = getattr(error, "data", None) or {}
    if "messages" in data:  # webargs: validation of body or query, or unparseable JSON
        return handle_api_error(invalid(_marshmallow_details(data["messages"])))
    headers = dict(data.get("headers") or {})
    if status == 405 and getattr(error, "valid_methods", None):
        headers["Allow"] = ", ".join(error.valid_methods)  # type: ignore[attr-defined]
    message = _MESSAGES.get(status) or error.description or error.name
    if status == 404 and request.path.startswith(f"{API_BASE}{API_BASE}/"):
        message = (f"No such endpoint: this path has {API_BASE} twice. The API's base URL is the server root "
                   f"({request.host_url.rstrip('/')}); every path starts with {API_BASE}.")
    if status == 413 and g.get("upload_limit"):  # an upload's body past its limit, before it was read
        return handle_api_error(upload_too_large(g.upload_limit))
    if status == 400:
        return envelope(400, "validation_failed", "The request body is not valid JSON.",
                        [detail("", "invalid_json", "the body could not be parsed as JSON")], headers)
    return envelope(status, _STATUS_CODES.get(status, "internal_error" if status >= 500 else "conflict"),
                    message, None, headers)


def handle_unexpected(error: Exception) -> Response:
    outage = database_outage(error)
    if outage is not None:
        return handle_database_outage(outage)
    log.exception("unhandled error (request_id=%s)", getattr(g, "request_id", None))
    return envelope(500, "internal_error", _MESSAGES[500])


def handle_database_outage(outage: Exception) -> Response:
    """503 ``unavailable`` with ``Retry-After``; one warning line, no traceback."""
    log.warning("database unavailable, answered 503 (request_id=%s): %s", getattr(g, "request_id", None), outage)
    return handle_api_error(Unavailable(
        "The database is unavailable; try again shortly.",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SEC)}))


_CODES_BY_MESSAGE = (
    ("Invalid JSON body", "invalid_json"),
    ("Unknown field", "unknown_field"),
    ("Missing data for required field", "required"),
    ("Field may not be null", "not_nullable"),
    ("Must be one of", "invalid_choice"),
    ("Not a valid", "invalid_type"),
    ("Longer than maximum length", "too_long"),
    ("Shorter than minimum length", "too_short"),
    ("Length must be", "invalid_length"),
    ("Must be greater than", "too_small"),
    ("Must be less than", "too_large"),
    ("Must be a finite number", "not_finite"),
    ("Must not contain NUL", "invalid_character"),
)


def _marshmallow_details(messages: Mapping[str, Any]) -> list[dict[str, str]]:
    """Flatten webargs' {location: {field: [msgs] | nested}} into JSON-pointer details."""
    out: list[dict[str, str]] = []
    for location, tree in messages.items():
        prefix = "" if location == "json" else None
        _walk(tree, prefix, location, out)
    return out


def _walk(tree: Any, pointer: str | None, location: str, out: list[dict[str, str]]) -> None:
    if isinstance(tree, Mapping):
        for key, sub in tree.items():
            if key == "_schema":
                _walk(sub, pointer, location, out)
                continue
            name = str(key).replace("~", "~0").replace("/", "~1")
            _walk(sub, f"{pointer}/{name}" if pointer is not None else name, location, out)
        return
    messages = tree if isinstance(tree, list) else [tree]
    for message in messages:
        if isinstance(message, (Mapping, list)):
            _walk(message, pointer, location, out)
            continue
        text = str(message)
        code = getattr(message, "code", None)  # an api.contract.Problem names its own
        code = code or next((c for prefix, c in _CODES_BY_MESSAGE if text.startswith(prefix)), "invalid")
        if code == "too_small" and " and less than" in text:
            code = "out_of_range"  # a two-sided Range: the value may as well be too large
        out.append(detail(pointer if pointer is not None else location, code, text))
