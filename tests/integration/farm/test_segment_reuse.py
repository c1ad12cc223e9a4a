"""Segments reused across versions, on the embedded queue (SQLite, PostgreSQL) and on RQ: a new
version that changes one scene renders only that scene's chunks; the others are copied from the
workspace's earlier render, counted as done at once (``reused_frames``); credits are unchanged; the
MP4 is, frame for frame, the one a full render makes; and nothing is reused across workspaces."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from sqlalchemy import select

from reelfarm.shared.storage_keys import SEGMENTS as CACHE_PREFIX
from reelfarm.shared.tables import queued_tasks
from tests.integration.farm.conftest import Farm, make_doc, work_burst
from tests.integration.farm.test_render_embedded import assert_video, local_file, wait_for

# make_doc(6) at 24 fps: scene one (3 s: its first second, the leading chunk, then the rest), scene
# two's crossfade in (0.5 s, a chunk of its own, the only one that draws both scenes), the rest of
# scene two (2.5 s)
SCENE_ONE_FRAMES = 3 * 24
CROSSFADE_FRAMES = 12


def frames_of(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def second_scene_changed(doc: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(doc)
    changed["scenes"][1]["layers"][0]["text"] = "Now 50% off"
    return changed


def _finish(farm: Farm, workspace: str, render_id: str) -> dict[str, Any]:
    done = wait_for(lambda: (r := farm.renders.get(workspace, render_id))["status"] in ("succeeded", "failed") and r)
    assert done["status"] == "succeeded", done["error"]
    return done


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_a_new_version_draws_only_the_scene_that_changed(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    video = embedded.video(workspace, doc)
    embedded.queue.start()  # type: ignore[attr-defined]
    first = _finish(embedded, workspace, embedded.renders.request(workspace, video, "16:9", 144, 24)["id"])
    assert first["reused_frames"] == 0

    embedded.queue.stop(30)  # type: ignore[attr-defined]
    embedded.new_version(workspace, video, second_scene_changed(doc))
    second = embedded.renders.request(workspace, video, "16:9", 144, 24)
    assert second["reused_frames"] == SCENE_ONE_FRAMES
    assert second["progress"] == pytest.approx(SCENE_ONE_FRAMES / 144, abs=1e-3), "reused frames count at once"
    with embedded.engine.connect() as conn:
        queued = sorted(r for r in conn.execute(select(queued_tasks.c.id)).scalars() if second["id"] in r)
    assert queued == [f"render-{second['id']}-chunk-2", f"render-{second['id']}-chunk-3",
                      f"render-{second['id']}-stitch"], "scene one (chunks 0 and 1) is not drawn"
    from reelfarm.farm.runtime.status import collect_status
    [shown] = [r for r in collect_status(embedded.engine, embedded.progress, embedded.clock)["renders"]
               if r["id"] == second["id"]]
    assert shown["reused_frames"] == SCENE_ONE_FRAMES and shown["frames_done"] >= SCENE_ONE_FRAMES
    embedded.queue.start()  # type: ignore[attr-defined]
    second = _finish(embedded, workspace, second["id"])
    assert embedded.balance(workspace) == 3, "one credit per version, reuse or not"

    # the second version drawn whole in another workspace (the first's segments are not its own)
    other = embedded.workspace(credits=5)
    full = embedded.renders.request(other, embedded.video(other, second_scene_changed(doc)), "16:9", 144, 24)
    assert full["reused_frames"] == 0, "never across workspaces"
    full = _finish(embedded, other, full["id"])
    reused_path, full_path = local_file(embedded.storage, second["url"]), local_file(embedded.storage, full["url"])
    assert_video(reused_path, 256, 144, 24, 144, audio=False)
    ours, theirs = frames_of(reused_path), frames_of(full_path)
    assert len(ours) == len(theirs) == 144
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs)), "frame-exact with a full render"
    kept = list((Path(embedded.storage.root) / CACHE_PREFIX).iterdir())
    assert sorted(p.name for p in kept) == sorted([workspace, other]), "kept per workspace"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_edit_to_a_scene_redraws_the_next_scenes_crossfade_not_the_rest_of_it(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    video = embedded.video(workspace, doc)
    embedded.queue.start()  # type: ignore[attr-defined]
    _finish(embedded, workspace, embedded.renders.request(workspace, video, "16:9", 144, 24)["id"])

    embedded.queue.stop(30)  # type: ignore[attr-defined]
    first_scene_changed = copy.deepcopy(doc)
    first_scene_changed["scenes"][0]["layers"][0]["text"] = "Hello again"
    embedded.new_version(workspace, video, first_scene_changed)
    second = embedded.renders.request(workspace, video, "16:9", 144, 24)
    assert second["reused_frames"] == 144 - SCENE_ONE_FRAMES - CROSSFADE_FRAMES
    with embedded.engine.connect() as conn:
        queued = sorted(r for r in conn.execute(select(queued_tasks.c.id)).scalars() if second["id"] in r)
    assert queued == [f"render-{second['id']}-chunk-0", f"render-{second['id']}-chunk-1",
                      f"render-{second['id']}-chunk-2", f"render-{second['id']}-stitch"], \
        "scene one (its leading second and the rest) and the crossfade that blends from it"
    embedded.queue.start()  # type: ignore[attr-defined]
    second = _finish(embedded, workspace, second["id"])

    other = embedded.workspace(credits=5)
    full = _finish(embedded, other, embedded.renders.request(
        other, embedded.video(other, first_scene_changed), "16:9", 144, 24)["id"])
    ours = frames_of(local_file(embedded.storage, second["url"]))
    theirs = frames_of(local_file(embedded.storage, full["url"]))
    assert len(ours) == len(theirs) == 144
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs)), "frame-exact with a full render"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_reuse_on_rq(rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace(credits=5)
    doc = make_doc(6)
    video = rq_farm.video(workspace, doc)
    rq_farm.renders.request(workspace, video, "16:9", 144, 24)
    work_burst(redis, namespace)
    rq_farm.new_version(workspace, video, second_scene_changed(doc))
    second = rq_farm.renders.request(workspace, video, "16:9", 144, 24)
    assert second["reused_frames"] == SCENE_ONE_FRAMES
    assert not redis.exists(f"rq:job:{namespace}render-{second['id']}-chunk-0")
    assert not redis.exists(f"rq:job:{namespace}render-{second['id']}-chunk-1")
    work_burst(redis, namespace)
    done = rq_farm.renders.get(workspace, second["id"])
    assert done["status"] == "succeeded", done["error"]
    assert_video(local_file(rq_farm.storage, done["url"]), 256, 144, 24, 144, audio=False)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_nodes_metrics_count_frames_drawn_and_frames_reused(rq_farm: Farm, redis: Any, namespace: str) -> None:
    from prometheus_client import REGISTRY
    from rq import Queue

    from reelfarm.farm.runtime.metrics import MeteredWorker, describe_node

    def sample(name: str) -> float:
        return REGISTRY.get_sample_value(name, {"node": f"{namespace}metered"}) or 0.0

    def node_burst() -> None:
        work_burst(redis, namespace, worker=lambda: MeteredWorker(
            [Queue(f"{namespace}{q}", connection=redis) for q in ("render", "jobs")], connection=redis,
            name=f"{namespace}metered", database=rq_farm.engine))

    describe_node(f"{namespace}metered", "cpu", "x264")
    assert REGISTRY.get_sample_value("reelfarm_node_info", {"node": f"{namespace}metered", "raster": "cpu",
                                                            "encoder": "x264"}) == 1
    workspace = rq_farm.workspace(credits=5)
    doc = make_doc(6)
    video = rq_farm.video(workspace, doc)
    rq_farm.renders.request(workspace, video, "16:9", 144, 24)
    drawn, reused = sample("reelfarm_frames_rendered_total"), sample("reelfarm_frames_reused_total")
    node_burst()
    assert sample("reelfarm_frames_rendered_total") - drawn == 144
    rq_farm.new_version(workspace, video, second_scene_changed(doc))
    rq_farm.renders.request(workspace, video, "16:9", 144, 24)
    node_burst()
    assert sample("reelfarm_frames_rendered_total") - drawn == 144 + 72, "only scene two drawn again"
    assert sample("reelfarm_frames_reused_total") - reused == SCENE_ONE_FRAMES


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_render_whose_chunks_are_all_reused_is_stitched_and_succeeds(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    embedded.queue.start()  # type: ignore[attr-defined]
    _finish(embedded, workspace, embedded.renders.request(workspace, embedded.video(workspace, doc), "1:1", 144, 24)["id"])
    again = embedded.renders.request(workspace, embedded.video(workspace, doc), "1:1", 144, 24)  # another video
    assert again["reused_frames"] == 144
    done = _finish(embedded, workspace, again["id"])
    assert_video(local_file(embedded.storage, done["url"]), 144, 144, 24, 144, audio=False)


@pytest.mark.parametrize("db_url", ["sqlite", "postgresql"], indirect=True)
def test_a_render_planned_before_plans_were_stored_is_drawn_as_planned(embedded: Farm) -> None:
    # A render requested by the release before 0006: no stored plan, two chunks (cuts at scene
    # starts only). Nodes of this release draw and stitch it with those ranges, not today's three.
    from sqlalchemy import update

    from reelfarm.farm.runtime import tasks
    from reelfarm.shared.storage_keys import segment_key
    from reelfarm.shared.tables import renders

    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    doc["scenes"][0]["duration"], doc["scenes"][1]["duration"] = 2, 4  # not two equal halves
    old = embedded.renders.request(workspace, embedded.video(workspace, doc), "16:9", 144, 24)
    assert old["status"] == "queued"
    with embedded.engine.begin() as conn:
        conn.execute(update(renders).where(renders.c.id == old["id"]).values(chunk_starts=None, chunks=2))
    tasks.render_chunk(old["id"], 0)
    tasks.render_chunk(old["id"], 1)
    drawn = [len(frames_of(Path(embedded.storage.open_local(segment_key(old["id"], i))))) for i in range(2)]
    assert drawn == [48, 96], "the former plan's ranges: scene one, scene two"
    tasks.stitch(old["id"])
    done = embedded.renders.get(workspace, old["id"])
    assert done["status"] == "succeeded", done["error"]

    other = embedded.workspace(credits=5)
    embedded.queue.start()  # type: ignore[attr-defined]
    full = _finish(embedded, other, embedded.renders.request(other, embedded.video(other, doc), "16:9", 144, 24)["id"])
    ours = frames_of(local_file(embedded.storage, done["url"]))
    theirs = frames_of(local_file(embedded.storage, full["url"]))
    assert len(ours) == len(theirs) == 144
    # segments cut elsewhere are encoded apart (each starts on a keyframe), so the pictures agree
    # within x264's loss, not bit for bit
    worst = max(float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) for a, b in zip(ours, theirs))
    assert worst < 2.0, worst
