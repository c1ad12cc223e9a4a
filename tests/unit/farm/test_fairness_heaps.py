"""The heap-based queues of ``fairness.pick`` choose exactly what the plain passes over every
waiting render chose (``fairness_oracle``), chunk for chunk and ledger entry for ledger entry,
over generated workloads: many renders of one workspace, mixed priorities, chunks of one render
arriving out of order, caps, and a ledger carried from round to round."""
from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from reelfarm.farm.services.fairness import Chunk, Ledger, Share, order, pick
from tests.unit.farm import fairness_oracle

WORKSPACES = ("wa", "wb", "wc")


@st.composite
def bursts(draw: st.DrawFn) -> tuple[list[Chunk], dict[str, Share]]:
    workspaces = draw(st.lists(st.sampled_from(WORKSPACES), min_size=1, max_size=3, unique=True))
    shares = {w: Share(weight=draw(st.sampled_from([1.0, 2.0, 3.0])), cap=draw(st.integers(1, 8)))
              for w in workspaces}
    chunks: list[Chunk] = []
    for r in range(draw(st.integers(1, 30))):
        workspace = draw(st.sampled_from(workspaces))
        priority = draw(st.sampled_from(["normal", "normal", "low"]))
        count = draw(st.integers(1, 6))
        # a render's chunks may become ready at different times, and not in index order
        seqs = draw(st.lists(st.integers(0, 40), min_size=count, max_size=count))
        for index in range(count):
            cost = draw(st.sampled_from([50, 100, 150, 37]))  # few sizes: equal service, so ties
            chunks.append(Chunk(f"r{r}-c{index}", workspace, f"r{r}", cost, priority, float(seqs[index]), index))
    return chunks, shares


def _ledger(draw_served: dict[str, float], draw_renders: dict[str, float]) -> Ledger:
    return Ledger(dict(draw_served), dict(draw_renders), 0.0)


@settings(max_examples=300, deadline=None)
@given(bursts(), st.integers(0, 40), st.dictionaries(st.sampled_from(WORKSPACES), st.integers(0, 8)),
       st.dictionaries(st.sampled_from(WORKSPACES), st.floats(-500, 500)),
       st.dictionaries(st.sampled_from([f"r{i}" for i in range(30)]), st.floats(0, 900)))
def test_pick_chooses_what_the_plain_passes_chose(workload, slots, running, served, render_served):
    chunks, shares = workload
    share = lambda w: shares.get(w, Share(1.0, 4))
    mine, theirs = _ledger(served, render_served), _ledger(served, render_served)
    chosen = pick(chunks, slots, running=running, shares=share, ledger=mine)
    expected = fairness_oracle.pick(chunks, slots, running=running, shares=share, ledger=theirs)
    assert [c.id for c in chosen] == [c.id for c in expected]
    assert mine == theirs


@settings(max_examples=100, deadline=None)
@given(bursts())
def test_rounds_one_after_another_stay_equal(workload):
    """Dispatching a burst a few slots at a time, carrying the ledger, as the dispatcher does."""
    chunks, shares = workload
    share = lambda w: Share(shares.get(w, Share(1.0, 4)).weight, 1 << 30)
    mine, theirs = Ledger(), Ledger()
    waiting_mine, waiting_theirs = list(chunks), list(chunks)
    for _ in itertools.count():
        if not waiting_mine:
            break
        got = pick(waiting_mine, 3, shares=share, ledger=mine)
        expected = fairness_oracle.pick(waiting_theirs, 3, shares=share, ledger=theirs)
        assert [c.id for c in got] == [c.id for c in expected] and got
        waiting_mine = [c for c in waiting_mine if c not in got]
        waiting_theirs = [c for c in waiting_theirs if c not in expected]
    assert mine == theirs


def test_order_of_a_burst_of_one_workspace_is_its_renders_in_turn():
    """Fifty renders of one workspace, six chunks each: every render's first chunk goes before
    any render's second (equal service), in arrival order."""
    chunks = [Chunk(f"r{r:02}-c{i}", "wa", f"r{r:02}", 30, "normal", float(r), i) for r in range(50) for i in range(6)]
    ordered = order(chunks)
    assert [c.id for c in ordered[:50]] == [f"r{r:02}-c0" for r in range(50)]
    assert [c.id for c in ordered] == [c.id for c in fairness_oracle.pick(chunks, len(chunks))]


def test_a_tie_in_service_goes_to_the_workspace_whose_waiting_chunks_arrived_first():
    """The earliest arrival is that of the chunks still waiting: once wa's early chunk has gone,
    wb's are earlier."""
    chunks = [Chunk("a0", "wa", "ra", 100, "normal", 0.0, 0), Chunk("a1", "wa", "ra", 100, "normal", 10.0, 1),
              Chunk("b0", "wb", "rb", 100, "normal", 5.0, 0), Chunk("b1", "wb", "rb", 100, "normal", 6.0, 1)]
    assert [c.id for c in pick(chunks, 4)] == ["a0", "b0", "b1", "a1"]
    assert [c.id for c in fairness_oracle.pick(chunks, 4)] == ["a0", "b0", "b1", "a1"]
