"""The database behind PgBouncer in transaction pooling mode (``REELFARM_DATABASE_POOLING=transaction``),
where a server connection serves one client transaction at a time: a statement over the time limit
is cut, the limit ends with its transaction (the next client on the same server connection never
sees it), processes migrating together still migrate once (a transaction-scoped advisory lock), and
an engine that sends its limits as startup options, as on a direct connection, is refused with
PgBouncer's reason. The farm behind it, end to end: ``tests/e2e/test_farm_pooled.py``."""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from reelfarm.shared.db import TRANSACTION, alembic_config, make_engine, transaction
from tests.integration.conftest import PostgresServer
from tests.integration.shared.test_shared_migrations import migrate_together
from tests.servers import start_pgbouncer

ROOT = Path(__file__).resolve().parents[3]
LIMIT_MS = 300


def through(postgres_server: PostgresServer, pool_size: int, database: str) -> Iterator[str]:
    bouncer = start_pgbouncer(postgres_server.admin_url.render_as_string(hide_password=False), pool_size)
    try:
        yield bouncer.url(make_url(database).database or "")
    finally:
        bouncer.stop()


@pytest.fixture
def one_server_connection(postgres_server: PostgresServer, postgres_template_url: str) -> Iterator[str]:
    """A migrated database of the test's own, reached through a PgBouncer with one server connection."""
    yield from through(postgres_server, 1, postgres_server.create_database(postgres_template_url))


@pytest.fixture
def three_server_connections(postgres_server: PostgresServer) -> Iterator[str]:
    """An empty database of the test's own, reached through a PgBouncer with three server connections."""
    yield from through(postgres_server, 3, postgres_server.create_database())


def plain_client(url: str) -> psycopg2.extensions.connection:
    """A client of the pooler that sets nothing of its own."""
    parts = make_url(url)
    return psycopg2.connect(host=parts.host, port=parts.port, user=parts.username, dbname=parts.database)


def test_the_time_limit_cuts_a_statement_and_ends_with_its_transaction(one_server_connection: str) -> None:
    engine = make_engine(one_server_connection, pooling=TRANSACTION, statement_timeout_ms=LIMIT_MS)
    other = plain_client(one_server_connection)
    try:
        with engine.connect() as conn:
            server = conn.execute(text("SELECT pg_backend_pid()")).scalar()
            assert conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar() == "1min"
            started = time.monotonic()
            with pytest.raises(OperationalError, match="canceling statement due to statement timeout"):
                conn.execute(text("SELECT pg_sleep(3)"))
            assert time.monotonic() - started < 2
        with other.cursor() as cursor:  # the next client, on the same server connection
            cursor.execute("SELECT pg_backend_pid(), current_setting('statement_timeout'), "
                           "current_setting('idle_in_transaction_session_timeout')")
            assert cursor.fetchone() == (server, "0", "0")
            cursor.execute("SELECT pg_sleep(0.5)")  # longer than the engine's limit: not cut
        other.commit()
        with transaction(engine) as conn:  # and the engine's own next transaction has its limit again
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar() == server
            assert conn.execute(text("SHOW statement_timeout")).scalar() == f"{LIMIT_MS}ms"
    finally:
        other.close()
        engine.dispose()


def test_an_engine_sending_its_limits_at_connection_start_is_refused(one_server_connection: str) -> None:
    engine = make_engine(one_server_connection)  # as for a direct connection: limits in `options`
    try:
        with pytest.raises(OperationalError, match="unsupported startup parameter: options"):
            engine.connect().close()
    finally:
        engine.dispose()


def test_processes_starting_together_migrate_once_behind_the_pooler(three_server_connections: str) -> None:
    engines = [make_engine(three_server_connections, pooling=TRANSACTION) for _ in range(4)]
    errors = migrate_together(engines)
    try:
        assert errors == []
        with engines[0].connect() as conn:
            head = ScriptDirectory.from_config(alembic_config()).get_current_head()
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head
            assert "workspaces" in inspect(conn).get_table_names()
    finally:
        for engine in engines:
            engine.dispose()


def readme_settings() -> str:
    """The PgBouncer settings the README's "Sizing a farm" gives."""
    section = (ROOT / "README.md").read_text().split("## Sizing a farm", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```ini\n\[pgbouncer\]\n(.*?)```", section, re.DOTALL)
    return str(block)


def test_the_readmes_settings_start_pgbouncer_and_serve_the_farm(postgres_server: PostgresServer,
                                                                 postgres_url: str) -> None:
    bouncer = start_pgbouncer(postgres_server.admin_url.render_as_string(hide_password=False),
                              settings=readme_settings())
    engine = make_engine(bouncer.url(make_url(postgres_url).database or ""), pooling=TRANSACTION)
    try:
        config = {row["key"]: row["value"] for row in bouncer.show("CONFIG")}
        with engine.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "1min"
            assert conn.execute(text("SELECT count(*) FROM workspaces")).scalar() is not None
    finally:
        engine.dispose()
        bouncer.stop()
    assert {key: config[key] for key in ("pool_mode", "default_pool_size", "idle_transaction_timeout",
                                         "tcp_user_timeout")} == {
        "pool_mode": "transaction", "default_pool_size": "20", "idle_transaction_timeout": "60",
        "tcp_user_timeout": "4000"}
