"""A serving process's Redis clients: one wait on a silent server, then none for the breaker's
cool-down; a node's client keeps waiting (it rides outages out) but never without a bound.

The silent server is a listening socket that never reads: the kernel completes the connection
and nothing ever answers, as with a host whose replies are dropped.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from reelfarm.farm.runtime import resilience
from reelfarm.farm.runtime.resilience import SERVING_TIMEOUT_SEC, Breaker, GuardedConnection, redis_client


@pytest.fixture
def silent_url() -> Iterator[str]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"


def timed(call: object) -> tuple[float, BaseException | None]:
    began = time.monotonic()
    try:
        call()  # type: ignore[operator]
    except (RedisConnectionError, RedisTimeoutError) as exc:
        return time.monotonic() - began, exc
    return time.monotonic() - began, None


def test_after_one_wait_a_serving_client_fails_at_once_until_the_cool_down_ends(silent_url: str,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resilience, "_BREAKERS", {})
    client, other = redis_client(silent_url, fail_fast=True), redis_client(silent_url, fail_fast=True)
    assert client.connection_pool.connection_class is GuardedConnection

    first, error = timed(client.ping)
    assert isinstance(error, RedisTimeoutError)
    assert SERVING_TIMEOUT_SEC * 0.9 <= first < SERVING_TIMEOUT_SEC + 0.5

    tries: list[object] = []
    real_connect = GuardedConnection._connect
    monkeypatch.setattr(GuardedConnection, "_connect", lambda self: tries.append(self) or real_connect(self))
    for call in (client.ping, lambda: other.get("k"), lambda: client.set("k", 1)):  # every client of the process
        took, error = timed(call)
        assert isinstance(error, RedisConnectionError) and "not trying it again" in str(error)
        assert tries == []  # refused without opening a socket...
        assert took < SERVING_TIMEOUT_SEC / 2  # ...so without waiting for the server (loose: a loaded machine)

    breaker = client.connection_pool.connection_kwargs["breaker"]
    breaker._until = time.monotonic()  # the cool-down is over: the next call tries the server again
    again, error = timed(client.ping)
    assert isinstance(error, RedisTimeoutError) and again >= SERVING_TIMEOUT_SEC * 0.9
    assert tries  # the server was tried again


def test_a_nodes_client_has_no_breaker_and_bounded_waits(silent_url: str) -> None:
    client = redis_client(silent_url)
    kwargs = client.connection_pool.connection_kwargs
    assert "breaker" not in kwargs
    assert kwargs["socket_timeout"] == resilience.REDIS_TIMEOUT_SEC
    assert kwargs["socket_keepalive"] is True
    assert kwargs["socket_keepalive_options"][socket.TCP_USER_TIMEOUT] == resilience.REDIS_USER_TIMEOUT_MS


def test_a_breaker_opens_on_trip_and_closes_after_its_cool_down() -> None:
    breaker = Breaker(cool_sec=0.2)
    breaker.check()
    breaker.trip()
    assert breaker.open
    with pytest.raises(RedisConnectionError):
        breaker.check()
    time.sleep(0.25)
    assert not breaker.open
    breaker.check()
