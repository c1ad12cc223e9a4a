"""Fair dispatch on RQ over real Redis and real RQ workers, across three workspaces: chunks wait in
their workspace's waiting queue and are fed to the ready queue in the policy's order; a cancel while
waiting leaves nothing behind; a dispatcher that died holds nothing once its lock expires."""
from __future__ import annotations

import secrets
import time
from typing import Any

import pytest
from rq import Queue, SimpleWorker

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.shared.repos import renders as renders_repo
from tests.integration.farm.conftest import Farm, make_doc

POSTGRESQL = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


def ask(farm: Farm, workspace: str, count: int, priority: str = "normal") -> list[str]:
    ids = []
    for i in range(count):
        video = farm.video(workspace, make_doc(6, title=f"{workspace[:6]}-{priority}-{i}"))
        ids.append(farm.renders.request(workspace, video, "16:9", resolution=120, priority=priority)["id"])
    return ids


def one_node(farm: Farm, redis: Any, namespace: str, policy: str) -> list[str]:
    """A node with one slot: each round gives it one chunk, which it runs (with any stitch it
    released) before the next round. Returns the chunks in the order they were dispatched."""
    dispatcher = Dispatcher(redis, namespace, shares=Shares(farm.engine), policy=policy)
    order: list[str] = []
    while True:
        moved = dispatcher.round(slots=1)
        order += moved
        SimpleWorker([Queue(f"{namespace}{q}", connection=redis) for q in ("render", "jobs")], connection=redis,
                     name=f"{namespace}node-{secrets.token_hex(3)}").work(burst=True, logging_level="WARNING")
        if not moved and not dispatcher.held():
            return order


def ended(farm: Farm, workspace: str, render_id: str) -> Any:
    with farm.engine.connect() as conn:
        return renders_repo.get_render(conn, workspace, render_id)


@POSTGRESQL
@pytest.mark.parametrize("policy", ["fair", "fifo"])
def test_real_rq_workers_serve_three_workspaces_in_turn(rq_farm: Farm, redis: Any, namespace: str,
                                                        policy: str) -> None:
    a, b, c = rq_farm.workspace(credits=50), rq_farm.workspace(), rq_farm.workspace()
    backlog = ask(rq_farm, a, 4)
    (b_render,) = ask(rq_farm, b, 1)
    (c_low,) = ask(rq_farm, c, 1, priority="low")
    (c_normal,) = ask(rq_farm, c, 1)
    assert redis.llen(f"rq:queue:{namespace}render") == 0  # no worker yet: every chunk waits for its turn

    order = one_node(rq_farm, redis, namespace, policy)

    renders = {r: ended(rq_farm, w, r) for w, ids in ((a, backlog), (b, [b_render]), (c, [c_low, c_normal]))
               for r in ids}
    assert {r.status for r in renders.values()} == {"succeeded"}, [r.error for r in renders.values()]
    assert len(order) == sum(r.chunks for r in renders.values())  # each chunk dispatched once
    first_of = {r: min(i for i, job in enumerate(order) if r in job) for r in renders}
    last_of = {r: max(i for i, job in enumerate(order) if r in job) for r in renders}
    if policy == "fair":
        a_third = sorted(last_of[r] for r in backlog)[2]
        assert last_of[b_render] < a_third and last_of[c_normal] < a_third
        assert last_of[c_normal] < first_of[c_low]  # low yields to its workspace's normal render
    else:
        assert first_of[b_render] > max(last_of[r] for r in backlog)


@POSTGRESQL
def test_a_chunk_canceled_while_it_waits_leaves_its_waiting_queue(rq_farm: Farm, redis: Any,
                                                                  namespace: str) -> None:
    a, b, c = rq_farm.workspace(credits=5), rq_farm.workspace(credits=5), rq_farm.workspace(credits=5)
    (waiting,) = ask(rq_farm, a, 1)
    others = ask(rq_farm, b, 1) + ask(rq_farm, c, 1)
    dispatcher = Dispatcher(redis, namespace, shares=Shares(rq_farm.engine))
    assert any(waiting in h.chunk.id for h in dispatcher.held())
    rq_farm.renders.cancel(a, waiting)
    assert not any(waiting in h.chunk.id for h in dispatcher.held())
    assert not redis.hget(dispatcher.key("turns"), f"{namespace}render-{waiting}-chunk-0")
    one_node(rq_farm, redis, namespace, "fair")
    assert ended(rq_farm, a, waiting).status == "canceled" and rq_farm.balance(a) == 5
    assert [ended(rq_farm, w, r).status for w, r in zip((b, c), others)] == ["succeeded", "succeeded"]
    assert dispatcher.held() == [] and int(redis.hget(dispatcher.key("owed"), a) or 0) == 0


@POSTGRESQL
def test_a_dispatcher_that_died_holding_the_lock_stops_no_one_for_longer_than_its_lease(
        rq_farm: Farm, redis: Any, namespace: str) -> None:
    a = rq_farm.workspace()
    queue = RQQueue(redis, namespace=namespace)
    redis.set(queue.dispatcher.key("lock"), "a-dead-process", px=1500)  # it took the lock, then died
    (render,) = ask(rq_farm, a, 1)
    assert queue.dispatcher.round(slots=5) == []
    time.sleep(1.6)
    assert len(queue.dispatcher.round(slots=5)) == ended(rq_farm, a, render).chunks
