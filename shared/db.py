"""Engines, migrations and write transactions over SQLite (embedded) and PostgreSQL (farm).

Reads go through ``engine.connect()``; writes through ``transaction(engine)``, which on SQLite
takes the database's write lock up front (``BEGIN IMMEDIATE``). A deferred SQLite transaction
that reads and then writes fails at once with "database is locked" when another writer got
there first (the busy timeout cannot help it); taking the lock at BEGIN makes writers queue
instead, and makes read-then-write sequences (next version number, balance checks) safe. On
PostgreSQL the same sequences lock the rows they depend on with ``SELECT ... FOR UPDATE``.

An unreachable database is an outage, not a bug: ``database_outage(exc)`` recognises the
driver's connection errors (refused, dropped, server shutting down or starting up, a pool with
no connection to give) anywhere in an exception's chain and names them ``DatabaseUnavailable``,
so the API can answer 503 and the farm can wait, instead of either treating them as failures.
PostgreSQL connections are checked before use (``pool_pre_ping``), so the first request after
the server is back gets a fresh connection rather than a dead one; and every wait on one is
bounded, also where its host goes silent rather than refusing (``pg_link_settings``).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from reelfarm.shared.errors import DatabaseUnavailable, MigrationError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
_WRITE = "reelfarm_write"  # execution option: this connection begins a write transaction
_MIGRATION_LOCK_ID = 0x7265656C  # PostgreSQL advisory lock: one migrating process at a time
# A silent link (no FIN, no RST: a failover, a dropped route) is noticed in seconds, on both ends.
PG_CONNECT_TIMEOUT_SEC = 3  # a connection attempt gives up (libpq; per address)
PG_USER_TIMEOUT_MS = 4000  # bytes sent and not acknowledged for this long drop the connection (TCP_USER_TIMEOUT)
PG_KEEPALIVE = (4, 1, 3)  # idle seconds, seconds between probes, probes: an idle connection's peer is checked
PG_STATEMENT_TIMEOUT_MS = 60_000  # no statement of the service runs longer; migrations lift it
PG_IDLE_IN_TRANSACTION_MS = 60_000  # the server ends a session left idle inside a transaction (its locks go)
# SQLSTATEs of a lost server: class 08 (connection exception), admin and crash shutdown, and
# "cannot connect now" (starting up or shutting down).
_OUTAGE_SQLSTATES = ("57P01", "57P02", "57P03")
_OUTAGE_MESSAGES = (
    "could not connect", "connection refused", "server closed the connection", "terminating connection",
    "the database system is", "connection already closed", "ssl connection has been closed",
    "could not receive data", "could not send data", "no connection to the server", "connection timed out",
    "timeout expired", "connection reset", "connection is closed",
)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url`` set up for this service.

    SQLite: WAL journal, foreign keys enforced, 30 s busy timeout, usable from any thread, and
    transactions begun by SQLAlchemy rather than by the sqlite3 module (whose implicit BEGIN
    breaks SAVEPOINTs and transactional DDL). The database's folder is created if missing.
    PostgreSQL: connections are checked before use (``pool_pre_ping``) and a connection attempt
    gives up after ``PG_CONNECT_TIMEOUT_SEC``.
    Extra keyword arguments go to ``create_engine``.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_pre_ping", True)
        if parsed.get_backend_name() == "postgresql":
            given = {**parsed.query, **kwargs.get("connect_args", {})}
            kwargs["connect_args"] = {**{k: v for k, v in pg_link_settings().items() if k not in given},
                                      **kwargs.get("connect_args", {})}
        return create_engine(parsed, **kwargs)
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    connect_args.update(kwargs.pop("connect_args", {}))
    engine = create_engine(parsed, connect_args=connect_args, **kwargs)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def pg_link_settings() -> dict[str, Any]:
    """libpq connection parameters that bound every wait on a PostgreSQL connection.

    On the client: a connection attempt gives up after ``PG_CONNECT_TIMEOUT_SEC``; a query sent
    on a link gone silent fails after ``PG_USER_TIMEOUT_MS`` (TCP_USER_TIMEOUT: unacknowledged
    data), and a connection waiting for an answer finds its peer gone through TCP keepalives
    (the kernel caps their total by the same user timeout). On the server, set for the session:
    the same keepalives and user timeout, so a client that went silent inside a transaction does
    not hold its locks for the OS's two hours; ``statement_timeout`` and
    ``idle_in_transaction_session_timeout`` bound what a session can hold even when the link is
    fine. A request on a pooled connection whose server went silent is therefore answered (503
    ``unavailable``) within ``DATABASE_WAIT_BOUND_SEC``: the pool's check of the connection fails
    after the user timeout and a new connection after the connect timeout.
    Each may be overridden in the URL's query (``?connect_timeout=10``, ``?options=...``).
    """
    idle, interval, count = PG_KEEPALIVE
    server = {"tcp_keepalives_idle": idle, "tcp_keepalives_interval": interval, "tcp_keepalives_count": count,
              "tcp_user_timeout": PG_USER_TIMEOUT_MS, "statement_timeout": PG_STATEMENT_TIMEOUT_MS,
              "idle_in_transaction_session_timeout": PG_IDLE_IN_TRANSACTION_MS}
    return {"connect_timeout": PG_CONNECT_TIMEOUT_SEC, "keepalives": 1, "keepalives_idle": idle,
            "keepalives_interval": interval, "keepalives_count": count, "tcp_user_timeout": PG_USER_TIMEOUT_MS,
            "options": " ".join(f"-c {name}={value}" for name, value in server.items())}


DATABASE_WAIT_BOUND_SEC = PG_USER_TIMEOUT_MS / 1000 + PG_CONNECT_TIMEOUT_SEC  # see pg_link_settings


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves in _sqlite_begin
    cursor = dbapi_connection.cursor()
    try:
        _enter_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")  # durable enough with WAL, much faster
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _enter_wal(cursor: Any) -> None:
    """Switch the database file to WAL (a lasting property of the file, so usually a no-op).

    The switch needs a moment of exclusive access, and SQLite answers "database is locked"
    at once, without the busy handler, when another connection opens the new file at the same
    instant; so it is retried here, within the busy timeout.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _sqlite_begin(conn: Connection) -> None:
    mode = "IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "DEFERRED"
    conn.exec_driver_sql(f"BEGIN {mode}")


