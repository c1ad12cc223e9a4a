"""One dispatcher for a farm: a Redis lease, woken by events, with a slow sweep as the safety net.

Every process that serves a farm on RQ (each API process, each node) can run the rounds of fair
dispatch (``reelfarm.farm.runtime.dispatch``), and one at a time does: the holder of the lease
``reelfarm:<ns>fair:lease`` (``SET NX PX LEASE_MS``; the holder extends it every ``RENEW_SEC`` by a
script that extends it only for its holder). The holder waits on the Redis list
``reelfarm:<ns>fair:wake`` (``BLPOP``): enqueueing a chunk and a chunk's end on a node push to it
(``wake``), and a round follows at once, however many pushes came meanwhile (a push may name a
worker about to take a job: the round counts it as a free place); with no push it runs a round
every ``SWEEP_SEC`` anyway. The others only try for the lease, every ``TRY_SEC`` (one
command): a dispatcher that dies stops extending its lease, and another process holds it within
``LEASE_MS`` + ``TRY_SEC``; one that stops gives it up at once.

Idle, that is what a farm's dispatch costs: the holder's wait, extension and sweep, and one command a
second from each other process, instead of a round twice a second in every process. A node about to
take a job wakes the dispatcher naming itself (``reelfarm.farm.runtime.rqnode``), so a place it
frees waits one round, not a sweep; a process that holds the lease runs that round itself. The
round lock keeps two rounds from running at once.
"""
from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from reelfarm.farm.runtime.resilience import REDIS, REDIS_ERRORS, Backoff, Outage, blocking_client

log = logging.getLogger("reelfarm.farm")

LEASE_MS = 5_000
RENEW_SEC = 2.0
SWEEP_SEC = 5.0
TRY_SEC = 1.0
WAKE_KEEP = 4096  # pushes kept on the wake list: each names a free worker, or none ("1")

_RENEW = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
          "else return 0 end")
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


def lease_key(namespace: str) -> str:
    return f"reelfarm:{namespace}fair:lease"


def wake_key(namespace: str) -> str:
    return f"reelfarm:{namespace}fair:wake"


def holder(redis: Any, namespace: str) -> str | None:
    """Who holds the dispatch lease: ``<host>:<pid>:<random>``, or None."""
    raw = redis.get(lease_key(namespace))
    return raw.decode() if isinstance(raw, bytes) else raw


def wake(redis: Any, namespace: str, free: str | None = None) -> None:
    """Ask the farm's dispatcher, whichever process it is, for a round now; ``free``: the name of a
    worker about to take a job, which the round counts as a free place."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.rpush(wake_key(namespace), free or "1")
        pipe.ltrim(wake_key(namespace), -WAKE_KEEP, -1)
        pipe.execute()


class DispatchLease(threading.Thread):
    """This process's bid for the farm's dispatch (module docstring): while it holds the lease it
    calls ``round`` (with the names of the workers the wakes said are free) when woken and every
    ``sweep_sec``; otherwise it tries for the lease every ``try_sec``."""

    def __init__(self, redis: Any, namespace: str, round: Callable[[frozenset[str]], Any], *, lease_ms: int = LEASE_MS,
                 renew_sec: float = RENEW_SEC, sweep_sec: float = SWEEP_SEC, try_sec: float = TRY_SEC) -> None:
        super().__init__(name="reelfarm-dispatch", daemon=True)
        self.redis = redis
        self.blocking = blocking_client(redis, max(renew_sec, sweep_sec) + 5)  # its waits outlast the BLPOP
        self.namespace = namespace
        self.round = round
        self.lease_ms, self.renew_sec, self.sweep_sec, self.try_sec = lease_ms, renew_sec, sweep_sec, try_sec
        self.token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"  # whose, for a reader
        self.outage = Outage(REDIS)
        self._holding = False
        self._stopped = threading.Event()

    @property
    def holding(self) -> bool:
        """Whether this process is the farm's dispatcher now."""
        return self._holding

    def run(self) -> None:
        backoff = Backoff()
        while not self._stopped.is_set():
            try:
                if self._holding or self._acquire():
                    self._dispatch(backoff)
                else:
                    backoff.reset()
                    self._stopped.wait(self.try_sec)
            except REDIS_ERRORS as exc:
                self.outage.lost(exc, "holding or trying for the dispatch lease")
                self._stopped.wait(backoff.next())
        self._release()

    def stop(self, timeout: float | None = None) -> None:
        self._stopped.set()
        self.join(timeout)

    def _acquire(self) -> bool:
        began = time.monotonic()
        taken = self.redis.set(lease_key(self.namespace), self.token, nx=True, px=self.lease_ms)
        self.outage.ok("the dispatch lease is tried again", began=began)
        if not taken:
            return False
        self._holding = True
        log.info("this process is the farm's dispatcher now (it holds the dispatch lease)")
        return True

    def _dispatch(self, backoff: Backoff) -> None:
        """Hold the lease: a round at once (what the last holder may have left), then on each wake
        and each sweep, until the lease is lost or this process stops."""
        key = wake_key(self.namespace)
        renew_at = time.monotonic() + self.renew_sec
        sweep_at = 0.0
        while self._holding and not self._stopped.is_set():
            now = time.monotonic()
            if now >= renew_at:
                if not self.redis.eval(_RENEW, 1, lease_key(self.namespace), self.token, self.lease_ms):
                    self._holding = False
                    log.info("this process is no longer the farm's dispatcher (its lease ran out)")
                    return
                self.outage.ok("the dispatch lease is held again", began=now)
                backoff.reset()
                renew_at = now + self.renew_sec
            woke, free = False, set()
            if now < sweep_at:
                popped = self.blocking.blpop([key], timeout=max(0.05, min(renew_at, sweep_at) - now))
                if popped is not None:
                    woke = True
                    with self.redis.pipeline() as pipe:  # the pushes meanwhile: one round answers them all
                        pipe.lrange(key, 0, -1)
                        pipe.delete(key)
                        pushed = pipe.execute()[0]
                    free = {v.decode() if isinstance(v, bytes) else v for v in (popped[1], *pushed)} - {"1"}
            if woke or time.monotonic() >= sweep_at:
                sweep_at = time.monotonic() + self.sweep_sec
                self.round(frozenset(free))

    def _release(self) -> None:
        if not self._holding:
            return
        self._holding = False
        try:
            self.redis.eval(_RELEASE, 1, lease_key(self.namespace), self.token)
        except REDIS_ERRORS:
            pass  # it runs out by itself
