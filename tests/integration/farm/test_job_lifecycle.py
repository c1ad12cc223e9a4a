"""The job lifecycle's transition table, on SQLite and PostgreSQL: every event tried from every
status, against real rows; what it allows changes the status (a generation's video failing with
it), what it refuses changes nothing and rolls back what the task wrote. And it is the only
writer: no module of the server but the lifecycle calls the repository's job status changes."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, select, update

from reelfarm.farm.services import job_lifecycle as lc
from reelfarm.farm.services.errors import StateConflict
from reelfarm.farm.services.job_lifecycle import TRANSITIONS, JobLifecycle
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.tables import event_outbox, jobs
from tests.integration.farm.conftest import Farm

ROOT = Path(lc.__file__).resolve().parents[2]
STATUS_WRITERS = {"start_job", "set_stage", "finish_job", "fail_job", "cancel_job"}

EXPECTED = {  # (status, event): status after, or None when refused
    ("queued", "start"): "running", ("running", "start"): "running",
    ("running", "stage"): "running",
    ("running", "succeed"): "succeeded",
    ("queued", "fail"): "failed", ("running", "fail"): "failed",
    ("queued", "cancel"): "canceled", ("running", "cancel"): "canceled",
}


def _job_in(farm: Farm, status: str) -> tuple[str, str, str]:
    """A ``generate`` job and its ``generating`` video, the job set to ``status``."""
    workspace = farm.workspace()
    with transaction(farm.engine) as conn:
        video, _ = videos_repo.create_video(conn, farm.clock, workspace_id=workspace, title="t",
                                            status="generating", default_format="16:9")
        job = jobs_repo.create_job(conn, farm.clock, workspace_id=workspace, kind="generate",
                                   params={"brief": "b"}, video_id=video.id)
        conn.execute(update(jobs).where(jobs.c.id == job.id).values(status=status))
    return workspace, video.id, job.id


def _apply(life: JobLifecycle, event: str, workspace: str, job_id: str) -> bool:
    if event == "start":
        return life.start(job_id, "moderate") is not None
    if event == "stage":
        return life.stage(job_id, "script", 0.5)
    if event == "fail":
        return life.fail(job_id, "it broke")
    if event == "cancel":
        try:
            life.cancel(workspace, job_id)
            return True
        except StateConflict:
            return False

    def write(conn: Connection) -> dict[str, Any]:
        conn.execute(update(jobs).where(jobs.c.id == job_id).values(params={"written": True}))
        return {"made": 1}

    done = life.succeed(job_id, write)
    with life.engine.connect() as conn:
        params = conn.execute(select(jobs.c.params).where(jobs.c.id == job_id)).scalar_one()
    assert (params == {"written": True}) == (done is not None), "what a refused success wrote is rolled back"
    return done is not None


@pytest.mark.parametrize("status", lc.STATUSES)
@pytest.mark.parametrize("event", sorted(TRANSITIONS))
def test_every_event_from_every_status_follows_the_table(embedded: Farm, status: str, event: str) -> None:
    life = JobLifecycle(embedded.engine, embedded.clock, embedded.storage)
    workspace, video_id, job_id = _job_in(embedded, status)
    allowed = _apply(life, event, workspace, job_id)
    expected = EXPECTED.get((status, event))
    assert allowed == (expected is not None) == lc.allowed(status, event)
    with embedded.engine.connect() as conn:
        job = jobs_repo.find_job(conn, job_id)
        video = videos_repo.get_video(conn, workspace, video_id)
        events = [r.type for r in conn.execute(select(event_outbox.c.type)
                                               .where(event_outbox.c.workspace_id == workspace))]
    assert job is not None and job.status == (expected or status)
    ended = expected in ("failed", "canceled")
    assert video.status == ("failed" if ended else "generating"), "a generation that ends fails its video"
    assert events == (["video.generation_failed"] if ended else [])
    if expected == "succeeded":
        assert job.result == {"made": 1} and job.progress == 1.0


def test_a_job_of_another_workspace_cannot_be_canceled_through_this_one(embedded: Farm) -> None:
    life = JobLifecycle(embedded.engine, embedded.clock, embedded.storage)
    workspace, _, job_id = _job_in(embedded, "queued")
    with pytest.raises(NotFound):
        life.cancel(embedded.workspace(), job_id)
    with embedded.engine.connect() as conn:
        assert jobs_repo.get_job(conn, workspace, job_id).status == "queued"


def test_only_the_lifecycle_writes_a_job_status() -> None:
    writers = []
    for part in ("api", "console", "farm", "studio"):
        for path in (ROOT / part).rglob("*.py"):
            if path.name == "job_lifecycle.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in STATUS_WRITERS:
                    writers.append(f"{path.relative_to(ROOT)}: {node.attr}")
    assert writers == []
