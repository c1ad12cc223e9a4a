"""Quiet while a dependency is down: a real ``reelfarm serve`` (gunicorn, two processes) and a real
``reelfarm worker`` on a Redis of the test's own, which is killed for 9 s and started again (empty).

Every process that noticed says so once, a warning naming Redis and the error, and once that Redis is
back, an info line with how long it was gone; nothing else of ours above debug in between, though
each process runs rounds twice a second (fair dispatch), every 5 s (heartbeats, hand-backs, webhooks)
and waits for jobs. Lines are read as the JSON they are; each outage line carries ``dependency``,
``outage`` ("gone" or "back") and the ``pid`` of its process. Afterwards the farm still works: the
node runs a job, and the API answers.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus

from tests.e2e.test_node_names import end_tree
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health
from tests.helpers import wait_until
from tests.servers import RedisProcess, start_redis

ROOT = Path(__file__).resolve().parents[2]
OUTAGE_SEC = 9.0


class QuietFarm:
    """One API (two serving processes) and one node on a Redis of the test's own."""

    def __init__(self, root: Path, database_url: str) -> None:
        self.root = root
        self.redis_server: RedisProcess = start_redis()
        self.env = {"REELFARM_DATABASE_URL": database_url, "REELFARM_REDIS_URL": self.redis_server.url,
                    "REELFARM_STORAGE_URL": f"file://{root / 'files'}", "REELFARM_SECRET_KEY": "k" * 48}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.server, self.lines = start_server(root / "data", self.port, workers=2, **self.env)
        self.printed: list[str] = []
        wait_for_health(self.base)
        environ = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        environ.update(self.env, REELFARM_DATA_DIR=str(root / "node"), REELFARM_PUBLIC_URL=self.base,
                       TMPDIR=str(root), PYTHONUNBUFFERED="1")
        self.node_log = root / "node.log"
        with open(self.node_log, "wb") as log:
            self.node = subprocess.Popen([sys.executable, "-m", "reelfarm.farm.runtime.cli", "worker", "--queues",
                                          "render,jobs", "--name", "node1"], cwd=ROOT, env=environ, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.redis = Redis.from_url(self.redis_server.url)

    def server_lines(self) -> list[str]:
        while not self.lines.empty():
            line = self.lines.get_nowait()
            if line is not None:
                self.printed.append(line)
        return self.printed

    def node_lines(self) -> list[str]:
        return self.node_log.read_text(errors="replace").splitlines()

    def close(self) -> None:
        end_tree(self.node)
        stop(self.server)
        (self.root / "api.log").write_text("".join(self.server_lines()))  # beside node.log, to read after
        self.redis.close()
        self.redis_server.kill()
        self.redis_server.stop()


@pytest.fixture
def farm(tmp_path: Path, farm_database: str) -> Iterator[QuietFarm]:
    made = QuietFarm(tmp_path, farm_database)
    yield made
    made.close()


def records(lines: list[str]) -> list[dict[str, Any]]:
    found = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "level" in record:
            found.append(record)
    return found


def loud(found: list[dict[str, Any]], since: str, until: str) -> list[dict[str, Any]]:
    """Our lines above debug and info between two times (ISO, as the lines carry them), other than the
    outage's own."""
    return [r for r in found if since <= r["time"] <= until and r["level"] in ("WARNING", "ERROR", "CRITICAL")
            and "outage" not in r]


def test_a_redis_outage_is_one_line_when_it_goes_and_one_when_it_is_back_in_each_process(farm: QuietFarm) -> None:
    wait_until(lambda: farm.redis.hget("rq:worker:node1", "state") == b"idle", "the node to wait for a job")
    time.sleep(3)  # the node's first heartbeats and maintenance rounds, the API's rounds

    began = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    farm.redis_server.kill()
    time.sleep(OUTAGE_SEC)
    farm.redis_server.start()  # empty: it kept nothing
    job = wait_until(lambda: _enqueue(farm.redis), "Redis to take a job again")
    wait_until(lambda: Job.fetch(job.id, connection=farm.redis).get_status() == JobStatus.FINISHED,
               "the node to run a job after the outage")
    # the API's own check of Redis reopens at its next probe, which may come after the node's job
    wait_until(lambda: httpx.get(f"{farm.base}/readyz", timeout=5).status_code == 200, "the API to be ready again")
    time.sleep(6)  # every process's rounds have met Redis again
    ended = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    for name, lines in (("node", farm.node_lines()), ("API", farm.server_lines())):
        found = records(lines)
        outage = [r for r in found if r.get("outage")]
        per_process = Counter((r["pid"], r["dependency"], r["outage"]) for r in outage)
        pids = {pid for pid, _, _ in per_process}
        assert pids, f"no outage line in the {name}'s log:\n" + "\n".join(lines)
        assert per_process == Counter({(pid, "Redis", kind): 1 for pid in pids for kind in ("gone", "back")}), \
            f"{name}: {per_process}\n" + "\n".join(json.dumps(r) for r in outage)
        for record in outage:
            if record["outage"] == "gone":
                assert record["level"] == "WARNING" and record["message"].startswith("Redis unreachable")
                assert re.search(r" \(.*(connect|Connection).*\); retrying until it is back$", record["message"]), record
            else:
                assert record["level"] == "INFO" and record["message"].startswith("Redis reachable again after ")
                assert OUTAGE_SEC - 2 <= record["down_sec"] <= OUTAGE_SEC + 20, record
        noise = loud(found, began, ended)
        assert noise == [], f"{name}: lines above info during the outage:\n" + "\n".join(json.dumps(r) for r in noise)
    assert farm.node.poll() is None and farm.server.poll() is None


def _enqueue(redis: Redis) -> Job | None:
    try:
        return Queue("jobs", connection=redis).enqueue("os.getpid")
    except Exception:  # noqa: BLE001 - not back yet
        return None
