"""Who runs next: fair dispatch of render chunks across workspaces, then across a workspace's renders.

A pure policy over plain values; the runtime obeys it (``reelfarm.farm.runtime.embedded`` when it
claims rows, ``reelfarm.farm.runtime.dispatch`` when it feeds RQ's ready queues). Nothing here
does I/O.

The policy is a work-conserving weighted fair queue, costed in frames (a chunk of 150 frames costs
150), in two levels, in the manner of start-time fair queuing (the same guarantee as deficit round
robin, without a round pointer to keep):

- **Across workspaces.** Each workspace with work waiting has a *virtual service*: the frames
  dispatched for it divided by its weight. The next chunk goes to the workspace with the least
  virtual service that is under its cap on running chunks. A workspace that had nothing waiting or
  running starts ``ARRIVAL_CREDIT`` frames (over its weight) behind the least virtual service of
  those that have: idle time is never banked, but a workspace arriving at a busy farm is served at
  once and its first ``ARRIVAL_CREDIT`` frames go ahead of the backlog's, then it takes turns.
  This is the sleeper credit of Linux's fair scheduler (a waking task starts half a latency period
  behind the minimum): it is what lets a person's short render on a farm busy with someone's
  batch finish in about its time alone, at a bounded cost to the batch (one credit per idle spell).
- **Inside a workspace**, its renders take turns the same way (unweighted), so its own short render
  is not stuck behind its own batch; renders asked for with ``priority="low"`` are served only while
  none of the workspace's ``normal`` renders has a chunk waiting.
- **Inside a render**, chunks go earliest first, so the finished part grows from the start.
- **Caps.** A workspace with ``cap`` chunks running (or dispatched) is passed over; the chunks
  still go to someone else, so no capacity is held back (work-conserving), and an idle farm gives
  one workspace everything up to its cap.

Guarantee (property-tested in ``tests/unit/farm/test_fairness.py``): between two workspaces that
both had work waiting throughout a run of dispatches and were under their caps, the frames each
received divided by its weight differ by at most one largest chunk of each, and the arrival credit
of each, divided by its weight.

``Ledger`` is the only state: virtual service per workspace and per render, kept by the runtime
between rounds (in a table or in Redis); entries of workspaces and renders with nothing waiting
or running are dropped. A ledger lost (a dispatcher's Redis key flushed) only restarts everyone at
zero: fairness from then on, nothing lost.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from reelfarm.shared.plans import PLANS, Plan

Priority = Literal["normal", "low"]
PRIORITIES: tuple[str, ...] = ("normal", "low")
DEFAULT_PRIORITY = "normal"
POLICIES = ("fair", "fifo")
ARRIVAL_CREDIT = 360  # frames: 12 s at 30 fps, a short render's whole; see the module docstring


def outranks(priority: str, other: str) -> bool:
    """Whether a render asked for at ``priority`` is served before one at ``other`` (``normal`` before ``low``)."""
    return PRIORITIES.index(priority) < PRIORITIES.index(other)


def ranked_below(priority: str) -> tuple[str, ...]:
    """The priorities ``priority`` outranks: those a render raised to it leaves."""
    return PRIORITIES[PRIORITIES.index(priority) + 1:]


@dataclass(frozen=True)
class Share:
    """What one workspace is entitled to: its weight against others, and its cap on chunks running at once."""

    weight: float
    cap: int


def plan_share(plan: Plan | str, weight: float | None = None, cap: int | None = None) -> Share:
    """A workspace's share: its plan's, with the operator's overrides (``workspaces.dispatch_weight``
    and ``dispatch_cap``) where set."""
    found = PLANS[plan] if isinstance(plan, str) else plan
    return Share(weight=float(weight) if weight else float(found.dispatch_weight),
                 cap=int(cap) if cap else int(found.dispatch_cap))


@dataclass(frozen=True)
class Chunk:
    """One chunk waiting to be dispatched."""

    id: str
    workspace: str
    render: str
    cost: int  # frames
    priority: str = DEFAULT_PRIORITY
    seq: float = 0.0  # arrival order: when it became ready to run (ties: id)
    index: int = 0  # the chunk's place in its render


@dataclass
class Ledger:
    """Virtual service of workspaces (``served``) and of renders (``render_served``), in frames."""

    served: dict[str, float] = field(default_factory=dict)
    render_served: dict[str, float] = field(default_factory=dict)
    clock: float = 0.0  # virtual time: the least virtual service of those waiting, never going back

    def copy(self) -> Ledger:
        return Ledger(dict(self.served), dict(self.render_served), self.clock)

    def scopes(self) -> dict[str, float]:
        """As stored (a table's rows, a Redis hash): ``w:<workspace>``, ``r:<render>``, ``v:clock``."""
        return {**{f"w:{k}": v for k, v in self.served.items()},
                **{f"r:{k}": v for k, v in self.render_served.items()}, "v:clock": self.clock}

    @classmethod
    def from_scopes(cls, stored: Iterable[tuple[str | bytes, float | bytes | str]]) -> Ledger:
        """The ledger ``scopes`` stored."""
        ledger = cls()
        for raw, served in stored:
            kind, _, key = (raw.decode() if isinstance(raw, bytes) else raw).partition(":")
            if kind == "v":
                ledger.clock = float(served)
            else:
                (ledger.served if kind == "w" else ledger.render_served)[key] = float(served)
        return ledger

    def prune(self, keep_workspaces: Iterable[str], keep_renders: Iterable[str]) -> None:
        """Drop the entries of workspaces and renders with nothing waiting or running."""
        keep_w, keep_r = set(keep_workspaces), set(keep_renders)
        self.served = {k: v for k, v in self.served.items() if k in keep_w}
        self.render_served = {k: v for k, v in self.render_served.items() if k in keep_r}


def pick(waiting: Sequence[Chunk], slots: int, *, running: Mapping[str, int] | None = None,
         shares: Callable[[str], Share] | None = None, ledger: Ledger | None = None,
         policy: str = "fair", until: str | None = None, spare: bool = False) -> list[Chunk]:
    """The chunks to dispatch now, in order, for ``slots`` free places.

    Args:
        waiting: every chunk waiting (any order).
        slots: how many may be dispatched now.
        running: chunks running (or dispatched and not finished) per workspace, for the caps.
        shares: a workspace's share (default: weight 1, no cap).
        ledger: the virtual service so far; updated in place (pass a copy to look ahead).
        policy: ``fair``, or ``fifo`` (arrival order; caps still apply) to compare against.
        until: stop once a chunk of this render is chosen (the last in the list): the same list
            as without it, cut there.
        spare: caps give way to places no other work can take: once every workspace under its
            cap is served, the places left go to workspaces at their caps, in the same order
            (``fair`` only; ``REELFARM_CAPS=spare``).
    """
    ledger = ledger if ledger is not None else Ledger()
    running = dict(running or {})
    share_of = _memo(shares or (lambda _w: Share(1.0, 1 << 30)))
    queues = _Queues(waiting)
    if policy == "fifo":
        return _pick_fifo(queues, slots, running, share_of, until)
    _admit(ledger, queues, share_of, running)
    queues.rank_by(ledger)
    chosen: list[Chunk] = []
    heap = [(ledger.served[w], queues.first_seq(w), w) for w in queues.workspaces()]
    heapq.heapify(heap)
    capped_too = False
    passed: list[str] = []  # workspaces at their caps, in the order they came up
    while len(chosen) < slots:
        if not heap:
            if not (spare and passed):
                break
            # every workspace under its cap is served: the places left are spare, and go to those at theirs
            heap = [(ledger.served[w], queues.first_seq(w), w) for w in passed if queues.has(w)]
            heapq.heapify(heap)
            passed, spare = [], False
            capped_too = True
            continue
        _, _, workspace = heapq.heappop(heap)
        share = share_of(workspace)
        if running.get(workspace, 0) >= share.cap and not capped_too:
            passed.append(workspace)
            continue  # capped: passed over until a chunk of it ends (next call), unless places are spare
        chunk = queues.take(queues.next_render(workspace))
        chosen.append(chunk)
        running[workspace] = running.get(workspace, 0) + 1
        ledger.served[workspace] += chunk.cost / share.weight
        ledger.render_served[chunk.render] = ledger.render_served.get(chunk.render, 0.0) + chunk.cost
        if chunk.render == until:
            break
        queues.rerank(chunk.render)
        if queues.has(workspace):
            heapq.heappush(heap, (ledger.served[workspace], queues.first_seq(workspace), workspace))
    return chosen


def order(waiting: Sequence[Chunk], *, shares: Callable[[str], Share] | None = None,
          ledger: Ledger | None = None, policy: str = "fair", until: str | None = None) -> list[Chunk]:
    """Every waiting chunk in the order the policy would dispatch them with no cap binding: what a
    queued render's place in line is computed from (``frames_ahead``). ``until``: up to the first
    chunk of that render only (``pick``)."""
    uncapped = _memo(shares or (lambda _w: Share(1.0, 1 << 30)))
    return pick(waiting, len(waiting), shares=lambda w: Share(uncapped(w).weight, 1 << 30),
                ledger=(ledger or Ledger()).copy(), policy=policy, until=until)


def place(ahead: int, waiting: int, frames_per_sec: float, now: datetime) -> dict[str, object]:
    """Where a render stands while ``waiting`` of its chunks wait: the Render resource's ``queue``
    (frames ahead of its next chunk, ``Line.frames_ahead``; its chunks waiting; an estimated start
    from the farm's throughput)."""
    start = now + timedelta(seconds=ahead / frames_per_sec) if frames_per_sec > 0 else None
    return {"frames_ahead": int(ahead), "chunks_waiting": int(waiting), "estimated_start_at": start}


@dataclass(frozen=True)
class Line:
    """Every waiting chunk's place as ``order`` gives it, kept with what decided it.

    The order is a function of the chunks waiting (a chunk's fields do not change while it waits,
    but for its priority, which a render asked for again at a higher one raises), the ledger, the
    policy and the workspaces' shares. A runtime keeps the line it computed and uses it again while
    ``basis`` (chunk ids and what tells a raised priority, ledger, policy) and the shares are
    unchanged: each read of a queued render then costs a look at those, not an order of every chunk
    in the farm.

    A line ordered only up to one render's first chunk (``line(..., until=render)``: what a render
    request needs, the line having just changed with its chunks) is not ``complete``: it knows the
    place of the renders ordered so far (``knows``); a read of another render orders it whole.
    """

    basis: Hashable
    shares: Mapping[str, Share]
    ahead: Mapping[str, int]  # render -> frames dispatched before its next chunk
    waiting: Mapping[str, int]  # render -> its chunks in line
    total: int  # frames of every chunk in line
    complete: bool = True  # every chunk ordered, not only those up to one render's first

    def knows(self, render: str) -> bool:
        """Whether ``frames_ahead(render)`` is known (always, on a complete line)."""
        return self.complete or render in self.ahead or render not in self.waiting

    def frames_ahead(self, render: str) -> int:
        """Frames ahead of the render's next chunk; every frame in line for a render none of whose
        chunks is in it (they wait on a dependency, the asset import)."""
        if not self.knows(render):
            raise LookupError(f"render {render} is beyond the part of the line ordered")
        return self.ahead.get(render, self.total)


def line(basis: Hashable, chunks: Sequence[Chunk], shares: Mapping[str, Share], ledger: Ledger, policy: str,
         default_share: Share, until: str | None = None) -> Line:
    """The ``Line`` of ``chunks`` (``order`` with no cap binding, on a copy of ``ledger``); with
    ``until``, ordered up to that render's first chunk only."""
    ordered = order(chunks, shares=lambda w: shares.get(w, default_share), ledger=ledger, policy=policy,
                    until=until)
    ahead: dict[str, int] = {}
    before = 0
    for chunk in ordered:
        ahead.setdefault(chunk.render, before)
        before += chunk.cost
    waiting: dict[str, int] = {}
    total = 0
    for chunk in chunks:
        waiting[chunk.render] = waiting.get(chunk.render, 0) + 1
        total += chunk.cost
    return Line(basis, dict(shares), ahead, waiting, total, complete=len(ordered) == len(chunks))


@dataclass(frozen=True)
class Load:
    """A workspace's work on the farm now: chunks running (or dispatched), chunks waiting and their frames."""

    running: int = 0
    waiting: int = 0
    waiting_frames: int = 0

    def __add__(self, other: Load) -> Load:
        return Load(self.running + other.running, self.waiting + other.waiting,
                    self.waiting_frames + other.waiting_frames)


OTHER = "(other)"


def top_loads(loads: Mapping[str, Load], names: Mapping[str, str], limit: int = 10) -> list[tuple[str, Load]]:
    """The ``limit`` workspaces with the most frames waiting (then running), each labelled by its
    name, and the rest summed under ``(other)``: a label set that stays bounded however many
    workspaces there are. Two workspaces of one name are told apart by their id's first 8 characters."""
    ranked = sorted(loads.items(), key=lambda kv: (-kv[1].waiting_frames, -kv[1].running, kv[0]))
    counts: dict[str, int] = {}
    for workspace, _ in ranked[:limit]:
        counts[names.get(workspace, workspace)] = counts.get(names.get(workspace, workspace), 0) + 1
    shown = []
    for workspace, load in ranked[:limit]:
        name = names.get(workspace, workspace)
        shown.append((f"{name} ({workspace[:8]})" if counts[name] > 1 else name, load))
    rest = Load()
    for _, load in ranked[limit:]:
        rest = rest + load
    return shown + [(OTHER, rest)]


def entitled(shares: Mapping[str, Share], loads: Mapping[str, Load]) -> dict[str, float]:
    """Each busy workspace's share of the farm under the policy: its weight over the weights of
    every workspace with work waiting or running (0 for the idle)."""
    busy = {w for w, load in loads.items() if load.running or load.waiting}
    total = sum(shares[w].weight for w in busy if w in shares)
    return {w: (shares[w].weight / total if w in busy and total else 0.0) for w in shares}


# -- helpers ------------------------------------------------------------------------------------

class _Queues:
    """Waiting chunks by workspace, render and priority, each render's earliest first.

    Every question ``pick`` asks of it costs a heap operation, not a pass over the waiting renders
    (a burst of one workspace's renders would make each dispatch, and each render's place in line,
    quadratic in its size): per workspace, a heap of its renders' earliest arrivals (``first_seq``)
    and, once ``rank_by`` has the ledger, heaps of its normal and low renders by turn (``next_render``).
    Entries are replaced, not updated: one that no longer matches its render is dropped when it
    reaches the top.
    """

    def __init__(self, waiting: Iterable[Chunk]) -> None:
        self.by_render: dict[str, list[Chunk]] = {}
        for chunk in sorted(waiting, key=lambda c: (c.seq, c.index, c.id), reverse=True):
            self.by_render.setdefault(chunk.render, []).append(chunk)  # popped from the end: earliest
        for chunks in self.by_render.values():
            chunks.sort(key=lambda c: (c.index, c.seq, c.id), reverse=True)
        self.renders_of: dict[str, dict[str, None]] = {}  # an ordered set of renders per workspace
        for render, chunks in self.by_render.items():
            self.renders_of.setdefault(chunks[-1].workspace, {})[render] = None
        self._earliest = {render: min(c.seq for c in chunks) for render, chunks in self.by_render.items()}
        self._arrivals: dict[str, list[tuple[float, str]]] = {}
        for workspace, renders in self.renders_of.items():
            self._arrivals[workspace] = [(self._earliest[r], r) for r in renders]
            heapq.heapify(self._arrivals[workspace])
        self._ledger: Ledger | None = None
        self._turns: dict[tuple[str, bool], list[tuple[float, float, str]]] = {}

    def workspaces(self) -> list[str]:
        return [w for w, renders in self.renders_of.items() if renders]

    def has(self, workspace: str) -> bool:
        return bool(self.renders_of.get(workspace))

    def first_seq(self, workspace: str) -> float:
        """The earliest arrival among the workspace's waiting chunks (it has some)."""
        heap = self._arrivals[workspace]
        while heap[0][1] not in self.by_render or self._earliest[heap[0][1]] != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0]

    def rank_by(self, ledger: Ledger) -> None:
        """Order each workspace's renders by their turn under ``ledger`` (which ``pick`` then
        updates, calling ``rerank`` for the render it served)."""
        self._ledger = ledger
        self._turns = {}
        for render in self.by_render:
            self.rerank(render)

    def rerank(self, render: str) -> None:
        """After a chunk of ``render`` was taken and its service counted."""
        chunks = self.by_render.get(render)
        if chunks and self._ledger is not None:
            head = chunks[-1]
            heap = self._turns.setdefault((head.workspace, head.priority == "low"), [])
            heapq.heappush(heap, self._rank(render))

    def _rank(self, render: str) -> tuple[float, float, str]:
        assert self._ledger is not None
        return self._ledger.render_served.get(render, 0.0), self.by_render[render][-1].seq, render

    def next_render(self, workspace: str) -> str:
        """The workspace's render whose turn it is: the least served of its normal renders while
        any waits, else of its low ones; then the earliest head, then the id."""
        for low in (False, True):
            heap = self._turns.get((workspace, low))
            while heap:
                entry = heap[0]
                render = entry[2]
                chunks = self.by_render.get(render)
                if chunks and (chunks[-1].priority == "low") == low and self._rank(render) == entry:
                    return render
                heapq.heappop(heap)
        raise LookupError(f"no render of {workspace} waits")

    def take(self, render: str) -> Chunk:
        chunks = self.by_render[render]
        chunk = chunks.pop()
        if not chunks:
            del self.by_render[render]
            del self.renders_of[chunk.workspace][render]
        elif chunk.seq == self._earliest[render]:
            earliest = min(c.seq for c in chunks)
            if earliest != chunk.seq:
                self._earliest[render] = earliest
                heapq.heappush(self._arrivals[chunk.workspace], (earliest, render))
        return chunk

    def all(self) -> list[Chunk]:
        return [c for chunks in self.by_render.values() for c in chunks]


