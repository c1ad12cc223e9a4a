"""Render nodes stopped in the middle of a chunk, as a deploy or a scale-down stops them.

A real ``reelfarm serve`` (API on PostgreSQL and Redis: the session's servers, a database and a
Redis database of the test's own) and real ``reelfarm worker`` processes. Chunks are paced
(``tests/paced.py``) so that SIGTERM lands while one is drawing, whatever the machine's load.

- SIGTERM to a node (to each of its processes, work horse included): it finishes its chunk and
  stores it, takes no other job, and exits; another node does the rest. Past the node's grace
  period (``REELFARM_WORKER_GRACE_SEC``), or on a second signal, it stops the chunk and hands it
  back to the front of its queue, unspent (its retries left unchanged), and another node draws it.
- SIGTERM to ``reelfarm serve`` on the embedded queue while its task processes draw: they finish
  within the graceful timeout, or are cut at a short one and their tasks handed back unspent;
  nothing of the server runs on. A start on the same data dir finishes the render.

Every render ends succeeded, its MP4 decodes to exactly its frames, and its version is charged once.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import av
import httpx
import psutil
import pytest

from tests.e2e.test_serve import first_workspace_key, free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_SEC

ROOT = Path(__file__).resolve().parents[2]
FPS = 24
DURATION_SEC = 10
FRAME_SEC = "0.08"  # the pace of a drawn frame: a chunk of a few seconds of video draws for several seconds


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def end_tree(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process and everything it started, work horses (in groups of their own) included."""
    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for proc in tree:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    if process.poll() is None:
        process.wait(timeout=10)


