"""Work the queue lost, put back from the database on real Redis and PostgreSQL: after Redis loses
a render's jobs, reconciliation enqueues the same graph (ids, tasks, queues, dependencies) as the
render service did, less the chunks already stored, and the render then finishes."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rq.job import Job

from reelfarm.farm.runtime.reconcile import reconcile
from reelfarm.farm.services.graph import render_job_ids
from reelfarm.shared.repos.renders import find_render
from reelfarm.shared.storage_keys import segment_key
from tests.integration.farm.conftest import Farm, make_doc, work_burst
from tests.integration.farm.test_remote_assets import AssetServer, remote_doc, server  # noqa: F401 - the fixture
from tests.integration.farm.test_render_embedded import assert_video, local_file


def _snapshot(redis: Any, namespace: str, render_id: str, chunks: int) -> dict[str, tuple[Any, ...]]:
    """Each job of the render as RQ holds it: task, arguments, queue, dependencies."""
    found = {}
    for job_id in render_job_ids(render_id, chunks):
        if not redis.exists(f"rq:job:{namespace}{job_id}"):
            continue
        job = Job.fetch(f"{namespace}{job_id}", connection=redis)
        found[job_id] = (job.func_name, tuple(job.args), job.origin.removeprefix(namespace),
                         tuple(sorted(d.removeprefix(namespace) for d in job._dependency_ids)))
    return found


def _lose_everything(redis: Any, namespace: str) -> None:
    for key in redis.scan_iter(match=f"*{namespace}*", count=1000):
        redis.delete(key)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_whose_jobs_redis_lost_is_enqueued_again_as_the_same_graph_and_finishes(
        rq_farm: Farm, redis: Any, namespace: str, server: AssetServer) -> None:  # noqa: F811
    workspace = rq_farm.workspace(credits=3)
    video = rq_farm.video(workspace, remote_doc(f"{server.base}/photo.png"))
    render = rq_farm.renders.request(workspace, video, "16:9", resolution=144, fps=24)
    with rq_farm.engine.connect() as conn:
        chunks = find_render(conn, render["id"]).chunks  # type: ignore[union-attr]
    assert chunks and chunks >= 2
    first = _snapshot(redis, namespace, render["id"], chunks)
    assert len(first) == chunks + 2, "assets, chunks, stitch"

    _lose_everything(redis, namespace)
    assert _snapshot(redis, namespace, render["id"], chunks) == {}
    again = reconcile(rq_farm.queue, grace=timedelta(seconds=-5))  # type: ignore[arg-type]

    assert sorted(j for j in again.enqueued if render["id"] in j) == sorted(first)  # other tests' renders aside
    assert _snapshot(redis, namespace, render["id"], chunks) == first
    work_burst(redis, namespace)
    done = rq_farm.renders.get(workspace, render["id"])
    assert done["status"] == "succeeded", done["error"]
    assert_video(local_file(rq_farm.storage, done["url"]), 256, 144, 24, 6 * 24, audio=False)
    assert server.hits["/photo.png"] == 1, "imported once, after the loss"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_chunks_already_stored_are_not_drawn_again_and_the_stitch_waits_for_the_rest(
        rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace(credits=3)
    video = rq_farm.video(workspace, make_doc(12))
    render = rq_farm.renders.request(workspace, video, "16:9", resolution=144, fps=24)
    rid = render["id"]
    _lose_everything(redis, namespace)
    rq_farm.storage.put_bytes(segment_key(rid, 0), b"a segment drawn before the loss", "video/mp4")

    again = reconcile(rq_farm.queue, grace=timedelta(seconds=-5))  # type: ignore[arg-type]

    assert f"render-{rid}-chunk-0" not in again.enqueued and f"render-{rid}-assets" not in again.enqueued
    assert f"render-{rid}-chunk-1" in again.enqueued and f"render-{rid}-stitch" in again.enqueued
    stitch = Job.fetch(f"{namespace}render-{rid}-stitch", connection=redis)
    assert f"{namespace}render-{rid}-chunk-0" not in stitch._dependency_ids
    assert f"{namespace}render-{rid}-chunk-1" in stitch._dependency_ids