def database_outage(exc: BaseException) -> DatabaseUnavailable | None:
    """``exc`` as a ``DatabaseUnavailable`` when it, or an exception it was raised from, says the
    database cannot be reached; None for anything else (a constraint, a deadlock, a bug)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DatabaseUnavailable):
            return current
        if isinstance(current, sa_exc.TimeoutError):  # the pool had no connection to give in time
            return DatabaseUnavailable("no database connection became free in time")
        if isinstance(current, sa_exc.DBAPIError) and (current.connection_invalidated or _lost_server(current.orig)):
            return DatabaseUnavailable(_first_line(current.orig))
        current = current.__cause__ or current.__context__
    return None


def _lost_server(orig: BaseException | None) -> bool:
    if orig is None:
        return False
    code = getattr(orig, "pgcode", None)
    if code:  # the server answered: only its "going away" codes mean an outage
        return code.startswith("08") or code in _OUTAGE_SQLSTATES
    if not any(cls.__name__ in ("OperationalError", "InterfaceError") for cls in type(orig).__mro__):
        return False
    message = str(orig).lower()
    return any(text_ in message for text_ in _OUTAGE_MESSAGES)


def _first_line(orig: BaseException | None) -> str:
    text_ = str(orig or "").strip().splitlines()
    return text_[0] if text_ else type(orig).__name__


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in a write transaction: committed on success, rolled back on error.

    Like ``engine.begin()``, except that on SQLite the write lock is taken at BEGIN, so
    concurrent writers wait (up to the busy timeout) rather than fail.
    """
    if engine.dialect.name != "sqlite":
        with engine.connect() as conn, conn.begin():
            yield conn
        return
    # SQLite has one write lock for the whole file, and a writer that finds it taken sleeps in
    # growing steps (up to 100 ms) before it looks again. Writers therefore queue on a lock of
    # ours first and take SQLite's lock the moment it is free (see _WriterLock).
    with _writers(engine).hold(), engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            yield conn


