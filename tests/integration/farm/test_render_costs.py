"""What renders cost: measured per task attempt on the node that ran it, summed per render and per
workspace (``reelfarm.farm.runtime.accounting``, ``reelfarm.farm.services.costs``)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from sqlalchemy import select

from reelfarm.farm.runtime import accounting
from reelfarm.farm.runtime.context import current
from reelfarm.farm.services import costs
from reelfarm.shared.tables import task_costs
from tests.integration.farm.conftest import Farm, make_doc, work_burst
from tests.integration.farm.test_render_embedded import wait_for

CORES = os.cpu_count() or 1


def rows(farm: Farm, render_id: str) -> list[Any]:
    with farm.engine.connect() as conn:
        return list(conn.execute(select(task_costs).where(task_costs.c.render_id == render_id)
                                 .order_by(task_costs.c.task, task_costs.c.chunk)).all())


def usage(farm: Farm, workspace: str, group_by: str | None = None) -> dict[str, Any]:
    with farm.engine.connect() as conn:
        return costs.usage(conn, workspace, costs.Period(None, None), group_by)


def assert_measured(done: dict[str, Any], frames: int) -> None:
    cost = done["cost"]
    assert cost["frames_rendered"] == frames and cost["frames_reused"] == 0
    assert 0 < cost["cpu_sec"] <= cost["wall_sec"] * CORES + 0.5
    assert cost["gpu_sec"] is None  # CPU nodes
    assert cost["storage_bytes"] > done["bytes"]  # segments, stream parts, the video and its poster
    assert cost["peak_memory_bytes"] > 10_000_000


def check_repeats(farm: Farm, workspace: str, doc: dict[str, Any], first: dict[str, Any], video: str,
                  run: Any) -> None:
    """An identical request gets the same render at no cost; another video of the same document
    reuses every segment and renders no frame; usage sums both."""
    again = farm.renders.request(workspace, video, first["format"], resolution=180)
    assert again["id"] == first["id"] and again["cost"] == first["cost"]

    copy = farm.video(workspace, doc)
    second = farm.renders.request(workspace, copy, first["format"], resolution=180)
    done = run(second["id"])
    assert done["status"] == "succeeded", done["error"]
    frames = first["cost"]["frames_rendered"]
    assert done["cost"]["frames_rendered"] == 0 and done["cost"]["frames_reused"] == frames
    assert {r.task for r in rows(farm, second["id"])} <= {"stitch", "import"}  # no chunk ran

    total = usage(farm, workspace)
    assert total["renders"] == 2 and total["frames_rendered"] == frames and total["frames_reused"] == frames
    assert total["cpu_sec"] == pytest.approx(first["cost"]["cpu_sec"] + done["cost"]["cpu_sec"], abs=0.01)
    assert total["storage_bytes"] == first["cost"]["storage_bytes"] + done["cost"]["storage_bytes"]
    assert total["groups"] is None
    by_video = usage(farm, workspace, "video")["groups"]
    assert {g["video_id"]: g["frames_rendered"] for g in by_video} == {video: frames, copy: 0}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_render_on_the_embedded_queue_states_what_it_cost(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    doc = make_doc(6)
    video = embedded.video(workspace, doc)
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    assert render["cost"] == {"cpu_sec": 0.0, "gpu_sec": None, "wall_sec": 0.0, "frames_rendered": 0,
                              "frames_reused": 0, "storage_bytes": 0, "peak_memory_bytes": 0}
    embedded.queue.start()  # type: ignore[attr-defined]

    def run(render_id: str) -> dict[str, Any]:
        wait_for(lambda: embedded.renders.get(workspace, render_id)["status"] in ("succeeded", "failed"))
        # its stitch's row is stored before it succeeds, and brought up to date as the stitch returns
        wait_for(lambda: all(r.outcome != "running" for r in rows(embedded, render_id)))
        return embedded.renders.get(workspace, render_id)

    done = run(render["id"])
    assert done["status"] == "succeeded", done["error"]
    assert_measured(done, 180)
    recorded = rows(embedded, render["id"])
    chunks = [r for r in recorded if r.task == "chunk"]
    assert len(chunks) == done_chunks(embedded, render["id"]) and all(r.outcome == "finished" for r in recorded)
    assert [r.task for r in recorded].count("stitch") == 1
    assert {r.node_kind for r in recorded} == {"cpu"} and all(":" in r.node for r in recorded)
    check_repeats(embedded, workspace, doc, done, video, run)


def done_chunks(farm: Farm, render_id: str) -> int:
    from reelfarm.shared.repos import renders as renders_repo

    with farm.engine.connect() as conn:
        return int(renders_repo.find_render(conn, render_id).chunks or 0)  # type: ignore[union-attr]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_on_rq_states_what_it_cost_and_which_node_drew_it(rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace(credits=5)
    doc = make_doc(6)
    video = rq_farm.video(workspace, doc)
    render = rq_farm.renders.request(workspace, video, "9:16", resolution=180)

    def run(render_id: str) -> dict[str, Any]:
        work_burst(redis, namespace)
        return rq_farm.renders.get(workspace, render_id)

    done = run(render["id"])
    assert done["status"] == "succeeded", done["error"]
    assert_measured(done, 180)
    recorded = rows(rq_farm, render["id"])
    assert all(r.node.startswith(f"{namespace}simple-") for r in recorded)  # the RQ worker that ran each
    check_repeats(rq_farm, workspace, doc, done, video, run)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_attempt_that_raised_is_recorded_and_its_frames_are_not_counted(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(2))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    with pytest.raises(RuntimeError), accounting.measured("render_chunk", render["id"], 0):
        current().storage.put_bytes("scratch/x", b"12345", "application/octet-stream")
        raise RuntimeError("the node fell over")
    with accounting.measured("render_chunk", render["id"], 0):
        accounting.encoded(30)
    with accounting.measured("render_chunk", render["id"], 0):  # stored again by a retry: counted once
        accounting.encoded(30)
    recorded = rows(embedded, render["id"])
    assert sorted((r.outcome, r.frames, r.storage_bytes) for r in recorded) == [
        ("failed", 0, 5), ("finished", 30, 0), ("finished", 30, 0)]
    cost = embedded.renders.get(workspace, render["id"])["cost"]
    assert cost["frames_rendered"] == 30
    assert cost["wall_sec"] == pytest.approx(sum(r.wall_sec for r in recorded), abs=0.01)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_with_recording_off_a_task_runs_and_nothing_is_recorded(embedded: Farm, monkeypatch: Any) -> None:
    """``accounting.RECORDING``, the switch ``benchmarks.accounting`` turns off to measure what the
    accounting costs: the task runs, its storage as it is, and no row is written."""
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(2))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    storage = current().storage
    monkeypatch.setattr(accounting, "RECORDING", False)
    with accounting.measured("render_chunk", render["id"], 0) as attempt:
        assert current().storage is storage  # not counted through a wrapper
        current().storage.put_bytes("scratch/y", b"123", "application/octet-stream")
        accounting.encoded(30)
        accounting.settle()
    assert attempt.frames == 0 and rows(embedded, render["id"]) == []
    monkeypatch.setattr(accounting, "RECORDING", True)
    with accounting.measured("render_chunk", render["id"], 0):
        accounting.encoded(30)
    assert [(r.outcome, r.frames) for r in rows(embedded, render["id"])] == [("finished", 30)]
