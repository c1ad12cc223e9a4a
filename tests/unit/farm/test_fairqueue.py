"""``FairQueue`` (``reelfarm.farm.services.fairqueue``) decides what ``fairness.pick`` decides.

Generated workloads go through both at once: renders arriving in bursts (their chunks ready in any
order), takes of any number of slots, completions, node deaths (a running chunk waits again),
cancels, raised priorities, weight and cap changes, idle spells, chunks running that neither handed
out, and reloads of the queue from its stored form. ``pick`` is called as a runtime calls it: the
waiting chunks as a plain list, the running counts, the shares, the ledger pruned of workspaces and
renders with nothing waiting or running. Every take must give the same chunks in the same order and
leave the same ledger; every render's ``frames_ahead`` must lie within its stated bound below
``fairness.line``'s. Then the policy's own guarantees (``test_fairness.py``) are asked of the queue.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from reelfarm.farm.services.fairness import ARRIVAL_CREDIT, PRIORITIES, Chunk, Ledger, Share, line, pick
from reelfarm.farm.services.fairqueue import FairQueue
from tests.unit.farm.test_fairness import workloads

WORKSPACES = ("wa", "wb", "wc", "wd")
DEFAULT = Share(1.0, 3)
PICKS_DEFAULT = Share(1.0, 4)  # test_fairness's, for a workspace its workload gave no share


def place_bound(waiting: list[Chunk], share: dict[str, Share], render: str) -> float:
    """How far ``frames_ahead`` may fall short of the exact figure (``fairqueue``'s docstring):
    one largest chunk of every other waiting workspace, and one of every other render of the
    render's class in its workspace times one plus the others' weights over its own."""
    mine = [c for c in waiting if c.render == render]
    workspace = mine[0].workspace
    heads: dict[str, Chunk] = {}
    for chunk in sorted(waiting, key=lambda c: (c.index, c.seq, c.id)):
        heads.setdefault(chunk.render, chunk)
    low = heads[render].priority == "low"
    inner = sum(max(c.cost for c in waiting if c.render == r) for r, head in heads.items()
                if r != render and head.workspace == workspace and (head.priority == "low") == low)
    others = {c.workspace for c in waiting} - {workspace}
    largest = sum(max(c.cost for c in waiting if c.workspace == w) for w in others)
    weights = sum(share.get(w, DEFAULT).weight for w in others)
    return largest + inner * (1 + weights / share.get(workspace, DEFAULT).weight) + 1


class AgainstPick(RuleBasedStateMachine):
    """The farm as both see it: the reference's plain list and ledger, and the queue."""

    @initialize(shares=st.dictionaries(st.sampled_from(WORKSPACES),
                                       st.builds(Share, st.sampled_from([1.0, 2.0, 3.0]), st.integers(1, 6))),
                spare=st.booleans())
    def start(self, shares: dict[str, Share], spare: bool) -> None:
        self.shares = dict(shares)
        self.spare = spare  # caps give way to places nothing else takes, or hold
        self.queue = FairQueue(self.share, spare=spare)
        self.waiting: dict[str, Chunk] = {}
        self.running: dict[str, Chunk] = {}
        self.ledger = Ledger()
        self.priority: dict[str, str] = {}  # each render's, as asked (raised)
        self.renders = itertools.count()
        self.clock = 0.0

    def share(self, workspace: str) -> Share:
        return self.shares.get(workspace, DEFAULT)

    @rule(workspace=st.sampled_from(WORKSPACES), priority=st.sampled_from(["normal", "low"]),
          chunks=st.lists(st.tuples(st.sampled_from([30, 60, 150, 150, 37]), st.integers(0, 3)),
                          min_size=1, max_size=6),
          later=st.integers(0, 2))
    def submit(self, workspace: str, priority: str, chunks: list[tuple[int, int]], later: int) -> None:
        """A render's chunks become ready, some a little later than others (and not in index order)."""
        self.clock += later
        render = f"r{next(self.renders)}"
        self.priority[render] = priority
        for index, (cost, delay) in enumerate(chunks):
            self._add(Chunk(f"{render}-c{index}", workspace, render, cost, priority, self.clock + delay, index))

    @precondition(lambda self: self.priority)
    @rule(data=st.data(), cost=st.sampled_from([30, 150]))
    def arrive_late(self, data: st.DataObject, cost: int) -> None:
        """A chunk of a render already asked for becomes ready (it waited on the asset import)."""
        render = data.draw(st.sampled_from(sorted(self.priority)))
        known = [c for c in (*self.waiting.values(), *self.running.values()) if c.render == render]
        if not known:
            return
        index = data.draw(st.integers(-3, 9))
        chunk_id = f"{render}-late{index}"
        if chunk_id in self.waiting or chunk_id in self.running:
            return
        self.clock += 1
        self._add(Chunk(chunk_id, known[0].workspace, render, cost, self.priority[render], self.clock, index))

    def _add(self, chunk: Chunk) -> None:
        self.waiting[chunk.id] = chunk
        self.queue.add(chunk)

    @rule(slots=st.integers(0, 8))
    def take(self, slots: int) -> None:
        live = [*self.waiting.values(), *self.running.values()]
        self.ledger.prune({c.workspace for c in live}, {c.render for c in live})
        counts: dict[str, int] = {}
        for chunk in self.running.values():
            counts[chunk.workspace] = counts.get(chunk.workspace, 0) + 1
        expected = pick(list(self.waiting.values()), slots, running=counts, shares=self.share, ledger=self.ledger,
                        spare=self.spare)
        got = self.queue.take(slots)
        assert got == expected
        assert self.queue.ledger == self.ledger
        for chunk in got:
            del self.waiting[chunk.id]
            self.running[chunk.id] = chunk

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        chunk_id = data.draw(st.sampled_from(sorted(self.running)))
        assert self.queue.finished(chunk_id) == self.running.pop(chunk_id)

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def node_dies(self, data: st.DataObject) -> None:
        """The chunk's node died: it waits again, first of its render."""
        chunk_id = data.draw(st.sampled_from(sorted(self.running)))
        chunk = self.running.pop(chunk_id)
        self.waiting[chunk_id] = chunk
        assert self.queue.requeue(chunk_id) == chunk

    @precondition(lambda self: self.waiting)
    @rule(data=st.data(), whole=st.booleans())
    def cancel(self, data: st.DataObject, whole: bool) -> None:
        chunk = self.waiting[data.draw(st.sampled_from(sorted(self.waiting)))]
        if whole:
            gone = sorted(c.id for c in self.waiting.values() if c.render == chunk.render)
            assert sorted(c.id for c in self.queue.cancel(chunk.render)) == gone
        else:
            gone = [chunk.id]
            assert self.queue.remove(chunk.id) == chunk
        for chunk_id in gone:
            del self.waiting[chunk_id]

    @precondition(lambda self: self.waiting)
    @rule(data=st.data(), priority=st.sampled_from(PRIORITIES))
    def raise_priority(self, data: st.DataObject, priority: str) -> None:
        render = data.draw(st.sampled_from(sorted({c.render for c in self.waiting.values()})))
        lower = PRIORITIES[PRIORITIES.index(priority) + 1:]
        raised = [c for c in self.waiting.values() if c.render == render and c.priority in lower]
        for chunk in raised:
            self.waiting[chunk.id] = replace(chunk, priority=priority)
        if raised or self.priority[render] in lower:
            self.priority[render] = priority
        assert self.queue.raise_priority(render, priority) == len(raised)

    @rule(workspace=st.sampled_from(WORKSPACES), weight=st.sampled_from([1.0, 2.0, 3.0]), cap=st.integers(1, 6))
    def change_share(self, workspace: str, weight: float, cap: int) -> None:
        self.shares[workspace] = Share(weight, cap)
        self.queue.set_share(workspace, Share(weight, cap))

    @rule()
    def idle_spell(self) -> None:
        """Every running chunk ends and time passes with nothing new."""
        for chunk_id in sorted(self.running):
            assert self.queue.finished(chunk_id) == self.running.pop(chunk_id)
        self.clock += 50

    @rule(workspace=st.sampled_from(WORKSPACES))
    def foreign_chunk_runs(self, workspace: str) -> None:
        """A chunk runs that neither handed out (a retry RQ sent straight to its ready queue)."""
        chunk = Chunk(f"x{next(self.renders)}", workspace, f"xr{next(self.renders)}", 150)
        self.priority[chunk.render] = chunk.priority
        self.running[chunk.id] = chunk
        self.queue.started(chunk)

    @rule()
    def reload(self) -> None:
        """The queue is stored (plain values, JSON) and read back: it goes on deciding the same."""
        self.queue = FairQueue.from_state(json.loads(json.dumps(self.queue.state())), self.share, spare=self.spare)

    @precondition(lambda self: self.waiting)
    @rule()
    def place_in_line(self) -> None:
        waiting = list(self.waiting.values())
        exact = line((), waiting, self.shares, self.ledger, "fair", DEFAULT)
        kinds: dict[str, set[str]] = {}
        for chunk in waiting:
            kinds.setdefault(chunk.render, set()).add(chunk.priority)
        uniform = all(len(k) == 1 for k in kinds.values())
        for render in {c.render for c in waiting}:
            estimate = self.queue.frames_ahead(render)
            assert 0 <= exact.frames_ahead(render) - estimate or not uniform
            if uniform:
                assert exact.frames_ahead(render) - estimate <= place_bound(waiting, self.shares, render)
        assert self.queue.frames_ahead("no-such-render") == exact.total

    @invariant()
    def counts_agree(self) -> None:
        if not hasattr(self, "queue"):
            return
        assert self.queue.chunks_waiting() == len(self.waiting)
        assert self.queue.waiting_frames() == sum(c.cost for c in self.waiting.values())
        assert self.queue.running() == len(self.running)
        assert sorted(self.queue.backlogged()) == sorted({c.workspace for c in self.waiting.values()})


TestAgainstPick = AgainstPick.TestCase
TestAgainstPick.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)


