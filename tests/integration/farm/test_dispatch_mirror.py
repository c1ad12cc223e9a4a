"""The dispatcher's copy of the fair queues (``reelfarm.farm.runtime.dispatchmirror``) on real Redis:
a round costs the same whatever waits; it decides as ``fairness.pick`` over the whole backlog
would; it is kept by events (arrivals, cancels, raised priorities, a new target), built again when
another process dispatched, repaired by its sweep when an event was lost; a chunk enqueued again
after it ran waits again; what it publishes (places in line, loads, the autoscaler's backlog
lists, renders waiting past a time) is what it holds; a node about to take a job is a free place."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
from rq import Queue, Worker

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services import fairness
from reelfarm.farm.services.fairness import Share
from reelfarm.farm.services.queues import NVENC_QUEUE, RENDER_QUEUE, Turn

SHARE = Share(1.0, 1000)


def shares(workspace_ids: Any) -> dict[str, Share]:
    return {w: SHARE for w in workspace_ids}


def enqueue(queue: RQQueue, workspace: str, render: str, chunks: int, cost: int = 150, priority: str = "normal",
            target: str = RENDER_QUEUE) -> list[str]:
    for index in range(chunks):
        queue.enqueue("os.getpid", job_id=f"render-{render}-chunk-{index}", queue=target,
                      turn=Turn(workspace, render, cost, priority, index))
    return [queue.rq_job_id(f"render-{render}-chunk-{i}") for i in range(chunks)]


def finish(redis: Any, namespace: str, moved: list[str]) -> None:
    """The moved chunks ran: out of the ready queue, RQ status finished."""
    redis.delete(f"rq:queue:{namespace}render")
    for rq_id in moved:
        redis.hset(f"rq:job:{rq_id}", "status", "finished")


@pytest.fixture
def queue(redis: Any, namespace: str) -> RQQueue:
    """An API process's queue with no bid for the lease and no worker: its enqueues run rounds
    that move nothing (no free place), so chunks wait."""
    return RQQueue(redis, namespace=namespace, shares=shares)


def sent_bytes(redis: Any) -> int:
    return int(redis.info("stats")["total_net_output_bytes"])


@pytest.mark.parametrize("path", ["kept", "scan"])
def test_a_round_reads_as_much_at_1000_waiting_as_at_50(redis: Any, namespace: str, queue: RQQueue,
                                                           path: str) -> None:
    """Bytes Redis sends for a round that moves 4 chunks: the same at 1,000 waiting as at 50 on
    the kept copy; on the former round over the whole backlog (``scan``), 20 times as many."""
    dispatcher = Dispatcher(redis, namespace, shares=shares)

    def round_once() -> list[str]:
        return dispatcher.round(slots=4) if path == "kept" else dispatcher._scan_round(None, 4, set())

    def read_per_round(chunks: int, tag: str) -> int:
        for w in range(5):
            enqueue(queue, f"{tag}-ws{w}", f"{tag}-r{w}", chunks // 5)
        finish(redis, namespace, round_once())  # takes in the arrivals
        read = []
        for _ in range(3):
            before = sent_bytes(redis)
            moved = round_once()
            read.append(sent_bytes(redis) - before)
            assert len(moved) == 4
            finish(redis, namespace, moved)
        for w in range(5):  # the backlog leaves: what follows waits alone
            for rq_id in redis.lrange(f"rq:queue:{namespace}waiting:{tag}-ws{w}", 0, -1):
                queue.cancel(rq_id.decode().removeprefix(namespace))
        finish(redis, namespace, round_once())
        return max(read)

    small, large = read_per_round(50, "small"), read_per_round(1000, "large")
    if path == "kept":
        assert large < 1.5 * small, (small, large)
    else:
        assert large > 10 * small, (small, large)


def test_decisions_are_picks_over_the_whole_backlog(redis: Any, namespace: str, queue: RQQueue) -> None:
    """The copy decides what ``fairness.pick`` decides over every waiting chunk, round after round."""
    enqueue(queue, "a", "a1", 6)
    enqueue(queue, "a", "a2", 3, cost=90)
    enqueue(queue, "b", "b1", 2)
    enqueue(queue, "c", "c1", 2, priority="low")
    enqueue(queue, "c", "c2", 3)
    dispatcher = Dispatcher(redis, namespace, shares=shares)
    ledger = fairness.Ledger()
    waiting = [h.chunk for h in dispatcher.held()]
    running: dict[str, int] = {}
    while waiting:
        expected = fairness.pick(waiting, 2, running=running, shares=lambda w: SHARE, ledger=ledger)
        moved = dispatcher.round(slots=2)
        assert moved == [c.id for c in expected]
        finish(redis, namespace, moved)
        waiting = [c for c in waiting if c.id not in moved]
        ledger.prune({c.workspace for c in waiting}, {c.render for c in waiting})


def test_events_keep_the_copy_and_another_dispatcher_builds_it_again(redis: Any, namespace: str, queue: RQQueue,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "_changed", queue.wake)  # an API process of a farm: it wakes the dispatcher
    a = enqueue(queue, "a", "a1", 3)
    low = enqueue(queue, "a", "a2", 2, priority="low")
    mine = Dispatcher(redis, namespace, shares=shares)
    assert mine.round(slots=1) == [a[0]]
    built = mine._mirror
    queue.cancel(a[1].removeprefix(namespace))  # an event: gone
    queue.raise_priority("a2", "normal")  # an event: raised (a low render yields to a normal one)
    assert mine.round(slots=1) == [low[0]]
    assert mine._mirror is built  # kept, not built again
    assert built.queues[RENDER_QUEUE].chunk(low[1]).priority == "normal"
    assert built.queues[RENDER_QUEUE].chunks_waiting("a1") == 1  # a[1] left
    other = Dispatcher(redis, namespace, shares=shares)
    (taken,) = other.round(slots=1)  # another process dispatched...
    rest = sorted({a[2], low[1]} - {taken})
    assert mine.round(slots=5) == rest  # ...so this one built its copy again, and knew what it took
    assert mine._mirror is not built
    assert mine.held() == []


def test_the_sweep_finds_a_chunk_whose_event_was_lost(redis: Any, namespace: str, queue: RQQueue,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    dispatcher = queue.dispatcher  # the enqueueing process's own: its copy is current
    dispatcher.round(slots=0)
    with monkeypatch.context() as lost:
        lost.setattr(Dispatcher, "arrived", lambda self, *ids: None)  # the arrivals' events are lost
        enqueue(queue, "a", "a1", 2)
    assert dispatcher.round(slots=5) == []  # the copy knows nothing of them yet
    monkeypatch.setattr("reelfarm.farm.runtime.dispatch.SWEEP_SEC", 0.0)
    assert len(dispatcher.round(slots=5)) == 2


def test_a_chunk_enqueued_again_after_it_ran_waits_again(redis: Any, namespace: str, queue: RQQueue) -> None:
    (rq_id,) = enqueue(queue, "a", "a1", 1)
    dispatcher = Dispatcher(redis, namespace, shares=Shares(None))
    assert dispatcher.round(slots=1) == [rq_id]
    redis.delete(f"rq:queue:{namespace}render")  # it left the ready queue but did not end: a fall-back takes it
    redis.delete(f"rq:job:{rq_id}")
    enqueue(queue, "a", "a1", 1)  # enqueued again under its id, while fair:active still counts it
    assert dispatcher.round(slots=1) == [rq_id]
    assert Dispatcher(redis, namespace, shares=Shares(None)).round(slots=1) == []


def test_what_rounds_publish_is_what_the_copy_holds(redis: Any, namespace: str, queue: RQQueue) -> None:
    enqueue(queue, "a", "a1", 4)
    enqueue(queue, "a", "a2", 2, cost=60)
    enqueue(queue, "b", "b1", 3)
    enqueue(queue, "c", "c1", 2, target=NVENC_QUEUE)
    dispatcher = queue.dispatcher  # the process's own: its enqueues ran rounds
    copy = dispatcher._mirror.queues
    for render in ("a1", "a2", "b1"):
        assert dispatcher.place(render) == (copy[RENDER_QUEUE].frames_ahead(render),
                                            copy[RENDER_QUEUE].chunks_waiting(render))
    loads = dispatcher.loads()
    assert {w: (load.waiting, load.waiting_frames) for w, load in loads.items()} == \
        {"a": (6, 720), "b": (3, 450), "c": (2, 300)}
    # what an autoscaler reads: a list as long as what waits for each queue
    assert redis.llen(dispatcher.backlog_list(RENDER_QUEUE)) == 9
    assert redis.llen(dispatcher.backlog_list(NVENC_QUEUE)) == 2
    assert dispatcher.stale_renders(NVENC_QUEUE, time.time()) == ["c1"]
    assert dispatcher.stale_renders(NVENC_QUEUE, time.time() - 3600) == []
    moved = dispatcher.round(slots=3)  # three places on each ready queue
    assert len(moved) == 5 and redis.llen(dispatcher.backlog_list(RENDER_QUEUE)) == 6
    assert redis.llen(dispatcher.backlog_list(NVENC_QUEUE)) == 0
    assert dispatcher.place("c1") is None and dispatcher.stale_renders(NVENC_QUEUE, time.time()) == []
    for index in range(3):
        queue.cancel(f"render-b1-chunk-{index}")
    dispatcher.round(slots=0)
    assert dispatcher.place("b1") is None
    assert dispatcher.place("a1") == (copy[RENDER_QUEUE].frames_ahead("a1"), copy[RENDER_QUEUE].chunks_waiting("a1"))
    assert {w: load.waiting for w, load in dispatcher.loads().items() if load.waiting} == \
        {"a": copy[RENDER_QUEUE].waiting_in("a")}
    assert json.loads(redis.hget(dispatcher.key("active"), moved[0]))["render"] in ("a1", "a2", "b1", "c1")


def test_a_worker_that_says_it_is_free_is_a_free_place(redis: Any, namespace: str, queue: RQQueue) -> None:
    enqueue(queue, "a", "a1", 3)
    worker = Worker([Queue(f"{namespace}render", connection=redis)], connection=redis, name=f"{namespace}node-1")
    worker.register_birth()
    try:
        worker.set_state("busy")
        dispatcher = Dispatcher(redis, namespace, shares=shares)
        assert dispatcher.round() == []  # busy: no place
        assert len(dispatcher.round(free={worker.name})) == 1
        assert len(dispatcher.round(free={worker.name})) == 0  # its place holds the chunk moved for it
    finally:
        worker.register_death()


@pytest.mark.parametrize("caps", ["hold", "spare"])
def test_caps_hold_or_give_way_to_places_nothing_else_takes(redis: Any, namespace: str, caps: str) -> None:
    capped = {"a": Share(1.0, 1), "b": Share(1.0, 1000)}
    queue = RQQueue(redis, namespace=namespace, shares=lambda ids: {w: capped[w] for w in ids})
    a = enqueue(queue, "a", "a1", 4)
    dispatcher = Dispatcher(redis, namespace, shares=lambda ids: {w: capped[w] for w in ids},
                            spare_caps=caps == "spare")
    moved = dispatcher.round(slots=3)
    assert moved == (a[:3] if caps == "spare" else a[:1])  # at its cap of one: the idle places wait, or not
    b = enqueue(queue, "b", "b1", 2)
    assert dispatcher.round(slots=3) == (b + a[3:] if caps == "spare" else b)  # the uncapped first


def test_a_paused_farm_dispatches_nothing_until_resumed(redis: Any, redis_url: str, namespace: str, queue: RQQueue,
                                                        tmp_path: Any) -> None:
    from click.testing import CliRunner

    from reelfarm.farm.runtime.cli import farm_group

    chunks = enqueue(queue, "a", "a1", 3)
    env = {"REELFARM_REDIS_URL": redis_url, "REELFARM_DATA_DIR": str(tmp_path), "REELFARM_SECRET_KEY": "s" * 48}
    paused = CliRunner().invoke(farm_group, ["pause", "--reason", "storage migration", "--namespace", namespace,
                                             "--json"], env=env)
    assert paused.exit_code == 0, paused.output
    record = json.loads(paused.output.strip().splitlines()[-1])
    # no database with the farm's tables here: the audit log's entry waits in Redis, and says so
    assert "kept in Redis" in paused.output
    assert record["reason"] == "storage migration" and "@" in record["by"]
    dispatcher = Dispatcher(redis, namespace, shares=shares)
    assert dispatcher.round(slots=3) == []  # paused: nothing moves
    assert dispatcher.paused()["reason"] == "storage migration"
    assert dispatcher.place("a1") == (0, 3)  # the line is still kept and published
    shown = CliRunner().invoke(farm_group, ["status", "--namespace", namespace], env=env)
    assert "dispatch: PAUSED since" in shown.output and "(storage migration)" in shown.output
    resumed = CliRunner().invoke(farm_group, ["resume", "--namespace", namespace], env=env)
    assert resumed.exit_code == 0 and "dispatch resumed" in resumed.output
    assert dispatcher.round(slots=3) == chunks
    again = CliRunner().invoke(farm_group, ["resume", "--namespace", namespace], env=env)
    assert "dispatch was not paused" in again.output
