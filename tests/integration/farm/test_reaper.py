"""No render stays unfinished forever: the reaper fails stalled ones and refunds them."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.reaper import reap
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import event_outbox
from tests.integration.farm.conftest import Farm, make_doc


def test_stalled_renders_and_jobs_are_failed_and_refunded(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    stalled_video, waiting_video, busy_video = (embedded.video(workspace, make_doc(6)) for _ in range(3))
    stalled = embedded.renders.request(workspace, stalled_video, "16:9", 180)
    waiting = embedded.renders.request(workspace, waiting_video, "16:9", 180)
    job = embedded.jobs.request_stills(workspace, stalled_video, [1])
    with transaction(embedded.engine) as conn:
        renders_repo.start_render(conn, embedded.clock, stalled["id"])
        jobs_repo.start_job(conn, embedded.clock, job["id"], "render")
    assert embedded.balance(workspace) == 3

    later = FixedClock(embedded.clock.now() + timedelta(minutes=16))
    configure(TaskContext(embedded.engine, embedded.storage, later, embedded.progress))
    busy = embedded.renders.request(workspace, busy_video, "16:9", 180)
    with transaction(embedded.engine) as conn:
        renders_repo.start_render(conn, later, busy["id"])  # moved forward just now

    mine = {stalled["id"], waiting["id"], busy["id"], job["id"]}  # PostgreSQL is shared with other tests

    reaped = reap()

    assert [r for r in reaped.renders if r in mine] == [stalled["id"]]
    assert [j for j in reaped.jobs if j in mine] == [job["id"]]
    failed = embedded.renders.get(workspace, stalled["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == ("the render made no progress for 15 minutes; try again; "
                               "the 1 credit charged for it was refunded")
    assert embedded.renders.get(workspace, waiting["id"])["status"] == "queued"  # queued: a 6 h bound
    assert embedded.renders.get(workspace, busy["id"])["status"] == "running"
    assert embedded.jobs.get(workspace, job["id"])["status"] == "failed"
    assert embedded.balance(workspace) == 3  # stalled refunded; busy charged
    with embedded.engine.connect() as conn:
        assert list(conn.execute(select(event_outbox.c.type).where(event_outbox.c.workspace_id == workspace))
                    .scalars()) == ["render.failed"]

    later.advance(hours=6)
    assert sorted(r for r in reap().renders if r in mine) == sorted([waiting["id"], busy["id"]])  # past bounds
    assert [r for r in reap().renders if r in mine] == []  # idempotent
