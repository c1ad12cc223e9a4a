"""Per-API-key rate limits: a fixed window per key, counted once for every process of a server.

A window of ``w`` seconds starts at every multiple of ``w`` since the epoch, by the service's
clock. The first ``limit`` requests of a key in a window are allowed; the rest get 429 until the
next window starts.

Where the counters live. With Redis configured (a farm), in Redis: one count per key across every
process of every server. Without it (the embedded default, whose ``reelfarm serve`` runs several
gunicorn worker processes), in ``FileRateLimiter``'s small memory-mapped file in the data folder,
which every process of the server maps: one count per key across them, at the cost of a lock and
a few memory reads per request. The database was the other candidate; a write transaction per
request would queue behind SQLite's one writer (the renders and videos a burst creates), where the
mapped file takes microseconds. ``MemoryRateLimiter`` (one process's memory) remains for code that
runs a single process and has no data folder to share.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import mmap
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
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


class FileRateLimiter:
    """Counters in a memory-mapped file shared by every process that opens it (the embedded
    ``reelfarm serve``'s gunicorn workers, which open it in the data folder); thread- and
    process-safe.

    The file is a hash table of ``SLOTS`` fixed slots: (SHA-256 of the key id, first 16 bytes;
    window start; count; window end). A key lives in one of the ``PROBES`` slots after its home
    slot (linear probing); a slot whose window is over is taken by the next new key that needs
    one, and a slot never used ends a search. Each hit holds ``flock`` on the file (other
    processes) and a lock of its own (other threads of this process, which share the file
    description ``flock`` locks). When the ``PROBES`` slots of a key's home are all live, the
    counters cannot take it: ``RateLimiterUnavailable`` (the API fails open, and logs it).
    """

    FILE = "ratelimits.v1"
    SLOTS = 16384
    PROBES = 64
    _SLOT = struct.Struct("<16sqqq")

    def __init__(self, path: Path, clock: Clock) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._fd = -1
        self._map: mmap.mmap | None = None

    def hit(self, key_id: str, rate: RateLimit) -> Quota:
        start, reset = _window(self._clock, rate)
        now = self._clock.now().timestamp()
        digest = hashlib.sha256(key_id.encode()).digest()[:16]
        home = int.from_bytes(digest[:8], "little") % self.SLOTS
        with self._lock:
            memory = self._mapped()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                count = self._count(memory, digest, home, start, start + rate.window_sec, now)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        if count is None:
            raise RateLimiterUnavailable(f"every slot near this key's is in use ({self._path})")
        return Quota(rate, count, reset)

    def _count(self, memory: mmap.mmap, digest: bytes, home: int, start: int, end: int, now: float) -> int | None:
        free = None
        for probe in range(self.PROBES):
            offset = ((home + probe) % self.SLOTS) * self._SLOT.size
            seen, seen_start, count, seen_end = self._SLOT.unpack_from(memory, offset)
            if seen == digest:
                count = count + 1 if seen_start == start else 1
                self._SLOT.pack_into(memory, offset, digest, start, count, end)
                return int(count)
            never_used = seen_end == 0
            if free is None and (never_used or seen_end <= now):
                free = offset
            if never_used:
                break
        if free is None:
            return None
        self._SLOT.pack_into(memory, free, digest, start, 1, end)
        return 1

    def _mapped(self) -> mmap.mmap:
        """The file, mapped by this process (a forked child opens its own: ``flock`` belongs to
        an open file description, which a fork would share)."""
        if self._map is not None and self._pid == os.getpid():
            return self._map
        size = self.SLOTS * self._SLOT.size
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)  # zeros: every slot never used
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        self._fd, self._pid = fd, os.getpid()
        self._map = mmap.mmap(fd, size)
        return self._map


def make_rate_limiter(settings: Settings, clock: Clock) -> RateLimiter:
    """``RedisRateLimiter`` when ``settings.redis_url`` is set, else ``FileRateLimiter`` in the data folder."""
    if settings.redis_url:
        return RedisRateLimiter(make_limiter_redis(settings.redis_url), clock)
    return FileRateLimiter(settings.data_dir / FileRateLimiter.FILE, clock)


def make_limiter_redis(url: str) -> Any:
    """A Redis client with short timeouts: when Redis is down, requests go on without delay."""
    from reelfarm.farm.runtime.resilience import redis_client

    return redis_client(url, fail_fast=True, timeout=REDIS_TIMEOUT_SEC)
