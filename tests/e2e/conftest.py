"""Fixtures of the end-to-end tests: for those that run a farm, a PostgreSQL database and a Redis
database of the test's own, on the session's servers (``tests/conftest.py``); for the console's,
Debian's headless Chromium driven by Playwright (which never downloads a browser here)."""
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
