"""A farm across hosts on one machine: ``reelfarm serve`` and ``reelfarm worker`` nodes here, and
PostgreSQL, Redis and (optionally) S3 each on a host of its own (``tests.netbed``), whose links the
tests and ``benchmarks.partitions`` silence and restore.

Nodes are paced (``tests.paced``), so that a link can be cut while a chunk draws whatever the
machine's load. A node may run as on a host of its own too (``own_host=True``: a UTS namespace
with another hostname), so that the farm can tell it is gone only by its silence, as across
machines, and not by looking for its process id.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import av
import httpx

from tests.e2e.test_node_drain import wait_for
from tests.e2e.test_serve import first_workspace_key, free_port, start_server, stop, wait_for_health
from tests.netbed import Bed
from tests.servers import MOTO_CREDENTIALS

ROOT = Path(__file__).resolve().parents[2]
FPS = 24


class PartitionedFarm:
    """The API and the nodes of one test here; its servers on hosts of their own."""

    def __init__(self, root: Path, *, storage: bool = False, **env: str) -> None:
        self.root = root
        self.bed = Bed(storage=storage)
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}
        self.server: subprocess.Popen[str] | None = None
        try:
            assert self.bed.postgres is not None and self.bed.redis is not None
            self.env = {"REELFARM_DATABASE_URL": self.bed.postgres.url, "REELFARM_REDIS_URL": self.bed.redis.url,
                        "REELFARM_STORAGE_URL": f"file://{root / 'files'}", "REELFARM_SECRET_KEY": "k" * 48, **env}
            if self.bed.storage is not None:
                self.env.update(REELFARM_STORAGE_URL=f"s3://{self.bed.storage.bucket}/farm",
                                REELFARM_S3_ENDPOINT_URL=self.bed.storage.url, **MOTO_CREDENTIALS)
            self.port = free_port()
            self.base = f"http://127.0.0.1:{self.port}"
            self.server, self.lines = start_server(root / "data", self.port, REELFARM_DRAIN_SEC="0", **self.env)
            self.printed: list[str] = []
            wait_for_health(self.base)
            self.key = first_workspace_key(root / "data", **self.env)
            self.http = httpx.Client(base_url=f"{self.base}/api/v1", timeout=60,
                                     headers={"Authorization": f"Bearer {self.key}"})
        except BaseException:
            self.close()
            raise

    @property
    def db_host(self) -> Any:
        return self.bed.db_host

    @property
    def redis_host(self) -> Any:
        return self.bed.redis_host

    @property
    def storage_host(self) -> Any:
        return self.bed.storage_host

    def start_node(self, name: str, frame_sec: str = "0.03", own_host: bool = False, prefix: tuple[str, ...] = (),
                   **env: str) -> subprocess.Popen[bytes]:
        """A paced node; ``prefix`` runs it through another command first (a full disk's namespace)."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        environ.update(self.env, REELFARM_DATA_DIR=str(self.root / name), REELFARM_PUBLIC_URL=self.base,
                       TMPDIR=str(self.root), PYTHONUNBUFFERED="1", PACED_FRAME_SEC=frame_sec)
        environ.update(env)
        command = [*prefix, sys.executable, "-m", "tests.paced", "worker", "--queues", "render,jobs", "--name", name]
        if own_host:  # its own hostname: the farm cannot look its process up, only hear its heartbeats
            command = [shutil.which("unshare") or "unshare", "--uts", "sh", "-c", 'hostname "$0"; exec "$@"',
                       f"host-{name}", *command]
        with open(self.root / f"{name}.log", "wb") as log:
            node = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.nodes[name] = node
        return node

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def server_log(self) -> str:
        while not self.lines.empty():
            line = self.lines.get_nowait()
            if line is not None:
                self.printed.append(line)
        return "".join(self.printed)

    def credits(self) -> int:
        return int(self.http.get("/me").json()["workspace"]["credits"])

    def make_video(self, duration_sec: int = 10) -> str:
        story = self.http.get("/stories").json()["data"][0]
        video = self.http.post("/videos", json={"storyId": story["id"], "format": "1:1", "durationSec": duration_sec})
        assert video.status_code == 201, video.text
        return str(video.json()["id"])

    def request_render(self, video_id: str, resolution: int = 720) -> str:
        render = self.http.post(f"/videos/{video_id}/renders",
                                json={"format": "1:1", "resolution": resolution, "fps": FPS})
        assert render.status_code == 202, render.text
        return str(render.json()["id"])

    def render(self, render_id: str) -> dict[str, Any]:
        response = self.http.get(f"/renders/{render_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())

    def finished(self, render_id: str, timeout: float) -> dict[str, Any]:
        return dict(wait_for(lambda: (r := self.render(render_id))["status"] in ("succeeded", "failed", "canceled")
                             and r, timeout, f"render {render_id} to end", interval=0.5))

    def frames_of(self, render: dict[str, Any]) -> int:
        """Decode the render's MP4 from its URL, frame by frame; the count of frames."""
        target = self.root / f"{render['id']}.mp4"
        with httpx.stream("GET", render["url"], timeout=60) as response:
            assert response.status_code == 200
            with open(target, "wb") as out:
                out.writelines(response.iter_bytes())
        with av.open(str(target)) as container:
            return sum(1 for _ in container.decode(video=0))

    def close(self) -> None:
        if getattr(self, "http", None) is not None:
            self.http.close()
        for node in self.nodes.values():
            if node.poll() is None:
                os.killpg(node.pid, 9)
                node.wait()
        if self.server is not None:
            stop(self.server)
        self.bed.close()
