"""The request/answer core both transports share (``_async/transport.py`` and the ``_sync`` one
generated from it): what to send for a ``Call``, what an answer means, when to try again. No I/O.
"""
from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from reelfarm.client import __version__
from reelfarm.client.calls import Call, Page
from reelfarm.client.errors import APIConnectionError, APIStatusError, APITimeoutError, ReelfarmError, status_error
from reelfarm.client.models import RateLimitState, ResponseInfo
from reelfarm.client.retry import Retry, RetryEvent, parse_retry_after

USER_AGENT = f"reelfarm-python/{__version__}"
ProgressFn = Callable[[int, int | None], None]  # bytes so far, total bytes (None when unknown)
ResponseHook = Callable[[ResponseInfo], None]
RetryHook = Callable[[RetryEvent], None]
T = TypeVar("T")
log = logging.getLogger("reelfarm.client")


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


def refuse_empty_key(api_key: str | None) -> None:
    """An ``api_key`` given but empty is a mistake (an unset variable read as ""), not a request
    for the saved login: refused before anything is read."""
    if api_key is not None and not api_key.strip():
        raise ReelfarmError("api_key is empty: pass the key (rf_live_...), or leave api_key out to use "
                            "REELFARM_API_KEY or the key `reelfarm login` saved")


def check_key(api_key: str | None) -> None:
    if not api_key:
        raise ReelfarmError("no API key: pass api_key= (the command line: --api-key), set REELFARM_API_KEY, "
                            "or run `reelfarm login`")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def response_info(method: str, path: str, response: httpx.Response) -> ResponseInfo:
    """What ``response`` said besides its body."""
    found = response.headers
    rate_limit = None
    if any(name in found for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")):
        rate_limit = RateLimitState(_int(found.get("RateLimit-Limit")), _int(found.get("RateLimit-Remaining")),
                                    _int(found.get("RateLimit-Reset")), found.get("RateLimit-Policy"))
    return ResponseInfo(method, path, response.status_code, found.get("X-Request-Id"), rate_limit,
                        found.get("Idempotent-Replayed", "").lower() == "true", dict(found.items()))


def attach(result: T, info: ResponseInfo) -> T:
    """``result`` with ``last_response`` set: a model, each model of a list or a page."""
    items = result.data if isinstance(result, Page) else result if isinstance(result, list) else [result]
    for item in items:
        if dataclasses.is_dataclass(item) and hasattr(item, "last_response"):
            object.__setattr__(item, "last_response", info)  # frozen: set once, as it is made
    return result


def announce_retry(event: RetryEvent, hook: RetryHook | None) -> None:
    """Say that a request is tried again: a WARNING when the server asked for a wait of a second or
    more (``Retry-After``, as a 429 sends it), else INFO; then ``hook``."""
    level = logging.WARNING if (event.retry_after or 0) >= 1 else logging.INFO
    log.log(level, "retrying %s %s in %.1f s (retry %d): %s", event.method, event.path, event.delay, event.attempt,
            event.reason, extra={"retry_method": event.method, "retry_path": event.path,
                                 "retry_delay": round(event.delay, 3), "retry_number": event.attempt,
                                 "retry_reason": event.reason})
    if hook is not None:
        hook(event)


def give_up_waiting(method: str, path: str, delay: float, waited: float, retry: Retry) -> None:
    """Log that a retry is not made because its wait would pass ``retry.max_wait``."""
    log.warning("not retrying %s %s: waiting %.1f s more would pass max_wait (%.1f s, %.1f s waited)",
                method, path, delay, retry.max_wait or 0.0, waited)


def retry_event(method: str, path: str, attempt: int, delay: float, outcome: httpx.Response | httpx.TransportError,
                waited: float) -> RetryEvent:
    """The ``RetryEvent`` of retry ``attempt + 1``, after ``outcome``."""
    if isinstance(outcome, httpx.TransportError):
        return RetryEvent(method, path, attempt + 1, delay, retry_reason(outcome), None, None, waited)
    return RetryEvent(method, path, attempt + 1, delay, retry_reason(outcome), outcome.status_code,
                      parse_retry_after(outcome.headers.get("Retry-After")), waited)