def _admit(ledger: Ledger, queues: _Queues, share_of: Callable[[str], Share], running: Mapping[str, int]) -> None:
    """Workspaces new to the ledger (they had nothing waiting or running) start ``ARRIVAL_CREDIT``
    frames behind the least virtual service of those waiting; renders new to it, at the least of
    their workspace's."""
    waiting = queues.workspaces()
    known = [ledger.served[w] for w in waiting if w in ledger.served]
    if known:  # monotonic, so arrivals one after another do not push the backlog back further each
        ledger.clock = max(ledger.clock, min(known))
    floor = ledger.clock
    for workspace in waiting:
        if workspace in ledger.served:
            ledger.served[workspace] = max(ledger.served[workspace], floor - ARRIVAL_CREDIT / share_of(workspace).weight)
        elif running.get(workspace, 0):
            ledger.served[workspace] = floor  # busy all along (its ledger lost): no credit
        else:
            ledger.served[workspace] = floor - ARRIVAL_CREDIT / share_of(workspace).weight
        renders = queues.renders_of[workspace]
        seen = [ledger.render_served[r] for r in renders if r in ledger.render_served]
        render_floor = min(seen) if seen else 0.0
        for render in renders:
            ledger.render_served[render] = max(ledger.render_served.get(render, render_floor), render_floor)


def _pick_fifo(queues: _Queues, slots: int, running: dict[str, int],
               share_of: Callable[[str], Share], until: str | None = None) -> list[Chunk]:
    chosen: list[Chunk] = []
    for chunk in sorted(queues.all(), key=lambda c: (c.seq, c.index, c.id)):
        if len(chosen) >= slots:
            break
        if running.get(chunk.workspace, 0) >= share_of(chunk.workspace).cap:
            continue
        chosen.append(chunk)
        running[chunk.workspace] = running.get(chunk.workspace, 0) + 1
        if chunk.render == until:
            break
    return chosen


def _memo(shares: Callable[[str], Share]) -> Callable[[str], Share]:
    cache: dict[str, Share] = {}

    def share_of(workspace: str) -> Share:
        if workspace not in cache:
            cache[workspace] = shares(workspace)
        return cache[workspace]
    return share_of
