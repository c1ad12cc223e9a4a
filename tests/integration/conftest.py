"""Fixtures for integration tests: real databases.

``db_url`` runs a test twice: against a fresh, migrated SQLite file and against a throwaway
PostgreSQL database (``reelfarm_test_<random>``, created on the session's server, which
``tests/conftest.py`` starts, and dropped at the end; ``REELFARM_TEST_DATABASE_URL`` names an
existing server instead). When PostgreSQL cannot be reached, its half of the tests fails (never
skips) with the reason: these tests exist to run against the real server.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from reelfarm.shared.db import make_engine, migrate

BACKENDS = ["sqlite", "postgresql"]
OWN_DATABASE_FIXTURES = {"farm_client", "workers", "nodes"}  # the embedded farm, real nodes


class PostgresServer:
    """Creates throwaway databases on one server and drops them all at the end."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = make_url(admin_url)
        self._admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool,
                                    connect_args={"connect_timeout": 5})
        self._created: list[str] = []

    def check(self) -> None:
        with self._admin.connect() as conn:
            conn.execute(text("SELECT 1"))

    def create_database(self, template_url: str | None = None) -> str:
        """A new database, empty or a copy of ``template_url``'s (which nothing may be connected
        to); returns its URL."""
        name = f"reelfarm_test_{secrets.token_hex(6)}"
        copied = f' TEMPLATE "{make_url(template_url).database}"' if template_url else ""
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copied}'))
        self._created.append(name)
        return self.admin_url.set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        with self._admin.connect() as conn:
            for name in self._created:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self._admin.dispose()


@pytest.fixture(scope="session")
def postgres_server(postgres_admin_url: str) -> Iterator[PostgresServer]:
    server = PostgresServer(postgres_admin_url)
    try:
        server.check()
    except OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {server.admin_url!r}: {exc.orig}", pytrace=False)
    yield server
    server.drop_all()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """A PostgreSQL database migrated once for the session (tests keep to their own workspaces)."""
    return migrated(postgres_server.create_database())


@pytest.fixture(scope="session")
def postgres_template_url(postgres_server: PostgresServer) -> str:
    """A migrated PostgreSQL database nothing connects to, copied for tests that need their own."""
    return migrated(postgres_server.create_database())


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """URL of a migrated database: a fresh SQLite file, or the session's PostgreSQL database.

    A test that starts the embedded farm (it takes ``farm_client``, or is marked ``own_database``)
    or real nodes (``workers``, ``nodes``) gets a PostgreSQL database of its own: the embedded farm
    runs every task queued in its database, a node's repair round enqueues again every unfinished
    render of its database, and the session's database holds what earlier tests left unfinished
    (a full-disk node's failures in a row were broken by other tests' renders it was given).
    """
    if request.param == "postgresql":
        if OWN_DATABASE_FIXTURES & set(request.fixturenames) or request.node.get_closest_marker("own_database"):
            server: PostgresServer = request.getfixturevalue("postgres_server")
            return server.create_database(str(request.getfixturevalue("postgres_template_url")))
        return str(request.getfixturevalue("postgres_url"))
    path = tmp_path_factory.mktemp("sqlite") / "reelfarm.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once for the session; each test's database is a copy of it (the
    same schema as migrating each one, for a fraction of the time)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "reelfarm.db"
    migrated(f"sqlite:///{path}")
    return path


def migrated(url: str) -> str:
    """``url``, after bringing its database's schema up to date."""
    engine = make_engine(url)
    try:
        migrate(engine)
    finally:
        engine.dispose()
    return url


@pytest.fixture(params=BACKENDS)
def empty_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """URL of a new database with no tables at all."""
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        return server.create_database()
    return f"sqlite:///{tmp_path_factory.mktemp('sqlite')}/empty.db"


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()
