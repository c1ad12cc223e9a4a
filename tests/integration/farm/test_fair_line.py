"""A queued render's place in line (the Render's ``queue``) is computed once and kept while nothing
that decides it changes, and is always what computing it afresh gives: after new chunks, chunks
dispatched (the ledger moves), a workspace's weight changed; on the embedded queue (SQLite and
PostgreSQL) and on RQ's (Redis). After a change the first read orders the line up to its render
only, so reading every render costs one order or two (the second whole), never one per render.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import update

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services import fairness
from reelfarm.farm.services.fairness import Share
from reelfarm.farm.services.queues import Turn
from reelfarm.shared.tables import workspaces
from tests.integration.farm.conftest import Farm


@pytest.fixture
def orders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the line was computed (each call of ``fairness.order`` by ``fairness.line``)."""
    calls: list[int] = []
    real = fairness.order

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fairness, "order", counted)
    return calls


def _render(queue: EmbeddedQueue | RQQueue, workspace: str, chunks: int, cost: int = 150, priority: str = "normal") -> str:
    render = str(uuid.uuid4())
    for index in range(chunks):
        queue.enqueue("os.getpid", job_id=f"render-{render}-chunk-{index}",
                      turn=Turn(workspace, render, cost, priority, index))
    return render


def _fresh(farm: Farm, policy: str) -> Callable[[str], Any]:
    """The place computed from nothing kept: a queue of its own on the same database."""
    return EmbeddedQueue(farm.engine, clock=farm.clock, dispatch=policy).standing


@pytest.mark.parametrize("policy", ["fair", "fifo"])
def test_the_kept_line_is_what_a_fresh_one_gives_and_is_computed_once_per_change(
        make_embedded: Callable[..., Farm], orders: list[int], policy: str) -> None:
    farm = make_embedded(workers=2, dispatch=policy)
    queue: EmbeddedQueue = farm.queue  # type: ignore[assignment]
    a, b, c = farm.workspace(credits=50), farm.workspace(), farm.workspace()
    renders = [_render(queue, a, 4), _render(queue, a, 3, cost=90), _render(queue, b, 2),
               _render(queue, c, 2, priority="low"), _render(queue, c, 1)]

    def check(changed: bool) -> None:
        fresh = _fresh(farm, policy)
        before = len(orders)
        kept = {r: queue.standing(r) for r in renders}
        # after a change: the first read's part of the line, then the whole once; else nothing
        assert len(orders) - before in ((1, 2) if changed else (0,))
        assert kept == {r: fresh(r) for r in renders}

    check(changed=True)
    check(changed=False)  # nothing changed: the kept line answers
    renders.append(_render(queue, b, 2))
    check(changed=True)
    assert queue._claim(3)  # dispatched: chunks leave the line and the ledger moves
    check(changed=True)
    with farm.engine.begin() as conn:
        conn.execute(update(workspaces).where(workspaces.c.id == b).values(dispatch_weight=4))
    check(changed=True)
    check(changed=False)
    waiting = [r for r in renders if queue.standing(r) is not None]
    assert waiting and any(queue.standing(r)["frames_ahead"] > 0 for r in waiting)


def test_the_kept_line_on_rq_is_what_a_fresh_one_gives(redis: Any, namespace: str, orders: list[int]) -> None:
    """``fifo`` on RQ: the line is computed (``fairness.line``) and kept while nothing changed."""
    policy = "fifo"
    weights = {"a": 1.0, "b": 1.0, "c": 2.0}

    def shares(workspace_ids: Any) -> dict[str, Share]:
        return {w: Share(weights[w], 8) for w in workspace_ids}

    def made() -> RQQueue:
        return RQQueue(redis, namespace=namespace, dispatch=policy, shares=shares)

    queue = made()
    renders = [_render(queue, "a", 4), _render(queue, "a", 3, cost=90), _render(queue, "b", 2),
               _render(queue, "c", 2, priority="low"), _render(queue, "c", 1)]

    def check(changed: bool) -> None:
        before = len(orders)
        kept = {r: queue.standing(r) for r in renders}
        assert len(orders) - before in ((1, 2) if changed else (0,))
        fresh = made()
        assert kept == {r: fresh.standing(r) for r in renders}

    check(changed=True)
    check(changed=False)
    renders.append(_render(queue, "b", 2))
    check(changed=True)
    weights["b"] = 4.0
    check(changed=True)
    check(changed=False)
    assert any(queue.standing(r)["frames_ahead"] > 0 for r in renders)


def test_the_place_on_rq_is_the_dispatchers_own_read_from_what_it_publishes(
        redis: Any, namespace: str, orders: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """``fair`` on RQ: a queued render's place is what the dispatcher's copy of the queue computes
    (``FairQueue.frames_ahead``), read by any process from two published hashes, with no order of
    the line; after new chunks, dispatched chunks and a changed weight; and no more than the exact
    line gives."""
    monkeypatch.setattr("reelfarm.farm.runtime.dispatch.SWEEP_SEC", 0.0)  # shares read again each round
    weights = {"a": 1.0, "b": 1.0, "c": 2.0}

    def shares(workspace_ids: Any) -> dict[str, Share]:
        return {w: Share(weights[w], 8) for w in workspace_ids}

    dispatching = RQQueue(redis, namespace=namespace, shares=shares)  # rounds at each enqueue: no worker, no move
    reader = RQQueue(redis, namespace=namespace, shares=shares)  # another process: never dispatches
    renders = [_render(dispatching, "a", 4), _render(dispatching, "a", 3, cost=90), _render(dispatching, "b", 2),
               _render(dispatching, "c", 2, priority="low"), _render(dispatching, "c", 1)]

    def check() -> None:
        dispatching.dispatch_round()
        queue = dispatching.dispatcher._mirror.queues["render"]  # the copy the round kept
        exact = fairness.line(None, [h.chunk for h in dispatching.dispatcher.held()], shares(weights),
                              fairness.Ledger(queue.ledger.served, queue.ledger.render_served, queue.ledger.clock),
                              "fair", fairness.Share(1.0, 8))
        before = len(orders)
        for render in renders:
            place = reader.standing(render)
            if not queue.chunks_waiting(render):
                assert place is None
                continue
            assert place["frames_ahead"] == queue.frames_ahead(render)
            assert place["chunks_waiting"] == queue.chunks_waiting(render)
            assert place["frames_ahead"] <= exact.frames_ahead(render)
        assert len(orders) == before  # the reads ordered nothing

    check()
    renders.append(_render(dispatching, "b", 2))
    check()
    moved = dispatching.dispatcher.round(slots=3)
    assert len(moved) == 3
    check()
    weights["b"] = 4.0  # the sweep reads it, and the workspace is admitted again at its new weight
    check()
    assert any(reader.standing(r) and reader.standing(r)["frames_ahead"] > 0 for r in renders)
