"""When to try a request again, and how long to wait first. No I/O: both clients ask it.

Retried: 429 (after ``Retry-After``), 502, 503 and 504, a POST answered 409
``idempotency_key_in_use`` (the first try is still running), and transport errors. What may be
retried depends on the method: GET, HEAD, DELETE and every POST (each carries an
``Idempotency-Key`` made once per call, so the server answers a repeat with the first answer)
are retried on any of these; a PATCH, which the API does not deduplicate, only when it cannot
have been applied: a refused connection or a 429.

``connect_window`` bounds how long a request keeps trying to reach a server that refuses or does not
answer the connection (the command line uses 3 s, so that a wrong URL is reported at once); without
it, connection failures count against ``max_retries`` like any other error.

Backoff is exponential with "equal jitter" (half fixed, half random), capped; a ``Retry-After``
is honoured as given, plus a little jitter so that clients sharing a key spread out.

``max_wait`` caps the seconds one call spends waiting between its tries, all retries together
(default 60 s): a retry whose wait would pass it is not made, and the last answer (a 429's
``RateLimitError``, with ``retry_after``) is raised at once. Each retry is announced: logged (a
WARNING when the server asked for a wait of a second or more, INFO otherwise) and told to the
client's ``on_retry`` hook as a ``RetryEvent``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 502, 503, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "DELETE", "POST"})


@dataclass(frozen=True)
class Retry:
    """How many times and how patiently a request is tried again."""

    max_retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 120.0
    connect_window: float | None = None
    max_wait: float | None = 60.0  # seconds of waiting between one call's tries, in all; None: no cap

    def allows_wait(self, waited: float, delay: float) -> bool:
        """Whether a retry that first waits ``delay`` seconds, after ``waited`` seconds so far, is made."""
        return self.max_wait is None or waited + delay <= self.max_wait

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * 2 ** attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def after_status(self, attempt: int, method: str, status: int, code: str | None,
                     retry_after: float | None) -> float | None:
        """Seconds to wait before retry ``attempt + 1`` of an answered request, or None to give up."""
        if attempt >= self.max_retries:
            return None
        in_use = status == 409 and code == "idempotency_key_in_use" and method == "POST"
        if status not in RETRY_STATUSES and not in_use:
            return None
        if method not in SAFE_METHODS and status != 429:
            return None
        if retry_after is not None:
            return min(retry_after, self.max_retry_after) + random.uniform(0, 0.25)
        return self._backoff(attempt)

    def after_error(self, attempt: int, method: str, connect_failed: bool, elapsed: float = 0.0) -> float | None:
        """Seconds to wait after a transport error, ``elapsed`` seconds after the first try, or None
        to give up."""
        if method not in SAFE_METHODS and not connect_failed:
            return None
        if connect_failed and self.connect_window is not None:
            delay = self._backoff(min(attempt, 8))
            return delay if elapsed + delay < self.connect_window else None
        if attempt >= self.max_retries:
            return None
        return self._backoff(attempt)


@dataclass(frozen=True)
class RetryEvent:
    """A request about to be tried again, as ``on_retry`` is told it."""

    method: str
    path: str  # below /api/v1, or the URL of a presigned upload
    attempt: int  # 1 for the first retry
    delay: float  # seconds it waits first
    reason: str  # ``429 rate_limited``, ``ConnectError: ...``
    status: int | None  # the answer's status; None after a transport error
    retry_after: float | None  # the server's ``Retry-After``, if it sent one
    waited: float  # seconds this call had waited before this retry


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the API sends whole seconds; an HTTP date is ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)
