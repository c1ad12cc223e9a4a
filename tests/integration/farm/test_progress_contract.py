"""One contract, three progress stores: memory, Redis, and the database (SQLite, PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.progress import (
    DatabaseProgress,
    MemoryProgress,
    ProgressStore,
    RedisProgress,
    fraction,
)
from reelfarm.shared.db import make_engine, migrate
from reelfarm.shared.ids import new_id


@pytest.fixture(params=["memory", "redis", "database-sqlite", "database-postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProgressStore]:
    if request.param == "memory":
        yield MemoryProgress()
    elif request.param == "redis":
        namespace = request.getfixturevalue("namespace")
        yield RedisProgress(request.getfixturevalue("redis"), prefix=f"reelfarm:{namespace}progress:")
    else:
        if request.param == "database-postgresql":
            url = request.getfixturevalue("postgres_url")
        else:
            url = f"sqlite:///{tmp_path}/progress.db"
            migrate(make_engine(url))
        engine = make_engine(url)
        yield DatabaseProgress(engine)
        engine.dispose()


def test_frames_add_up_and_clear(store: ProgressStore) -> None:
    render = new_id()
    assert (store.frames(render), store.total(render)) == (0, None)
    store.set_total(render, 300)
    store.add_frames(render, 8)
    store.add_frames(render, 0)
    store.add_frames(render, 40)
    assert (store.frames(render), store.total(render)) == (48, 300)
    assert fraction(store, render, None) == pytest.approx(0.16)
    store.clear(render)
    assert (store.frames(render), store.total(render)) == (0, None)


def test_concurrent_reports_are_all_counted(store: ProgressStore) -> None:
    render = new_id()

    def report() -> None:
        for _ in range(25):
            store.add_frames(render, 2)
    threads = [threading.Thread(target=report) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.frames(render) == 200


def test_the_fraction_stays_below_one_until_the_render_is_done(store: ProgressStore) -> None:
    render = new_id()
    store.set_total(render, 100)
    store.add_frames(render, 130)  # a retried chunk counted twice
    assert fraction(store, render, 100) == 0.99


def test_redis_progress_expires_and_survives_an_outage(redis: Any, namespace: str) -> None:
    store = RedisProgress(redis, prefix=f"reelfarm:{namespace}progress:", ttl=60)
    store.add_frames("r1", 5)
    assert 0 < redis.ttl(f"reelfarm:{namespace}progress:r1") <= 60
    down = RedisProgress(make_redis("redis://127.0.0.1:1/15"))
    down.add_frames("r1", 5)  # logged and dropped: progress never fails a render
    assert (down.frames("r1"), down.total("r1")) == (0, None)
