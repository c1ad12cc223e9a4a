"""A farm riding out outages: a real ``reelfarm serve`` (gunicorn) and a real ``reelfarm worker``,
on a PostgreSQL and a Redis of the test's own, which it kills and starts again under them.

Redis comes back empty (it persists nothing, as the README's and CI's do): the database is the
source of truth, and the work it records as queued or running is enqueued again, once. Every
render finishes, the version is charged once, and neither process is restarted by hand.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_serve import first_workspace_key, free_port, start_server, stop, wait_for_health
from tests.helpers import WORK_CEILING_SEC
from tests.servers import PostgresProcess, RedisProcess

FORMATS = ("16:9", "9:16", "1:1", "4:5")


class Farm:
    """The test's own servers, one API process and one render node."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # servers of the test's own, which it stops, kills and starts again
        self.postgres = PostgresProcess().start()
        self.redis = RedisProcess().start()
        self.env = {"REELFARM_DATABASE_URL": self.postgres.url, "REELFARM_REDIS_URL": self.redis.url,
                    "REELFARM_STORAGE_URL": f"file://{root / 'files'}", "REELFARM_SECRET_KEY": "k" * 48}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.server, self.lines = start_server(root / "data", self.port, **self.env)
        self.printed: list[str] = []
        wait_for_health(self.base)
        self.key = first_workspace_key(root / "data", **self.env)
        self.worker: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=f"{self.base}/api/v1", timeout=30,
                                 headers={"Authorization": f"Bearer {self.key}"})

    def start_worker(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        env.update(self.env, REELFARM_DATA_DIR=str(self.root / "worker"), REELFARM_PUBLIC_URL=self.base,
                   TMPDIR=str(self.root), PYTHONUNBUFFERED="1")
        log = open(self.root / "worker.log", "wb")  # noqa: SIM115 - closed with the process
        self.worker = subprocess.Popen([sys.executable, "-m", "reelfarm.farm.runtime.cli", "worker", "--queues", "render,jobs"],
                                       env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       cwd=Path(__file__).resolve().parents[2])
        return self.worker

    def worker_log(self) -> str:
        return (self.root / "worker.log").read_text(errors="replace")

    def server_log(self) -> str:
        """What the API process has printed so far."""
        while not self.lines.empty():
            line = self.lines.get_nowait()
            if line is not None:
                self.printed.append(line)
        return "".join(self.printed)

    def close(self) -> None:
        self.http.close()
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, 9)
            self.worker.wait()
        stop(self.server)
        self.redis.stop()
        self.postgres.stop()


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    made = Farm(tmp_path)
    yield made
    made.close()


def make_video(farm: Farm, duration: int = 6) -> str:
    story = farm.http.get("/stories").json()["data"][0]
    created = farm.http.post("/videos", json={"storyId": story["id"], "format": "16:9", "durationSec": duration})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def request_renders(farm: Farm, video: str) -> list[str]:
    """Six 720p renders of one version (four formats at 24 fps, two at 30): one charge for all."""
    ids = []
    for fmt, fps in [(f, 24) for f in FORMATS] + [("16:9", 30), ("9:16", 30)]:
        answer = farm.http.post(f"/videos/{video}/renders", json={"format": fmt, "resolution": 720, "fps": fps})
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["id"])
    return ids


def statuses(farm: Farm, ids: list[str]) -> list[str]:
    """Each render's status; "unknown" while the API cannot answer (its database just came back)."""
    out = []
    for render_id in ids:
        answer = farm.http.get(f"/renders/{render_id}")
        out.append(answer.json()["status"] if answer.status_code == 200 else "unknown")
    return out


def wait_for(check: Any, timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def test_renders_finish_after_redis_is_killed_and_comes_back_empty(farm: Farm) -> None:
    credits = farm.http.get("/me").json()["workspace"]["credits"]
    video = make_video(farm)
    farm.start_worker()
    ids = request_renders(farm, video)
    wait_for(lambda: "running" in statuses(farm, ids), WORK_CEILING_SEC, "a render to start")
    before = statuses(farm, ids)
    assert "queued" in before, before  # some wait in the queue, one is drawing: both kinds are lost

    farm.redis.kill()
    time.sleep(6)
    assert farm.worker is not None and farm.worker.poll() is None, farm.worker_log()
    farm.redis.start()  # empty: it kept nothing

    wait_for(lambda: set(statuses(farm, ids)) == {"succeeded"}, WORK_CEILING_SEC,
             f"every render to succeed: {statuses(farm, ids)}\n{farm.worker_log()}", interval=1)
    assert farm.worker.poll() is None, farm.worker_log()
    assert farm.http.get("/me").json()["workspace"]["credits"] == credits - 1  # 6 s: one credit, once
    log = farm.worker_log()
    assert "Redis unreachable" in log and "Redis reachable again after" in log
    assert "enqueued again" in log + farm.server_log()  # by the node's round, or the API process's
    assert "found an unhandled exception, quitting" not in log
    for render_id in ids:
        render = farm.http.get(f"/renders/{render_id}").json()
        assert render["error"] is None and render["bytes"] > 0


def test_scratch_folders_of_a_killed_node_are_removed_when_a_node_starts(farm: Farm) -> None:
    import psutil

    video = make_video(farm, duration=12)
    render = farm.http.post(f"/videos/{video}/renders", json={"format": "16:9", "resolution": 1080}).json()
    first = farm.start_worker()
    scratch = farm.root / "reelfarm-scratch"
    wait_for(lambda: scratch.is_dir() and any(p.name.startswith("chunk-") for p in scratch.iterdir()), WORK_CEILING_SEC,
             "a chunk to start drawing")
    tree = [first.pid] + [c.pid for c in psutil.Process(first.pid).children(recursive=True)]
    for pid in tree:  # the node dies at once, horse and all: nothing of it cleans up
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    first.wait()
    psutil.wait_procs([psutil.Process(p) for p in tree[1:] if psutil.pid_exists(p)], timeout=10)
    left = [p.name for p in scratch.iterdir()]
    assert any(name.startswith("chunk-") for name in left), left
    assert not list(farm.root.glob("reelfarm-chunk-*"))  # nothing in the system temp dir itself

    farm.start_worker()
    wait_for(lambda: farm.http.get(f"/renders/{render['id']}").json()["status"] == "succeeded", WORK_CEILING_SEC,
             "the render to succeed on the new node", interval=0.5)
    assert not [name for name in left if (scratch / name).exists()]
    assert f"removed {len(left)} scratch folder(s) left by processes that died" in farm.worker_log()