def _queue(chunks: list[Chunk], shares: dict[str, Share], running: dict[str, int] | None = None,
           default: Share = PICKS_DEFAULT) -> FairQueue:
    queue = FairQueue(lambda w: shares.get(w, default))
    for workspace, count in (running or {}).items():
        for n in range(count):
            queue.started(Chunk(f"run-{workspace}-{n}", workspace, f"run-{workspace}", 1))
    for chunk in chunks:
        queue.add(chunk)
    return queue


@given(workloads(), st.integers(0, 12), st.dictionaries(st.sampled_from(WORKSPACES), st.integers(0, 6)))
def test_a_take_fills_every_slot_it_can_and_never_passes_a_cap(
        workload: tuple[list[Chunk], dict[str, Share]], slots: int, running: dict[str, int]) -> None:
    chunks, shares = workload
    share = lambda w: shares.get(w, PICKS_DEFAULT)
    chosen = _queue(chunks, shares, running).take(slots)
    assert len({c.id for c in chosen}) == len(chosen) and set(chosen) <= set(chunks)
    for workspace in {c.workspace for c in chosen}:
        assert running.get(workspace, 0) + sum(c.workspace == workspace for c in chosen) <= share(workspace).cap
    room = sum(max(0, min(sum(c.workspace == w for c in chunks), share(w).cap - running.get(w, 0)))
               for w in {c.workspace for c in chunks})
    assert len(chosen) == min(slots, room)


