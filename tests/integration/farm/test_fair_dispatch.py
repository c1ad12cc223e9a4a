"""Fair dispatch on the embedded queue, over SQLite and PostgreSQL, across three workspaces: one
workspace's backlog does not hold back another's render, a workspace's low-priority renders yield to
its normal ones, a cap holds, a render canceled while it waits is refunded and the rest finish once."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select, update

from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import queued_tasks, workspaces
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_render_embedded import wait_for


def finished(farm: Farm, workspace: str, render_id: str) -> Any:
    with farm.engine.connect() as conn:
        return renders_repo.get_render(conn, workspace, render_id)


def ask(farm: Farm, workspace: str, count: int, seconds: float = 6, priority: str = "normal") -> list[str]:
    """``count`` renders of distinct videos (no dedup), each ``seconds`` long."""
    ids = []
    for i in range(count):
        video = farm.video(workspace, make_doc(seconds, title=f"{workspace[:6]}-{priority}-{i}"))
        ids.append(farm.renders.request(workspace, video, "16:9", resolution=180, priority=priority)["id"])
    return ids


def run_to_the_end(farm: Farm) -> None:
    farm.queue.start()  # type: ignore[attr-defined]
    assert farm.queue.wait_idle(timeout=300)  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ["fair", "fifo"])
def test_a_backlog_does_not_hold_back_another_workspaces_render(
        make_embedded: Callable[..., Farm], policy: str) -> None:
    farm = make_embedded(workers=1, dispatch=policy)
    a, b, c = farm.workspace(credits=50), farm.workspace(), farm.workspace()
    backlog = ask(farm, a, 5)
    (b_render,) = ask(farm, b, 1)
    c_low = ask(farm, c, 1, priority="low")
    (c_normal,) = ask(farm, c, 1)
    run_to_the_end(farm)

    ends = {r: finished(farm, w, r) for w, ids in ((a, backlog), (b, [b_render]), (c, [*c_low, c_normal]))
            for r in ids}
    assert {r.status for r in ends.values()} == {"succeeded"}, [r.error for r in ends.values()]
    a_ends = sorted(ends[r].finished_at for r in backlog)
    if policy == "fair":
        # B and C were served in turn with A: both done before A's backlog was half through
        assert ends[b_render].finished_at < a_ends[2] and ends[c_normal].finished_at < a_ends[2]
        assert ends[c_normal].finished_at < ends[c_low[0]].finished_at  # low yields to its normal one
    else:  # first in, first out: every render of A's backlog ends first
        assert ends[b_render].finished_at > a_ends[-1] and ends[c_normal].finished_at > ends[c_low[0]].finished_at


def test_a_workspace_runs_at_most_its_cap_even_alone(make_embedded: Callable[..., Farm]) -> None:
    farm = make_embedded(workers=3)
    a, b = farm.workspace(credits=50), farm.workspace()
    with farm.engine.begin() as conn:
        conn.execute(update(workspaces).where(workspaces.c.id == a).values(dispatch_cap=1))
    ids = ask(farm, a, 3)
    ask(farm, b, 1)
    seen: set[int] = set()

    def sample() -> bool:
        with farm.engine.connect() as conn:
            rows = conn.execute(select(queued_tasks.c.status).where(
                queued_tasks.c.workspace_id == a, queued_tasks.c.status == "running")).all()
        seen.add(len(rows))
        return False

    farm.queue.start()  # type: ignore[attr-defined]
    try:
        wait_for(lambda: sample() or all(finished(farm, a, r).status == "succeeded" for r in ids), timeout=300,
                 interval=0.02)
    finally:
        assert farm.queue.wait_idle(timeout=300)  # type: ignore[attr-defined]
    assert max(seen) == 1


def test_a_render_canceled_while_it_waits_is_refunded_and_the_rest_finish_once(
        make_embedded: Callable[..., Farm]) -> None:
    farm = make_embedded(workers=1)
    a, b, c = farm.workspace(credits=10), farm.workspace(credits=10), farm.workspace(credits=10)
    first, waiting = ask(farm, a, 2)
    others = ask(farm, b, 1) + ask(farm, c, 1)
    farm.renders.cancel(a, waiting)
    assert farm.balance(a) == 9  # the canceled render's credit came back
    run_to_the_end(farm)
    assert finished(farm, a, waiting).status == "canceled"
    assert finished(farm, a, first).status == "succeeded"
    assert [finished(farm, w, r).status for w, r in zip((b, c), others)] == ["succeeded", "succeeded"]
    with farm.engine.connect() as conn:  # every chunk ran once: none retried, none left behind
        rows = conn.execute(select(queued_tasks.c.render_id, queued_tasks.c.status, queued_tasks.c.attempts)
                            .where(queued_tasks.c.workspace_id.is_not(None))).all()
    assert {(r.status, r.attempts) for r in rows if r.render_id != waiting} == {("succeeded", 1)}
    assert {r.status for r in rows if r.render_id == waiting} == {"canceled"}
    assert [farm.balance(w) for w in (a, b, c)] == [9, 9, 9]
