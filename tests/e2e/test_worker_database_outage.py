"""A render node riding out a PostgreSQL outage: a real ``reelfarm worker`` keeps running while its
database is stopped under it mid-render, waits, and carries on when the database is back. Every
render finishes, the version is charged once, and nobody restarts the node.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_farm_outages import Farm, make_video, request_renders, statuses, wait_for
from tests.helpers import WORK_CEILING_SEC


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    made = Farm(tmp_path)
    yield made
    made.close()


def test_renders_finish_after_the_database_is_stopped_under_a_running_node(farm: Farm) -> None:
    credits = farm.http.get("/me").json()["workspace"]["credits"]
    video = make_video(farm)
    farm.start_worker()
    ids = request_renders(farm, video)
    wait_for(lambda: "running" in statuses(farm, ids), WORK_CEILING_SEC, "a render to start")

    farm.postgres.shut_down()
    time.sleep(8)  # long enough for the running chunk to finish and fail to record it
    assert farm.worker is not None and farm.worker.poll() is None, farm.worker_log()
    farm.postgres.launch()

    wait_for(lambda: set(statuses(farm, ids)) == {"succeeded"}, WORK_CEILING_SEC,
             f"every render to succeed: {statuses(farm, ids)}\n{farm.worker_log()}", interval=1)
    assert farm.worker.poll() is None, farm.worker_log()
    assert farm.http.get("/me").json()["workspace"]["credits"] == credits - 1  # 6 s: one credit, once
    log = farm.worker_log()
    assert "the database unreachable" in log and "the database reachable again after" in log, log
    assert "found an unhandled exception, quitting" not in log
    for render_id in ids:
        render = farm.http.get(f"/renders/{render_id}").json()
        assert render["error"] is None and render["bytes"] > 0