@settings(max_examples=200)
@given(workloads(max_renders=10))
def test_no_workspace_waiting_throughout_gets_less_than_its_share(
        workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    """One chunk at a time, each finished before the next: while two workspaces both have work
    waiting, the frames each was given over its weight differ by at most one largest chunk and one
    arrival credit of each."""
    chunks, shares = workload
    queue = _queue(chunks, {w: Share(s.weight, 1 << 30) for w, s in shares.items()})
    waiting = list(chunks)
    given_frames = dict.fromkeys(shares, 0)
    largest = {w: max((c.cost for c in chunks if c.workspace == w), default=0) for w in shares}
    while waiting:
        backlogged = {c.workspace for c in waiting}
        (chunk,) = queue.take(1)
        queue.finished(chunk.id)
        waiting.remove(chunk)
        given_frames[chunk.workspace] += chunk.cost
        for a, b in itertools.combinations(sorted(backlogged & {c.workspace for c in waiting}), 2):
            gap = abs(given_frames[a] / shares[a].weight - given_frames[b] / shares[b].weight)
            bound = (largest[a] + ARRIVAL_CREDIT) / shares[a].weight + (largest[b] + ARRIVAL_CREDIT) / shares[b].weight
            assert gap <= bound + 1e-9
    assert queue.take(1) == [] and queue.waiting_frames() == 0


@given(workloads())
def test_a_workspaces_renders_take_turns_each_earliest_chunk_first_and_low_yields(
        workload: tuple[list[Chunk], dict[str, Share]]) -> None:
    chunks, shares = workload
    ordered = _queue(chunks, {w: Share(s.weight, 1 << 30) for w, s in shares.items()}).take(len(chunks))
    assert sorted(c.id for c in ordered) == sorted(c.id for c in chunks)
    for render in {c.render for c in chunks}:
        indexes = [c.index for c in ordered if c.render == render]
        assert indexes == sorted(indexes)
    for workspace in shares:
        mine = [c.priority for c in ordered if c.workspace == workspace]
        assert mine == sorted(mine, key=lambda p: p == "low")  # every normal before any low
    same = [replace(c, workspace="wa", priority="normal") for c in chunks]
    given_frames: dict[str, int] = {}
    remaining = {r: sum(c.cost for c in same if c.render == r) for r in {c.render for c in same}}
    for chunk in _queue(same, {}, default=Share(1.0, 1 << 30)).take(len(same)):
        given_frames[chunk.render] = given_frames.get(chunk.render, 0) + chunk.cost
        remaining[chunk.render] -= chunk.cost
        still = [r for r, left in remaining.items() if left > 0]
        for a, b in itertools.combinations(still, 2):
            assert abs(given_frames.get(a, 0) - given_frames.get(b, 0)) <= 2 * max(c.cost for c in same)


def test_an_arriving_workspace_is_served_next_then_takes_turns() -> None:
    """``test_fairness``'s scenario on the queue: a short render behind a backlog goes first."""
    equal = lambda w: Share(2.0, 16)
    queue = FairQueue(equal)
    for r in range(40):
        for i in range(6):
            queue.add(Chunk(f"a{r}-{i}", "wa", f"a{r}", 150, seq=float(r), index=i))
    first = queue.take(10)
    assert [c.id for c in first[:2]] == ["a0-0", "a1-0"]
    for chunk in first[2:]:
        queue.finished(chunk.id)
    for i in range(2):
        queue.add(Chunk(f"b-{i}", "wb", "b", 90, seq=100.0, index=i))
    assert queue.frames_ahead("b") == 0
    assert [c.id for c in queue.take(2)] == ["b-0", "b-1"]


def test_a_stored_queue_is_plain_values() -> None:
    queue = FairQueue(lambda w: Share(2.0, 1))
    queue.add(Chunk("a-0", "wa", "a", 150, "low", 1.0, 0))
    queue.add(Chunk("a-1", "wa", "a", 150, "low", 1.0, 1))
    queue.take(1)
    stored = queue.state()
    assert json.loads(json.dumps(stored)) == stored
    assert stored["running"] == [{"id": "a-0", "workspace": "wa", "render": "a", "cost": 150, "priority": "low",
                                  "seq": 1.0, "index": 0}]
    assert stored["shares"] == {"wa": [2.0, 1]} and stored["pending"] == []
    assert stored["ledger"] == {"w:wa": -180.0 + 75.0, "r:a": 150.0, "v:clock": 0.0}
    again = FairQueue.from_state(stored, lambda w: Share(2.0, 1))
    assert again.take(1) == []  # at its cap of 1
    again.finished("a-0")
    assert [c.id for c in again.take(1)] == ["a-1"]


def test_a_weight_raised_inside_the_arrival_credit_is_admitted_again_as_pick_admits_it() -> None:
    """A workspace still inside its arrival credit whose weight goes up: ``pick`` clamps it to the
    smaller credit of the new weight at its next call, and so must the queue (a random walk rarely
    lands in this window)."""
    shares = {"wa": Share(1.0, 3)}
    chunks = [Chunk(f"a{i}", "wa", "a", 150, seq=0.0, index=i) for i in range(3)]
    queue, ledger = _queue(chunks, shares), Ledger()
    assert pick(chunks, 0, shares=shares.__getitem__, ledger=ledger) == queue.take(0) == []
    shares["wa"] = Share(3.0, 3)
    queue.set_share("wa", shares["wa"])
    assert pick(chunks, 1, shares=shares.__getitem__, ledger=ledger) == queue.take(1)
    assert queue.ledger == ledger and ledger.served["wa"] == -ARRIVAL_CREDIT / 3 + 150 / 3
