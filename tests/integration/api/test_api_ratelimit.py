"""Rate limits per API key: RateLimit headers, 429 with Retry-After, windows by the service's clock,
limits from settings, counters in memory or in Redis (shared by API processes), and Redis down.

Redis is the session's server (``redis_url`` in ``tests/conftest.py``: a throwaway process, or
``REELFARM_TEST_REDIS_URL``); each test uses its own key prefix and deletes its keys. When Redis
cannot be started or reached these tests fail.
"""
from __future__ import annotations

import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from reelfarm.api.ratelimit import (
    FileRateLimiter,
    MemoryRateLimiter,
    RateLimiter,
    RateLimiterUnavailable,
    RedisRateLimiter,
    make_limiter_redis,
)
from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import RateLimit, Settings
from tests.integration.api.conftest import START
from tests.integration.api.support import assert_error

DOWN_REDIS_URL = "redis://127.0.0.1:1/13"  # nothing listens on port 1
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")


# --- fixtures -------------------------------------------------------------------------------------

@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own in the session's Redis."""
    redis = make_limiter_redis(redis_url)
    prefix = f"test:ratelimit:{secrets.token_hex(6)}:"
    yield prefix
    for key in redis.scan_iter(match=f"{prefix}*", count=1000):
        redis.delete(key)


@pytest.fixture
def limited_settings(tmp_path, db_url: str) -> Settings:
    """Pro keys may make 3 requests per 60 s."""
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_RATE_LIMIT_PRO": "3"})


@pytest.fixture
def limited_services(limited_settings: Settings, clock: FixedClock) -> Iterator[Services]:
    services = Services.from_settings(limited_settings, clock=clock)
    yield services
    services.engine.dispose()


@pytest.fixture
def limited(limited_services: Services) -> FlaskClient:
    return create_app(services=limited_services).test_client()


@pytest.fixture(params=["memory", "file", "redis"])
def limiter_factory(request: pytest.FixtureRequest, tmp_path) -> Callable[[FixedClock], RateLimiter]:
    """Builds each RateLimiter implementation on a clock (Redis ones share this test's prefix, file
    ones this test's file)."""
    if request.param == "memory":
        return MemoryRateLimiter
    if request.param == "file":
        return lambda clock: FileRateLimiter(tmp_path / FileRateLimiter.FILE, clock)
    prefix = request.getfixturevalue("redis_prefix")
    url = request.getfixturevalue("redis_url")
    return lambda clock: RedisRateLimiter(make_limiter_redis(url), clock, prefix=prefix)


def _rate(response: Any) -> dict[str, str]:
    return {name: response.headers.get(name) for name in RATE_HEADERS}


# --- the RateLimiter contract (MemoryRateLimiter and RedisRateLimiter alike) -----------------------

def test_limiter_counts_within_a_window_then_refuses(limiter_factory):
    clock = FixedClock(START)
    limiter, rate = limiter_factory(clock), RateLimit(3, 60)
    quotas = [limiter.hit("key-a", rate) for _ in range(4)]
    assert [(q.allowed, q.remaining) for q in quotas] == [(True, 2), (True, 1), (True, 0), (False, 0)]
    assert [q.reset_sec for q in quotas] == [60] * 4  # START is on a window boundary
    assert quotas[-1].retry_after == 60


def test_limiter_windows_reset_by_the_clock(limiter_factory):
    clock = FixedClock(START)
    limiter, rate = limiter_factory(clock), RateLimit(2, 60)
    limiter.hit("key-a", rate)
    clock.advance(59.5)
    late = limiter.hit("key-a", rate)
    assert (late.remaining, late.reset_sec, late.retry_after) == (0, 1, 1)
    assert not limiter.hit("key-a", rate).allowed
    clock.advance(0.5)
    fresh = limiter.hit("key-a", rate)
    assert (fresh.allowed, fresh.remaining, fresh.reset_sec) == (True, 1, 60)


def test_limiter_keeps_keys_apart(limiter_factory):
    clock = FixedClock(START)
    limiter, rate = limiter_factory(clock), RateLimit(1, 60)
    assert limiter.hit("key-a", rate).allowed
    assert not limiter.hit("key-a", rate).allowed
    assert limiter.hit("key-b", rate).allowed