class Farm:
    """The API and the nodes of one test, with their logs."""

    def __init__(self, root: Path, database_url: str, redis_url: str, **env: str) -> None:
        from redis import Redis

        self.root = root
        self.env = {"REELFARM_DATABASE_URL": database_url, "REELFARM_REDIS_URL": redis_url,
                    "REELFARM_STORAGE_URL": f"file://{root / 'files'}", "REELFARM_SECRET_KEY": "k" * 48, **env}
        self.redis = Redis.from_url(redis_url)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.server, self.lines = start_server(root / "data", self.port, REELFARM_DRAIN_SEC="0", **self.env)
        wait_for_health(self.base)
        self.key = first_workspace_key(root / "data", **self.env)
        self.http = httpx.Client(base_url=f"{self.base}/api/v1", timeout=30,
                                 headers={"Authorization": f"Bearer {self.key}"})
        self.nodes: list[subprocess.Popen[bytes]] = []

    def start_node(self, name: str, frame_sec: str = FRAME_SEC, **env: str) -> subprocess.Popen[bytes]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        environ.update(self.env, REELFARM_DATA_DIR=str(self.root / name), REELFARM_PUBLIC_URL=self.base,
                       TMPDIR=str(self.root), PYTHONUNBUFFERED="1", PACED_FRAME_SEC=frame_sec, **env)
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        node = subprocess.Popen([sys.executable, "-m", "tests.paced", "worker", "--queues", "render,jobs",
                                 "--name", name], cwd=ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.nodes.append(node)
        return node

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def credits(self) -> int:
        return int(self.http.get("/me").json()["workspace"]["credits"])

    def request_render(self) -> str:
        story = self.http.get("/stories").json()["data"][0]
        video = self.http.post("/videos", json={"storyId": story["id"], "format": "1:1",
                                                "durationSec": DURATION_SEC})
        assert video.status_code == 201, video.text
        render = self.http.post(f"/videos/{video.json()['id']}/renders",
                                json={"format": "1:1", "resolution": 720, "fps": FPS})
        assert render.status_code == 202, render.text
        return str(render.json()["id"])

    def render(self, render_id: str) -> dict[str, Any]:
        return dict(self.http.get(f"/renders/{render_id}").json())

    def chunks(self, render_id: str) -> dict[str, dict[str, Any]]:
        """The render's chunk jobs in RQ: id -> status, worker, retries left, when it ended."""
        found = {}
        for key in self.redis.scan_iter(match=f"rq:job:render-{render_id}-chunk-*", count=1000):
            job_id = key.decode().removeprefix("rq:job:")
            if ":" in job_id:  # a job's dependents, executions or results
                continue
            found[job_id] = {k.decode(): v.decode(errors="replace") for k, v in self.redis.hgetall(key).items()}
        return found

    def drawing(self, render_id: str) -> tuple[str, dict[str, Any]] | None:
        """The chunk job a node is drawing (progress reported) and its record; None before that."""
        if self.render(render_id)["progress"] <= 0:
            return None
        started = [(job_id, job) for job_id, job in self.chunks(render_id).items() if job["status"] == "started"]
        return started[0] if len(started) == 1 else None

    def queued(self, queue: str = "render") -> list[str]:
        """The jobs waiting on ``queue``, and the chunks bound for it that wait for their turn
        under fair dispatch (``reelfarm.farm.runtime.dispatch``)."""
        from reelfarm.farm.runtime.dispatch import Dispatcher, Shares

        held = [h.chunk.id for h in Dispatcher(self.redis, shares=Shares(None)).held() if h.target == queue]
        return [raw.decode() for raw in self.redis.lrange(f"rq:queue:{queue}", 0, -1)] + held

    def wait_succeeded(self, render_id: str, timeout: float = WORK_CEILING_SEC) -> dict[str, Any]:
        done = wait_for(lambda: (r := self.render(render_id))["status"] in ("succeeded", "failed", "canceled") and r,
                        timeout, f"render {render_id} to end", interval=0.25)
        assert done["status"] == "succeeded", done
        return done

    def close(self) -> None:
        self.http.close()
        for node in self.nodes:
            end_tree(node)
        stop(self.server)
        self.redis.close()


@pytest.fixture
def farm(tmp_path: Path, farm_database: str, farm_redis: str) -> Iterator[Farm]:
    made = Farm(tmp_path, farm_database, farm_redis)
    yield made
    made.close()


def frames_of(url: str, path: Path) -> int:
    """Download the MP4 at ``url`` and count the frames it decodes to."""
    answer = httpx.get(url, timeout=30)
    assert answer.status_code == 200, answer.status_code
    path.write_bytes(answer.content)
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def sigterm_mid_chunk(farm: Farm, node: subprocess.Popen[bytes], render_id: str,
                      everyone: bool = False) -> tuple[str, float]:
    """SIGTERM to the node while it draws a chunk (``everyone``: to each of its processes, work horse
    included, as systemd stops a service); the chunk's job id and when the signal went."""
    job_id, _ = wait_for(lambda: farm.drawing(render_id), WORK_CEILING_SEC, "a chunk to draw")
    assert farm.chunks(render_id)[job_id]["status"] == "started"
    tree = [node.pid] + ([child.pid for child in psutil.Process(node.pid).children(recursive=True)] if everyone else [])
    sent = time.time()
    for pid in tree:
        os.kill(pid, signal.SIGTERM)
    return job_id, sent


def test_a_node_stopped_mid_chunk_finishes_and_stores_it_and_takes_no_other_job(farm: Farm, tmp_path: Path) -> None:
    credits = farm.credits()
    first = farm.start_node("first")
    render_id = farm.request_render()
    charged = farm.credits()
    assert charged < credits
    job_id, sent = sigterm_mid_chunk(farm, first, render_id, everyone=True)
    horse = psutil.Process(first.pid).children()  # SIGUSR1: each process's stacks in the log, and nothing else
    for pid in [first.pid, *(child.pid for child in horse)]:
        os.kill(pid, signal.SIGUSR1)

    assert first.wait(timeout=WORK_CEILING_SEC) == 0, farm.log("first")  # once its chunk is drawn
    stacks = farm.log("first")
    assert stacks.count("(most recent call first)") >= 2 and " in render_chunk" in stacks, stacks
    chunks = farm.chunks(render_id)
    assert len(chunks) > 1, chunks
    ended = chunks[job_id]
    assert ended["status"] == "finished" and ended["worker_name"] == "first", ended
    assert datetime.fromisoformat(ended["ended_at"]).timestamp() > sent, (ended, sent)  # drawn on after SIGTERM
    others = {other: job["status"] for other, job in chunks.items() if other != job_id}
    assert set(others.values()) == {"queued"}, others  # taken by no one while the node stopped
    assert set(others) <= set(farm.queued()), (others, farm.queued())
    log = farm.log("first")
    assert "warm shut down requested" in log and "cold shut down" not in log, log

    farm.start_node("second", frame_sec="0")
    done = farm.wait_succeeded(render_id)
    assert frames_of(done["url"], tmp_path / "drained.mp4") == DURATION_SEC * FPS
    assert farm.credits() == charged  # charged once, when requested
    assert all(job["status"] == "finished" for job in farm.chunks(render_id).values())
    assert farm.chunks(render_id)[job_id]["worker_name"] == "first"  # not drawn again


@pytest.mark.parametrize("stopped_by", ["the grace period", "a second signal"])
def test_a_node_stopped_before_its_chunk_ends_hands_it_back_unspent(farm: Farm, tmp_path: Path,
                                                                     stopped_by: str) -> None:
    credits = farm.credits()
    grace = {"REELFARM_WORKER_GRACE_SEC": "1"} if stopped_by == "the grace period" else {}
    # Slower than FRAME_SEC: the first chunk (one second of video) draws for 6 s, well past the grace
    # period or the second signal however late a loaded machine sees it drawing.
    first = farm.start_node("first", frame_sec="0.25", **grace)
    render_id = farm.request_render()
    charged = farm.credits()
    assert charged < credits
    job_id, sent = sigterm_mid_chunk(farm, first, render_id)
    retries = farm.chunks(render_id)[job_id].get("retries_left")
    if stopped_by == "a second signal":
        time.sleep(1.2)  # RQ takes a repeat within a second for the same signal
        first.send_signal(signal.SIGINT)

    assert first.wait(timeout=30) == 0, farm.log("first")
    assert time.time() - sent < 10, farm.log("first")
    handed = farm.chunks(render_id)[job_id]
    assert handed["status"] == "queued", (handed, farm.log("first"))
    assert handed.get("retries_left") == retries  # not counted as a failure
    assert farm.queued()[0] == job_id  # at the front: the next node draws it first
    assert f"job {job_id} handed back to render" in farm.log("first"), farm.log("first")

    farm.start_node("second", frame_sec="0")
    done = farm.wait_succeeded(render_id)
    assert frames_of(done["url"], tmp_path / "handed-back.mp4") == DURATION_SEC * FPS
    assert farm.credits() == charged
    assert farm.chunks(render_id)[job_id]["worker_name"] == "second"


class Serve:
    """``reelfarm serve`` on the embedded queue (SQLite in ``data_dir``), its chunks paced, and its
    queue's rows read from the database."""

    def __init__(self, data_dir: Path, frame_sec: str = FRAME_SEC, **env: str) -> None:
        self.data_dir, self.port = data_dir, free_port()
        self.process, self.lines = start_server(data_dir, self.port, command=(sys.executable, "-m", "tests.paced"),
                                                PACED_FRAME_SEC=frame_sec, REELFARM_DRAIN_SEC="0", **env)
        self.printed: list[str] = []
        self.base = f"http://127.0.0.1:{self.port}"

    def connect(self, key: str) -> httpx.Client:
        wait_for_health(self.base)
        return httpx.Client(base_url=f"{self.base}/api/v1", timeout=30, headers={"Authorization": f"Bearer {key}"})

    def output(self) -> str:
        while not self.lines.empty():
            if (line := self.lines.get_nowait()) is not None:
                self.printed.append(line)
        return "".join(self.printed)

    def tasks(self, render_id: str) -> dict[str, tuple[str, int]]:
        """The render's rows in the embedded queue: id -> (status, attempts)."""
        with sqlite3.connect(self.data_dir / "reelfarm.db", timeout=30) as db:
            rows = db.execute("SELECT id, status, attempts FROM queued_tasks WHERE id LIKE ?",
                              (f"render-{render_id}-%",)).fetchall()
        return {task_id: (status, attempts) for task_id, status, attempts in rows}

    def left_behind(self, within_sec: float = 10.0) -> list[str]:
        """Processes of this server's session still alive (its task processes included) once
        `within_sec` has passed: a process the master killed as it left may take a moment to go on
        a loaded machine. A zombie runs nothing (whoever adopted it reaps it) and is not counted."""
        deadline = time.monotonic() + within_sec
        while True:
            alive = []
            for process in psutil.process_iter():
                try:
                    if _session(process) == self.process.pid and process.status() != psutil.STATUS_ZOMBIE:
                        alive.append(f"{process.pid} {process.name()}")
                except psutil.NoSuchProcess:
                    continue
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)

    def close(self) -> None:
        stop(self.process)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _session(process: psutil.Process) -> int | None:
    try:
        return os.getsid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None


