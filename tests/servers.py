"""Throwaway PostgreSQL, PgBouncer and Redis server processes for tests and benchmarks.

The integration tests run against real servers, but never against a machine's own: each session
starts its own PostgreSQL (``initdb`` into a temporary directory, trust authentication, listening
on 127.0.0.1 at a free port and on a Unix socket inside that directory) and its own
``redis-server`` (free port, nothing persisted), from the binaries the system packages install,
and stops both at the end. Nothing needs to be configured beforehand, and a PostgreSQL or Redis
already listening on 5432/6379 is neither used nor disturbed.

PostgreSQL refuses to run as root. When the tests run as root (CI, containers), the cluster is
created and started as an unprivileged user through ``runuser``: ``postgres`` (which the
``postgresql`` package creates) or, failing that, ``nobody``. Its directory is made with
``tempfile.mkdtemp`` directly under the system temporary directory and handed to that user,
since pytest's own temporary directories are private to the user running pytest.

``REELFARM_TEST_DATABASE_URL`` (an administrative URL, e.g.
``postgresql+psycopg2://postgres@127.0.0.1:5432/postgres``) and ``REELFARM_TEST_REDIS_URL`` point
the tests at existing servers instead; then nothing is started.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self, TypeVar

START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3  # a free port can be taken by another process between choosing and binding it
UNPRIVILEGED_USERS = ("postgres", "nobody")


class ServerError(RuntimeError):
    """A throwaway server could not be found, started or reached."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bindir() -> Path:
    """The directory with ``initdb``, ``pg_ctl`` and ``postgres``: the newest
    ``/usr/lib/postgresql/<major>/bin`` (Debian/Ubuntu), else wherever ``pg_ctl`` is on PATH."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    raise ServerError("PostgreSQL's server binaries are not installed (apt-get install postgresql; "
                      "see scripts/setup-system.sh)")


def _unprivileged_user() -> str | None:
    """The user to run PostgreSQL as: None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in UNPRIVILEGED_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise ServerError("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


class PostgresProcess:
    """One PostgreSQL cluster in a temporary directory, for as long as the object is started.

    ``url`` is an administrative URL (superuser ``postgres``, database ``postgres``) for
    SQLAlchemy with psycopg2.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", within: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.host = host
        self.within = within  # a command prefix that runs the server elsewhere (``tests.netbed.Host.within``)
        self.bindir = postgres_bindir()
        self.user = _unprivileged_user()
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://postgres@{self.host}:{self.port}/postgres"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run([*self.within, *command], capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)

    def start(self) -> Self:
        """Create the cluster and start it."""
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        initdb = self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                           "--locale=C", "--no-sync", "--no-instructions")
        if initdb.returncode != 0:
            raise ServerError(f"initdb failed: {initdb.stderr or initdb.stdout}")
        if self.host != "127.0.0.1":  # a server on another host (tests.netbed) trusts clients of the test's own link
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {self.host.rsplit('.', 1)[0]}.0/24 trust\n")
        return self.launch()

    def launch(self) -> Self:
        """Start the server on the existing cluster (again, after ``shut_down``)."""
        # Durability is worthless for a throwaway cluster; turning it off makes tests faster.
        options = (f"-p {self.port} -h {self.host} -k {self.root} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=300 -c shared_buffers=32MB")
        started = self._run("pg_ctl", "start", "-w", "-t", str(int(START_TIMEOUT_S)), "-D", str(self.data),
                            "-l", str(self.log), "-o", options)
        if started.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            self.stop()
            raise ServerError(f"PostgreSQL did not start on port {self.port}: {started.stderr}\n{log}")
        return self

    def shut_down(self) -> None:
        """A fast shutdown that keeps the cluster: clients are disconnected until ``launch``."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.root, ignore_errors=True)


class RedisProcess:
    """One ``redis-server`` on a free port, persisting nothing, for as long as it is started."""

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", within: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.host = host
        self.within = within
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-redis-"))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self) -> Self:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerError("redis-server is not installed (apt-get install redis-server; "
                              "see scripts/setup-system.sh)")
        self._process = subprocess.Popen(
            [*self.within, binary, "--port", str(self.port), "--bind", self.host, "--protected-mode", "no", "--save", "", "--appendonly", "no",
             "--dir", str(self.root), "--logfile", str(self.root / "redis.log"), "--databases", "16"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                log = (self.root / "redis.log").read_text(errors="replace")
                raise ServerError(f"redis-server exited with {self._process.returncode}: {log}")
            if _answers_ping(self.host, self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise ServerError(f"redis-server did not answer on port {self.port}")

    def kill(self) -> None:
        """SIGKILL: the server is gone at once, and everything it held with it."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class MotoProcess:
    """``moto_server`` (a stand-in for S3) on a free port, with one bucket, for as long as it is started."""

    def __init__(self, bucket: str = "reelfarm", port: int | None = None, host: str = "127.0.0.1",
                 within: tuple[str, ...] = ()) -> None:
        self.bucket = bucket
        self.port = port or free_port()
        self.host = host
        self.within = within
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-moto-"))
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        import httpx

        from reelfarm.shared.storage import make_s3_client

        binary = shutil.which("moto_server") or str(Path(os.__file__).parents[2] / "bin" / "moto_server")
        with open(self.root / "moto.log", "wb") as log:
            self._process = subprocess.Popen([*self.within, binary, "-H", self.host, "-p", str(self.port)],
                                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerError(f"moto_server exited: {(self.root / 'moto.log').read_text(errors='replace')}")
            try:
                if httpx.get(self.url, timeout=2).status_code == 200:
                    make_s3_client(self.url, region_name="us-east-1", aws_access_key_id="testing",
                                   aws_secret_access_key="testing").create_bucket(Bucket=self.bucket)
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ServerError(f"moto_server did not answer on {self.url}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class PgBouncerProcess:
    """Debian's ``pgbouncer`` on a free port in front of one PostgreSQL server, in transaction
    pooling mode, for as long as it is started.

    Every database of the server is reached through it under its own name; each (database, user)
    pair shares at most ``pool_size`` server connections, handed to a client for one transaction
    at a time. Clients log in without a password (``auth_type = trust`` against a user list that
    names ``postgres``), and it logs in to the server as the URL's user. Like PostgreSQL it
    refuses to run as root, so it runs as the same unprivileged user (``pgbouncer -u``).
    """

    def __init__(self, server_url: str, pool_size: int = 2, port: int | None = None, settings: str = "") -> None:
        from sqlalchemy.engine import make_url

        self.server = make_url(server_url)
        self.pool_size = pool_size
        self.settings = settings  # more lines of its [pgbouncer] section, which win over the ones above
        self.port = port or free_port()
        self.user = _unprivileged_user()
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-pgbouncer-"))
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` through the pooler, as the server URL's user."""
        return self.server.set(host="127.0.0.1", port=self.port, database=database).render_as_string(
            hide_password=False)

    def _write_config(self) -> Path:
        user = self.server.username or "postgres"
        password = f" password={self.server.password}" if self.server.password else ""
        (self.root / "userlist.txt").write_text(f'"{user}" ""\n')
        config = self.root / "pgbouncer.ini"
        config.write_text("\n".join([
            "[databases]",
            f"* = host={self.server.host or '127.0.0.1'} port={self.server.port or 5432} user={user}{password}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1", f"listen_port = {self.port}", "unix_socket_dir =",
            "auth_type = trust", f"auth_file = {self.root / 'userlist.txt'}", f"admin_users = {user}",
            "pool_mode = transaction", f"default_pool_size = {self.pool_size}", "max_client_conn = 1000",
            f"logfile = {self.root / 'pgbouncer.log'}", f"pidfile = {self.root / 'pgbouncer.pid'}",
            self.settings, "",
        ]))
        return config

    def start(self) -> Self:
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not Path(binary).exists():
            raise ServerError("pgbouncer is not installed (apt-get install pgbouncer; see scripts/setup-system.sh)")
        config = self._write_config()
        command = [binary, str(config)]
        if self.user is not None:  # it switches to the user itself, so that a signal reaches it alone
            entry = pwd.getpwnam(self.user)
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            command = [binary, "-u", self.user, str(config)]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerError(f"pgbouncer exited with {self._process.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ServerError(f"pgbouncer did not listen on port {self.port}: {self.log()}")

    def show(self, what: str) -> list[dict[str, object]]:
        """A ``SHOW`` of its admin console (``CLIENTS``, ``SERVERS``, ``POOLS``, ``CONFIG``), row by row."""
        import psycopg2

        admin = psycopg2.connect(host="127.0.0.1", port=self.port, user=self.server.username or "postgres",
                                 dbname="pgbouncer")
        admin.autocommit = True  # the console has no transactions
        try:
            with admin.cursor() as cursor:
                cursor.execute(f"SHOW {what}")
                names = [column.name for column in cursor.description or ()]
                return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            admin.close()

    def log(self) -> str:
        path = self.root / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_pgbouncer(server_url: str, pool_size: int = 2, settings: str = "") -> PgBouncerProcess:
    """A started PgBouncer in front of ``server_url``, trying a new port when the chosen one was taken."""
    for attempt in range(START_ATTEMPTS):
        try:
            return PgBouncerProcess(server_url, pool_size, settings=settings).start()
        except ServerError:
            if attempt == START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


MOTO_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_DEFAULT_REGION": "us-east-1"}  # what a moto server accepts (it checks none)

_Server = TypeVar("_Server", PostgresProcess, RedisProcess)


def start_postgres() -> PostgresProcess:
    """A started throwaway PostgreSQL, trying a new port when the chosen one was taken meanwhile."""
    return _start(PostgresProcess)


def start_redis() -> RedisProcess:
    """A started throwaway Redis, trying a new port when the chosen one was taken meanwhile."""
    return _start(RedisProcess)


def _start(kind: type[_Server]) -> _Server:
    for attempt in range(START_ATTEMPTS):
        try:
            return kind().start()
        except ServerError:
            if attempt == START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _answers_ping(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False
