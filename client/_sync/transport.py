# Generated from client/_async/transport.py by scripts/generate_sync.py; edit that file and run the script.
"""The transport: sends a ``Call`` over httpx, retries it, reads the answer, streams downloads.

What to send (``prepare``), what an answer means (``decode``) and when to try again
(``reelfarm.client.retry``) are plain functions in ``reelfarm.client.http``, shared by both sides.
A POST gets its ``Idempotency-Key`` once, before the first try, so every retry of that one call
carries the same key and the server creates and charges at most once.
Downloads go to signed URLs without the API key: those URLs may point at another host; so do the
bytes of a presigned upload (``send_to``).
Each retry is announced on the ``reelfarm.client`` logger (a WARNING for a server-asked wait)
with its reason and delay, and told to ``on_retry``; one call waits at most ``Retry.max_wait``
seconds between its tries in all. Each answer is told to ``on_response`` and set on the result as
``last_response`` (request id, status, rate limit).
"""
from __future__ import annotations

import copy
import itertools
import time
from pathlib import Path
from typing import Any, TypeVar

import httpx

from reelfarm.client._sync import io
from reelfarm.client.calls import Call, Stream
from reelfarm.client.http import (
    ProgressFn,
    ResponseHook,
    RetryHook,
    announce_retry,
    attach,
    check_key,
    decode,
    error_from,
    give_up_waiting,
    headers,
    prepare,
    response_info,
    retry_delay,
    retry_event,
    unreachable,
)
from reelfarm.client.models import ResponseInfo
from reelfarm.client.retry import Retry

T = TypeVar("T")


class SyncTransport:
    """One connection pool to the API (an httpx client), with the key and retries."""

    def __init__(self, api_key: str | None, base_url: str, timeout: float | httpx.Timeout, retry: Retry,
                 http: httpx.Client | None = None) -> None:
        self.api_key, self.base_url, self.retry = api_key, base_url, retry
        self.http = http or httpx.Client(base_url=base_url, headers=headers(api_key), timeout=timeout)
        self.sleep: io.Sleep = io.sleep
        self.timeout: float | httpx.Timeout | None = None  # None: the pool's own; else sent with each request
        self.owns_http = True  # a copy made by ``with_options`` shares the pool and leaves it open
        self.on_retry: RetryHook | None = None
        self.on_response: ResponseHook | None = None

    def with_options(self, timeout: float | httpx.Timeout | None, retry: Retry) -> SyncTransport:
        """A transport over the same connection pool with another timeout and retry policy."""
        made = copy.copy(self)
        made.retry, made.owns_http = retry, False
        made.timeout = timeout if timeout is not None else self.timeout
        return made

    def run(self, call: Call[T], idempotency_key: str | None = None) -> T:
        answer, info = self.send(call, idempotency_key)
        return attach(call.parse(answer), info)

    def send(self, call: Call[Any], idempotency_key: str | None = None) -> tuple[Any, ResponseInfo]:
        """``call``'s answer and what its response said; a POST carries ``idempotency_key``
        (default: a new key for this call, kept through its retries)."""
        check_key(self.api_key)
        kwargs = prepare(call, {"Idempotency-Key": idempotency_key} if idempotency_key else None)
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        started, waited = time.monotonic(), 0.0
        for attempt in itertools.count():
            if call.stream is not None:
                kwargs["content"] = call.stream.open()  # a fresh read of the body for each try
            try:
                outcome: httpx.Response | httpx.TransportError = self.http.request(**kwargs)
            except httpx.TransportError as exc:
                outcome = exc
            delay = retry_delay(self.retry, attempt, call.method, outcome, time.monotonic() - started)
            if delay is None:
                break
            if not self.retry.allows_wait(waited, delay):
                give_up_waiting(call.method, call.path, delay, waited, self.retry)
                break
            announce_retry(retry_event(call.method, call.path, attempt, delay, outcome, waited), self.on_retry)
            self.sleep(delay)
            waited += delay
        if isinstance(outcome, httpx.TransportError):
            raise unreachable(f"{self.base_url.rstrip('/')}/api/v1{call.path}", outcome,
                              f"{call.method} {call.path}: ") from outcome
        info = response_info(call.method, call.path, outcome)
        if self.on_response is not None:
            self.on_response(info)
        return decode(outcome), info

    def send_to(self, method: str, url: str, sent_headers: dict[str, str], stream: Stream) -> None:
        """Send ``stream`` to a presigned ``url`` (another host: without the API key), with
        ``sent_headers`` as given; retried as an idempotent request, the whole body again each try."""
        started, waited = time.monotonic(), 0.0
        with httpx.Client(timeout=self.timeout or 300) as plain:
            for attempt in itertools.count():
                try:
                    outcome: httpx.Response | httpx.TransportError = plain.request(
                        method, url, content=stream.open(),
                        headers={**sent_headers, "Content-Length": str(stream.length)})
                except httpx.TransportError as exc:
                    outcome = exc
                delay = retry_delay(self.retry, attempt, method, outcome, time.monotonic() - started)
                if delay is None:
                    break
                if not self.retry.allows_wait(waited, delay):
                    give_up_waiting(method, "the upload's URL", delay, waited, self.retry)
                    break
                announce_retry(retry_event(method, "the upload's URL", attempt, delay, outcome, waited), self.on_retry)
                self.sleep(delay)
                waited += delay
        if isinstance(outcome, httpx.TransportError):
            raise unreachable(url, outcome, "upload: ") from outcome
        if outcome.status_code >= 400:
            raise error_from(outcome)

    def fetch_bytes(self, url: str) -> bytes:
        """A signed URL's whole body (stills are small)."""
        try:
            with httpx.Client(timeout=60, follow_redirects=True) as plain:
                response = plain.get(url)
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
            with httpx.Client(timeout=60, follow_redirects=True) as plain, \
                    plain.stream("GET", url) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_from(response)
                total = int(response.headers["Content-Length"]) if "Content-Length" in response.headers else None
                done = 0
                with io.open_file(partial, "wb") as out:
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
        if self.owns_http:
            self.http.close()

