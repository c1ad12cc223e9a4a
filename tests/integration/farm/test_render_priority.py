"""An identical render in flight asked for at a higher priority takes it: the render's row and its
chunks still waiting, on the embedded queue (SQLite and PostgreSQL) and on RQ (real Redis). Nothing
runs here: no worker takes a chunk, so every chunk waits unless a test dispatches one. A raise the
queue cannot take sets the row back."""
from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.errors import QueueUnavailable
from reelfarm.farm.services.graph import chunk_of
from reelfarm.shared.tables import queued_tasks
from tests.integration.farm.conftest import Farm, build_farm, make_doc


@pytest.fixture(params=["embedded", "rq"])
def farm(request: pytest.FixtureRequest, db_url: str) -> Farm:
    if request.param == "rq":
        return request.getfixturevalue("rq_farm")  # type: ignore[no-any-return]
    return request.getfixturevalue("make_embedded")(workers=8)  # type: ignore[no-any-return]  # room to take chunks


def ask(farm: Farm, workspace: str, video: str, priority: str) -> dict[str, Any]:
    return farm.renders.request(workspace, video, "16:9", resolution=180, priority=priority)  # type: ignore[return-value]


def dispatch_one(farm: Farm) -> tuple[str, int]:
    """The next chunk fair dispatch gives a free place to, taken (render id, chunk index)."""
    if isinstance(farm.queue, EmbeddedQueue):
        (taken,) = farm.queue._claim(1)
        found = chunk_of(taken.id)
    else:
        assert isinstance(farm.queue, RQQueue)
        (moved,) = Dispatcher(farm.queue.redis, farm.queue.namespace, shares=Shares(farm.engine)).round(slots=1)
        found = chunk_of(moved)
    assert found is not None
    return found


def waiting_priorities(farm: Farm, render_id: str) -> dict[int, str]:
    """The priority of each of the render's chunks still waiting for its turn, by index."""
    if isinstance(farm.queue, EmbeddedQueue):
        with farm.engine.connect() as conn:
            rows = conn.execute(select(queued_tasks.c.chunk_index, queued_tasks.c.priority).where(
                queued_tasks.c.render_id == render_id, queued_tasks.c.status.in_(("deferred", "queued"))))
            return {int(index): priority for index, priority in rows}
    assert isinstance(farm.queue, RQQueue)
    turns = farm.queue.redis.hgetall(farm.queue.dispatcher.key("turns")).values()
    return {entry["index"]: entry["priority"] for entry in map(json.loads, turns) if entry["render"] == render_id}


def test_asking_at_normal_for_a_waiting_low_render_puts_it_ahead_of_the_workspaces_batch(farm: Farm) -> None:
    workspace = farm.workspace(credits=50)
    batch = [ask(farm, workspace, farm.video(workspace, make_doc(6, title=f"batch-{i}")), "low") for i in range(3)]
    video = farm.video(workspace, make_doc(6, title="mine"))
    low = ask(farm, workspace, video, "low")
    chunks = low["queue"]["chunks_waiting"]
    assert low["priority"] == "low" and low["queue"]["frames_ahead"] > 0 and chunks > 1  # in turn with the batch

    normal = ask(farm, workspace, video, "normal")

    assert normal["id"] == low["id"] and normal["priority"] == "normal"
    assert normal["queue"]["frames_ahead"] == 0 and normal["queue"]["chunks_waiting"] == chunks
    assert farm.renders.get(workspace, low["id"])["priority"] == "normal"
    assert set(waiting_priorities(farm, low["id"]).values()) == {"normal"}
    assert {waiting_priorities(farm, r["id"])[0] for r in batch} == {"low"}
    assert farm.render_count(workspace) == 4
    assert [dispatch_one(farm) for _ in range(chunks)] == [(low["id"], i) for i in range(chunks)]


def test_a_lower_priority_never_lowers_and_a_chunk_already_taken_is_left_as_it_is(farm: Farm) -> None:
    workspace = farm.workspace(credits=50)
    video = farm.video(workspace, make_doc(6, title="asked at normal"))
    normal = ask(farm, workspace, video, "normal")
    chunks = normal["queue"]["chunks_waiting"]
    again = ask(farm, workspace, video, "low")
    assert again["id"] == normal["id"] and again["priority"] == "normal"
    assert set(waiting_priorities(farm, normal["id"]).values()) == {"normal"}

    other = farm.video(workspace, make_doc(6, title="started at low"))
    low = ask(farm, workspace, other, "low")
    batch = ask(farm, workspace, farm.video(workspace, make_doc(6, title="batch")), "low")
    assert [dispatch_one(farm) for _ in range(chunks)] == [(normal["id"], i) for i in range(chunks)]  # normal first
    assert dispatch_one(farm) == (low["id"], 0)  # taken at low: on its way to a worker

    raised = ask(farm, workspace, other, "normal")

    assert raised["id"] == low["id"] and raised["priority"] == "normal"
    assert raised["queue"]["chunks_waiting"] == chunks - 1
    assert waiting_priorities(farm, low["id"]) == {i: "normal" for i in range(1, chunks)}
    assert set(waiting_priorities(farm, batch["id"]).values()) == {"low"}
    assert dispatch_one(farm) == (low["id"], 1)  # at low the batch's turn would have come (renders take turns)


class RaiseRefused(EmbeddedQueue):
    """An embedded queue whose store stops answering when a render's chunks are to be raised."""

    def raise_priority(self, render_id: str, priority: str) -> int:
        raise QueueUnavailable("the job queue (database) cannot be reached")


def test_a_raise_the_queue_cannot_take_leaves_the_render_as_it_was(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=50)
    video = embedded.video(workspace, make_doc(6))
    low = ask(embedded, workspace, video, "low")
    refusing = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress,
                          RaiseRefused(embedded.engine, clock=embedded.clock))

    with pytest.raises(QueueUnavailable):
        ask(refusing, workspace, video, "normal")

    assert embedded.renders.get(workspace, low["id"])["priority"] == "low"
    assert set(waiting_priorities(embedded, low["id"]).values()) == {"low"}
    assert ask(embedded, workspace, video, "normal")["priority"] == "normal"  # asked again: raised
    assert embedded.render_count(workspace) == 1
