"""The connections of a real farm stay within the bounds its process kinds state
(``reelfarm.shared.db.pool_bound``), on PostgreSQL itself and behind PgBouncer in transaction
pooling mode.

A real ``reelfarm serve`` (one worker of 4 request threads) and a real ``reelfarm worker`` render
a video while every request waits on the database: the test holds a lock on the API keys' table
and sends more requests than the worker has threads, until each thread holds a connection at once. Each connection is counted by the name its process kind gives it
(``application_name``), as often as the test can read them: from ``pg_stat_activity`` on the
server, or behind the pooler from PgBouncer's own list of clients, where the server sees no more
than the pooler's few connections. Every request is answered 200 once the lock goes, and the render
succeeds.

Behind the pooler the farm also starts on a fresh database with three ``reelfarm admin init`` at
once (migrations and the first workspace each under a transaction-scoped advisory lock: one
workspace), and ``reelfarm farm reap`` runs the repair round through it.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from reelfarm.shared.db import API, NODE, WORK, pool_bound
from tests.e2e.conftest import POOLED_SERVER_CONNECTIONS
from tests.e2e.test_node_drain import end_tree, frames_of
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health
from tests.helpers import WORK_CEILING_SEC, wait_until
from tests.servers import PgBouncerProcess

ROOT = Path(__file__).resolve().parents[2]
THREADS = 4  # reelfarm serve's default request threads
BOUNDS = {f"reelfarm-{kind}": pool_bound(kind, THREADS).most for kind in (API, NODE, WORK)}
HOLD_SEC = 1.0  # the lock is held this long after every request thread waits on it
LOCKER = "test-locker"  # the test's own connection, which holds the lock
WAITING_REQUESTS = 8


@dataclass
class Counts:
    """The most connections seen at once, by application name and in all, from a thread reading them."""

    read: Callable[[], dict[str, int]]
    most: collections.Counter[str] = field(default_factory=collections.Counter)
    most_in_all: int = 0
    reads: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            now = self.read()
            for name, count in now.items():
                self.most[name] = max(self.most[name], count)
            self.most_in_all = max(self.most_in_all, sum(now.values()))
            self.reads += 1

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(timeout=10)
        return dict(self.most)


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


def _reelfarm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reelfarm", *args], env=_env(env), cwd=ROOT, capture_output=True,
                          text=True, timeout=WORK_CEILING_SEC, check=False)


class Farm:
    """An API process and one render node on the test's database (and Redis database)."""

    def __init__(self, root: Path, database_url: str, redis_url: str, **env: str) -> None:
        self.root = root
        self.env = {"REELFARM_DATABASE_URL": database_url, "REELFARM_REDIS_URL": redis_url,
                    "REELFARM_STORAGE_URL": f"file://{root / 'files'}", "REELFARM_SECRET_KEY": "k" * 48, **env}
        self.server: subprocess.Popen[str] | None = None
        self.node: subprocess.Popen[bytes] | None = None
        self.http: httpx.Client | None = None

    def first_workspaces(self, at_once: int) -> list[dict[str, Any]]:
        """``reelfarm admin init --json``, ``at_once`` of them together: what those that succeeded made."""
        with ThreadPoolExecutor(at_once) as pool:
            done = list(pool.map(lambda i: _reelfarm({**self.env, "REELFARM_DATA_DIR": str(self.root / f"cli{i}")},
                                                     "admin", "init", "--json"), range(at_once)))
        refused = [d for d in done if d.returncode != 0]
        assert all("already has a workspace" in d.stderr for d in refused), [d.stderr for d in refused]
        return [json.loads(d.stdout) for d in done if d.returncode == 0]

    def serve(self, key: str) -> None:
        """The API (healthy: its master has let its own connection go) and the node."""
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        self.server, _ = start_server(self.root / "data", port, REELFARM_DRAIN_SEC="0", **self.env)
        wait_for_health(base)
        self.http = httpx.Client(base_url=f"{base}/api/v1", timeout=60, headers={"Authorization": f"Bearer {key}"})
        log = open(self.root / "node.log", "wb")  # noqa: SIM115 - closed with the process
        self.node = subprocess.Popen(
            [sys.executable, "-m", "reelfarm", "worker", "--queues", "render,jobs", "--name", "node"],
            env=_env({**self.env, "REELFARM_DATA_DIR": str(self.root / "node"), "REELFARM_PUBLIC_URL": base}),
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def request_render(self) -> str:
        assert self.http is not None
        story = self.http.get("/stories").json()["data"][0]
        video = self.http.post("/videos", json={"storyId": story["id"], "format": "1:1", "durationSec": 6})
        assert video.status_code == 201, video.text
        render = self.http.post(f"/videos/{video.json()['id']}/renders",
                                json={"format": "1:1", "resolution": 720, "fps": 24})
        assert render.status_code == 202, render.text
        return str(render.json()["id"])

    def render(self, render_id: str) -> dict[str, Any]:
        assert self.http is not None
        return dict(self.http.get(f"/renders/{render_id}").json())

    def node_log(self) -> str:
        return (self.root / "node.log").read_text(errors="replace")

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
        if self.node is not None:
            end_tree(self.node)
        if self.server is not None:
            stop(self.server)


@pytest.fixture
def admin(postgres_admin_url: str) -> Iterator[Any]:
    engine = create_engine(make_url(postgres_admin_url), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    yield engine
    engine.dispose()


def on_the_server(admin: Any, database: str) -> Callable[[], dict[str, int]]:
    """Connections to ``database`` as PostgreSQL counts them, by application name."""
    def read() -> dict[str, int]:
        with admin.connect() as conn:
            rows = conn.execute(text("SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = :db "
                                     "AND backend_type = 'client backend' AND application_name != :locker "
                                     "GROUP BY 1"), {"db": database, "locker": LOCKER}).all()
        return {name: count for name, count in rows}
    return read


def at_the_pooler(bouncer: PgBouncerProcess, database: str) -> Callable[[], dict[str, int]]:
    """Client connections to ``database`` as PgBouncer counts them, by application name."""
    def read() -> dict[str, int]:
        return dict(collections.Counter(str(c["application_name"]) for c in bouncer.show("CLIENTS")
                                        if c["database"] == database))
    return read


def render_under_load(farm: Farm, direct_url: str, counts: Counts) -> tuple[str, list[int]]:
    """Render, and meanwhile make every request thread wait on the database (module docstring)
    until ``counts`` has seen each of them hold a connection: the URL of the MP4, and the statuses
    of the requests that waited. ``direct_url`` reaches the database without the pooler, for the lock."""
    render_id = farm.request_render()
    wait_until(lambda: farm.render(render_id)["progress"] > 0, "the render drawing", every=0.1)
    locker = create_engine(make_url(direct_url), poolclass=NullPool, connect_args={"application_name": LOCKER})
    try:
        with locker.connect() as conn, conn.begin():
            conn.execute(text("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE"))
            assert farm.http is not None
            with ThreadPoolExecutor(WAITING_REQUESTS) as pool:
                answers = [pool.submit(farm.http.get, "/me") for _ in range(WAITING_REQUESTS)]
                wait_until(lambda: counts.most[f"reelfarm-{API}"] >= THREADS, "every request thread waiting on "
                           "the database with a connection", every=0.05)
                time.sleep(HOLD_SEC)
                conn.commit()
                statuses = [a.result().status_code for a in answers]
    finally:
        locker.dispose()
    done = wait_until(lambda: (r := farm.render(render_id))["status"] in ("succeeded", "failed") and r,
                      "the render ended", every=0.25)
    assert done["status"] == "succeeded", (done, farm.node_log())
    return str(done["url"]), statuses


def test_connections_stay_within_each_process_kinds_bound(tmp_path: Path, admin: Any, farm_database: str,
                                                          farm_redis: str) -> None:
    farm = Farm(tmp_path, farm_database, farm_redis)
    database = make_url(farm_database).database or ""
    try:
        (made,) = farm.first_workspaces(1)
        farm.serve(made["key"])
        counts = Counts(on_the_server(admin, database))
        try:
            url, statuses = render_under_load(farm, farm_database, counts)
        finally:
            most = counts.stop()
        assert statuses == [200] * WAITING_REQUESTS
        assert frames_of(url, tmp_path / "video.mp4") == 6 * 24
    finally:
        farm.close()
    ours = {name: n for name, n in most.items() if name.startswith("reelfarm-")}
    assert set(ours) <= set(BOUNDS), ours  # the serving master let its connection go; no command ran meanwhile
    assert all(ours[name] <= BOUNDS[name] for name in ours), (ours, BOUNDS)
    assert ours[f"reelfarm-{API}"] >= THREADS, ours  # every request thread held one at once
    assert ours[f"reelfarm-{NODE}"] >= 1 and ours[f"reelfarm-{WORK}"] >= 1, ours
    assert counts.reads > 20


def test_a_farm_behind_pgbouncer_in_transaction_mode(tmp_path: Path, admin: Any, farm_database: str,
                                                     farm_database_pooled: tuple[str, PgBouncerProcess],
                                                     farm_redis: str) -> None:
    pooled, bouncer = farm_database_pooled
    database = make_url(farm_database).database or ""
    farm = Farm(tmp_path, pooled, farm_redis, REELFARM_DATABASE_POOLING="transaction")
    try:
        made = farm.first_workspaces(3)  # on a fresh database: each migrates, and one makes the workspace
        assert [(m["name"], m["credits"]) for m in made] == [("dev", 100)]
        farm.serve(made[0]["key"])
        clients, servers = Counts(at_the_pooler(bouncer, database)), Counts(on_the_server(admin, database))
        try:
            url, statuses = render_under_load(farm, farm_database, clients)
        finally:
            most = clients.stop()
            servers.stop()
        assert statuses == [200] * WAITING_REQUESTS
        assert frames_of(url, tmp_path / "video.mp4") == 6 * 24
        reaped = _reelfarm({**farm.env, "REELFARM_DATA_DIR": str(tmp_path / "reap")}, "farm", "reap", "--json")
        assert reaped.returncode == 0, reaped.stderr
        assert set(json.loads(reaped.stdout)) >= {"recovered", "enqueued", "reaped_renders"}
        log = farm.node_log()
    finally:
        farm.close()
    assert "Traceback" not in log and "unsupported startup parameter" not in log, log
    ours = {name: n for name, n in most.items() if name.startswith("reelfarm-")}
    assert set(ours) <= set(BOUNDS) and all(ours[name] <= BOUNDS[name] for name in ours), (ours, BOUNDS)
    assert ours[f"reelfarm-{API}"] >= THREADS, ours
    # the server saw the pooler's few connections (named after whichever client used one last)
    assert servers.most_in_all <= POOLED_SERVER_CONNECTIONS < clients.most_in_all, (servers.most, ours)
