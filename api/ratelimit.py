"""Per-API-key rate limits: a fixed window per key, counted in Redis (a farm) or in memory (embedded).

A window of ``w`` seconds starts at every multiple of ``w`` since the epoch, by the service's
clock. The first ``limit`` requests of a key in a window are allowed; the rest get 429 until the
next window starts.
"""
from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from reelfarm.shared.clock import Clock
from reelfarm.shared.config import RateLimit, Settings

log = logging.getLogger("reelfarm.api")

REDIS_KEY_PREFIX = "reelfarm:ratelimit:"
# The limiter sits in front of every request: a Redis that does not answer must cost little.
REDIS_TIMEOUT_SEC = 0.5


class RateLimiterUnavailable(Exception):
    """The counters cannot be reached; the caller decides what to do (the API fails open)."""


@dataclass(frozen=True)
class Quota:
    """One key's standing in its current window, after counting this request."""

    rate: RateLimit
    count: int
    reset_sec: int  # whole seconds until the window resets, >= 0

    @property
    def allowed(self) -> bool:
        return self.count <= self.rate.limit

    @property
    def remaining(self) -> int:
        return max(0, self.rate.limit - self.count)

    @property
    def retry_after(self) -> int:
        """``Retry-After``: whole seconds, at least 1."""
        return max(1, self.reset_sec)

    def headers(self) -> dict[str, str]:
        """The ``RateLimit-*`` headers every authenticated response carries."""
        return {"RateLimit-Limit": str(self.rate.limit), "RateLimit-Remaining": str(self.remaining),
                "RateLimit-Reset": str(self.reset_sec), "RateLimit-Policy": self.rate.policy}


class RateLimiter(Protocol):
    """Counts requests per key and window."""

    def hit(self, key_id: str, rate: RateLimit) -> Quota:
        """Count one request of ``key_id`` in the current window and return its standing.

        Raises:
            RateLimiterUnavailable: the counters could not be reached.
        """
        ...


def _window(clock: Clock, rate: RateLimit) -> tuple[int, int]:
    """(start of the current window in epoch seconds, whole seconds until it resets)."""
    now = clock.now().timestamp()
    start = int(now // rate.window_sec) * rate.window_sec
    return start, max(0, math.ceil(start + rate.window_sec - now))


class MemoryRateLimiter:
    """Counters in this process's memory (the embedded mode: one process); thread-safe.

    A counter whose window is over is dropped once the table has doubled since it was last
    pruned, so the table holds about the keys seen in the current windows, not every key the
    process ever saw.
    """

    PRUNE_FLOOR = 1024

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int, int]] = {}  # key id -> (window start, count, window end)
        self._prune_above = self.PRUNE_FLOOR

    def hit(self, key_id: str, rate: RateLimit) -> Quota:
        start, reset = _window(self._clock, rate)
        with self._lock:
            seen_start, count, _ = self._counts.get(key_id, (start, 0, 0))
            count = count + 1 if seen_start == start else 1
            self._counts[key_id] = (start, count, start + rate.window_sec)
            if len(self._counts) > self._prune_above:
                self._prune(start)
        return Quota(rate, count, reset)

    def __len__(self) -> int:
        return len(self._counts)

    def _prune(self, now: int) -> None:
        self._counts = {key: counter for key, counter in self._counts.items() if counter[2] > now}
        self._prune_above = max(self.PRUNE_FLOOR, 2 * len(self._counts))


class RedisRateLimiter:
    """Counters in Redis, shared by every API process: ``INCR`` and ``EXPIRE`` in one pipeline."""

    def __init__(self, redis: Any, clock: Clock, prefix: str = REDIS_KEY_PREFIX) -> None:
        self._redis = redis
        self._clock = clock
        self._prefix = prefix

    def hit(self, key_id: str, rate: RateLimit) -> Quota:
        from redis.exceptions import RedisError

        start, reset = _window(self._clock, rate)
        name = f"{self._prefix}{key_id}:{start}"
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.incr(name)
            pipe.expire(name, rate.window_sec * 2)  # outlives the window a little; clocks differ
            count, _ = pipe.execute()
        except RedisError as exc:
            raise RateLimiterUnavailable(str(exc)) from exc
        return Quota(rate, int(count), reset)


def make_rate_limiter(settings: Settings, clock: Clock) -> RateLimiter:
    """``RedisRateLimiter`` when ``settings.redis_url`` is set, else ``MemoryRateLimiter``."""
    if settings.redis_url:
        return RedisRateLimiter(make_limiter_redis(settings.redis_url), clock)
    return MemoryRateLimiter(clock)


def make_limiter_redis(url: str) -> Any:
    """A Redis client with short timeouts: when Redis is down, requests go on without delay."""
    from reelfarm.farm.runtime.resilience import redis_client

    return redis_client(url, fail_fast=True, timeout=REDIS_TIMEOUT_SEC)
