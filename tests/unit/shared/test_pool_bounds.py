"""Each process kind's engine holds a stated, small number of PostgreSQL connections
(``reelfarm.shared.db.pool_bound``), names them by its kind, and hands a forked child a work
process's pool; behind a pooler in transaction mode no limit travels as a startup option. The
counts a real API worker and node reach under load are ``tests/e2e/test_connection_bounds.py``'s."""
from __future__ import annotations

import ast
import contextlib
import json
import os
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, exc

from reelfarm.shared.config import ConfigError, Settings
from reelfarm.shared.db import API, COMMAND, NODE, PROCESS_KINDS, WORK, PoolBound, pool_bound, process_engine

ROOT = Path(__file__).resolve().parents[3]
URL = "postgresql+psycopg2://u@127.0.0.1:1/x"  # nothing listens there


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_DATABASE_URL": URL,
                              "REELFARM_SECRET_KEY": "k" * 48, **env})


def held(engine: Engine) -> tuple[int, int, float]:
    """The engine's pool: kept, at most, seconds a thread waits."""
    pool = engine.pool
    return pool.size(), pool.size() + pool._max_overflow, pool.timeout()  # type: ignore[attr-defined]


def connect_args(engine: Engine) -> dict[str, object]:
    """The parameters the engine hands libpq when it connects (captured; nothing listens there)."""
    seen: dict[str, object] = {}

    @event.listens_for(engine, "do_connect")
    def capture(dialect: object, record: object, cargs: object, cparams: dict[str, object]) -> None:
        seen.update(cparams)

    with contextlib.suppress(exc.OperationalError):
        engine.connect().close()
    return seen


def test_each_kind_keeps_its_stated_connections_and_one_more_at_most() -> None:
    assert {kind: (pool_bound(kind, threads=4).size, pool_bound(kind, threads=4).most) for kind in PROCESS_KINDS} == {
        API: (5, 6), NODE: (2, 3), WORK: (1, 2), COMMAND: (1, 2)}
    assert pool_bound(API, threads=8).most == 10  # a request thread each, one for the background rounds, one spare
    assert pool_bound(API, threads=4, size=3) == PoolBound(API, 3, 1)
    assert pool_bound(NODE, size=4).most == 5
    assert pool_bound(WORK, size=9).most == pool_bound(COMMAND, size=9).most == 2  # the size setting is not theirs
    with pytest.raises(ValueError, match="no process kind 'horse'"):
        pool_bound("horse")


@pytest.mark.parametrize(("kind", "threads", "expected"), [
    (API, 4, (5, 6, 10.0)), (API, 1, (2, 3, 10.0)), (NODE, 1, (2, 3, 10.0)), (WORK, 1, (1, 2, 10.0)),
    (COMMAND, 1, (1, 2, 10.0)),
])
def test_a_process_engine_is_bounded_and_named_by_its_kind(tmp_path: Path, kind: str, threads: int,
                                                           expected: tuple[int, int, float]) -> None:
    engine = process_engine(settings(tmp_path), kind, threads)
    try:
        assert held(engine) == expected
        assert connect_args(engine)["application_name"] == f"reelfarm-{kind}"
    finally:
        engine.dispose()


def test_the_settings_override_size_and_wait(tmp_path: Path) -> None:
    given = settings(tmp_path, REELFARM_DATABASE_POOL_SIZE="7", REELFARM_DATABASE_POOL_TIMEOUT_SEC="2.5")
    engines = {kind: process_engine(given, kind, threads=4) for kind in PROCESS_KINDS}
    try:
        assert {kind: held(engine) for kind, engine in engines.items()} == {
            API: (7, 8, 2.5), NODE: (7, 8, 2.5), WORK: (1, 2, 2.5), COMMAND: (1, 2, 2.5)}
    finally:
        for engine in engines.values():
            engine.dispose()
    for name, value in (("REELFARM_DATABASE_POOL_SIZE", "0"), ("REELFARM_DATABASE_POOLING", "statement"),
                        ("REELFARM_DATABASE_POOL_TIMEOUT_SEC", "-1")):
        with pytest.raises(ConfigError) as raised:
            settings(tmp_path, **{name: value})
        assert raised.value.variable == name


def test_a_url_that_names_the_connection_wins(tmp_path: Path) -> None:
    given = settings(tmp_path, REELFARM_DATABASE_URL=f"{URL}?application_name=mine")
    engine = process_engine(given, NODE)
    try:
        assert connect_args(engine)["application_name"] == "mine"
    finally:
        engine.dispose()


def test_a_forked_child_gets_a_work_process_pool_of_its_own(tmp_path: Path) -> None:
    engine = process_engine(settings(tmp_path), API, threads=4)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reported through the pipe
        try:
            os.write(writer, json.dumps([*held(engine), connect_args(engine)["application_name"]]).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as report:
        found = json.loads(report.read())
    os.waitpid(child, 0)
    try:
        assert found == [1, 2, 10.0, "reelfarm-work"]
        assert held(engine) == (5, 6, 10.0)  # the parent's own is as it was
        assert connect_args(engine)["application_name"] == "reelfarm-api"
    finally:
        engine.dispose()


def test_behind_a_transaction_pooler_no_limit_is_a_startup_option(tmp_path: Path) -> None:
    engine = process_engine(settings(tmp_path, REELFARM_DATABASE_POOLING="transaction"), WORK)
    try:
        found = connect_args(engine)
    finally:
        engine.dispose()
    assert "options" not in found  # PgBouncer refuses it; the limits are SET LOCAL in each transaction
    assert found["connect_timeout"] == 3 and found["application_name"] == "reelfarm-work"
    direct = process_engine(settings(tmp_path), WORK)
    try:
        assert "-c statement_timeout=60000" in str(connect_args(direct)["options"])
    finally:
        direct.dispose()


SERVICE = ("api", "console", "farm", "reelfarm", "shared", "studio")


def test_every_engine_of_the_service_is_made_by_process_engine() -> None:
    """So that no process of the service holds connections beyond its kind's bound."""
    found = []
    for part in SERVICE:
        for path in sorted((ROOT / part).rglob("*.py")):
            if path == ROOT / "shared" / "db.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call):
                    name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                    if name in ("make_engine", "create_engine"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
