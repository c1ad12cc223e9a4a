"""Routing by capability with real ``reelfarm worker`` processes over real Redis and PostgreSQL.

A GL node is a worker started with ``--raster gl`` on Mesa's llvmpipe (EGL's surfaceless platform:
the GL rasterizer really draws, in software); a CPU node is one started with ``--raster cpu``.
Which node ran a chunk is read from RQ's own record of the job (``worker_name``).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rq.job import Job
from rq.utils import utcformat

from reelfarm.farm.runtime.cli import farm_group, worker_command
from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.routing import Router, node_queues
from reelfarm.farm.services.graph import chunk_job_id, stitch_job_id
from reelfarm.farm.services.queues import GPU_QUEUE, RENDER_QUEUE
from reelfarm.farm.services.renders import RenderService
from reelfarm.shared.config import Settings
from reelfarm.shared.errors import ConfigError
from tests.integration.farm.conftest import PUBLIC_URL, SECRET, Farm, destination, make_doc
from tests.integration.farm.test_render_embedded import assert_video, local_file, wait_for
from tests.integration.farm.test_worker_faults import Workers

POSTGRESQL = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


@pytest.fixture
def nodes(rq_farm: Farm, redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Workers]:
    env = {**os.environ, "REELFARM_DATABASE_URL": rq_farm.engine.url.render_as_string(hide_password=False),
           "REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path / "worker-data"),
           "REELFARM_STORAGE_URL": f"file://{rq_farm.storage.root}", "REELFARM_SECRET_KEY": SECRET,
           "REELFARM_PUBLIC_URL": PUBLIC_URL, "REELFARM_LOG_LEVEL": "INFO", "EGL_PLATFORM": "surfaceless"}
    started = Workers(env, namespace, tmp_path)
    yield started
    started.close()


CHUNKS = 3


def scene_chunk_renders(farm: Farm) -> RenderService:
    """The farm's render service: ``make_doc``'s two scenes make three chunks (scene one, the
    crossfade into scene two, the rest of it)."""
    return RenderService(farm.engine, farm.queue, farm.storage, farm.clock, farm.progress)


def wait_live(redis: Any, namespace: str, *names: str) -> dict[str, dict[str, Any]]:
    """The registry entries of the named nodes once each has heartbeated."""
    def live() -> dict[str, dict[str, Any]] | None:
        found = {n["name"].removeprefix(namespace): n for n in NodeRegistry(redis, namespace).nodes() if n["alive"]}
        return found if all(name in found for name in names) else None
    return wait_for(live, interval=0.2)  # type: ignore[no-any-return]


def chunk_jobs(redis: Any, namespace: str, render_id: str, chunks: int) -> list[Job]:
    return [Job.fetch(f"{namespace}{chunk_job_id(render_id, i)}", connection=redis) for i in range(chunks)]


def destinations(redis: Any, namespace: str, render_id: str, chunks: int) -> list[str]:
    """The queue each chunk is in, or goes to when its turn comes (reelfarm.farm.runtime.dispatch)."""
    return [destination(redis, namespace, job) for job in chunk_jobs(redis, namespace, render_id, chunks)]


def wait_done(farm: Farm, workspace: str, render_id: str, nodes: Workers, *logs: str) -> dict[str, Any]:
    done = wait_for(lambda: (r := farm.renders.get(workspace, render_id))["status"] not in ("queued", "running")
                    and r, interval=0.2)
    assert done["status"] == "succeeded", (done["error"], *(nodes.log(name) for name in logs))
    return done  # type: ignore[no-any-return]


def test_node_queues_follow_the_rasterizer() -> None:
    assert node_queues(["render", "jobs"], "gl") == (["render-gpu", "render", "jobs"], [])
    assert node_queues(["render", "jobs"], "cpu") == (["render", "jobs"], [])
    assert node_queues(["render-cpu"], "gl") == (["render-gpu", "render"], [])
    assert node_queues(["render-gpu", "render"], "cpu") == (["render"], ["render-gpu"])


def test_the_gpu_queue_wait_is_configured(tmp_path: Path) -> None:
    base = {"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_SECRET_KEY": SECRET}
    assert Settings.from_env(base).gpu_queue_wait_sec == 30.0
    assert Settings.from_env({**base, "REELFARM_GPU_QUEUE_WAIT_SEC": "12.5"}).gpu_queue_wait_sec == 12.5
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({**base, "REELFARM_GPU_QUEUE_WAIT_SEC": "0"})
    assert refused.value.variable == "REELFARM_GPU_QUEUE_WAIT_SEC"


def test_routing_follows_live_nodes_and_the_gpu_backlog(redis: Any, namespace: str) -> None:
    registry, router = NodeRegistry(redis, namespace), Router(redis, namespace, gpu_wait_sec=30)
    assert router.chunk_queue() == RENDER_QUEUE  # no node at all
    registry.beat("gpu", detect_capabilities("gl"), queues=[GPU_QUEUE, RENDER_QUEUE], state="idle", current_job=None)
    assert router.chunk_queue() == GPU_QUEUE
    registry.beat("cpu", detect_capabilities(), queues=[RENDER_QUEUE], state="idle", current_job=None)
    assert router.chunk_queue() == GPU_QUEUE  # nothing waits on render-gpu yet

    RQQueue(redis, namespace=namespace).enqueue("reelfarm.farm.runtime.tasks.render_chunk", "r", 0, job_id="waiting", queue=GPU_QUEUE)
    redis.hset(f"rq:job:{namespace}waiting", "enqueued_at", utcformat(datetime.now(UTC) - timedelta(seconds=31)))
    assert router.chunk_queue() == RENDER_QUEUE  # the GPU queue is backed up past the wait
    registry.mark_stopped("cpu")
    assert router.chunk_queue() == GPU_QUEUE  # no CPU-only node to take the overflow
    assert router.reroute() == []


def test_a_cpu_node_refuses_to_work_only_the_gpu_queue(redis_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(worker_command, ["--queues", "render-gpu", "--raster", "cpu"],
                                env={"REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path),
                                     "REELFARM_SECRET_KEY": SECRET})
    assert result.exit_code == 1
    assert "no queue left to work: render-gpu needs a node that draws with GL" in result.output


@POSTGRESQL
def test_with_a_gl_node_live_the_chunks_go_to_it_and_status_shows_both_nodes(
        rq_farm: Farm, nodes: Workers, redis: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    # a chunk waits for the GL node however long the loaded machine makes it draw: a wait past
    # REELFARM_GPU_QUEUE_WAIT_SEC would move it to the CPU node (the test of that is below)
    nodes.env["REELFARM_GPU_QUEUE_WAIT_SEC"] = "900"
    rq_farm.queue.router.gpu_wait_sec = rq_farm.queue.dispatcher.gpu_wait_sec = 900  # type: ignore[attr-defined]
    nodes.start("gl", "--queues", "render,jobs", "--raster", "gl")
    nodes.start("cpu", "--queues", "render,jobs", "--raster", "cpu")
    live = wait_live(redis, namespace, "gl", "cpu")
    # a GL node carries the tag gpu, and works its tag set's ready queues (node pools) first
    assert (live["gl"]["raster"], live["gl"]["tags"]) == ("gl", "gpu")
    assert live["gl"]["queues"] == "render-gpu@gpu,render@gpu,render-gpu,render,jobs"
    assert "llvmpipe" in live["gl"]["gl_renderer"]
    assert (live["cpu"]["raster"], live["cpu"]["gl_renderer"], live["cpu"]["queues"]) == ("cpu", "", "render,jobs")

    workspace = rq_farm.workspace()
    render = scene_chunk_renders(rq_farm).request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", 360, 12)
    assert destinations(redis, namespace, render["id"], CHUNKS) == [f"{namespace}{GPU_QUEUE}"] * CHUNKS
    stitch = Job.fetch(f"{namespace}{stitch_job_id(render['id'])}", connection=redis)
    assert stitch.origin == f"{namespace}{RENDER_QUEUE}"

    done = wait_done(rq_farm, workspace, render["id"], nodes, "gl", "cpu")
    assert [j.worker_name for j in chunk_jobs(redis, namespace, render["id"], CHUNKS)] == [f"{namespace}gl"] * CHUNKS
    assert_video(local_file(rq_farm.storage, done["url"]), 640, 360, 12, 6 * 12, audio=False)
    assert "GL rasterizer on llvmpipe" in nodes.log("gl")  # the chunks drew on GL, not on the CPU fallback
    assert "drawing on the CPU" not in nodes.log("gl")

    result = CliRunner().invoke(farm_group, ["status", "--json", "--namespace", namespace], env={
        "REELFARM_DATABASE_URL": rq_farm.engine.url.render_as_string(hide_password=False),
        "REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path / "status"),
        "REELFARM_SECRET_KEY": SECRET})
    assert result.exit_code == 0, result.output
    shown = {n["name"].removeprefix(namespace): n for n in json.loads(result.output)["nodes"]}
    assert set(shown) == {"gl", "cpu"}
    for node in shown.values():
        assert node["alive"] and node["cores"] == os.cpu_count()
        assert (node["gpu"], node["nvenc"], node["gpu_memory_total"], node["gpu_utilization"]) == (None, False, None,
                                                                                                 None)
        assert node["nvml"].startswith("NVML: ")  # nvidia-ml-py is installed; no driver on this machine
    assert (shown["gl"]["raster"], shown["cpu"]["raster"]) == ("gl", "cpu")
    table = CliRunner().invoke(farm_group, ["status", "--namespace", namespace], env={
        "REELFARM_DATABASE_URL": rq_farm.engine.url.render_as_string(hide_password=False),
        "REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path / "status"),
        "REELFARM_SECRET_KEY": SECRET, "COLUMNS": "400"})
    assert table.exit_code == 0 and "gl (llvmpipe" in table.output and "render-gpu,render,jobs" in table.output


@POSTGRESQL
def test_with_only_a_cpu_node_live_the_chunks_go_to_the_cpu_queue(rq_farm: Farm, nodes: Workers, redis: Any,
                                                                  namespace: str) -> None:
    nodes.start("cpu", "--queues", "render,jobs", "--raster", "cpu")
    wait_live(redis, namespace, "cpu")

    workspace = rq_farm.workspace()
    render = scene_chunk_renders(rq_farm).request(workspace, rq_farm.video(workspace, make_doc(6)), "1:1", 240, 12)
    assert destinations(redis, namespace, render["id"], CHUNKS) == [f"{namespace}{RENDER_QUEUE}"] * CHUNKS

    done = wait_done(rq_farm, workspace, render["id"], nodes, "cpu")
    assert [j.worker_name for j in chunk_jobs(redis, namespace, render["id"], CHUNKS)] == [f"{namespace}cpu"] * CHUNKS
    assert_video(local_file(rq_farm.storage, done["url"]), 240, 240, 12, 6 * 12, audio=False)


@POSTGRESQL
def test_chunks_waiting_for_a_gpu_node_past_the_wait_move_to_a_cpu_node(rq_farm: Farm, nodes: Workers,
                                                                        redis: Any, namespace: str) -> None:
    # A GPU node that heartbeats but takes nothing (busy elsewhere, or stuck): chunks are routed to
    # it and wait.
    registry = NodeRegistry(redis, namespace)

    def gpu_node_beats() -> None:
        registry.beat(f"{namespace}busy-gpu", detect_capabilities("gl", "some GPU"), queues=[GPU_QUEUE, RENDER_QUEUE],
                      state="busy", current_job="elsewhere")

    gpu_node_beats()
    workspace = rq_farm.workspace()
    render = scene_chunk_renders(rq_farm).request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", 240, 12)
    assert destinations(redis, namespace, render["id"], CHUNKS) == [f"{namespace}{GPU_QUEUE}"] * CHUNKS
    time.sleep(1.0)  # the GPU node is busy: the chunks wait for it
    assert destinations(redis, namespace, render["id"], CHUNKS) == [f"{namespace}{GPU_QUEUE}"] * CHUNKS

    nodes.env["REELFARM_GPU_QUEUE_WAIT_SEC"] = "3"
    nodes.start("cpu", "--queues", "render,jobs", "--raster", "cpu")
    done = wait_for(lambda: gpu_node_beats() or (r := rq_farm.renders.get(workspace, render["id"]))["status"]
                    not in ("queued", "running") and r, interval=0.5)
    assert done["status"] == "succeeded", (done["error"], nodes.log("cpu"))

    jobs = chunk_jobs(redis, namespace, render["id"], CHUNKS)
    assert [j.origin for j in jobs] == [f"{namespace}{RENDER_QUEUE}"] * CHUNKS
    assert [j.worker_name for j in jobs] == [f"{namespace}cpu"] * CHUNKS
    assert redis.llen(f"rq:queue:{namespace}{GPU_QUEUE}") == 0
    assert re.search(r"moved \d chunk\(s\) that waited over 3 s for a GPU node to render", nodes.log("cpu"))
    assert_video(local_file(rq_farm.storage, done["url"]), 426, 240, 12, 6 * 12, audio=False)


@POSTGRESQL
def test_a_node_whose_gl_context_fails_draws_on_the_cpu_and_leaves_the_gpu_queue(
        rq_farm: Farm, nodes: Workers, redis: Any, namespace: str) -> None:
    nodes.env["__EGL_VENDOR_LIBRARY_FILENAMES"] = "/nonexistent/egl-vendor.json"  # no EGL driver at all
    nodes.start("broken-gl", "--queues", "render,jobs", "--raster", "gl")
    live = wait_live(redis, namespace, "broken-gl")

    assert (live["broken-gl"]["raster"], live["broken-gl"]["queues"]) == ("cpu", "render,jobs")
    log = nodes.log("broken-gl")
    assert "no GL context on this node (RasterError: no surfaceless EGL display" in log
    assert "its chunks draw on the CPU and it does not work render-gpu" in log


def test_retries_due_on_the_gpu_queue_past_the_wait_move_to_the_cpu_queue(redis: Any, namespace: str) -> None:
    """A chunk that failed on a GPU node is retried on render-gpu (RQ's scheduled registry); when no
    GPU node's scheduler picked it up within the wait and a CPU-only node is live, it moves."""
    from rq import Queue
    from rq.registry import ScheduledJobRegistry

    registry, router = NodeRegistry(redis, namespace), Router(redis, namespace, gpu_wait_sec=30)
    gpu_queue = Queue(f"{namespace}{GPU_QUEUE}", connection=redis)
    now = datetime.now(UTC)
    overdue = gpu_queue.enqueue_at(now - timedelta(seconds=40), "reelfarm.farm.runtime.tasks.render_chunk", "r", 0,
                                   job_id=f"{namespace}overdue")
    due_soon = gpu_queue.enqueue_at(now - timedelta(seconds=5), "reelfarm.farm.runtime.tasks.render_chunk", "r", 1,
                                    job_id=f"{namespace}due-soon")
    scheduled = ScheduledJobRegistry(queue=gpu_queue)
    assert set(scheduled.get_job_ids()) == {overdue.id, due_soon.id}

    assert router.reroute() == []  # no CPU-only node: nothing moves
    registry.beat("cpu", detect_capabilities(), queues=[RENDER_QUEUE], state="idle", current_job=None)
    assert router.reroute() == [overdue.id]
    assert scheduled.get_job_ids() == [due_soon.id]  # waited less than the wait: stays for a GPU node
    assert Queue(f"{namespace}{RENDER_QUEUE}", connection=redis).get_job_ids() == [overdue.id]
    assert router.reroute() == []  # moved once
