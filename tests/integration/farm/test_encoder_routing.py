"""Encoder families on a farm, with real Redis, PostgreSQL and RQ workers: while a node that encodes
with NVENC is live a render's chunks go to ``render-nvenc`` and stay within that family; when no
NVENC node takes them in time the whole render moves to x264, the segments NVENC already made are
drawn again, and the stitched MP4 is one family and decodes frame-exact. A render in a pool takes
the family of the nodes that serve the pool, and falls back within it. NVENC itself is the
stand-in of ``tests.stand_in_nvenc`` (libx264 at another preset behind PyNvVideoCodec's calls)."""
from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from rq import Queue, SimpleWorker
from rq.job import Job

from reelfarm.farm.runtime.context import current
from reelfarm.farm.runtime.families import fall_back
from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities
from reelfarm.farm.runtime.tasks import lifecycle
from reelfarm.farm.services.graph import chunk_job_id
from reelfarm.renderer.backends import EncoderChoice
from reelfarm.renderer.concat import probe
from reelfarm.shared.repos.renders import find_render
from reelfarm.shared.storage_keys import segment_key
from tests.integration.farm.conftest import Farm, destination, dispatch_all, make_doc, work_burst
from tests.integration.farm.test_render_embedded import assert_video, local_file
from tests.stand_in_nvenc import stand_in_nvenc  # noqa: F401 - the fixture

STAND_IN_PROFILE = "Constrained Baseline"  # the stand-in's; our x264 encoder's is High


@pytest.fixture
def mixed_farm(rq_farm: Farm, redis: Any, namespace: str, stand_in_nvenc: None) -> Iterator[Farm]:  # noqa: F811
    """Two live nodes in the registry: one that encodes with NVENC (the stand-in), one without."""
    registry = NodeRegistry(redis, namespace)
    registry.beat(f"{namespace}nvenc-node", detect_capabilities(encoder="nvenc"),
                  queues=["render-nvenc", "render", "jobs"], state="idle", current_job=None)
    registry.beat(f"{namespace}cpu-node", detect_capabilities(), queues=["render", "jobs"], state="idle", current_job=None)
    before = current().encoder
    yield rq_farm
    current().encoder = before


def _request(farm: Farm) -> tuple[str, str]:
    workspace = farm.workspace(credits=3)
    render = farm.renders.request(workspace, farm.video(workspace, make_doc(6)), "16:9", 144, 24)
    return workspace, render["id"]


def _family(farm: Farm, render_id: str) -> str | None:
    with farm.engine.connect() as conn:
        render = find_render(conn, render_id)
    return render.encoder if render is not None else None


def _as_node(encoder: EncoderChoice, redis: Any, namespace: str, queues: tuple[str, ...], max_jobs: int | None = None
             ) -> None:
    current().encoder = encoder
    if max_jobs is None:
        work_burst(redis, namespace, queues)
        return
    dispatch_all(redis, namespace)
    worker = SimpleWorker([Queue(f"{namespace}{q}", connection=redis) for q in queues], connection=redis,
                          name=f"{namespace}simple-{secrets.token_hex(3)}")
    worker.work(burst=True, max_jobs=max_jobs, logging_level="WARNING")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_with_an_nvenc_node_live_a_renders_chunks_stay_in_the_nvenc_family(
        mixed_farm: Farm, redis: Any, namespace: str) -> None:
    workspace, render_id = _request(mixed_farm)
    assert _family(mixed_farm, render_id) == "nvenc"
    chunk = Job.fetch(f"{namespace}{chunk_job_id(render_id, 0)}", connection=redis)
    assert destination(redis, namespace, chunk) == f"{namespace}render-nvenc"

    _as_node(EncoderChoice("x264"), redis, namespace, ("render", "jobs"))  # the node without NVENC: nothing to take
    assert mixed_farm.renders.get(workspace, render_id)["status"] == "queued"
    _as_node(EncoderChoice("nvenc"), redis, namespace, ("render-nvenc", "render", "jobs"))

    done = mixed_farm.renders.get(workspace, render_id)
    assert done["status"] == "succeeded", done["error"]
    path = local_file(mixed_farm.storage, done["url"])
    assert probe(str(path))["profile"] == STAND_IN_PROFILE
    assert_video(path, 256, 144, 24, 6 * 24, audio=False)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_without_an_nvenc_node_in_time_the_whole_render_moves_to_x264_and_redraws(
        mixed_farm: Farm, redis: Any, namespace: str) -> None:
    workspace, render_id = _request(mixed_farm)
    _as_node(EncoderChoice("nvenc"), redis, namespace, ("render-nvenc",), max_jobs=1)  # one chunk, then it dies
    assert mixed_farm.storage.exists(segment_key(render_id, 0))
    NodeRegistry(redis, namespace).mark_stopped(f"{namespace}nvenc-node")
    mixed_farm.queue.router.gpu_wait_sec = 0  # type: ignore[attr-defined]

    assert fall_back(mixed_farm.queue, lifecycle(current())) == [render_id]  # type: ignore[arg-type]
    assert fall_back(mixed_farm.queue, lifecycle(current())) == [], "once"  # type: ignore[arg-type]

    assert _family(mixed_farm, render_id) == "x264"
    assert not mixed_farm.storage.exists(segment_key(render_id, 0)), "NVENC's segment is drawn again"
    _as_node(EncoderChoice("x264"), redis, namespace, ("render", "jobs"))
    done = mixed_farm.renders.get(workspace, render_id)
    assert done["status"] == "succeeded", done["error"]
    path = local_file(mixed_farm.storage, done["url"])
    assert probe(str(path))["profile"] == "High"
    assert_video(path, 256, 144, 24, 6 * 24, audio=False)
    assert mixed_farm.balance(workspace) == 2, "charged once"


