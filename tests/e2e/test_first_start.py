"""The first workspace: the embedded default's first start makes `dev` and shows its key to the
person trying it; a farm's server (PostgreSQL, Redis) makes none and prints no secret, and
`reelfarm admin init` makes exactly one, however many run at once."""
from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from sqlalchemy import create_engine, select
from sqlalchemy.pool import NullPool

from reelfarm.shared.tables import api_keys, users, workspaces
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health

ROOT = Path(__file__).resolve().parents[2]
SECRETS = re.compile(r"rf_live_|/app/link/|token=|sign-in link", re.IGNORECASE)


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1", **extra)
    return env


def _admin_init(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reelfarm", "admin", "init", "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def _rows(database_url: str) -> tuple[list[str], int, int]:
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            names = list(conn.execute(select(workspaces.c.name)).scalars())
            keys = len(conn.execute(select(api_keys.c.id)).all())
            people = len(conn.execute(select(users.c.id)).all())
    finally:
        engine.dispose()
    return names, keys, people


def _output_until_quiet(lines: queue.Queue[str | None], seconds: float) -> str:
    """What a server printed, read for ``seconds``."""
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            line = lines.get(timeout=0.2)
            if line is None:
                break
            seen.append(line)
    return "".join(seen)


def test_a_farm_first_start_makes_no_workspace_and_prints_no_secret_then_admin_init_makes_one(
        tmp_path, farm_database, farm_redis):
    farm = {"REELFARM_DATABASE_URL": farm_database, "REELFARM_REDIS_URL": farm_redis,
            "REELFARM_STORAGE_URL": f"file://{tmp_path / 'files'}", "REELFARM_SECRET_KEY": "k" * 48}
    ports = [free_port(), free_port()]
    # two API replicas starting together on one fresh database
    servers = [start_server(tmp_path / f"data{i}", port, workers=2, **farm) for i, port in enumerate(ports)]
    try:
        for port in ports:
            wait_for_health(f"http://127.0.0.1:{port}")
        printed = "".join(_output_until_quiet(lines, 3) for _, lines in servers)
        assert "no workspace yet" in printed and "reelfarm admin init" in printed
        assert not SECRETS.search(printed), printed
        assert "Created workspace" not in printed
        assert _rows(farm_database) == ([], 0, 0)

        with ThreadPoolExecutor(4) as pool:  # operators (or init jobs) asking at once: one workspace
            results = list(pool.map(lambda _: _admin_init(_env(tmp_path / "cli", **farm)), range(4)))
        made = [json.loads(r.stdout) for r in results if r.returncode == 0]
        assert len(made) == 1, [r.stdout + r.stderr for r in results]
        assert all("already has a workspace" in r.stderr for r in results if r.returncode != 0)
        assert (made[0]["name"], made[0]["plan"], made[0]["credits"]) == ("dev", "pro", 100)
        assert _rows(farm_database) == (["dev"], 1, 1)
        me = httpx.get(f"http://127.0.0.1:{ports[1]}/api/v1/me",
                       headers={"Authorization": f"Bearer {made[0]['key']}"}, timeout=10)
        assert me.status_code == 200 and me.json()["workspace"]["id"] == made[0]["id"]
        assert made[0]["link"].startswith("http") and made[0]["owner"] == "owner@localhost"
    finally:
        for process, _ in servers:
            stop(process)


def test_the_embedded_first_start_makes_dev_once_even_when_two_servers_start_together(tmp_path):
    data_dir = tmp_path / "data"
    ports = [free_port(), free_port()]
    servers = [start_server(data_dir, port) for port in ports]
    try:
        outputs = []
        for port, (_, lines) in zip(ports, servers, strict=True):
            wait_for_health(f"http://127.0.0.1:{port}")
            outputs.append(_output_until_quiet(lines, 2))
        assert sum("Created workspace 'dev'" in out for out in outputs) == 1, outputs
        assert _rows(f"sqlite:///{data_dir / 'reelfarm.db'}") == (["dev"], 1, 1)
    finally:
        for process, _ in servers:
            stop(process)
    # a later admin init finds the workspace and makes nothing
    again = _admin_init(_env(data_dir))
    assert again.returncode == 1 and "already has a workspace" in again.stderr
    assert _rows(f"sqlite:///{data_dir / 'reelfarm.db'}") == (["dev"], 1, 1)