def sigterm_mid_render(serve: Serve, http: httpx.Client, render_id: str) -> set[str]:
    """SIGTERM to the server's master, as a deploy sends it, while its task processes draw; the
    tasks that were running then."""
    def drawing() -> set[str]:
        if http.get(f"/renders/{render_id}").json()["progress"] <= 0:
            return set()
        return {task for task, (status, _) in serve.tasks(render_id).items() if status == "running"}

    running = wait_for(drawing, WORK_CEILING_SEC, "the render's chunks to draw")
    serve.process.send_signal(signal.SIGTERM)
    return set(running)


@pytest.mark.parametrize("graceful_sec", ["30", "3"])
def test_serve_stopped_mid_render_finishes_the_render_after_a_start_on_the_same_data_dir(
        tmp_path: Path, graceful_sec: str) -> None:
    """The default graceful timeout lets the running chunks finish and records them; a short one
    hands them back, their attempts not counted. Nothing of the stopped server is left running."""
    first = Serve(tmp_path / "data", REELFARM_GRACEFUL_SEC=graceful_sec)
    try:
        key, _ = wait_for_key(first.lines)
        http = first.connect(key)
        story = http.get("/stories").json()["data"][0]
        video = http.post("/videos", json={"storyId": story["id"], "format": "1:1", "durationSec": DURATION_SEC})
        credits = http.get("/me").json()["workspace"]["credits"]
        render = http.post(f"/videos/{video.json()['id']}/renders", json={"format": "1:1", "resolution": 720, "fps": FPS})
        assert render.status_code == 202, render.text
        render_id = render.json()["id"]
        charged = http.get("/me").json()["workspace"]["credits"]
        assert charged < credits
        running = sigterm_mid_render(first, http, render_id)
        http.close()
        assert first.process.wait(timeout=int(graceful_sec) + 15) == 0, first.output()
        time.sleep(0.5)
        assert first.left_behind() == [], first.output()
    finally:
        first.close()

    rows = first.tasks(render_id)
    assert not [task for task, (status, _) in rows.items() if status == "running"], rows
    if graceful_sec == "30":  # the chunks drawing at SIGTERM finished before the server exited
        assert {rows[task] for task in running} == {("succeeded", 1)}, (running, rows)
    else:  # cut at the deadline and handed back, unspent
        assert {rows[task] for task in running} == {("queued", 0)}, (running, rows)
        assert "handed back for the next start" in first.output(), first.output()
    assert rows[f"render-{render_id}-stitch"][0] in ("deferred", "queued"), rows

    second = Serve(tmp_path / "data", frame_sec="0")
    try:
        with second.connect(key) as again:
            done = wait_for(lambda: (r := again.get(f"/renders/{render_id}").json())["status"]
                            in ("succeeded", "failed", "canceled") and r, WORK_CEILING_SEC, "the render to end", interval=0.25)
            assert done["status"] == "succeeded", done
            assert frames_of(done["url"], tmp_path / "restarted.mp4") == DURATION_SEC * FPS
            assert again.get("/me").json()["workspace"]["credits"] == charged  # charged once
        # the stitch records the render's success itself, a moment before the queue records the task's end
        wait_for(lambda: {status for status, _ in second.tasks(render_id).values()} == {"succeeded"}, WORK_CEILING_SEC,
                 "the queue to record every task's end", interval=0.1)
        rows = second.tasks(render_id)
        assert {status for status, _ in rows.values()} == {"succeeded"}, rows
        assert all(attempts == 1 for _, attempts in rows.values()), rows  # each drawn once to the end
    finally:
        second.close()