EU = "region=eu"


def _eu_node(redis: Any, namespace: str, name: str, encoder: str = "x264") -> None:
    """A node of the pool region=eu in the registry (queues as ``node_queues_with_pools`` lists them)."""
    caps = dataclasses.replace(detect_capabilities(encoder=encoder), tags=EU)
    queues = (["render-nvenc"] if encoder == "nvenc" else []) + ["render", "jobs"]
    chunked = [q for q in queues if q != "jobs"]
    NodeRegistry(redis, namespace).beat(f"{namespace}{name}", caps, queues=[f"{q}@{EU}" for q in chunked] + queues,
                                        state="idle", current_job=None)


def _pool_render(farm: Farm) -> tuple[str, str]:
    workspace = farm.workspace(credits=3)
    render = farm.renders.request(workspace, farm.video(workspace, make_doc(6)), "16:9", 144, 24, pool=EU)
    assert render["pool"] == EU
    return workspace, render["id"]


def _ran_on_eu_nodes(farm: Farm, redis: Any, namespace: str, workspace: str, render_id: str) -> None:
    """Work the pool's CPU queues only (as its x264 node would) and check the MP4 is x264's."""
    _as_node(EncoderChoice("x264"), redis, namespace, (f"render@{EU}", "render", "jobs"))
    done = farm.renders.get(workspace, render_id)
    assert done["status"] == "succeeded", done["error"]
    assert probe(str(local_file(farm.storage, done["url"])))["profile"] == "High"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_in_a_pool_takes_the_family_of_the_nodes_that_serve_it(
        mixed_farm: Farm, redis: Any, namespace: str) -> None:
    NodeRegistry(redis, namespace).mark_stopped(f"{namespace}cpu-node")
    _eu_node(redis, namespace, "eu-cpu")  # the pool's only node: no NVENC (the unpooled one has it)
    workspace, render_id = _pool_render(mixed_farm)
    assert _family(mixed_farm, render_id) == "x264"
    assert _family(mixed_farm, _request(mixed_farm)[1]) == "nvenc", "a render in no pool: any node's family"
    _ran_on_eu_nodes(mixed_farm, redis, namespace, workspace, render_id)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("given_out", [True, False], ids=["in-its-tag-sets-queue", "waiting-for-its-turn"])
def test_a_pools_render_falls_back_to_x264_within_its_pool(
        mixed_farm: Farm, redis: Any, namespace: str, given_out: bool) -> None:
    registry = NodeRegistry(redis, namespace)
    registry.mark_stopped(f"{namespace}cpu-node")
    _eu_node(redis, namespace, "eu-nvenc", encoder="nvenc")
    workspace, render_id = _pool_render(mixed_farm)
    assert _family(mixed_farm, render_id) == "nvenc"
    listed = f"rq:queue:{namespace}render-nvenc@{EU}"
    if given_out:
        dispatch_all(redis, namespace)  # given out to the tag set of the pool's NVENC node
        assert redis.llen(listed) > 0
    registry.mark_stopped(f"{namespace}eu-nvenc")
    _eu_node(redis, namespace, "eu-cpu")
    mixed_farm.queue.router.gpu_wait_sec = 0  # type: ignore[attr-defined]

    assert fall_back(mixed_farm.queue, lifecycle(current())) == [render_id]  # type: ignore[arg-type]
    assert fall_back(mixed_farm.queue, lifecycle(current())) == [], "once"  # type: ignore[arg-type]
    assert _family(mixed_farm, render_id) == "x264"
    dispatch_all(redis, namespace)
    assert redis.llen(listed) == 0
    assert redis.llen(f"rq:queue:{namespace}render") == 0, "nothing of the pool goes to nodes outside it"
    assert redis.llen(f"rq:queue:{namespace}render@{EU}") > 0
    _ran_on_eu_nodes(mixed_farm, redis, namespace, workspace, render_id)


def test_a_node_works_render_nvenc_only_when_it_encodes_with_nvenc() -> None:
    from reelfarm.farm.runtime.routing import node_queues

    assert node_queues(["render", "jobs"], "cpu", "nvenc") == (["render-nvenc", "render", "jobs"], [])
    assert node_queues(["render", "jobs"], "gl", "nvenc") == (["render-nvenc", "render-gpu", "render", "jobs"], [])
    assert node_queues(["render", "jobs"], "gl") == (["render-gpu", "render", "jobs"], [])
    assert node_queues(["render-nvenc", "render"], "cpu", "x264") == (["render"], ["render-nvenc"])
