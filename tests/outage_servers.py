"""PostgreSQL and Redis servers of a test's own, which it may stop and start again: outages.

The session's servers are shared by every test, so a test about an outage starts its own (free
port, temporary directory, nothing persisted) and stops it, kills it or starts it again on the
same port while real ``reelfarm`` processes use it. ``OutageRedis.restart_empty`` is a Redis that
comes back without anything it held, as one run without persistence does.

PostgreSQL refuses to run as root: as root, ``initdb`` and ``pg_ctl`` run as ``postgres`` (or
``nobody``) through ``runuser``, on a directory handed to that user.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int, probe: bytes = b"PING\r\n", reply: bytes = b"+PONG") -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(probe)
            return sock.recv(16).startswith(reply)
    except OSError:
        return False


class OutageRedis:
    """A ``redis-server`` without persistence that can be killed and started again, empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-outage-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OutageRedis:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.root), "--logfile", str(self.root / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT_S
        while not _answers(self.port):
            assert self.process.poll() is None, (self.root / "redis.log").read_text(errors="replace")
            assert time.monotonic() < deadline, f"redis-server did not answer on {self.port}"
            time.sleep(0.05)
        return self

    def kill(self) -> None:
        """SIGKILL: the server is gone at once, and everything it held with it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def restart_empty(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


class OutagePostgres:
    """A PostgreSQL cluster in a temporary directory that can be stopped and started again."""

    def __init__(self) -> None:
        initdbs = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        found = Path(initdbs[-1]).parent if initdbs else Path(os.path.realpath(shutil.which("pg_ctl") or "pg_ctl")).parent
        self.bindir = found
        self.port = free_port()
        self.user = self._user()
        self.root = Path(tempfile.mkdtemp(prefix="reelfarm-outage-pg-"))
        self.data = self.root / "data"

    @staticmethod
    def _user() -> str | None:
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                pwd.getpwnam(name)
                return name
            except KeyError:
                continue
        raise AssertionError("running as root with no user to run PostgreSQL as")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)

    def init(self) -> OutagePostgres:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        done = self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                         "--locale=C", "--no-sync", "--no-instructions")
        assert done.returncode == 0, done.stderr or done.stdout
        return self.start()

    def start(self) -> OutagePostgres:
        options = (f"-p {self.port} -h 127.0.0.1 -k {self.root} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=100")
        done = self._run("pg_ctl", "start", "-w", "-t", str(int(TIMEOUT_S)), "-D", str(self.data),
                         "-l", str(self.root / "postgres.log"), "-o", options)
        assert done.returncode == 0, done.stderr + (self.root / "postgres.log").read_text(errors="replace")
        return self

    def stop(self) -> None:
        """A fast shutdown: clients are disconnected and new connections refused until ``start``."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.root, ignore_errors=True)
