"""A farm's S3-compatible storage frozen for 20 s while a render writes to it.

A real farm (``reelfarm serve`` and a ``reelfarm worker`` on PostgreSQL and Redis, as in
``test_node_drain``) stores its files in a moto server, a stand-in for S3 run as a process of its
own, which the test stops with SIGSTOP and resumes with SIGCONT: connections are accepted and
requests sent, and nothing answers until it resumes, as with a storage service that hangs. It is
frozen while the chunks store their segments, or while the stitch downloads them and stores the
MP4 (the stitch is paced to still be at work when the freeze begins, ``tests/paced.py``).

While it is frozen the render is not ``succeeded`` and has no URL. Afterwards it succeeds, its MP4
decodes to exactly its frames, and its version is charged once; a render that failed instead would
have to be refunded with no URL.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from reelfarm.shared.storage import make_s3_client
from tests.e2e.test_node_drain import DURATION_SEC, FPS, Farm, frames_of, wait_for
from tests.helpers import WORK_CEILING_SEC
from tests.servers import free_port

BUCKET = "reelfarm-freeze"
FROZEN_SEC = 20.0
FRAME_SEC = "0.025"  # a chunk of a few seconds of video draws for about two seconds
STITCH_SEC = "2"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


class Moto:
    """``moto_server`` on a free port, in a process of its own that can be frozen."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        binary = shutil.which("moto_server") or str(Path(os.__file__).parents[2] / "bin" / "moto_server")
        self.log = open(root / "moto.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(self.port)], stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._answers, WORK_CEILING_SEC, "moto_server to answer")
        make_s3_client(self.url, **self._credentials()).create_bucket(Bucket=BUCKET)

    @staticmethod
    def _credentials() -> dict[str, str]:
        return {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

    def _answers(self) -> bool:
        assert self.process.poll() is None, Path(self.log.name).read_text(errors="replace")
        try:
            return httpx.get(self.url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def freeze(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        self.process.kill()
        self.process.wait(10)
        self.log.close()


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[Moto]:
    server = Moto(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def farm(tmp_path: Path, farm_database: str, farm_redis: str, moto: Moto) -> Iterator[Farm]:
    made = Farm(tmp_path, farm_database, farm_redis, REELFARM_STORAGE_URL=f"s3://{BUCKET}/farm",
                REELFARM_S3_ENDPOINT_URL=moto.url, **CREDENTIALS)
    yield made
    made.close()




def jobs(farm: Farm, render_id: str) -> dict[str, dict[str, str]]:
    """The render's chunk and stitch jobs in RQ."""
    stitch = f"render-{render_id}-stitch"
    found = farm.chunks(render_id)
    found[stitch] = {k.decode(): v.decode(errors="replace") for k, v in farm.redis.hgetall(f"rq:job:{stitch}").items()}
    return found


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0


@pytest.mark.parametrize("while_", ["chunks write", "the stitch writes"])
def test_a_render_through_a_storage_freeze_succeeds_whole_or_fails_refunded(farm: Farm, moto: Moto, tmp_path: Path,
                                                                            while_: str) -> None:
    credits = farm.credits()
    joined = tmp_path / "joined"  # the stitch has joined its MP4 and is about to store it
    farm.start_node("node", frame_sec=FRAME_SEC, PACED_STITCH_SEC=STITCH_SEC, PACED_STITCH_MARK=str(joined))
    render_id = farm.request_render()
    charged = farm.credits()
    assert charged < credits

    if while_ == "chunks write":
        wait_for(lambda: farm.render(render_id)["progress"] > 0, WORK_CEILING_SEC, "a chunk to draw", interval=0.05)
    else:
        wait_for(joined.exists, WORK_CEILING_SEC, "the stitch to join the MP4", interval=0.05)
    moto.freeze()
    at_work: set[str] = set()  # jobs seen at work while the storage is frozen
    frozen_at, seen = time.time(), []
    try:
        while time.time() - frozen_at < FROZEN_SEC:
            seen.append(farm.render(render_id))
            at_work |= {job_id for job_id, job in jobs(farm, render_id).items() if job.get("status") == "started"}
            time.sleep(0.5)
    finally:
        moto.thaw()
        thawed_at = time.time()
    assert seen and all(r["status"] == "running" and r["url"] is None for r in seen), seen

    done = wait_for(lambda: (r := farm.render(render_id))["status"] in ("succeeded", "failed", "canceled") and r,
                    WORK_CEILING_SEC, "the render to end", interval=0.25)
    if done["status"] == "failed":  # a failure is refunded, with nothing to download
        assert (done["url"], done["poster_url"], farm.credits()) == (None, None, credits), done
        return
    assert done["status"] == "succeeded", done
    writer = f"render-{render_id}-stitch" if while_ == "the stitch writes" else None
    # At work while the storage was frozen, done only after it thawed (a job whose stores gave up
    # during the freeze is retried: its record then holds the last attempt's times, once RQ has
    # written them, a moment after the render's success is recorded).

    def held() -> list[str]:
        ended = jobs(farm, render_id)
        return [job_id for job_id in at_work
                if (writer or job_id) == job_id and _at(ended[job_id].get("ended_at", "")) > thawed_at]

    wait_for(held, WORK_CEILING_SEC, f"a job at work in the freeze to end after the thaw: {at_work}", interval=0.25)
    assert frames_of(done["url"], tmp_path / "frozen.mp4") == DURATION_SEC * FPS
    assert httpx.get(done["poster_url"], timeout=30).status_code == 200
    assert farm.credits() == charged  # charged once
