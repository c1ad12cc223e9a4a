"""The one I/O seam of the SDK: sends a ``Call`` over httpx, retries it, reads the answer.

``SyncTransport`` and ``AsyncTransport`` differ only in ``await``; what to send (``prepare``), what
an answer means (``decode``) and when to try again (``reelfarm.client.retry``) are shared plain functions.
A POST gets its ``Idempotency-Key`` once, before the first try, so every retry of that one call
carries the same key and the server creates and charges at most once.
Downloads go to signed URLs without the API key: those URLs may point at another host.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx

from reelfarm.client.calls import Call
from reelfarm.client.errors import APIConnectionError, APIStatusError, APITimeoutError, ReelfarmError, status_error
from reelfarm.client.retry import Retry, parse_retry_after

T = TypeVar("T")
USER_AGENT = "reelfarm-python"
ProgressFn = Callable[[int, int | None], None]  # bytes so far, total bytes (None when unknown)


def prepare(call: Call[Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``httpx.Client.request``: one logical call, retries included."""
    sent = dict(headers or {})
    if call.method == "POST":
        sent.setdefault("Idempotency-Key", f"rfc_{uuid.uuid4().hex}")
    kwargs: dict[str, Any] = {"method": call.method, "url": f"/api/v1{call.path}", "headers": sent}
    if call.body is not None:
        kwargs["json"] = call.body
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
                outcome: httpx.Response | httpx.TransportError) -> float | None:
    if isinstance(outcome, httpx.TransportError):
        connect_failed = isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout))
        return retry.after_error(attempt, method, connect_failed)
    return retry.after_status(attempt, method, outcome.status_code, _code(outcome),
                              parse_retry_after(outcome.headers.get("Retry-After")))


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _check_key(api_key: str | None) -> None:
    if not api_key:
        raise ReelfarmError("no API key: pass api_key= (the command line: --api-key), set REELFARM_API_KEY, "
                            "or run `reelfarm login`")


class SyncTransport:
    """Blocking transport on ``httpx.Client``."""

    def __init__(self, api_key: str | None, base_url: str, timeout: float, retry: Retry,
                 http: httpx.Client | None = None) -> None:
        self.api_key, self.base_url, self.retry = api_key, base_url, retry
        self.http = http or httpx.Client(base_url=base_url, headers=_headers(api_key), timeout=timeout)
        self.sleep: Callable[[float], None] = time.sleep

    def run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        return call.parse(self.send(call, idempotency_key))

    def send(self, call: Call[Any], idempotency_key: str | None = None) -> Any:
        """``call``'s answer; a POST carries ``idempotency_key`` (default: a new key for this call,
        kept through its retries)."""
        _check_key(self.api_key)
        kwargs = prepare(call, {"Idempotency-Key": idempotency_key} if idempotency_key else None)
        for attempt in range(self.retry.max_retries + 1):
            try:
                outcome: httpx.Response | httpx.TransportError = self.http.request(**kwargs)
            except httpx.TransportError as exc:
                outcome = exc
            delay = retry_delay(self.retry, attempt, call.method, outcome)
            if delay is None:
                break
            self.sleep(delay)
        if isinstance(outcome, httpx.TransportError):
            raise unreachable(f"{self.base_url.rstrip('/')}/api/v1{call.path}", outcome,
                              f"{call.method} {call.path}: ") from outcome
        return decode(outcome)

    def fetch_bytes(self, url: str) -> bytes:
        """A signed URL's whole body (stills are small)."""
        try:
            response = httpx.get(url, timeout=60, follow_redirects=True)
        except httpx.TransportError as exc:
            raise unreachable(url, exc, "download: ") from exc
        if response.status_code >= 400:
            raise error_from(response)
        return response.content

    def download(self, url: str, path: str | Path, on_progress: ProgressFn | None = None) -> Path:
        """Stream ``url`` into ``path`` (written beside it first, then moved into place)."""
        target = Path(path)
        partial = target.with_name(target.name + ".part")
        try:
            with httpx.stream("GET", url, timeout=60, follow_redirects=True) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_from(response)
                total = int(response.headers["Content-Length"]) if "Content-Length" in response.headers else None
                done = 0
                with open(partial, "wb") as out:
                    for chunk in response.iter_bytes(1 << 16):
                        out.write(chunk)
                        done += len(chunk)
                        if on_progress:
                            on_progress(done, total)
        except httpx.TransportError as exc:
            partial.unlink(missing_ok=True)
            raise unreachable(url, exc, "download: ") from exc
        partial.replace(target)
        return target

    def close(self) -> None:
        self.http.close()


class AsyncTransport:
    """Non-blocking transport on ``httpx.AsyncClient`` (asyncio or trio, through anyio)."""

    def __init__(self, api_key: str | None, base_url: str, timeout: float, retry: Retry,
                 http: httpx.AsyncClient | None = None) -> None:
        self.api_key, self.base_url, self.retry = api_key, base_url, retry
        self.http = http or httpx.AsyncClient(base_url=base_url, headers=_headers(api_key), timeout=timeout)

    async def run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        return call.parse(await self.send(call, idempotency_key))

    async def send(self, call: Call[Any], idempotency_key: str | None = None) -> Any:
        """``call``'s answer; a POST carries ``idempotency_key`` (default: a new key for this call,
        kept through its retries)."""
        _check_key(self.api_key)
        kwargs = prepare(call, {"Idempotency-Key": idempotency_key} if idempotency_key else None)
        for attempt in range(self.retry.max_retries + 1):
            try:
                outcome: httpx.Response | httpx.TransportError = await self.http.request(**kwargs)
            except httpx.TransportError as exc:
                outcome = exc
            delay = retry_delay(self.retry, attempt, call.method, outcome)
            if delay is None:
                break
            await anyio.sleep(delay)
        if isinstance(outcome, httpx.TransportError):
            raise unreachable(f"{self.base_url.rstrip('/')}/api/v1{call.path}", outcome,
                              f"{call.method} {call.path}: ") from outcome
        return decode(outcome)

    async def fetch_bytes(self, url: str) -> bytes:
        """A signed URL's whole body (stills are small)."""
        try:
            async with httpx.AsyncClient(timeout=60, follow_redirects=True) as plain:
                response = await plain.get(url)
        except httpx.TransportError as exc:
            raise unreachable(url, exc, "download: ") from exc
        if response.status_code >= 400:
            raise error_from(response)
        return response.content

    async def download(self, url: str, path: str | Path, on_progress: ProgressFn | None = None) -> Path:
        target = Path(path)
        partial = target.with_name(target.name + ".part")
        try:
            async with httpx.AsyncClient(timeout=60, follow_redirects=True) as plain, \
                    plain.stream("GET", url) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise error_from(response)
                total = int(response.headers["Content-Length"]) if "Content-Length" in response.headers else None
                done = 0
                async with await anyio.open_file(partial, "wb") as out:
                    async for chunk in response.aiter_bytes(1 << 16):
                        await out.write(chunk)
                        done += len(chunk)
                        if on_progress:
                            on_progress(done, total)
        except httpx.TransportError as exc:
            partial.unlink(missing_ok=True)
            raise unreachable(url, exc, "download: ") from exc
        partial.replace(target)
        return target

    async def aclose(self) -> None:
        await self.http.aclose()
