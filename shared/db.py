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

Connections are bounded by process kind (``pool_bound``; every process of the service makes its
engine with ``process_engine``). On PostgreSQL each process keeps ``size`` connections open, opens
one more for a moment when a thread that holds one needs a second (the embedded progress store,
read inside a render's transaction), never more, and a thread finding them all taken waits up to
``POOL_TIMEOUT_SEC`` (``REELFARM_DATABASE_POOL_TIMEOUT_SEC``) before its request is answered 503:

| kind | process | kept | at most |
|---|---|---|---|
| ``api`` | a ``reelfarm serve`` worker: its request threads, and one for its background rounds (the farm's repairs and dispatch, or the embedded queue's claims) | threads + 1 | threads + 2 |
| ``node`` | a ``reelfarm worker``'s main process: its work loop and its heartbeat's maintenance round; its dispatch rounds and metrics scrapes take turns with them | 2 | 3 |
| ``work`` | a forked process that runs one task at a time: an RQ work horse, an embedded task process | 1 | 2 |
| ``command`` | ``reelfarm migrate``, ``admin``, ``farm status``, ``farm reap``; ``serve``'s master, which lets its connection go before it forks the workers | 1 | 2 |

``REELFARM_DATABASE_POOL_SIZE`` replaces the kept size of an API worker or a node (at most is one
more). A forked child's copy of an engine (``_bound_forked_engines``) is a work process's, and
never touches the parent's connections. Each connection names its kind to the server as
``application_name`` (``reelfarm-api``, ...), which ``pg_stat_activity`` shows.

Behind a pooler in transaction mode (PgBouncer's ``pool_mode = transaction``;
``REELFARM_DATABASE_POOLING=transaction``) a connection is the server's for one transaction at a
time, so nothing may rest on a session: the advisory locks are transaction-scoped
(``pg_advisory_xact_lock``: migrations, the first workspace, the embedded queue's claims), no
statement uses LISTEN/NOTIFY, temporary tables, WITH HOLD cursors or a session ``SET``, and
psycopg2 prepares no statements on the server (it sends each query whole). The server-side limits
that ``pg_link_settings`` sends at connection start as ``options`` (which PgBouncer refuses:
"unsupported startup parameter: options") are set instead inside each transaction with ``SET
LOCAL`` (``_limit_transaction``), one more round trip per transaction, and lapse with it, so they
never reach another client's transaction on the same server connection.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.pool import Pool, QueuePool

from reelfarm.shared.config import DEFAULT_DATABASE_POOL_TIMEOUT_SEC, Settings
from reelfarm.shared.errors import DatabaseUnavailable, MigrationError
from reelfarm.shared.migrations import HEAD

if TYPE_CHECKING:
    from alembic.config import Config

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
API, NODE, WORK, COMMAND = "api", "node", "work", "command"  # process kinds (module docstring)
PROCESS_KINDS = (API, NODE, WORK, COMMAND)
NODE_POOL_SIZE = 2
POOL_OVERFLOW = 1  # for a thread that holds a connection and needs a second
POOL_TIMEOUT_SEC = DEFAULT_DATABASE_POOL_TIMEOUT_SEC  # longer than DATABASE_WAIT_BOUND_SEC, by which a held one is let go
SESSION, TRANSACTION = "session", "transaction"  # what one connection is on the server (REELFARM_DATABASE_POOLING)
# SQLSTATEs of a lost server: class 08 (connection exception), admin and crash shutdown, and
# "cannot connect now" (starting up or shutting down).
_OUTAGE_SQLSTATES = ("57P01", "57P02", "57P03")
_OUTAGE_MESSAGES = (
    "could not connect", "connection refused", "server closed the connection", "terminating connection",
    "the database system is", "connection already closed", "ssl connection has been closed",
    "could not receive data", "could not send data", "no connection to the server", "connection timed out",
    "timeout expired", "connection reset", "connection is closed",
)


@dataclass(frozen=True)
class PoolBound:
    """The connections one process keeps open to PostgreSQL (``size``), the most it opens at once
    (``most``), and how long a thread waits for one when they are all taken."""

    kind: str
    size: int
    overflow: int = POOL_OVERFLOW
    timeout_sec: float = POOL_TIMEOUT_SEC

    @property
    def most(self) -> int:
        return self.size + self.overflow

    @property
    def application_name(self) -> str:
        """How its connections are named to the server (``pg_stat_activity.application_name``)."""
        return f"reelfarm-{self.kind}"


def pool_bound(kind: str, threads: int = 1, size: int | None = None,
               timeout_sec: float = POOL_TIMEOUT_SEC) -> PoolBound:
    """The bound of a process of ``kind`` (the module docstring's table).

    Args:
        kind: ``api``, ``node``, ``work`` or ``command``.
        threads: an API worker's request threads.
        size: replaces the kept size of an API worker or a node (``REELFARM_DATABASE_POOL_SIZE``).
    """
    kept = {API: threads + 1, NODE: NODE_POOL_SIZE, WORK: 1, COMMAND: 1}.get(kind)
    if kept is None:
        raise ValueError(f"no process kind {kind!r}; expected one of {', '.join(PROCESS_KINDS)}")
    if size is not None and kind in (API, NODE):
        kept = size
    return PoolBound(kind, kept, timeout_sec=timeout_sec)


def process_engine(settings: Settings, kind: str, threads: int = 1) -> Engine:
    """The engine of one process of ``kind``, bounded as ``pool_bound`` says and set up for the
    pooler in front of the database, if any: how each process of the service makes its engine."""
    bound = pool_bound(kind, threads, settings.database_pool_size, settings.database_pool_timeout_sec)
    return make_engine(settings.database_url, bound=bound, pooling=settings.database_pooling)


def file_engine(path: Any) -> Engine:
    """A command's engine for one SQLite file outside the configured service (a backup being
    restored into a data folder), bounded as a command's."""
    return make_engine(f"sqlite:///{path}", bound=pool_bound(COMMAND))


def make_engine(url: str, *, bound: PoolBound | None = None, pooling: str = SESSION,
                statement_timeout_ms: int = PG_STATEMENT_TIMEOUT_MS, **kwargs: Any) -> Engine:
    """An engine for ``url`` set up for this service.

    SQLite: WAL journal, foreign keys enforced, 30 s busy timeout, usable from any thread, and
    transactions begun by SQLAlchemy rather than by the sqlite3 module (whose implicit BEGIN
    breaks SAVEPOINTs and transactional DDL). The database's folder is created if missing.
    PostgreSQL: connections are checked before use (``pool_pre_ping``), every wait on one is
    bounded (``pg_link_settings``; ``statement_timeout_ms`` is the longest a statement runs), and
    with ``bound`` (``process_engine``) the pool is bounded and its connections named by it. With
    ``pooling="transaction"`` (a pooler in transaction mode in front) the server-side limits are
    set in each transaction instead of at connection start (the module docstring).
    Extra keyword arguments go to ``create_engine``.
    """
    if pooling not in (SESSION, TRANSACTION):
        raise ValueError(f"pooling must be {SESSION!r} or {TRANSACTION!r}, not {pooling!r}")
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_pre_ping", True)
        if bound is not None:
            kwargs.update(pool_size=bound.size, max_overflow=bound.overflow, pool_timeout=bound.timeout_sec)
        if parsed.get_backend_name() != "postgresql":
            return create_engine(parsed, **kwargs)
        given = {**parsed.query, **kwargs.get("connect_args", {})}
        link = pg_link_settings(statement_timeout_ms, pooling)
        kwargs["connect_args"] = {**{k: v for k, v in link.items() if k not in given},
                                  **kwargs.get("connect_args", {})}
        engine = create_engine(parsed, **kwargs)
        if pooling == TRANSACTION:
            event.listen(engine, "begin", _limit_transaction(statement_timeout_ms))
        if bound is not None:
            _BOUNDS[engine] = bound
            if "application_name" not in given:
                event.listen(engine, "do_connect", _name_connection(engine))
        return engine
    database = parsed.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    connect_args.update(kwargs.pop("connect_args", {}))
    engine = create_engine(parsed, connect_args=connect_args, **kwargs)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def pg_link_settings(statement_timeout_ms: int = PG_STATEMENT_TIMEOUT_MS, pooling: str = SESSION) -> dict[str, Any]:
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

    With ``pooling="transaction"`` the server-side part is left out: the peer is the pooler, which
    refuses ``options``; the statement and idle limits are then set per transaction
    (``_limit_transaction``), and the pooler's own settings watch the link (README, "Sizing a farm").
    """
    idle, interval, count = PG_KEEPALIVE
    client = {"connect_timeout": PG_CONNECT_TIMEOUT_SEC, "keepalives": 1, "keepalives_idle": idle,
              "keepalives_interval": interval, "keepalives_count": count, "tcp_user_timeout": PG_USER_TIMEOUT_MS}
    if pooling == TRANSACTION:
        return client
    server = {"tcp_keepalives_idle": idle, "tcp_keepalives_interval": interval, "tcp_keepalives_count": count,
              "tcp_user_timeout": PG_USER_TIMEOUT_MS, "statement_timeout": statement_timeout_ms,
              "idle_in_transaction_session_timeout": PG_IDLE_IN_TRANSACTION_MS}
    return {**client, "options": " ".join(f"-c {name}={value}" for name, value in server.items())}


def _limit_transaction(statement_timeout_ms: int) -> Callable[[Connection], None]:
    """A ``begin`` listener that sets the server-side limits for the transaction alone."""
    limits = (f"SET LOCAL statement_timeout = {int(statement_timeout_ms)}; "
              f"SET LOCAL idle_in_transaction_session_timeout = {PG_IDLE_IN_TRANSACTION_MS}")

    def limit(conn: Connection) -> None:
        conn.exec_driver_sql(limits)

    return limit


_BOUNDS: weakref.WeakKeyDictionary[Engine, PoolBound] = weakref.WeakKeyDictionary()


def _name_connection(engine: Engine) -> Callable[..., None]:
    """A ``do_connect`` listener naming each new connection by its process's kind (which a fork changes)."""
    ref = weakref.ref(engine)

    def name(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        made = ref()
        bound = _BOUNDS.get(made) if made is not None else None
        if bound is not None:
            cparams["application_name"] = bound.application_name

    return name


def _bound_forked_engines() -> None:
    # A forked child (an RQ work horse, an embedded task process, a gunicorn worker) runs tasks
    # one at a time, or makes an engine of its own: each engine it inherited gets a new pool with
    # a work process's bound, as Engine.dispose(close=False) would with the parent's, and the
    # parent's connections are left to the parent.
    for engine, bound in list(_BOUNDS.items()):
        work = replace(pool_bound(WORK), timeout_sec=bound.timeout_sec)
        _BOUNDS[engine] = work
        engine.pool = _pool_like(engine.pool, work)


def _pool_like(pool: Pool, bound: PoolBound) -> QueuePool:
    """A new, empty ``pool`` of ``bound``'s size: ``QueuePool.recreate``, with another size."""
    return QueuePool(pool._creator, pool_size=bound.size, max_overflow=bound.overflow,
                     timeout=bound.timeout_sec, pre_ping=pool._pre_ping, recycle=pool._recycle,
                     echo=pool.echo, logging_name=pool._orig_logging_name,
                     reset_on_return=pool._reset_on_return, _dispatch=pool.dispatch,
                     dialect=pool._dialect)


os.register_at_fork(after_in_child=_bound_forked_engines)


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
    """Bring the schema up to ``revision`` with Alembic; safe to run from several processes.

    A database already at this release's head is left as it is without loading Alembic and its
    scripts (0.2-0.3 CPU s of every process's start, measured: each server, node and command migrates).
    """
    if revision == "head" and at_head(engine):
        return
    from alembic import command

    with schema_change(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL statement_timeout = 0"))  # a schema change on a big table may take long
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _MIGRATION_LOCK_ID})
        command.upgrade(alembic_config(conn), revision)


def at_head(engine: Engine) -> bool:
    """Whether the database's schema is at this release's last migration (``migrations.HEAD``);
    False for a new database and for one at another revision, older or newer."""
    with engine.connect() as conn:
        try:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        except sa_exc.DBAPIError:  # no such table: a new database, which Alembic builds
            return False
    return versions == [HEAD]


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (``base`` drops every table). For tests and operators."""
    from alembic import command

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
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if conn is not None:
        config.attributes["connection"] = conn
    return config
