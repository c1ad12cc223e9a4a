"""Riding out outages of Redis and PostgreSQL: which errors mean "unreachable", and how to wait.

A farm process (a ``reelfarm worker`` node, the maintenance round) never quits or gives up work
because a server it depends on went away: it waits, retrying with ``Backoff`` (0.5 s doubling
to ``MAX_WAIT_SEC``, jittered so a farm does not reconnect in lockstep), and carries on where it
was. ``OutageLog`` keeps the log readable through it: per process and dependency, one warning
when it is lost, one line when it is back and for how long it was gone, nothing in between however
long it lasts and however many of the process's threads and rounds meet it; ``Outage`` is one
part's view (whether it is in an outage now), reporting to the process's ``OUTAGES``.

``is_redis_outage`` and ``is_database_outage`` tell such errors from every other failure (those
still fail work, as before); the second is ``reelfarm.shared.db.database_outage``.

``redis_client`` makes every Redis client of the service. Each connection has TCP keepalives and
a TCP user timeout, so a link gone silent (no FIN, no RST) fails in seconds rather than after
the OS's retransmissions. A process that answers requests (``fail_fast``) also gets short socket
timeouts and a ``Breaker`` shared by its clients of one server: after one failure it refuses at
once for ``BREAK_SEC`` instead of waiting on the silent host again, so a silent Redis costs one
request half a second and the rest nothing, the same as a Redis that refuses; the API then reads
a render's state from the database (its last stored progress).
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from redis.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from reelfarm.farm.services.errors import is_database_outage

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


REDIS, DATABASE = "Redis", "the database"


def dependency_of(exc: BaseException) -> str:
    """The dependency an outage error is about: ``REDIS`` or ``DATABASE``."""
    return REDIS if is_redis_outage(exc) else DATABASE


class OutageLog:
    """This process's view of the servers it depends on, keyed by dependency (``REDIS``,
    ``DATABASE``): one warning when one goes (naming it and the error), one info line when it is
    back (with how long it was gone), debug lines at most in between, however many threads and
    rounds of the process meet it. Thread-safe; a forked child starts with a view of its own.

    Each line carries ``dependency`` and ``outage`` ("gone", "back"; ``down_sec`` on the second)
    and the process's ``pid``, so a log reader can count them.
    """

    def __init__(self, logger: logging.Logger = log) -> None:
        self.log = logger
        self._since: dict[str, float] = {}
        self._lock = threading.Lock()

    def down(self, dependency: str) -> bool:
        return dependency in self._since

    def lost(self, dependency: str, exc: BaseException, doing: str = "") -> None:
        """A call to ``dependency`` failed for want of it; the first of an outage logs a warning."""
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        with self._lock:
            first = dependency not in self._since
            if first:
                self._since[dependency] = time.monotonic()
        if not first:
            self.log.debug("%s still unreachable%s (%s)", dependency, f" while {doing}" if doing else "", reason)
            return
        self.log.warning("%s unreachable%s (%s); retrying until it is back", dependency,
                         f" while {doing}" if doing else "", reason,
                         extra={"dependency": dependency, "outage": "gone", "pid": os.getpid()})

    def ok(self, dependency: str, resumed: str = "", began: float | None = None) -> None:
        """A call to ``dependency`` succeeded; the first after an outage logs how long it lasted.
        ``began``: when the work that succeeded began (``time.monotonic()``); work begun before the
        outage was seen tells nothing of its end (its calls may all have come first)."""
        if dependency not in self._since:  # the common case, without the lock
            return
        with self._lock:
            since = self._since.get(dependency)
            if since is None or (began is not None and began < since):
                return
            del self._since[dependency]
        gone = time.monotonic() - since
        self.log.info("%s reachable again after %.1f s%s", dependency, gone, f"; {resumed}" if resumed else "",
                      extra={"dependency": dependency, "outage": "back", "down_sec": round(gone, 1),
                             "pid": os.getpid()})


OUTAGES = OutageLog()  # this process's


def _fresh_outages() -> None:
    OUTAGES._since = {}  # in place: modules hold it by name
    OUTAGES._lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_outages)


class Outage:
    """One part of a process (a loop, a round) meeting outages: whether it is in one now (``down``),
    with the log left to the process's ``OUTAGES``.

    ``dependency``: ``REDIS`` or ``DATABASE``; None for a part that meets both, each error telling
    which (``dependency_of``). ``ok`` reports the dependencies this part lost as back, or those given.
    """

    def __init__(self, dependency: str | None = None) -> None:
        self.dependency = dependency
        self._lost: set[str] = set()
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return bool(self._lost)

    def lost(self, exc: BaseException, doing: str = "") -> None:
        """Record a failed attempt (the process's log says so once)."""
        dependency = self.dependency or dependency_of(exc)
        with self._lock:
            self._lost.add(dependency)
        OUTAGES.lost(dependency, exc, doing)

    def ok(self, resumed: str = "", dependencies: tuple[str, ...] | None = None, began: float | None = None) -> None:
        """Record a success with ``dependencies`` (default: this part's, or those it lost), of work
        begun at ``began`` (``OutageLog.ok``)."""
        if dependencies is None:
            dependencies = (self.dependency,) if self.dependency else tuple(self._lost)
        with self._lock:
            self._lost.difference_update(dependencies)
        for dependency in dependencies:
            OUTAGES.ok(dependency, resumed, began)


class OutageAwareLog(logging.LoggerAdapter[logging.Logger]):
    """RQ's worker logger for one worker, except that the line RQ's wait for a job logs at each retry
    while Redis is away ("could not connect to Redis instance") goes to the worker's ``Outage`` (one
    line when the outage starts, one when it ends, in the process's ``OUTAGES``)."""

    RETRY = "could not connect to Redis instance"

    def __init__(self, logger: logging.Logger, outage: Outage) -> None:
        super().__init__(logger, {})
        self.outage = outage

    @property
    def level(self) -> int:  # RQ reads its logger's level
        return int(self.logger.level)

    def error(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(msg, str) and self.RETRY in msg:
            exc = next((a for a in args if isinstance(a, BaseException)), None)
            self.outage.lost(exc or RedisConnectionError(self.RETRY), "waiting for jobs")
            return
        super().error(msg, *args, **kwargs)


def wait_until(check: Callable[[], Any], outage: Outage, *, doing: str, stop: Callable[[], bool] = lambda: False,
               is_down: Callable[[BaseException], bool] = is_outage, resumed: str = "") -> bool:
    """Call ``check`` until it succeeds, sleeping with backoff while it fails with an outage.

    Returns False when ``stop()`` became true first. Errors that are not outages propagate.
    """
    backoff = Backoff()
    while not stop():
        began = time.monotonic()
        try:
            check()
        except Exception as exc:
            if not is_down(exc):
                raise
            outage.lost(exc, doing)
            time.sleep(backoff.next())
            continue
        outage.ok(resumed, began=began)
        return True
    return False


# -- Redis clients ------------------------------------------------------------------------------

REDIS_KEEPALIVE = (4, 1, 3)  # idle seconds, seconds between probes, probes
REDIS_USER_TIMEOUT_MS = 4000  # bytes sent and not acknowledged for this long drop the connection
REDIS_CONNECT_TIMEOUT_SEC = 2.0
REDIS_TIMEOUT_SEC = 10.0  # a node's commands (RQ lengthens it for its blocking waits)
SERVING_CONNECT_TIMEOUT_SEC = 0.25  # a process answering requests waits this long to connect...
SERVING_TIMEOUT_SEC = 0.5  # ...and for an answer
BREAK_SEC = 5.0  # after a failure, a serving process leaves Redis alone this long


class Breaker:
    """Fails at once for ``cool_sec`` after a connection to a server failed or timed out."""

    def __init__(self, cool_sec: float = BREAK_SEC) -> None:
        self.cool_sec = cool_sec
        self._until = 0.0
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return time.monotonic() < self._until

    def check(self) -> None:
        if self.open:
            raise RedisConnectionError(f"Redis failed less than {self.cool_sec:g} s ago; not trying it again yet")

    def trip(self) -> None:
        with self._lock:
            self._until = time.monotonic() + self.cool_sec


_BREAKERS: dict[str, Breaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(server: str) -> Breaker:
    """This process's breaker for ``server`` (host:port), shared by all its serving clients."""
    with _BREAKERS_LOCK:
        return _BREAKERS.setdefault(server, Breaker())


def _forget_breakers() -> None:
    global _BREAKERS_LOCK
    _BREAKERS.clear()  # a forked child starts with its own view of the servers
    _BREAKERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_breakers)


class GuardedConnection(Connection):
    """A Redis connection that trips its ``Breaker`` on a connection error or timeout, and
    refuses at once while the breaker is open."""

    def __init__(self, *args: Any, breaker: Breaker, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.breaker = breaker

    def _guarded(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except REDIS_ERRORS:
            self.breaker.trip()
            raise

    def connect(self) -> None:
        self.breaker.check()
        self._guarded(super().connect)

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self.breaker.check()
        self._guarded(lambda: super(GuardedConnection, self).send_packed_command(command, check_health))

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._guarded(lambda: super(GuardedConnection, self).read_response(*args, **kwargs))


def keepalive_options() -> dict[int, int]:
    """Socket options of every Redis connection: keepalives and the TCP user timeout (Linux)."""
    idle, interval, count = REDIS_KEEPALIVE
    options = {socket.TCP_KEEPIDLE: idle, socket.TCP_KEEPINTVL: interval, socket.TCP_KEEPCNT: count}
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        options[socket.TCP_USER_TIMEOUT] = REDIS_USER_TIMEOUT_MS
    return options


def blocking_client(redis: Any, timeout: float) -> Any:
    """A client for ``redis``'s server whose replies may take ``timeout`` seconds: for a blocking
    command (``BLPOP``), which a serving process's short timeouts would cut (and count against its
    breaker). Its connections are its own; every other option is ``redis``'s."""
    from redis import ConnectionPool, Redis

    pool = redis.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": timeout}
    return Redis(connection_pool=ConnectionPool(connection_class=pool.connection_class, **kwargs))


def redis_client(url: str, *, fail_fast: bool = False, timeout: float | None = None) -> Any:
    """A Redis client for ``url`` whose every wait is bounded (see the module docstring).

    ``fail_fast``: a process answering requests: short timeouts and this process's breaker for
    the server. Otherwise (nodes, commands) the usual timeouts, and an outage is waited out by
    the caller (``wait_until``).
    """
    from redis import ConnectionPool, Redis

    options: dict[str, Any] = {"socket_keepalive": True, "socket_keepalive_options": keepalive_options(),
                               "health_check_interval": 30}
    if fail_fast:
        pool = ConnectionPool.from_url(url, socket_connect_timeout=SERVING_CONNECT_TIMEOUT_SEC,
                                       socket_timeout=timeout or SERVING_TIMEOUT_SEC, **options)
        kwargs = pool.connection_kwargs
        if pool.connection_class is Connection:  # a TCP server (a Unix socket cannot go silent)
            pool.connection_class = GuardedConnection
            kwargs["breaker"] = breaker_for(f"{kwargs.get('host')}:{kwargs.get('port')}")
        return Redis(connection_pool=pool)
    return Redis.from_url(url, socket_connect_timeout=REDIS_CONNECT_TIMEOUT_SEC,
                          socket_timeout=timeout or REDIS_TIMEOUT_SEC, **options)
