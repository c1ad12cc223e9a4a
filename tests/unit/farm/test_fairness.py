"""The fair-dispatch policy (``reelfarm.farm.services.fairness``), specified by what it guarantees over
generated workloads: shares in proportion to weight, work-conserving, caps held, low priority
yielding, each render earliest chunk first, an arriving workspace served at once."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reelfarm.farm.services.fairness import (
    ARRIVAL_CREDIT,
    PRIORITIES,
    Chunk,
    Ledger,
    Share,
    line,
    order,
    outranks,
    pick,
    plan_share,
    ranked_below,
)
from reelfarm.shared.plans import PLANS

WORKSPACES = ("wa", "wb", "wc", "wd")


@st.composite
def workloads(draw: st.DrawFn, max_renders: int = 8) -> tuple[list[Chunk], dict[str, Share]]:
    """Renders of up to four workspaces, each of a few chunks of 1 to 300 frames, arriving in any order."""
    workspaces = draw(st.lists(st.sampled_from(WORKSPACES), min_size=1, max_size=4, unique=True))
    shares = {w: Share(weight=draw(st.sampled_from([1.0, 2.0, 4.0])), cap=draw(st.integers(1, 6)))
              for w in workspaces}
    chunks: list[Chunk] = []
    seq = itertools.count()
    for r in range(draw(st.integers(1, max_renders))):
        workspace = draw(st.sampled_from(workspaces))
        priority = draw(st.sampled_from(["normal", "normal", "low"]))
        for index, cost in enumerate(draw(st.lists(st.integers(1, 300), min_size=1, max_size=6))):
            chunks.append(Chunk(f"r{r}-c{index}", workspace, f"r{r}", cost, priority, float(next(seq)), index))
    return chunks, shares


@given(workloads(), st.integers(0, 12), st.dictionaries(st.sampled_from(WORKSPACES), st.integers(0, 6)))
def test_a_round_fills_every_slot_it_can_and_never_passes_a_cap(
        workload: tuple[list[Chunk], dict[str, Share]], slots: int, running: dict[str, int]) -> None:
    chunks, shares = workload
    share = lambda w: shares.get(w, Share(1.0, 4))
    chosen = pick(chunks, slots, running=running, shares=share, ledger=Ledger())
    assert len({c.id for c in chosen}) == len(chosen) and set(chosen) <= set(chunks)
    per_workspace: dict[str, int] = {}
    for chunk in chosen:
        per_workspace[chunk.workspace] = per_workspace.get(chunk.workspace, 0) + 1
    for workspace, count in per_workspace.items():
        assert running.get(workspace, 0) + count <= share(workspace).cap
    # work-conserving: nothing dispatchable is held back
    room = sum(max(0, min(sum(c.workspace == w for c in chunks), share(w).cap - running.get(w, 0)))
               for w in {c.workspace for c in chunks})
    assert len(chosen) == min(slots, room)


@settings(max_examples=200)
@given(workloads(max_renders=10))
def test_no_workspace_waiting_throughout_gets_less_than_its_share(
        workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    """Dispatching one chunk at a time with the ledger kept: while two workspaces both have work
    waiting, the frames each was given over its weight differ by at most one largest chunk and one
    arrival credit of each."""
    chunks, shares = workload
    uncapped = {w: Share(s.weight, 1 << 30) for w, s in shares.items()}
    ledger, waiting = Ledger(), list(chunks)
    given_frames = dict.fromkeys(shares, 0)
    largest = {w: max((c.cost for c in chunks if c.workspace == w), default=0) for w in shares}
    while waiting:
        backlogged = {c.workspace for c in waiting}
        (chunk,) = pick(waiting, 1, shares=uncapped.__getitem__, ledger=ledger)
        waiting.remove(chunk)
        given_frames[chunk.workspace] += chunk.cost
        still = {c.workspace for c in waiting}
        for a, b in itertools.combinations(sorted(backlogged & still), 2):
            gap = abs(given_frames[a] / shares[a].weight - given_frames[b] / shares[b].weight)
            bound = (largest[a] + ARRIVAL_CREDIT) / shares[a].weight + (largest[b] + ARRIVAL_CREDIT) / shares[b].weight
            assert gap <= bound + 1e-9


@given(workloads())
def test_a_workspaces_renders_take_turns_and_each_goes_earliest_chunk_first(
        workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    chunks, _ = workload
    same = [Chunk(c.id, "wa", c.render, c.cost, "normal", c.seq, c.index) for c in chunks]
    ordered = order(same)
    for render in {c.render for c in same}:
        indexes = [c.index for c in ordered if c.render == render]
        assert indexes == sorted(indexes)
    largest = max(c.cost for c in same)
    given_frames: dict[str, int] = {}
    remaining = {r: sum(c.cost for c in same if c.render == r) for r in {c.render for c in same}}
    for chunk in ordered:
        live = [r for r, left in remaining.items() if left > 0]
        given_frames[chunk.render] = given_frames.get(chunk.render, 0) + chunk.cost
        remaining[chunk.render] -= chunk.cost
        still = [r for r in live if remaining[r] > 0]
        for a, b in itertools.combinations(still, 2):
            assert abs(given_frames.get(a, 0) - given_frames.get(b, 0)) <= 2 * largest


@given(workloads())
def test_low_priority_renders_yield_to_their_workspaces_normal_ones(
        workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    chunks, shares = workload
    uncapped = {w: Share(s.weight, 1 << 30) for w, s in shares.items()}
    ordered = order(chunks, shares=uncapped.__getitem__)
    for workspace in shares:
        mine = [c.priority for c in ordered if c.workspace == workspace]
        assert mine == sorted(mine, key=lambda p: p == "low")  # every normal before any low


@given(workloads())
def test_a_priority_outranks_another_when_its_renders_go_first(workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    chunks, shares = workload
    uncapped = {w: Share(s.weight, 1 << 30) for w, s in shares.items()}
    ordered = order(chunks, shares=uncapped.__getitem__)
    for workspace in shares:
        mine = [c.priority for c in ordered if c.workspace == workspace]
        for first, later in itertools.combinations(mine, 2):
            assert not outranks(later, first)  # what a raise moves a render to is what goes first
    assert [p for p in PRIORITIES if outranks("normal", p)] == list(ranked_below("normal")) == ["low"]
    assert ranked_below("low") == () and not outranks("low", "normal") and not outranks("normal", "normal")


def test_an_arriving_workspace_is_served_next_then_takes_turns() -> None:
    backlog = [Chunk(f"a{r}-{i}", "wa", f"a{r}", 150, seq=float(r), index=i) for r in range(40) for i in range(6)]
    ledger = Ledger()
    equal = lambda w: Share(2.0, 16)
    first = pick(backlog, 10, shares=equal, ledger=ledger)
    assert [c.id for c in first[:2]] == ["a0-0", "a1-0"]  # the workspace's renders take turns too
    rest = [c for c in backlog if c not in first]
    # a short render arrives: its first ARRIVAL_CREDIT frames go ahead of the backlog (both free slots)
    short = [Chunk(f"b-{i}", "wb", "b", 90, seq=100.0, index=i) for i in range(2)]
    assert line((), rest + short, {}, ledger, "fair", Share(2.0, 16)).frames_ahead("b") == 0
    assert [c.id for c in pick(rest + short, 2, running={"wa": 2}, shares=equal, ledger=ledger.copy())] == \
        ["b-0", "b-1"]
    # a long one gets its credit, then takes turns with the backlog (equal weights)
    long = [Chunk(f"c-{i}", "wc", "c", 90, seq=100.0, index=i) for i in range(60)]
    ordered = [c.workspace for c in order(rest + long, shares=equal, ledger=ledger)]
    credit = ARRIVAL_CREDIT // 90
    assert ordered[:credit] == ["wc"] * credit
    assert 0.55 < ordered[credit:credit + 40].count("wc") / 40 < 0.7  # in turn by frames: 150 against 90


def test_a_heavier_weight_gets_proportionally_more_and_fifo_gets_arrival_order() -> None:
    a = [Chunk(f"a-{i}", "wa", "a", 100, seq=0.0, index=i) for i in range(60)]
    b = [Chunk(f"b-{i}", "wb", "b", 100, seq=1.0, index=i) for i in range(60)]
    weights = {"wa": Share(4.0, 99), "wb": Share(2.0, 99)}
    ledger = Ledger()
    first = pick(a + b, 30, shares=weights.__getitem__, ledger=ledger)  # each's arrival credit, then 4:2
    assert sum(c.workspace == "wa" for c in first) == 19
    rest = [c for c in a + b if c not in first]
    assert sum(c.workspace == "wa" for c in pick(rest, 30, shares=weights.__getitem__, ledger=ledger)) == 20
    assert [c.id for c in pick(a + b, 3, policy="fifo")] == ["a-0", "a-1", "a-2"]
    capped = pick(a + b, 10, shares=lambda w: Share(1.0, 3), policy="fifo")
    assert [c.id for c in capped] == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"]


def test_an_idle_farm_gives_one_workspace_everything_up_to_its_cap() -> None:
    alone = [Chunk(f"a-{i}", "wa", "a", 100, index=i) for i in range(10)]
    assert len(pick(alone, 8, shares=lambda w: Share(1.0, 16))) == 8
    assert len(pick(alone, 8, shares=lambda w: Share(1.0, 5))) == 5
    assert len(pick(alone, 8, running={"wa": 4}, shares=lambda w: Share(1.0, 5))) == 1


def test_a_workspaces_share_is_its_plans_unless_the_operator_set_one() -> None:
    assert plan_share("agency").weight > plan_share("pro").weight > plan_share("starter").weight
    assert plan_share("pro") == Share(PLANS["pro"].dispatch_weight, PLANS["pro"].dispatch_cap)
    assert plan_share("pro", weight=7, cap=3) == Share(7.0, 3)


def test_metrics_labels_stay_bounded_and_shares_add_up() -> None:
    from reelfarm.farm.services.fairness import OTHER, Load, entitled, top_loads

    loads = {f"w{i:02d}-0000-0000": Load(running=1, waiting=i, waiting_frames=100 * i) for i in range(25)}
    names = {w: ("Acme" if w.startswith(("w24", "w23")) else f"team {w[:3]}") for w in loads}
    shown = top_loads(loads, names, limit=5)
    assert [label for label, _ in shown] == ["Acme (w24-0000)", "Acme (w23-0000)", "team w22", "team w21",
                                             "team w20", OTHER]
    assert shown[-1][1] == Load(running=20, waiting=sum(range(20)), waiting_frames=100 * sum(range(20)))
    shares = {"a": Share(4.0, 9), "b": Share(2.0, 9), "c": Share(2.0, 9)}
    assert entitled(shares, {"a": Load(waiting=1), "b": Load(running=1), "c": Load()}) == pytest.approx(
        {"a": 4 / 6, "b": 2 / 6, "c": 0.0})


@given(workloads(), st.sampled_from(["fair", "fifo"]), st.data())
def test_a_line_ordered_up_to_one_render_is_the_whole_line_cut_there(
        workload: tuple[list[Chunk], dict[str, Share]], policy: str, data: st.DataObject) -> None:
    chunks, shares = workload
    renders = sorted({c.render for c in chunks})
    if not renders:
        return
    render = data.draw(st.sampled_from(renders))
    whole = line((), chunks, shares, Ledger(), policy, Share(1.0, 8))
    part = line((), chunks, shares, Ledger(), policy, Share(1.0, 8), until=render)
    ordered = order(chunks, shares=lambda w: shares[w], policy=policy)
    cut = order(chunks, shares=lambda w: shares[w], policy=policy, until=render)
    assert cut == ordered[:len(cut)] and cut[-1].render == render
    assert render not in {c.render for c in cut[:-1]}
    assert part.frames_ahead(render) == whole.frames_ahead(render)
    assert part.waiting == whole.waiting and part.total == whole.total
    for other in renders:  # what it knows, it knows exactly; what it does not, it says so
        if part.knows(other):
            assert part.frames_ahead(other) == whole.frames_ahead(other)
        else:
            with pytest.raises(LookupError):
                part.frames_ahead(other)
    assert part.complete == (len(cut) == len(chunks)) and whole.complete
