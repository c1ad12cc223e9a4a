"""Fixtures of the end-to-end tests: for those that run a farm, a PostgreSQL database and a Redis
database of the test's own, on the session's servers (``tests/conftest.py``), the database also
behind a PgBouncer of the test's own in transaction pooling mode (``farm_database_pooled``); for the
console's, Debian's headless Chromium driven by Playwright (which never downloads a browser here)."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.servers import PgBouncerProcess, ServerError, start_pgbouncer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The system's Chromium, headless, for one test module."""
    assert Path(CHROMIUM).exists(), "install Debian's chromium (scripts/setup-system.sh --test)"
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM,
                                      args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        yield launched
        launched.close()


@pytest.fixture
def farm_database(postgres_admin_url: str) -> Iterator[str]:
    """A new empty PostgreSQL database of the test's own, dropped afterwards."""
    name = f"reelfarm_e2e_{os.urandom(5).hex()}"
    admin = create_engine(make_url(postgres_admin_url), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


POOLED_SERVER_CONNECTIONS = 2  # fewer than a farm's processes hold: the pooler really shares them


@pytest.fixture
def farm_database_pooled(postgres_admin_url: str, farm_database: str) -> Iterator[tuple[str, PgBouncerProcess]]:
    """``farm_database`` through a PgBouncer of the test's own in transaction pooling mode, sharing
    ``POOLED_SERVER_CONNECTIONS`` server connections among all its clients: its URL and the pooler.
    A farm on it needs ``REELFARM_DATABASE_POOLING=transaction``."""
    try:
        bouncer = start_pgbouncer(postgres_admin_url, POOLED_SERVER_CONNECTIONS)
    except ServerError as exc:
        pytest.fail(f"could not start a throwaway PgBouncer: {exc}", pytrace=False)
    try:
        yield bouncer.url(make_url(farm_database).database or ""), bouncer
    finally:
        bouncer.stop()


@pytest.fixture
def farm_redis(redis_url: str) -> Iterator[str]:
    """The URL of an empty Redis database of the session's server (the API has no key prefix of its
    own), emptied afterwards."""
    from redis import Redis

    base = urlsplit(redis_url)
    for index in range(15, 0, -1):
        url = urlunsplit((base.scheme, base.netloc, f"/{index}", "", ""))
        client = Redis.from_url(url)
        if client.set("reelfarm-test:claimed", "1", nx=True) and client.dbsize() == 1:
            break
        client.close()
    else:
        pytest.fail("no empty Redis database left on the test server", pytrace=False)
    yield url
    client.flushdb()
    client.close()
