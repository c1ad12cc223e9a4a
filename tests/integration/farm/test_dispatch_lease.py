"""The farm's one dispatcher (``reelfarm.farm.runtime.dispatchlease``) on a real Redis of the test's
own: of several bidders one runs rounds, at once when woken and every sweep otherwise; the others
send one command a try and run none; a holder that dies is replaced within the lease and a try, one
that stops hands over at once."""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis import Redis

from reelfarm.farm.runtime.dispatchlease import DispatchLease, holder, lease_key, wake, wake_key
from tests.servers import start_redis

LEASE_MS, RENEW_SEC, SWEEP_SEC, TRY_SEC = 1500, 0.5, 1.0, 0.3


@pytest.fixture
def own_redis() -> Iterator[Redis]:
    server = start_redis()
    client = Redis.from_url(server.url)
    yield client
    client.close()
    server.kill()
    server.stop()


class Bidder:
    """A process's bid, with a client of its own and a count of the rounds it ran."""

    def __init__(self, url: str, name: str) -> None:
        self.name = name
        self.rounds: list[float] = []
        self.lease = DispatchLease(Redis.from_url(url), "ns:", lambda _free: self.rounds.append(time.monotonic()),
                                   lease_ms=LEASE_MS, renew_sec=RENEW_SEC, sweep_sec=SWEEP_SEC, try_sec=TRY_SEC)
        self.lease.token = f"{name}:{self.lease.token}"

    def die(self) -> None:
        """Stop as a killed process does: no more commands, the lease not given back."""
        self.lease._holding = False  # killed in its tracks: it releases nothing
        self.lease._stopped.set()
        self.lease.join(5)


def bidders(redis: Redis, n: int) -> list[Bidder]:
    url = f"redis://{redis.connection_pool.connection_kwargs['host']}:{redis.connection_pool.connection_kwargs['port']}/0"
    made = [Bidder(url, f"p{i}") for i in range(n)]
    for bidder in made:
        bidder.lease.start()
    return made


def wait_for(check: Any, timeout: float) -> float:
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise AssertionError("not seen in time")
        time.sleep(0.02)
    return time.monotonic() - began


def leader(found: list[Bidder], redis: Redis) -> Bidder:
    token = holder(redis, "ns:")
    assert token is not None
    [held] = [b for b in found if token.startswith(f"{b.name}:")]
    return held


def calls(redis: Redis) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in redis.info("commandstats").items()}


def test_one_of_four_dispatches_woken_at_once_and_swept_otherwise(own_redis: Redis) -> None:
    found = bidders(own_redis, 4)
    try:
        wait_for(lambda: holder(own_redis, "ns:") is not None, 2)
        first = leader(found, own_redis)
        wait_for(lambda: first.rounds, 2)  # a round as it takes the lease
        time.sleep(SWEEP_SEC * 2.5)
        assert [b for b in found if b.rounds] == [first] and 2 <= len(first.rounds) <= 4  # sweeps alone

        before = len(first.rounds)
        wake(own_redis, "ns:")  # an enqueue: a round at once, not at the next sweep
        assert wait_for(lambda: len(first.rounds) > before, SWEEP_SEC / 2) < 0.3
        time.sleep(0.1)
        before = len(first.rounds)
        with own_redis.pipeline() as pipe:  # twenty pushes that arrive together: one round answers them
            for _ in range(20):
                pipe.rpush(wake_key("ns:"), "1")
            pipe.execute()
        wait_for(lambda: len(first.rounds) > before, SWEEP_SEC / 2)
        time.sleep(0.2)
        assert own_redis.llen(wake_key("ns:")) == 0 and len(first.rounds) == before + 1
        assert all(sum(b.lease.holding for b in found) == 1 for _ in range(3))
    finally:
        for bidder in found:
            bidder.lease.stop(5)
    assert own_redis.get(lease_key("ns:")) is None  # a holder that stops gives the lease back


def test_followers_send_one_command_a_try_and_run_no_round(own_redis: Redis) -> None:
    found = bidders(own_redis, 4)
    try:
        wait_for(lambda: holder(own_redis, "ns:") is not None, 2)
        first = leader(found, own_redis)
        time.sleep(0.5)
        before, began = calls(own_redis), time.monotonic()
        time.sleep(3)
        after, spent = calls(own_redis), time.monotonic() - began
    finally:
        for bidder in found:
            bidder.lease.stop(5)
    sets = after.get("set", 0) - before.get("set", 0)
    assert sets <= 3 * (spent / TRY_SEC + 1)  # three followers, one SET NX a try each
    assert [b.name for b in found if b.rounds] == [first.name]


def test_a_dead_dispatcher_is_replaced_within_the_lease_and_a_try(own_redis: Redis) -> None:
    found = bidders(own_redis, 3)
    try:
        wait_for(lambda: holder(own_redis, "ns:") is not None, 2)
        first = leader(found, own_redis)
        first.die()
        died = time.monotonic()
        # one read a check: the lease can expire between two reads, the second then finding none
        wait_for(lambda: not (holder(own_redis, "ns:") or f"{first.name}:").startswith(f"{first.name}:"),
                 LEASE_MS / 1000 + TRY_SEC + 1)
        replaced = time.monotonic() - died
        second = leader(found, own_redis)
        assert second is not first and replaced <= LEASE_MS / 1000 + TRY_SEC + 0.3, replaced
        rounds = len(second.rounds)
        wake(own_redis, "ns:")
        wait_for(lambda: len(second.rounds) > rounds, 0.5)

        second.lease.stop(5)  # a holder that stops hands over at once
        stopped = time.monotonic()
        wait_for(lambda: (holder(own_redis, "ns:") or "").startswith(tuple(f"{b.name}:" for b in found
                                                                         if b not in (first, second))), 2)
        assert time.monotonic() - stopped <= TRY_SEC + 0.3
    finally:
        for bidder in found:
            bidder.lease.stop(5)


def test_a_redis_restarted_empty_costs_the_lease_and_a_holder_takes_it_again(own_redis: Redis) -> None:
    found = bidders(own_redis, 2)
    try:
        wait_for(lambda: holder(own_redis, "ns:") is not None, 2)
        own_redis.flushall()  # what a Redis restarted without persistence has
        wait_for(lambda: holder(own_redis, "ns:") is not None, RENEW_SEC + TRY_SEC + 1)
        time.sleep(RENEW_SEC * 3)
        assert sum(b.lease.holding for b in found) == 1
    finally:
        for bidder in found:
            bidder.lease.stop(5)


def test_the_holders_wait_outlasts_a_serving_clients_short_timeout(own_redis: Redis,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    from reelfarm.farm.runtime.resilience import redis_client

    kwargs = own_redis.connection_pool.connection_kwargs
    serving = redis_client(f"redis://{kwargs['host']}:{kwargs['port']}/0", fail_fast=True)  # 0.5 s timeouts
    rounds: list[float] = []
    lease = DispatchLease(serving, "api:", lambda _free: rounds.append(time.monotonic()), sweep_sec=2.0)
    with caplog.at_level(logging.WARNING, logger="reelfarm.farm"):
        lease.start()
        try:
            time.sleep(4.5)  # waits of 2 s on the wake list, past the serving client's 0.5 s
            assert lease.holding and 2 <= len(rounds) <= 4 and not lease.outage.down
            assert serving.ping()  # its breaker never tripped
        finally:
            lease.stop(5)
    assert caplog.records == []