def test_limiter_counts_exactly_under_concurrency(limiter_factory):
    clock = FixedClock(START)
    limiter, rate = limiter_factory(clock), RateLimit(50, 60)
    counts: list[int] = []
    lock = threading.Lock()

    def hit() -> None:
        for _ in range(10):
            quota = limiter.hit("key-a", rate)
            with lock:
                counts.append(quota.count)
    threads = [threading.Thread(target=hit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(counts) == list(range(1, 81))


def test_the_memory_limiter_forgets_counters_whose_window_is_over():
    clock = FixedClock(START)
    limiter, rate = MemoryRateLimiter(clock), RateLimit(5, 60)
    for i in range(MemoryRateLimiter.PRUNE_FLOOR):
        limiter.hit(f"old-{i}", rate)
    assert len(limiter) == MemoryRateLimiter.PRUNE_FLOOR  # a live window's counters all stay
    clock.advance(60)
    assert limiter.hit("new", rate).remaining == 4
    assert len(limiter) == 1  # past the floor: the counters of windows that are over are gone
    assert limiter.hit("new", rate).remaining == 3


def test_file_counters_are_shared_by_processes_and_instances(tmp_path):
    clock, rate = FixedClock(START), RateLimit(1000, 60)
    path = tmp_path / "data" / FileRateLimiter.FILE
    first = FileRateLimiter(path, clock)
    assert first.hit("key-a", rate).count == 1
    children = []
    for _ in range(3):  # forked processes, as gunicorn forks its workers (the parent's limiter included)
        pid = os.fork()
        if pid == 0:
            try:
                for _ in range(50):
                    first.hit("key-a", rate)
                    FileRateLimiter(path, clock).hit("key-b", rate)
            finally:
                os._exit(0)
        children.append(pid)
    for _ in range(50):
        first.hit("key-a", rate)
    for pid in children:
        assert os.waitpid(pid, 0)[1] == 0
    second = FileRateLimiter(path, clock)
    assert second.hit("key-a", rate).count == 1 + 50 * 4 + 1
    assert second.hit("key-b", rate).count == 50 * 3 + 1
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_file_limiter_reuses_slots_whose_window_is_over_and_fails_open_when_full(tmp_path):
    clock, rate = FixedClock(START), RateLimit(5, 60)
    limiter = FileRateLimiter(tmp_path / FileRateLimiter.FILE, clock)
    limiter.SLOTS = limiter.PROBES = 4  # a table of four slots
    for name in ("a", "b", "c", "d"):
        assert limiter.hit(name, rate).count == 1
    with pytest.raises(RateLimiterUnavailable):
        limiter.hit("e", rate)  # four live windows: no slot for a fifth key
    assert limiter.hit("a", rate).count == 2  # the keys already counted go on
    clock.advance(60)
    assert limiter.hit("e", rate).count == 1  # windows over: their slots are taken again
    assert [limiter.hit(name, rate).count for name in ("a", "b", "c", "e")] == [1, 1, 1, 2]


# --- over HTTP -------------------------------------------------------------------------------------

def test_success_and_error_responses_carry_ratelimit_headers(client, tenant):
    ok = client.get("/api/v1/me", headers=tenant.headers)
    assert ok.status_code == 200
    assert _rate(ok) == {"RateLimit-Limit": "600", "RateLimit-Remaining": "599", "RateLimit-Reset": "60",
                         "RateLimit-Policy": "600;w=60"}
    missing = client.get(f"/api/v1/videos/{uuid.uuid4()}", headers=tenant.headers)
    assert_error(missing, 404, "not_found")
    assert _rate(missing)["RateLimit-Remaining"] == "598"
    bad = client.post("/api/v1/videos", json={"storyId": 5}, headers=tenant.headers)
    assert_error(bad, 400, "validation_failed")
    assert _rate(bad) == {"RateLimit-Limit": "600", "RateLimit-Remaining": "597", "RateLimit-Reset": "60",
                          "RateLimit-Policy": "600;w=60"}


def test_unauthenticated_and_public_responses_carry_no_ratelimit_headers(client):
    assert_error(client.get("/api/v1/me"), 401, "unauthorized")
    assert _rate(client.get("/api/v1/me")) == dict.fromkeys(RATE_HEADERS)
    assert _rate(client.get("/api/v1/openapi.json")) == dict.fromkeys(RATE_HEADERS)


def test_plan_limit_comes_from_settings(limited, make_tenant):
    tenant = make_tenant(plan="pro")
    r = limited.get("/api/v1/me", headers=tenant.headers)
    assert _rate(r)["RateLimit-Policy"] == "3;w=60" and _rate(r)["RateLimit-Limit"] == "3"
    assert r.get_json()["rate_limit"] == {"limit": 3, "window_sec": 60, "policy": "3;w=60"}
    agency = make_tenant(plan="agency")
    assert _rate(limited.get("/api/v1/me", headers=agency.headers))["RateLimit-Policy"] == "3000;w=60"


def test_over_the_limit_is_429_with_retry_after_and_other_keys_are_unaffected(limited, make_tenant, clock):
    tenant, other = make_tenant(), make_tenant(name="other")
    for remaining in ("2", "1", "0"):
        assert _rate(limited.get("/api/v1/me", headers=tenant.headers))["RateLimit-Remaining"] == remaining
    clock.advance(20.25)
    r = limited.get("/api/v1/me", headers=tenant.headers)
    error = assert_error(r, 429, "rate_limited")
    assert "3 requests per 60 s" in error["message"]
    assert r.headers["Retry-After"] == "40"
    assert _rate(r) == {"RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "40",
                        "RateLimit-Policy": "3;w=60"}
    assert limited.get("/api/v1/me", headers=other.headers).status_code == 200


def test_a_refused_request_does_nothing(limited, make_tenant):
    tenant = make_tenant()
    for _ in range(3):
        limited.get("/api/v1/me", headers=tenant.headers)
    r = limited.post("/api/v1/videos", json={"storyId": "announcement"}, headers=tenant.headers)
    assert_error(r, 429, "rate_limited")
    with limited.application.extensions["reelfarm"].engine.connect() as conn:
        from sqlalchemy import func, select

        from reelfarm.shared.tables import videos
        count = conn.execute(select(func.count()).select_from(videos)
                             .where(videos.c.workspace_id == tenant.workspace_id)).scalar()
    assert count == 0


def test_the_window_resets_when_the_clock_moves_on(limited, make_tenant, clock):
    tenant = make_tenant()
    for _ in range(3):
        limited.get("/api/v1/me", headers=tenant.headers)
    clock.advance(59)
    r = limited.get("/api/v1/me", headers=tenant.headers)
    assert_error(r, 429, "rate_limited")
    assert r.headers["Retry-After"] == "1" and r.headers["RateLimit-Reset"] == "1"
    clock.advance(1)
    r = limited.get("/api/v1/me", headers=tenant.headers)
    assert r.status_code == 200
    assert _rate(r)["RateLimit-Remaining"] == "2" and _rate(r)["RateLimit-Reset"] == "60"


def test_redis_counters_are_shared_by_two_api_processes(limited_settings, limited_services, make_tenant, clock,
                                                       redis_prefix, redis_url):
    second_services = Services.from_settings(limited_settings, clock=clock, run_migrations=False)
    apps: list[Flask] = []
    for services in (limited_services, second_services):
        services.rate_limiter = RedisRateLimiter(make_limiter_redis(redis_url), clock, prefix=redis_prefix)
        apps.append(create_app(services=services))
    first, second = (a.test_client() for a in apps)
    tenant = make_tenant()
    try:
        assert _rate(first.get("/api/v1/me", headers=tenant.headers))["RateLimit-Remaining"] == "2"
        assert _rate(second.get("/api/v1/me", headers=tenant.headers))["RateLimit-Remaining"] == "1"
        assert _rate(first.get("/api/v1/me", headers=tenant.headers))["RateLimit-Remaining"] == "0"
        assert_error(second.get("/api/v1/me", headers=tenant.headers), 429, "rate_limited")
        assert_error(first.get("/api/v1/me", headers=tenant.headers), 429, "rate_limited")
    finally:
        second_services.engine.dispose()


def test_redis_down_fails_open_without_ratelimit_headers(limited_services, make_tenant, clock, caplog):
    limited_services.rate_limiter = RedisRateLimiter(make_limiter_redis(DOWN_REDIS_URL), clock)
    client = create_app(services=limited_services).test_client()
    tenant = make_tenant()
    with caplog.at_level(logging.WARNING, logger="reelfarm.api"):
        responses = [client.get("/api/v1/me", headers=tenant.headers) for _ in range(5)]  # limit is 3
    assert [r.status_code for r in responses] == [200] * 5
    assert all(_rate(r) == dict.fromkeys(RATE_HEADERS) for r in responses)
    warnings = [rec for rec in caplog.records if "rate limiter unavailable" in rec.getMessage()]
    assert len(warnings) == 5 and all(rec.levelno == logging.WARNING for rec in warnings)


def test_openapi_documents_429_on_every_authenticated_operation(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    operations = [(path, method, op) for path, item in spec["paths"].items()
                  for method, op in item.items() if method in ("get", "post", "patch", "put", "delete")]
    authed = [(path, method, op) for path, method, op in operations if op.get("security") != []
              and "401" in op["responses"]]
    assert len(authed) > 10
    for path, method, op in authed:
        assert "429" in op["responses"], (method, path)
        assert {"Retry-After", "RateLimit-Limit"} <= set(op["responses"]["429"]["headers"]), (method, path)
