"""Real worker processes (``reelfarm worker``) killed with SIGKILL in the middle of a chunk.

A node dying takes its RQ worker, its work horse and its scheduler with it, so the test kills
the worker's whole process tree. A second worker, started afterwards, must see that the first
is gone (its node record names a pid that no longer exists) and hand its chunk back to RQ: the
render then succeeds, or, when the chunk had no retries left, fails with a message and a refund.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import (
    PUBLIC_URL,
    SECRET,
    Farm,
    build_farm,
    make_doc,
    work_burst,
)
from tests.integration.farm.test_render_embedded import (
    assert_video,
    local_file,
    wait_for,
)


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


ROOT = Path(__file__).resolve().parents[3]


class Workers:
    """Starts ``reelfarm worker`` processes for one test; kills what is left at the end."""

    def __init__(self, env: dict[str, str], namespace: str, log_dir: Path) -> None:
        self.env, self.namespace, self.log_dir = env, namespace, log_dir
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *extra: str, env: dict[str, str] | None = None,
              prefix: Sequence[str] = (), module: str = "reelfarm.farm.runtime.cli") -> subprocess.Popen[bytes]:
        """A worker named ``<namespace><name>``; ``env`` adds to the environment, ``prefix`` is a
        command the worker's runs under (``unshare ...``), which must end by exec'ing it;
        ``module`` is the command line's (``tests.paced``: its frames paced)."""
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [*prefix, sys.executable, "-m", module, "worker", "--queues", "render",
             "--namespace", self.namespace, "--name", f"{self.namespace}{name}", *extra],
            env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=ROOT)
        self.started.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker and everything it started: a node dying. RQ puts its work horse in a
        process group of its own, so the whole tree is collected first."""
        tree = [process.pid] + [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()
        psutil.wait_procs([p for p in map(_process, tree[1:]) if p is not None], timeout=10)

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def workers(rq_farm: Farm, redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Workers]:
    env = {**os.environ, "REELFARM_DATABASE_URL": str(rq_farm.engine.url.render_as_string(hide_password=False)),
           "REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path / "worker-data"),
           "REELFARM_STORAGE_URL": f"file://{rq_farm.storage.root}", "REELFARM_SECRET_KEY": SECRET,
           "REELFARM_PUBLIC_URL": PUBLIC_URL, "REELFARM_LOG_LEVEL": "INFO"}
    started = Workers(env, namespace, tmp_path)
    yield started
    started.close()


def kill_mid_chunk(farm: Farm, workers: Workers, redis: Any, namespace: str, render_id: str,
                   chunk_frames: int, reused: int = 0) -> None:
    """Start a worker and kill it once the first chunk has reported some frames but not all
    (past the ``reused`` frames, which count as done from the start). Its frames are paced
    (``tests.paced``): unpaced, a loaded machine once saw the chunk end between the report
    and the kill."""
    first = workers.start("first", env={"PACED_FRAME_SEC": "0.05"}, module="tests.paced")
    wait_for(lambda: reused < farm.progress.frames(render_id) < reused + chunk_frames, interval=0.01)
    workers.kill(first)
    assert redis.zcard(f"rq:wip:{namespace}render") == 1, "the killed chunk is registered as started"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_survives_its_worker_being_killed(rq_farm: Farm, workers: Workers, redis: Any,
                                                   namespace: str) -> None:
    workspace = rq_farm.workspace(credits=3)
    video = rq_farm.video(workspace, make_doc(12))
    # scene one in three (its first second, then two), the crossfade, then two more
    render = rq_farm.renders.request(workspace, video, "16:9", resolution=1080)
    kill_mid_chunk(rq_farm, workers, redis, namespace, render["id"], chunk_frames=120)
    assert rq_farm.renders.get(workspace, render["id"])["status"] == "running"

    second = workers.start("second", "--burst")
    assert second.wait(timeout=WORK_CEILING_SEC) == 0, workers.log("second")

    done = rq_farm.renders.get(workspace, render["id"])
    assert done["status"] == "succeeded", (done["error"], workers.log("second"))
    log = workers.log("second")
    assert log.count("which is gone; handing it back") == 1  # exactly the killed chunk ...
    assert f"{namespace}render-{render['id']}-chunk-0: enqueued for retry, 1 remaining" in log  # ... ran again
    assert all(f"render_chunk('{render['id']}', {i})" in log for i in range(3))
    assert_video(local_file(rq_farm.storage, done["url"]), 1920, 1080, 30, 12 * 30, audio=False)
    assert rq_farm.balance(workspace) == 2


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_reusing_segments_survives_its_worker_being_killed(rq_farm: Farm, workers: Workers, redis: Any,
                                                                    namespace: str) -> None:
    workspace = rq_farm.workspace(credits=3)
    # at 30 fps: scene one in three chunks (its first second, 60 frames, 90), the crossfade (15), 165 more in two
    doc = make_doc(12)
    video = rq_farm.video(workspace, doc)
    rq_farm.renders.request(workspace, video, "16:9", resolution=720)
    work_burst(redis, namespace)
    edited = copy.deepcopy(doc)
    edited["scenes"][0]["layers"][0]["text"] = "Hello again"
    rq_farm.new_version(workspace, video, edited)
    render = rq_farm.renders.request(workspace, video, "16:9", resolution=720)
    assert render["reused_frames"] == 165, "the rest of scene two is copied, not drawn"

    kill_mid_chunk(rq_farm, workers, redis, namespace, render["id"], chunk_frames=90, reused=165)
    second = workers.start("second", "--burst")
    assert second.wait(timeout=WORK_CEILING_SEC) == 0, workers.log("second")

    done = rq_farm.renders.get(workspace, render["id"])
    assert done["status"] == "succeeded", (done["error"], workers.log("second"))
    assert done["reused_frames"] == 165
    log = workers.log("second")
    assert log.count("which is gone; handing it back") == 1
    assert not any(f"render_chunk('{render['id']}', {i})" in log for i in (4, 5)), "reused chunks are not drawn"
    assert_video(local_file(rq_farm.storage, done["url"]), 1280, 720, 30, 12 * 30, audio=False)
    assert rq_farm.balance(workspace) == 1, "one credit per version, charged once"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_killed_chunk_without_retries_fails_the_render_with_a_refund(rq_farm: Farm, workers: Workers,
                                                                       redis: Any, namespace: str) -> None:
    farm = build_farm(rq_farm.engine, rq_farm.storage, rq_farm.clock, rq_farm.progress, rq_farm.queue, retries=0)
    workspace = farm.workspace(credits=3)
    video = farm.video(workspace, make_doc(6))
    render = farm.renders.request(workspace, video, "16:9", resolution=1080)  # 2 chunks of 3 s
    assert farm.balance(workspace) == 2
    kill_mid_chunk(farm, workers, redis, namespace, render["id"], chunk_frames=90)

    second = workers.start("second", "--burst")
    assert second.wait(timeout=WORK_CEILING_SEC) == 0, workers.log("second")

    failed = farm.renders.get(workspace, render["id"])
    assert failed["status"] == "failed", workers.log("second")
    assert failed["error"].startswith("rendering chunk 1 failed: the render node running it stopped; try again")
    assert failed["error"].endswith("the 1 credit charged for it was refunded")
    assert farm.balance(workspace) == 3
    assert "which is gone; handing it back" in workers.log("second")
