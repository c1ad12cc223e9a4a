"""Stills jobs: validation, PNGs of the right size behind signed 10-minute URLs, cancel."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.errors import InvalidRequest, QueueUnavailable, StateConflict
from reelfarm.shared.errors import NotFound
from reelfarm.studio.videos import VideoStateError
from tests.integration.farm.conftest import (
    Farm,
    build_farm,
    make_doc,
    with_image,
    work_burst,
)
from tests.integration.farm.test_render_embedded import local_file, wait_for


def check_stills(farm: Farm, job: dict[str, Any], times: list[float], size: tuple[int, int]) -> None:
    assert job["status"] == "succeeded", job["error"]
    assert (job["kind"], job["stage"], job["progress"], job["error"]) == ("stills", "upload", 1.0, None)
    stills = job["result"]["stills"]
    assert [s["time"] for s in stills] == times
    for still in stills:
        assert (still["width"], still["height"]) == size
        expires = datetime.fromisoformat(still["expires_at"])
        assert timedelta(minutes=9) < expires - farm.clock.now() <= timedelta(minutes=10)
        image = Image.open(io.BytesIO(local_file(farm.storage, still["url"]).read_bytes()))
        assert image.format == "PNG" and image.size == size
        assert f"expires={int(expires.timestamp())}" in still["url"]


def test_stills_on_the_embedded_queue(embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace()
    video = embedded.video(workspace, with_image(make_doc(6), embedded, workspace, tmp_path))
    job = embedded.jobs.request_stills(workspace, video, [0, 2.5, 6], "9:16", resolution=360)
    assert (job["status"], job["stage"], job["progress"], job["result"]) == ("queued", None, 0, None)

    embedded.queue.start()  # type: ignore[attr-defined]
    done = wait_for(lambda: (j := embedded.jobs.get(workspace, job["id"]))["status"] != "queued"
                    and j["status"] != "running" and j)

    check_stills(embedded, done, [0.0, 2.5, 6.0], (360, 640))
    with pytest.raises(StateConflict):
        embedded.jobs.cancel(workspace, job["id"])
    with pytest.raises(NotFound):
        embedded.jobs.get(embedded.workspace(), job["id"])


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_stills_on_rq(rq_farm: Farm, redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace()
    video = rq_farm.video(workspace, make_doc(6))
    job = rq_farm.jobs.request_stills(workspace, video, [1.25], resolution=180)  # format: the video's
    work_burst(redis, namespace)
    check_stills(rq_farm, rq_farm.jobs.get(workspace, job["id"]), [1.25], (320, 180))


def test_times_are_checked_all_at_once(embedded: Farm) -> None:
    workspace = embedded.workspace()
    video = embedded.video(workspace, make_doc(6))
    with pytest.raises(InvalidRequest) as error:
        embedded.jobs.request_stills(workspace, video, [1, -0.5, 6.01, "2", True, 6], "2:1")
    assert [(d["field"], d["code"]) for d in error.value.details] == [
        ("/times/1", "out_of_range"), ("/times/3", "invalid_type"), ("/times/4", "invalid_type"),
        ("/format", "invalid_choice")]
    with pytest.raises(StateConflict, match="6.01 s lies past the end of the video"):
        embedded.jobs.request_stills(workspace, video, [1, 6.01, 6])
    for times in ([], list(range(21)), "1,2"):
        with pytest.raises(InvalidRequest) as error:
            embedded.jobs.request_stills(workspace, video, times)
        assert [d["field"] for d in error.value.details] == ["/times"]
    archived = embedded.video(workspace, make_doc(6), status="archived")
    with pytest.raises(VideoStateError):
        embedded.jobs.request_stills(workspace, archived, [1])


def test_cancel_a_queued_stills_job(embedded: Farm) -> None:
    workspace = embedded.workspace()
    video = embedded.video(workspace, make_doc(6))
    job = embedded.jobs.request_stills(workspace, video, [1])
    canceled = embedded.jobs.cancel(workspace, job["id"])
    assert canceled["status"] == "canceled" and canceled["finished_at"] is not None
    embedded.queue.start()  # type: ignore[attr-defined]
    assert embedded.queue.wait_idle(30)  # type: ignore[attr-defined]
    assert embedded.jobs.get(workspace, job["id"])["status"] == "canceled"


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_stills_with_the_queue_down_create_no_job(embedded: Farm) -> None:
    from sqlalchemy import func, select

    from reelfarm.shared.tables import jobs

    workspace = embedded.workspace()
    video = embedded.video(workspace, make_doc(6))
    farm = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress,
                      RQQueue(make_redis("redis://127.0.0.1:1/15")))
    with pytest.raises(QueueUnavailable):
        farm.jobs.request_stills(workspace, video, [1])
    with farm.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(jobs).where(jobs.c.workspace_id == workspace)).scalar() == 0
