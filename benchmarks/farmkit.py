"""Instruments and harness shared by the farm benchmarks (`benchmarks.farm`, `benchmarks.scaling`).

Processes we start (a `reelfarm serve`, `reelfarm worker` nodes) run in their own sessions and
are stopped by their process group; the CPU they use is measured apart from the rest of the
machine's, so that `other_cores` (load from processes that are not ours) stays meaningful while
a farm we started works. Throwaway PostgreSQL databases and Redis DB 14 are cleaned up by their
context managers. See benchmarks/README.md.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Self

from benchmarks import fps
from benchmarks.probes import CpuWitness, _machine_busy_s, _own_cpu_s

ROOT = fps.ROOT
STORY = "flash_sale"            # badge pulse, slide/zoom transitions: one of the busier stories
FORMAT, FPS = "16:9", 30
OTHER_LOAD_WARN = fps.OTHER_LOAD_WARN
KEY_LINE = re.compile(r"API key \(shown once, keep it\): (rf_live_[0-9A-Za-z]{38})")
SERVICE_NAMES = ("redis-server", "postgres")
_TICK = os.sysconf("SC_CLK_TCK")


def story_fields(i: int) -> dict[str, Any]:
    """The story's fields with one tiny change per run (a new version, so dedup renders anew)."""
    return {"code": f"SPRING{40 + i}"}


# ----------------------------------------------------------------------------- processes


class Proc:
    """A child process in its own session; its output is drained into the last `keep` lines."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], keep: int = 400,
                 cores: set[int] | None = None, cwd: Path = ROOT) -> None:
        self.name = name
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self.fresh: queue.Queue[str | None] = queue.Queue()
        self.popen = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.pid = self.popen.pid
        if cores:  # every thread it has so far; threads and processes it starts later inherit it
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                os.sched_setaffinity(int(tid), cores)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line)
            self.fresh.put(line)
        self.fresh.put(None)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 90.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.fresh.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            if m := pattern.search(line):
                return m
        raise RuntimeError(f"{self.name}: no line matching {pattern.pattern!r}; last output:\n"
                           + self.tail())

    def tail(self, n: int = 40) -> str:
        return "".join(list(self.lines)[-n:])

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to the process group we created, SIGKILL if it lingers."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
            except ProcessLookupError:
                pass
        try:  # stragglers of the group (a work horse whose parent is gone)
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def clean_env(**values: str) -> dict[str, str]:
    """This environment without any REELFARM_* variable, plus `values`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(PYTHONUNBUFFERED="1", **values)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_workspace_key(env: dict[str, str], cwd: Path = ROOT) -> str:
    """``reelfarm admin init --json`` on a farm's database: the API key of its first workspace."""
    done = subprocess.run([sys.executable, "-m", "reelfarm", "admin", "init", "--json"], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=True)
    return str(json.loads(done.stdout)["key"])


def start_server(data_dir: Path, port: int, extra_env: dict[str, str] | None = None,
                 cwd: Path = ROOT) -> tuple[Proc, str]:
    """`reelfarm serve` (its defaults: gunicorn, 2 workers, embedded farm) on a fresh data dir.
    Returns the process and the dev workspace's API key it printed (a farm's server prints none:
    ``reelfarm admin init`` makes the workspace). The dev workspace's plan (pro)
    gets a rate limit that polling every 50 ms cannot reach."""
    import httpx

    env = clean_env(REELFARM_DATA_DIR=str(data_dir), REELFARM_PUBLIC_URL=f"http://127.0.0.1:{port}",
                    REELFARM_RATE_LIMIT_PRO="1000000", **(extra_env or {}))
    proc = Proc("reelfarm serve", [sys.executable, "-m", "reelfarm", "serve", "--host", "127.0.0.1",
                                   "--port", str(port)], env, cwd=cwd)
    farm = "REELFARM_REDIS_URL" in env or not env.get("REELFARM_DATABASE_URL", "sqlite").startswith("sqlite")
    try:
        key = None if farm else proc.wait_for(KEY_LINE).group(1)  # a farm's server prints no key
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    return proc, key or first_workspace_key(env, cwd)
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the server never became healthy:\n" + proc.tail())
    except BaseException:
        proc.stop()
        raise


# ----------------------------------------------------------------------------- CPU accounting


