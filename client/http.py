"""The request/answer core both transports share (``_async/transport.py`` and the ``_sync`` one
generated from it): what to send for a ``Call``, what an answer means, when to try again. No I/O.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from reelfarm.client.calls import Call
from reelfarm.client.errors import APIConnectionError, APIStatusError, APITimeoutError, ReelfarmError, status_error
from reelfarm.client.retry import Retry, parse_retry_after

USER_AGENT = "reelfarm-python"
ProgressFn = Callable[[int, int | None], None]  # bytes so far, total bytes (None when unknown)


def prepare(call: Call[Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``httpx.Client.request``: one logical call, retries included."""
    sent = {**(call.headers or {}), **(headers or {})}
    if call.method == "POST":
        sent.setdefault("Idempotency-Key", f"rfc_{uuid.uuid4().hex}")
    kwargs: dict[str, Any] = {"method": call.method, "url": f"/api/v1{call.path}", "headers": sent}
    if call.body is not None:
        kwargs["json"] = call.body
    if call.stream is not None:  # its ``content`` is opened afresh for each try, by the transport
        sent.update({"Content-Type": call.stream.content_type, "Content-Length": str(call.stream.length)})
    if call.params:
        kwargs["params"] = call.params
    return kwargs


def error_from(response: httpx.Response) -> APIStatusError:
    """The API's error envelope as an ``APIStatusError`` of its status (a bare answer from a proxy
    gets a made-up code)."""
    try:
        error = response.json()["error"]
        code, message, details = str(error["code"]), str(error["message"]), error.get("details")
        request_id = error.get("request_id")
    except (ValueError, KeyError, TypeError):
        code, message, details = f"http_{response.status_code}", response.text[:200] or response.reason_phrase, None
        request_id = None
    return status_error(response.status_code, code, message, details,
                        request_id or response.headers.get("X-Request-Id"),
                        parse_retry_after(response.headers.get("Retry-After")))


def unreachable(url: str, exc: httpx.TransportError, what: str = "") -> APIConnectionError:
    """No answer from ``url``: named without its query (a download's signature stays out of logs)."""
    shown = str(httpx.URL(url).copy_with(query=None, fragment=None))
    kind = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
    reason = str(exc) or type(exc).__name__
    return kind(f"{what}cannot reach {shown}: {reason}", url=shown)


def decode(response: httpx.Response) -> Any:
    """The answer's JSON, or raise its ``APIStatusError``."""
    if response.status_code >= 400:
        raise error_from(response)
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def _code(response: httpx.Response) -> str | None:
    if response.status_code != 409:
        return None
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return None


def retry_delay(retry: Retry, attempt: int, method: str,
                outcome: httpx.Response | httpx.TransportError, elapsed: float = 0.0) -> float | None:
    if isinstance(outcome, httpx.TransportError):
        connect_failed = isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout))
        return retry.after_error(attempt, method, connect_failed, elapsed)
    return retry.after_status(attempt, method, outcome.status_code, _code(outcome),
                              parse_retry_after(outcome.headers.get("Retry-After")))


def retry_reason(outcome: httpx.Response | httpx.TransportError) -> str:
    """Why a request is tried again, for the log: ``429 rate_limited``, ``ConnectError: ...``."""
    if isinstance(outcome, httpx.TransportError):
        return f"{type(outcome).__name__}: {outcome}".rstrip(": ")
    try:
        code = str(outcome.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        code = outcome.reason_phrase
    return f"{outcome.status_code} {code}".strip()


def headers(api_key: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def check_key(api_key: str | None) -> None:
    if not api_key:
        raise ReelfarmError("no API key: pass api_key= (the command line: --api-key), set REELFARM_API_KEY, "
                            "or run `reelfarm login`")