WRITER_POLL_SEC = (0.0005, 0.002)  # first and longest wait between looks at another process's lock


class _WriterLock:
    """One writer at a time on one SQLite file, handed over without SQLite's sleeps.

    The threads of a process queue on an RLock, which wakes the next one at once. Processes
    (gunicorn's workers, the embedded farm's task processes, ``reelfarm`` commands) queue on
    an ``flock`` of a file beside the database, looked at every 0.5-2 ms; the kernel drops the
    lock of a process that dies. After the busy timeout a writer goes on without it and meets
    SQLite's own busy handler, which gives up with "database is locked" as before. A database
    with no file of its own (in memory) has only the RLock.
    """

    def __init__(self, path: Path | None) -> None:
        self.threads = threading.RLock()
        self.path = path
        self._fd: int | None = None
        self._depth = 0
        self._held = False

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self.threads:
            self._depth += 1
            try:
                if self._depth == 1:
                    self._lock_file()
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._held:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)  # type: ignore[arg-type]
                    self._held = False

    def _lock_file(self) -> None:
        if self.path is None:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        wait, longest = WRITER_POLL_SEC
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() + wait > deadline:
                    return
                time.sleep(wait)
                wait = min(wait * 2, longest)
                continue
            self._held = True
            return


_WRITERS: weakref.WeakKeyDictionary[Engine, _WriterLock] = weakref.WeakKeyDictionary()
_WRITERS_GUARD = threading.Lock()


def _writers(engine: Engine) -> _WriterLock:
    with _WRITERS_GUARD:
        lock = _WRITERS.get(engine)
        if lock is None:
            database = engine.url.database or ""
            path = None if database in ("", ":memory:") or database.startswith("file:") else Path(f"{database}-writer")
            lock = _WRITERS[engine] = _WriterLock(path)
        return lock


def _forget_writers() -> None:
    # A forked child has one thread: locks other threads held at the fork would never be
    # released, and a file descriptor shared with the parent would share its flock too.
    global _WRITERS_GUARD
    for lock in list(_WRITERS.values()):
        if lock._fd is not None:  # the child's own copy: closing it leaves the parent's lock alone
            os.close(lock._fd)
    _WRITERS.clear()
    _WRITERS_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_writers)


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` with Alembic; safe to run from several processes."""
    with schema_change(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL statement_timeout = 0"))  # a schema change on a big table may take long
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK_ID})
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (``base`` drops every table). For tests and operators."""
    with schema_change(engine) as conn:
        command.downgrade(alembic_config(conn), revision)


@contextmanager
def schema_change(engine: Engine) -> Iterator[Connection]:
    """A write transaction for changing the schema.

    On SQLite, foreign keys are switched off while it runs and checked before it commits, as
    SQLite's procedure for table changes requires: Alembic's batch mode copies a table, drops
    the original and renames the copy, and with foreign keys on, that drop would cascade-delete
    the rows of every table referring to it.

    Raises:
        MigrationError: the change left rows whose foreign keys point nowhere (rolled back).
    """
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        raw = conn.connection.driver_connection
        if sqlite:  # a PRAGMA inside a transaction is ignored: run it before BEGIN, on the driver
            raw.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        try:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn
                if sqlite and (broken := conn.exec_driver_sql("PRAGMA foreign_key_check").all()):
                    raise MigrationError(f"foreign keys broken by the schema change: {broken[:5]}")
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]


def alembic_config(conn: Connection | None = None) -> Config:
    """An Alembic ``Config`` for ``shared/migrations``; ``env.py`` uses ``conn`` when given."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if conn is not None:
        config.attributes["connection"] = conn
    return config