def tree(pid: int) -> list[int]:
    import psutil

    try:
        return [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def stat_cpu_s(pid: int, with_children: bool = True) -> float:
    """utime + stime (+ reaped children's) of one process from /proc/PID/stat; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    if with_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime: reaped work horses, pool processes
    return ticks / _TICK


def tree_cpu_s(roots: Iterable[int]) -> float:
    return sum(stat_cpu_s(p) for r in roots for p in tree(r))


def service_cpu_s() -> float:
    """CPU time of the Redis and PostgreSQL server processes (they work for our farm, but may also
    serve others)."""
    import psutil

    total = 0.0
    for p in psutil.process_iter(["name"]):
        if p.info["name"] in SERVICE_NAMES:
            total += stat_cpu_s(p.pid, with_children=False)
    return total


class FarmWitness(CpuWitness):
    """`CpuWitness` that also knows the process trees we started (`roots()`, read at start and end).

    `farm_cores`: cores those trees used; `service_cores`: Redis and PostgreSQL servers;
    `own_cores`: this process and its waited-for children; `other_cores`: everything else,
    the load that makes a figure too low.
    """

    def __init__(self, roots: Callable[[], list[int]] = list) -> None:
        self.roots = roots

    def __enter__(self) -> Self:
        self._farm0, self._svc0 = tree_cpu_s(self.roots()), service_cpu_s()
        self._busy0, self._own0, self._t0 = _machine_busy_s(), _own_cpu_s(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = wall = time.perf_counter() - self._t0
        busy, own = _machine_busy_s(), _own_cpu_s()
        farm, svc = tree_cpu_s(self.roots()) - self._farm0, service_cpu_s() - self._svc0
        self.farm_cores, self.service_cores = farm / wall, svc / wall
        self.own_cores = (own - self._own0) / wall
        self.other_cores = (None if busy is None or self._busy0 is None else
                            max(0.0, (busy - self._busy0 - (own - self._own0) - farm - svc) / wall))

    def as_dict(self) -> dict[str, Any]:
        r = lambda x: None if x is None else round(x, 3)
        return {"other_cores": r(self.other_cores), "farm_cores": r(self.farm_cores),
                "service_cores": r(self.service_cores), "own_cores": r(self.own_cores)}


def flag_load(label: str, witness: FarmWitness, notes: list[str]) -> None:
    if witness.other_cores is not None and witness.other_cores > OTHER_LOAD_WARN:
        msg = (f"{label}: other processes used {witness.other_cores:.2f} cores meanwhile; "
               "this figure is too slow")
        notes.append(msg)
        print(f"  ! {msg}", file=sys.stderr)


class ThreadSampler:
    """Samples the processes below `roots()` every `interval`: the most threads any one of them
    had (and any busy one: > half a core over the interval, i.e. one rendering a chunk), and how
    many of them were busy at the same time."""

    def __init__(self, roots: Callable[[], list[int]], interval: float = 0.25) -> None:
        self.roots, self.interval = roots, interval
        self.peak_threads = self.peak_busy = self.peak_procs = self.peak_busy_threads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        last: dict[int, float] = {}
        while not self._stop.wait(self.interval):
            procs = [p for r in self.roots() for p in tree(r)[1:]]
            now: dict[int, float] = {}
            busy = 0
            for pid in procs:
                try:
                    n = psutil.Process(pid).num_threads()
                except psutil.Error:
                    continue
                self.peak_threads = max(self.peak_threads, n)
                now[pid] = stat_cpu_s(pid, with_children=False)
                if pid in last and now[pid] - last[pid] > 0.5 * self.interval:
                    busy += 1
                    self.peak_busy_threads = max(self.peak_busy_threads, n)
            last = now
            self.peak_busy, self.peak_procs = max(self.peak_busy, busy), max(self.peak_procs, len(procs))

    def as_dict(self) -> dict[str, int]:
        return {"peak_threads_in_one_process": self.peak_threads,
                "peak_threads_in_a_busy_process": self.peak_busy_threads,
                "peak_busy_processes": self.peak_busy, "peak_child_processes": self.peak_procs}


# ----------------------------------------------------------------------------- services


class PostgresDB:
    """A throwaway `reelfarm_bench_<random>` database, dropped on exit."""

    def __init__(self, admin_url: str = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres") -> None:
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url
        from sqlalchemy.pool import NullPool

        self.admin = make_url(admin_url)
        self._engine = create_engine(self.admin, isolation_level="AUTOCOMMIT", poolclass=NullPool,
                                     connect_args={"connect_timeout": 5})
        self.name = f"reelfarm_bench_{secrets.token_hex(5)}"
        self.url = ""

    def __enter__(self) -> Self:
        from sqlalchemy import text

        with self._engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
            self.version = conn.execute(text("SHOW server_version")).scalar()
        self.url = self.admin.set(database=self.name).render_as_string(hide_password=False)
        return self

    def __exit__(self, *exc: object) -> None:
        from sqlalchemy import text

        with self._engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self._engine.dispose()


class RedisDB:
    """One Redis database (14 by default), flushed at start and at the end; nothing else touched."""

    def __init__(self, url: str = "redis://127.0.0.1:6379/14") -> None:
        from reelfarm.farm.runtime.wiring import make_redis

        self.url = url
        self.redis = make_redis(url)

    def __enter__(self) -> Self:
        self.keys_found = self.redis.dbsize()
        self.redis.flushdb()
        self.version = self.redis.info("server").get("redis_version")
        return self

    def __exit__(self, *exc: object) -> None:
        self.redis.flushdb()
        self.redis.close()


# ----------------------------------------------------------------------------- figures


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": [round(v, 3) for v in values]} if values else {}


def poll_until_done(get: Callable[[], dict[str, Any]], interval: float = 0.05,
                    timeout: float = 900.0) -> tuple[dict[str, Any], int]:
    """Call `get` every `interval` s until the render has finished; returns it and the poll count."""
    deadline, polls = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        state, polls = get(), polls + 1
        if state["status"] in ("succeeded", "failed", "canceled"):
            return state, polls
        time.sleep(interval)
    raise TimeoutError(f"render not finished after {timeout:.0f} s: {state}")


def machine() -> dict[str, Any]:
    info = fps.machine_info()
    from importlib import metadata

    for dist in ("rq", "redis", "gunicorn", "httpx", "SQLAlchemy", "psycopg2-binary", "psycopg2"):
        try:
            info["versions"][dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return info


def print_table(title: str, columns: list[str], rows: list[list[str]], notes: list[str]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title)
        for i, col in enumerate(columns):
            t.add_column(col, justify="left" if i == 0 else "right")
        for row in rows:
            t.add_row(*row)
        c = Console(width=None if sys.stdout.isatty() else 120)
        c.print(t)
        for n in notes:
            c.print(f"  note: {n}", highlight=False, markup=False)
    except ImportError:
        print(title)
        for row in [columns] + rows:
            print("  " + "  ".join(f"{x:>14}" for x in row))
        for n in notes:
            print(f"  note: {n}")
