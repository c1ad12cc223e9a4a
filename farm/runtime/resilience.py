"""Riding out outages of Redis and PostgreSQL: which errors mean "unreachable", and how to wait.

A farm process (a ``reelfarm worker`` node, the maintenance round) never quits or gives up work
because a server it depends on went away: it waits, retrying with ``Backoff`` (0.5 s doubling
to ``MAX_WAIT_SEC``, jittered so a farm does not reconnect in lockstep), and carries on where it
was. ``Outage`` keeps the log readable through it: one warning when a dependency is lost, one
line when it is back and for how long it was gone, nothing in between however long it lasts.

``is_redis_outage`` and ``is_database_outage`` tell such errors from every other failure (those
still fail work, as before); the second is ``reelfarm.shared.db.database_outage``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from reelfarm.shared.db import database_outage

log = logging.getLogger("reelfarm.farm")

REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError)
FIRST_WAIT_SEC = 0.5
MAX_WAIT_SEC = 5.0  # a node notices a server is back within seconds; retrying that often costs nothing


def is_redis_outage(exc: BaseException) -> bool:
    """Redis refused, dropped or timed out the connection (also when raised from another error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, REDIS_ERRORS):
            return True
        current = current.__cause__ or current.__context__
    return False


def is_database_outage(exc: BaseException) -> bool:
    return database_outage(exc) is not None


def is_outage(exc: BaseException) -> bool:
    return is_redis_outage(exc) or is_database_outage(exc)


class Backoff:
    """Waits that double from ``first`` to ``cap`` seconds, +-20 % jitter; ``reset`` after a success."""

    def __init__(self, first: float = FIRST_WAIT_SEC, cap: float = MAX_WAIT_SEC) -> None:
        self.first, self.cap = first, cap
        self._next = first

    def next(self) -> float:
        wait = self._next * (0.8 + 0.4 * random.random())
        self._next = min(self._next * 2, self.cap)
        return wait

    def reset(self) -> None:
        self._next = self.first


class Outage:
    """The state of one dependency as this process sees it, logged only when it changes."""

    def __init__(self, what: str, logger: logging.Logger = log) -> None:
        self.what = what
        self.log = logger
        self._since: float | None = None
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self._since is not None

    def lost(self, exc: BaseException, doing: str = "") -> None:
        """Record a failed attempt; the first of an outage logs a warning."""
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self.log.warning("%s unreachable%s (%s); retrying with backoff until it is back", self.what,
                         f" while {doing}" if doing else "", reason)

    def ok(self, resumed: str = "") -> None:
        """Record a success; the first after an outage logs how long it lasted."""
        with self._lock:
            if self._since is None:
                return
            gone, self._since = time.monotonic() - self._since, None
        self.log.warning("%s reachable again after %.1f s%s", self.what, gone, f"; {resumed}" if resumed else "")


def wait_until(check: Callable[[], Any], outage: Outage, *, doing: str, stop: Callable[[], bool] = lambda: False,
               is_down: Callable[[BaseException], bool] = is_outage, resumed: str = "") -> bool:
    """Call ``check`` until it succeeds, sleeping with backoff while it fails with an outage.

    Returns False when ``stop()`` became true first. Errors that are not outages propagate.
    """
    backoff = Backoff()
    while not stop():
        try:
            check()
        except Exception as exc:
            if not is_down(exc):
                raise
            outage.lost(exc, doing)
            time.sleep(backoff.next())
            continue
        outage.ok(resumed)
        return True
    return False
