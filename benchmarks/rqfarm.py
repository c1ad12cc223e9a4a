"""A farm on one machine for the benchmarks: real Redis, PostgreSQL and `reelfarm worker` processes.

The render service runs in this process (`reelfarm.farm.runtime.wiring.make_farm` with an `RQQueue`, the same
service the API builds); the nodes are `python -m reelfarm worker --queues render,jobs` child
processes sharing its environment (database, Redis, data dir, storage, secret). Used by
`benchmarks.farm workers` and `benchmarks.scaling`.
"""
from __future__ import annotations

import datetime as dt
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

from benchmarks import farmkit
from benchmarks.farmkit import FarmWitness, Proc, ThreadSampler

READY_TIMEOUT = 90.0


class RqFarm:
    """Owns everything it creates (temp dir, PostgreSQL database, Redis DB, worker processes) and
    removes it on exit. `external=True` uses the REELFARM_* environment and the nodes already
    heartbeating there, creating only a workspace and a video in that database."""

    def __init__(self, *, seconds: float, resolution: int, external: bool = False, namespace: str = "",
                 redis_url: str = "redis://127.0.0.1:6379/14", story: str = farmkit.STORY) -> None:
        self.seconds, self.resolution, self.external = seconds, resolution, external
        self.namespace, self.redis_url, self.story = namespace, redis_url, story
        self.workers: list[Proc] = []
        self.info: dict[str, Any] = {}
        self._runs = 0
        self._cleanup: list[Any] = []

    # -- setup and teardown --------------------------------------------------------------

    def __enter__(self) -> Self:
        try:
            self._setup()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _setup(self) -> None:
        from reelfarm.farm.runtime.queue import RQQueue
        from reelfarm.farm.runtime.wiring import make_farm, make_redis
        from reelfarm.farm.services.progress import RedisProgress
        from reelfarm.renderer.tokens import NEUTRAL_BRAND
        from reelfarm.shared.clock import SystemClock
        from reelfarm.shared.config import Settings
        from reelfarm.shared.db import make_engine, migrate, transaction
        from reelfarm.shared.repos import workspaces
        from reelfarm.shared.storage import make_storage
        from reelfarm.studio.videos import VideoService

        if self.external:
            settings = Settings.from_env()
            if not settings.redis_url:
                raise SystemExit("--external needs the farm's REELFARM_REDIS_URL (and its DATABASE_URL, "
                                 "STORAGE_URL and SECRET_KEY) in the environment")
            self.info.update(database="from REELFARM_DATABASE_URL", redis="from REELFARM_REDIS_URL")
        else:
            self.work = Path(tempfile.mkdtemp(prefix="reelfarm-bench-farm-"))
            self._cleanup.append(lambda: shutil.rmtree(self.work, ignore_errors=True))
            redis_db = farmkit.RedisDB(self.redis_url).__enter__()
            self._cleanup.append(lambda: redis_db.__exit__(None, None, None))
            pg = farmkit.PostgresDB().__enter__()
            self._cleanup.append(lambda: pg.__exit__(None, None, None))
            self.info.update(database=f"PostgreSQL {pg.version}, throwaway database {pg.name}",
                             redis=f"Redis {redis_db.version}, {self.redis_url} (flushed at start and end; "
                                   f"{redis_db.keys_found} keys found)")
            self.env = {"REELFARM_DATA_DIR": str(self.work / "data"), "REELFARM_DATABASE_URL": pg.url,
                        "REELFARM_REDIS_URL": self.redis_url,
                        "REELFARM_STORAGE_URL": f"file://{self.work / 'data' / 'files'}",
                        "REELFARM_SECRET_KEY": secrets.token_urlsafe(48)}
            settings = Settings.from_env(self.env)
        self.settings, self.clock = settings, SystemClock()
        self.engine = make_engine(settings.database_url)
        self._cleanup.append(self.engine.dispose)
        migrate(self.engine)
        self.redis = make_redis(settings.redis_url)
        ns = self.namespace
        self.farm = make_farm(settings, self.engine, make_storage(settings, self.clock), self.clock,
                              queue=RQQueue(self.redis, namespace=ns),
                              progress=RedisProgress(self.redis, prefix=f"reelfarm:{ns}progress:"))
        with transaction(self.engine) as conn:
            ws = workspaces.create_workspace(conn, self.clock, name=f"bench-{secrets.token_hex(3)}",
                                             plan="pro", brand_tokens=NEUTRAL_BRAND, credits=1000)
        self.workspace = ws.id
        self.videos = VideoService(self.engine, self.clock)
        view = self.videos.create_from_story(ws.id, story_id=self.story, fields=farmkit.story_fields(0),
                                             fmt=farmkit.FORMAT, duration_sec=self.seconds)
        self.video = view.video.id
        self.frames = round(float(view.version.doc["duration"]) * farmkit.FPS)

    def __exit__(self, *exc: object) -> None:
        self.stop_workers()
        for undo in reversed(self._cleanup):
            try:
                undo()
            except Exception as e:  # noqa: BLE001 - keep cleaning up
                print(f"  ! cleanup step failed: {type(e).__name__}: {e}", file=sys.stderr)
        self._cleanup.clear()

    # -- nodes --------------------------------------------------------------------------

    def start_workers(self, n: int, pin: bool = False) -> None:
        """n `reelfarm worker` processes; with `pin`, worker i may use only core i % cores (so
        x264's automatic thread count sees one core). Returns when every one is idle in RQ."""
        from rq import Worker

        self.stop_workers()
        cores = sorted(os.sched_getaffinity(0))
        env = farmkit.clean_env(**self.env)
        token = secrets.token_hex(3)
        names = []
        for i in range(n):
            name = f"bench-{token}-{i}"
            names.append(name)
            self.workers.append(Proc(name, [sys.executable, "-m", "reelfarm", "worker", "--queues", "render,jobs",
                                            "--name", name], env, cores={cores[i % len(cores)]} if pin else None))
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            states = {w.name: w.get_state() for w in Worker.all(connection=self.redis)}
            if all(states.get(nm) == "idle" for nm in names):
                time.sleep(0.5)  # let the scheduler processes settle too
                return
            for w in self.workers:
                if w.popen.poll() is not None:
                    raise RuntimeError(f"worker {w.name} exited {w.popen.returncode}:\n{w.tail()}")
            time.sleep(0.1)
        raise RuntimeError("workers not idle in time:\n" + "\n".join(w.tail(10) for w in self.workers))

    def stop_workers(self) -> None:
        for w in self.workers:
            w.stop()
        self.workers = []

    def alive_external_nodes(self) -> list[dict[str, Any]]:
        from reelfarm.farm.runtime.nodes import NodeRegistry

        return [n for n in NodeRegistry(self.redis, self.namespace).nodes() if n["alive"]]

    def roots(self) -> list[int]:
        """Our worker processes; with --external, the external nodes that run on this host."""
        if self.external:
            import socket

            return [int(n["pid"]) for n in self.alive_external_nodes()
                    if n.get("hostname") == socket.gethostname() and str(n.get("pid", "")).isdigit()]
        return [w.pid for w in self.workers]

    # -- one render ---------------------------------------------------------------------

    def render(self, label: str, notes: list[str]) -> dict[str, Any]:
        """A new version of the video, rendered through the queue; wall time from request to
        `succeeded` (polled every 50 ms), with the chunk timeline RQ recorded."""
        if self._runs:
            self.videos.update(self.workspace, self.video, fields=farmkit.story_fields(self._runs))
        self._runs += 1
        renders = self.farm.renders
        with FarmWitness(self.roots) as cpu, ThreadSampler(self.roots) as threads:
            t0 = time.perf_counter()
            r = renders.request(self.workspace, self.video, farmkit.FORMAT, self.resolution, farmkit.FPS)
            done, polls = farmkit.poll_until_done(lambda: renders.get(self.workspace, r["id"]))
            wall = time.perf_counter() - t0
        if done["status"] != "succeeded":
            tails = "\n".join(w.tail(15) for w in self.workers)
            raise RuntimeError(f"{label}: render {done['status']}: {done['error']}\n{tails}")
        farmkit.flag_load(label, cpu, notes)
        frames = done["duration_sec"] and round(done["duration_sec"] * farmkit.FPS)
        return {"label": label, "render_id": r["id"], "seconds": wall, "frames": frames,
                "frames_per_second": frames / wall, "polls": polls, "bytes": done["bytes"],
                "cpu": cpu.as_dict(), "processes": threads.as_dict(),
                "timeline": self.timeline(r["id"], t0_wall=time.time() - (time.perf_counter() - t0))}

    def timeline(self, render_id: str, t0_wall: float) -> dict[str, Any]:
        """Per RQ job: seconds after the request when it started and ended, and on which node."""
        from rq.exceptions import NoSuchJobError
        from rq.job import Job

        from reelfarm.farm.services.graph import chunk_job_id, stitch_job_id
        from reelfarm.shared.repos.renders import find_render

        with self.engine.connect() as conn:
            chunks = find_render(conn, render_id).chunks or 0
        ids = [chunk_job_id(render_id, i) for i in range(chunks)] + [stitch_job_id(render_id)]
        jobs = []
        for jid in ids:
            try:
                job = Job.fetch(f"{self.namespace}{jid}", connection=self.redis)
            except NoSuchJobError:  # expired or removed: leave it out
                continue
            at = lambda d: None if d is None else round(
                d.replace(tzinfo=dt.UTC).timestamp() - t0_wall, 2)
            jobs.append({"job": jid.rsplit("-", 2)[-1] if "chunk" in jid else "stitch",
                         "start": at(job.started_at), "end": at(job.ended_at), "node": job.worker_name})
        spans = [j["end"] - j["start"] for j in jobs if j["start"] is not None and j["end"] is not None]
        chunk_spans = spans[:-1] if jobs and jobs[-1]["job"] == "stitch" else spans
        return {"chunks": chunks, "jobs": jobs,
                "chunk_seconds_median": round(sorted(chunk_spans)[len(chunk_spans) // 2], 2) if chunk_spans else None,
                "stitch_seconds": round(spans[-1], 2) if spans and jobs[-1]["job"] == "stitch" else None}
