"""Render requests on SQLite and PostgreSQL: dedup under concurrency, credits, cancel, queue outages.

The queue is the real EmbeddedQueue, not started unless a test renders: its rows show what was
handed to the farm.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.errors import InvalidRequest, QueueUnavailable, StateConflict
from reelfarm.shared.errors import InsufficientCredits, NotFound
from reelfarm.shared.tables import event_outbox, queued_tasks
from reelfarm.studio.videos import VideoStateError
from tests.integration.farm.conftest import Farm, build_farm, make_doc, with_image
from tests.integration.farm.test_render_embedded import wait_for


def run_together(count: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results.append(work(index))
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


def task_ids(farm: Farm) -> list[tuple[str, str]]:
    with farm.engine.connect() as conn:
        return sorted((r.id, r.status) for r in conn.execute(select(queued_tasks.c.id, queued_tasks.c.status)))


def test_twenty_identical_requests_make_one_render_and_one_charge(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=10)
    video = embedded.video(workspace, make_doc(6))

    results, errors = run_together(20, lambda _: embedded.renders.request(workspace, video, "16:9", 180))

    assert errors == []
    assert len({r["id"] for r in results}) == 1
    assert embedded.render_count(workspace) == 1
    assert embedded.ledger(workspace) == [("initial_grant", 10), ("render_charge", -1)]
    assert embedded.balance(workspace) == 9
    render_id = results[0]["id"]
    assert task_ids(embedded) == sorted([(f"render-{render_id}-chunk-0", "queued"),
                                         (f"render-{render_id}-chunk-1", "queued"),
                                         (f"render-{render_id}-chunk-2", "queued"),
                                         (f"render-{render_id}-chunk-3", "queued"),
                                         (f"render-{render_id}-stitch", "deferred")])


def test_concurrent_requests_for_different_formats_charge_the_version_once(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=10)
    video = embedded.video(workspace, make_doc(6))
    formats = ["16:9", "9:16", "1:1", "4:5"] * 3

    results, errors = run_together(len(formats), lambda i: embedded.renders.request(workspace, video, formats[i], 180))

    assert errors == []
    assert len({r["id"] for r in results}) == 4
    assert embedded.render_count(workspace) == 4
    assert embedded.balance(workspace) == 9


def test_a_version_is_charged_once_and_a_new_version_again(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=10)
    video = embedded.video(workspace, make_doc(61))  # 61 s: two credits
    first = embedded.renders.request(workspace, video, "16:9", 180)
    assert embedded.balance(workspace) == 8
    others = [embedded.renders.request(workspace, video, "9:16", 180),
              embedded.renders.request(workspace, video, "16:9", 360),
              embedded.renders.request(workspace, video, "16:9", 180, fps=24)]
    assert len({first["id"], *(o["id"] for o in others)}) == 4
    assert embedded.balance(workspace) == 8  # later renders of the version are free

    embedded.new_version(workspace, video, make_doc(30))
    embedded.renders.request(workspace, video, "16:9", 180)
    assert embedded.balance(workspace) == 7
    assert [d for r, d in embedded.ledger(workspace) if r == "render_charge"] == [-2, -1]


def test_variants_are_created_and_charged_together(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=1)
    video = embedded.video(workspace, make_doc(6))
    made = embedded.renders.request_many(workspace, video, ["16:9", "9:16", "16:9"], resolution=180)
    assert [r["format"] for r in made] == ["16:9", "9:16", "16:9"]
    assert made[0]["id"] == made[2]["id"] != made[1]["id"]
    assert embedded.balance(workspace) == 0


def test_a_balance_too_small_creates_nothing(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=1)
    video = embedded.video(workspace, make_doc(90))  # two credits needed
    with pytest.raises(InsufficientCredits) as short:
        embedded.renders.request_many(workspace, video, ["16:9", "9:16"], 180)
    assert (short.value.balance, short.value.needed) == (1, 2)
    assert embedded.render_count(workspace) == 0
    assert task_ids(embedded) == []
    assert embedded.ledger(workspace) == [("initial_grant", 1)]
    assert embedded.balance(workspace) == 1


def test_video_states_and_arguments_are_checked(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    ready = embedded.video(workspace, make_doc(6))
    archived = embedded.video(workspace, make_doc(6), status="archived")
    with pytest.raises(VideoStateError) as archived_error:
        embedded.renders.request(workspace, archived, "16:9", 180)
    assert archived_error.value.code == "conflict"
    with pytest.raises(NotFound):
        embedded.renders.request(embedded.workspace(), ready, "16:9", 180)  # another workspace's video
    with pytest.raises(InvalidRequest) as invalid:
        embedded.renders.request(workspace, ready, "3:2", resolution=True, fps=0)  # type: ignore[arg-type]
    assert [d["field"] for d in invalid.value.details] == ["/format", "/resolution", "/fps"]
    assert embedded.render_count(workspace) == 0 and embedded.balance(workspace) == 5


def test_a_generating_video_is_not_ready(embedded: Farm) -> None:
    from reelfarm.shared.db import transaction
    from reelfarm.shared.repos import videos as videos_repo

    workspace = embedded.workspace(credits=5)
    with transaction(embedded.engine) as conn:
        video, _ = videos_repo.create_video(conn, embedded.clock, workspace_id=workspace, title="brief",
                                            status="generating", default_format="16:9")
    with pytest.raises(VideoStateError) as error:
        embedded.renders.request(workspace, video.id, "16:9", 180)
    assert error.value.code == "video_not_ready"


def test_cancel_a_queued_render_refunds_it(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    render = embedded.renders.request(workspace, video, "16:9", 180)
    assert embedded.balance(workspace) == 4

    canceled = embedded.renders.cancel(workspace, render["id"])

    assert canceled["status"] == "canceled" and canceled["finished_at"] is not None
    assert embedded.balance(workspace) == 5
    assert [s for _, s in task_ids(embedded)] == ["canceled"] * 5  # four chunks and the stitch
    with pytest.raises(StateConflict):
        embedded.renders.cancel(workspace, render["id"])
    with pytest.raises(NotFound):
        embedded.renders.cancel(embedded.workspace(), render["id"])
    again = embedded.renders.request(workspace, video, "16:9", 180)  # canceled renders are not reused
    assert again["id"] != render["id"] and embedded.balance(workspace) == 4


def test_canceling_the_paid_render_hands_its_charge_to_a_live_sibling(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    paid = embedded.renders.request(workspace, video, "16:9", 180)
    free = embedded.renders.request(workspace, video, "9:16", 180)
    embedded.renders.cancel(workspace, paid["id"])
    assert embedded.balance(workspace) == 4  # the version still gets a render: still paid once
    embedded.renders.cancel(workspace, free["id"])
    assert embedded.balance(workspace) == 5
    assert embedded.ledger(workspace)[1:] == [("render_charge", -1), ("render_refund", 1),   # paid, canceled
                                             ("render_charge", -1), ("render_refund", 1)]  # inherited, canceled


def test_a_corrupt_image_fails_the_render_with_a_refund_and_the_next_render_charges_again(
        embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, with_image(make_doc(6), embedded, workspace, tmp_path, corrupt=True))
    render = embedded.renders.request(workspace, video, "16:9", 180)
    embedded.queue.start()  # type: ignore[attr-defined]

    failed = wait_for(lambda: (r := embedded.renders.get(workspace, render["id"]))["status"] == "failed" and r)

    assert failed["error"].startswith("asset 'photo': not a readable PNG, JPEG or WebP image")
    assert failed["error"].endswith("the 1 credit charged for it was refunded")
    assert embedded.balance(workspace) == 5
    with embedded.engine.connect() as conn:
        events = conn.execute(select(event_outbox.c.type, event_outbox.c.payload)
                              .where(event_outbox.c.workspace_id == workspace)).all()
    assert [e.type for e in events] == ["render.failed"]
    assert events[0].payload["render"]["error"] == failed["error"]

    retry = embedded.renders.request(workspace, video, "16:9", 180)  # failed renders are not reused
    assert retry["id"] != render["id"]
    assert embedded.balance(workspace) == 4  # ... and the version is charged again
    assert embedded.queue.wait_idle(60)  # type: ignore[attr-defined]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_queue_down_leaves_nothing_behind(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    down = RQQueue(make_redis("redis://127.0.0.1:1/15"))  # nothing listens on port 1
    farm = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress, down)

    with pytest.raises(QueueUnavailable):
        farm.renders.request(workspace, video, "16:9", 180)

    assert farm.render_count(workspace) == 0
    assert farm.ledger(workspace) == [("initial_grant", 5)]
    assert farm.balance(workspace) == 5


class QueueThatDiesMidway:
    """A real queue that stops answering after ``working`` enqueues (Redis dying mid-request)."""

    def __init__(self, inner: Any, working: int, batched: bool = False) -> None:
        self.inner, self.working, self.batched = inner, working, batched
        self.enqueued: list[str] = []
        self.canceled: list[str] = []

    def enqueue(self, func_path: str, *args: Any, job_id: str, **kwargs: Any) -> None:
        if len(self.enqueued) >= self.working:
            raise QueueUnavailable("gone")
        self.inner.enqueue(func_path, *args, job_id=job_id, **kwargs)
        self.enqueued.append(job_id)

    def batch(self) -> Any:
        # batched: the inner queue's one transaction; else each enqueue is written as it comes (as RQ)
        return self.inner.batch() if self.batched else contextlib.nullcontext()

    def cancel(self, job_id: str) -> None:
        self.inner.cancel(job_id)

    def ping(self) -> None:
        self.inner.ping()

    def chunk_queue(self, pool: str = "") -> str:
        return str(self.inner.chunk_queue(pool))

    def stitch_queue(self, pool: str = "") -> str:
        return str(self.inner.stitch_queue(pool))

    def standing(self, render_id: str) -> Any:
        return self.inner.standing(render_id)

    def loads(self) -> Any:
        return self.inner.loads()


def test_a_queue_failing_after_the_commit_is_compensated(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    flaky = QueueThatDiesMidway(embedded.queue, working=1)
    farm = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress, flaky)

    with pytest.raises(QueueUnavailable):
        farm.renders.request(workspace, video, "16:9", 180)

    assert farm.render_count(workspace) == 0
    assert farm.ledger(workspace) == [("initial_grant", 5)] and farm.balance(workspace) == 5
    assert task_ids(embedded) == [(flaky.enqueued[0], "canceled")]  # the chunk that got in is dropped


def test_a_batch_failing_midway_leaves_no_task(embedded: Farm) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, make_doc(6))
    flaky = QueueThatDiesMidway(embedded.queue, working=1, batched=True)
    farm = build_farm(embedded.engine, embedded.storage, embedded.clock, embedded.progress, flaky)

    with pytest.raises(QueueUnavailable):
        farm.renders.request(workspace, video, "16:9", 180)

    assert len(flaky.enqueued) == 1  # one task was written in the batch before the queue died
    assert farm.render_count(workspace) == 0 and farm.balance(workspace) == 5
    assert task_ids(embedded) == []  # and rolled back with it: nothing to drop
