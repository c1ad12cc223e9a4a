"""Who runs next, kept between decisions: ``fairness.pick``'s policy over a queue maintained chunk by chunk.

``fairness.pick`` reads every waiting chunk on every call (70 to 150 ms at 100,000 chunks, more
than linear in them: ``benchmarks/fairqueue.py``). ``FairQueue`` keeps what it needs to decide as chunks arrive, run, finish
and leave, so that a decision costs heap operations, not a pass over the backlog:

- ``take(slots)``: O(slots x log(workspaces) + admissions since the last take), whatever waits;
- ``add`` / ``remove`` / ``finished`` / ``requeue``: O(log) each (heap entries are replaced, not
  updated: a stale one is dropped when it comes to the top, and a heap is rebuilt when stale ones
  outnumber live ones, so the cost is amortised per operation);
- ``raise_priority(render)``: O(that render's waiting chunks); ``set_share``: O(log);
- ``frames_ahead(render)``: O(workspaces + that render's workspace's renders), an estimate
  (below); nothing orders the backlog.

**The same decisions as ``fairness.pick``.** Given the same waiting chunks, running counts,
shares and ledger, ``take`` returns the chunks ``pick`` returns, in the same order, and leaves the
ledger as ``pick`` leaves it, when the runtime that calls ``pick`` drops the ledger entries of
workspaces and renders with nothing waiting or running before each call (``Ledger.prune``), as
this queue does at each ``take``. ``tests/unit/farm/test_fairqueue.py`` drives generated
workloads (arrivals, takes, completions, deaths, cancels, raised priorities, weight and cap
changes, idle spells, reloads from ``state``) through both and compares every take. Why the
work per take can be this small, where ``pick`` admits every waiting workspace each call
(``fairness._admit``): a workspace admitted once satisfies ``served >= clock - ARRIVAL_CREDIT /
weight`` from then on while it waits (served only grows; the clock moves only up to the least
served of those waiting), so admitting it again changes nothing; only a workspace that starts
waiting again or whose weight changed is admitted again (``pending``), and only a render new to
the ledger gets its workspace's floor. Caps are held by keeping a workspace at its cap out of the
heap ``take`` pops from (``pick`` pops and passes over it), and putting it back when a chunk of
it ends.

A workspace's share comes from ``shares`` the first time it is seen, and is kept until the
workspace has nothing waiting or running (its ledger entry is dropped then too); ``set_share``
changes it meanwhile.

**Place in line.** ``fairness.line`` orders every waiting chunk (caps ignored) and reads each
render's frames ahead from that order. ``frames_ahead`` computes the same quantity in its fluid
form instead: with ``S`` the virtual service at which the render's next chunk starts, every other
waiting workspace ``Y`` is counted as ``min(its waiting frames, max(0, (S - served_Y) x weight_Y))``
(the frames it gets while its virtual service is below ``S``), and inside the render's own
workspace every other render of its priority class the same way at the render level (all of the
workspace's normal frames when the render is low). In the discrete order each workspace's (and
render's) share is a whole number of chunks, so the exact figure is never lower than the estimate
and exceeds it by at most one largest waiting chunk of each other workspace, plus, because ``S``
itself rests on the estimate inside the workspace, one largest chunk of each other render of its
class in its workspace times ``1 + (the other waiting workspaces' weights) / its weight``
(``place_bound`` in the property test, which holds both sides). That is the scale of what ``line`` cannot
know either (the caps it ignores, every arrival after the read, chunks that fail and run again),
and it is what a render's estimated start needs (``fairness.place``). When every chunk has one
size and each workspace one render, the error is at most one chunk per workspace.

**Stored form** (``state`` / ``from_state``: plain values, JSON as is). On RQ the farm's dispatcher
keeps one queue per ready queue in its memory, current by events, and publishes what readers need
(``reelfarm.farm.runtime.dispatchmirror``): a process that takes over builds its copy from the
waiting queues once. ``view`` is what it publishes, and ``fluid_ahead`` computes a place in line
from it as ``frames_ahead`` does here.

**Spare places** (``spare``): caps may give way to places nothing else can take. Once every
workspace under its cap is served, ``take`` serves those at their caps, from the capped heap, in
the same order (``fairness.pick``'s ``spare``; the property test drives both ways).
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from reelfarm.farm.services.fairness import ARRIVAL_CREDIT, PRIORITIES, Chunk, Ledger, Share
from reelfarm.farm.services.fairplace import RenderView, SpaceView, fluid_ahead

UNCAPPED = 1 << 30  # fairness.pick's cap when no share is given
READY, CAPPED, PENDING = "ready", "capped", "pending"
_SLACK = 64  # stale heap entries tolerated before a heap is rebuilt (beyond as many as live ones)


@dataclass(slots=True)
class _Render:
    """A render's chunks waiting (by id; taken in ``(index, seq, id)`` order) and running."""

    workspace: str
    chunks: dict[str, Chunk] = field(default_factory=dict)
    order: list[tuple[int, float, str]] = field(default_factory=list)  # heap, stale entries allowed
    frames: int = 0
    running: int = 0
    first: Chunk | None = None  # the head, once found (None: look in ``order``)

    def head(self) -> Chunk:
        """The chunk it dispatches next (it has one waiting)."""
        while self.first is None:
            index, seq, chunk_id = self.order[0]
            chunk = self.chunks.get(chunk_id)
            if chunk is not None and chunk.index == index and chunk.seq == seq:
                self.first = chunk
            else:
                heapq.heappop(self.order)
        return self.first


@dataclass(slots=True)
class _Space:
    """A workspace's renders with chunks waiting, by turn (normal, low), and its chunks by arrival."""

    renders: dict[str, None] = field(default_factory=dict)
    turns: tuple[list[tuple[float, float, str]], list[tuple[float, float, str]]] = field(
        default_factory=lambda: ([], []))
    arrivals: list[tuple[float, str]] = field(default_factory=list)
    waiting: int = 0
    frames: int = 0
    running: int = 0
    first: float | None = None  # the earliest arrival, once found (None: look in ``arrivals``)


class FairQueue:
    """Waiting render chunks in the order of ``fairness.pick``, kept between decisions (module docstring).

    Args:
        shares: a workspace's share, asked the first time it is seen (default: weight 1, no cap).
        ledger: the virtual service so far (a stored one); the queue keeps its own copy.
    """

    def __init__(self, shares: Callable[[str], Share] | None = None, ledger: Ledger | None = None,
                 spare: bool = False) -> None:
        self.spare = spare  # caps give way to places no other work can take (``fairness.pick``'s ``spare``)
        self._share_of = shares or (lambda _w: Share(1.0, UNCAPPED))
        self._shares: dict[str, Share] = {}
        self._ledger = ledger.copy() if ledger is not None else Ledger()
        self._spaces: dict[str, _Space] = {}  # workspaces with chunks waiting or running
        self._renders: dict[str, _Render] = {}  # renders with chunks waiting or running
        self._waiting: dict[str, str] = {}  # chunk id -> render
        self._running: dict[str, Chunk] = {}
        self._frames = 0
        self._status: dict[str, str] = {}  # every workspace with chunks waiting: READY, CAPPED or PENDING
        self._ready: list[tuple[float, float, str]] = []  # (served, first arrival, workspace)
        self._capped: list[tuple[float, float, str]] = []  # (served, first arrival, workspace)
        self._pending: dict[str, None] = {}
        self._unranked: dict[str, None] = {}  # waiting renders new to the ledger: their floor comes at admission
        self._idle: dict[str, None] = dict.fromkeys(self._ledger.served)  # ledger entries to drop if still idle
        self._idle_renders: dict[str, None] = dict.fromkeys(self._ledger.render_served)
        self._changed: tuple[set[str], set[str]] = (set(), set())  # workspaces, renders (``changed``)

    # -- what the runtime tells it ------------------------------------------------------------

    def add(self, chunk: Chunk) -> None:
        """A chunk starts waiting (ready to run)."""
        if chunk.id in self._waiting or chunk.id in self._running:
            raise ValueError(f"chunk {chunk.id} is already in the queue")
        space, render = self._records(chunk)
        if render.workspace != chunk.workspace:
            raise ValueError(f"render {chunk.render} belongs to {render.workspace}, not {chunk.workspace}")
        self._mark(chunk.workspace, chunk.render)
        before = self._first_seq(space) if self._status.get(chunk.workspace) in (READY, CAPPED) else None
        render.chunks[chunk.id] = chunk
        render.frames += chunk.cost
        if render.first is not None and (chunk.index, chunk.seq, chunk.id) < \
                (render.first.index, render.first.seq, render.first.id):
            render.first = None
        if space.first is not None and chunk.seq < space.first:
            space.first = chunk.seq
        space.renders[chunk.render] = None
        space.waiting += 1
        space.frames += chunk.cost
        self._waiting[chunk.id] = chunk.render
        self._frames += chunk.cost
        self._push(render.order, (chunk.index, chunk.seq, chunk.id), len(render.chunks),
                   lambda: [(c.index, c.seq, c.id) for c in render.chunks.values()])
        self._push(space.arrivals, (chunk.seq, chunk.id), space.waiting, lambda: self._arrivals(space))
        if len(render.chunks) == 1:
            if chunk.render in self._ledger.render_served:
                self._rank(chunk.render)
            else:
                self._unranked[chunk.render] = None
        elif render.head() is chunk and chunk.render not in self._unranked:
            self._rank(chunk.render)
        if space.waiting == 1:
            self._status[chunk.workspace] = PENDING
            self._pending[chunk.workspace] = None
        elif before is not None and self._first_seq(space) != before:
            self._place(chunk.workspace)

    def remove(self, chunk_id: str) -> Chunk | None:
        """A waiting chunk leaves without running (canceled); None if it was not waiting."""
        render_id = self._waiting.get(chunk_id)
        if render_id is None:
            return None
        render = self._renders[render_id]
        chunk = render.chunks[chunk_id]
        was_head = render.head() is chunk
        space = self._spaces[chunk.workspace]
        before = self._first_seq(space) if self._status.get(chunk.workspace) in (READY, CAPPED) else None
        self._detach(chunk)
        if was_head and render.chunks and render_id not in self._unranked:
            self._rank(render_id)
        if before is not None and space.waiting and self._first_seq(space) != before:
            self._place(chunk.workspace)
        self._forget(chunk.workspace, render_id)
        return chunk

    def cancel(self, render: str) -> list[Chunk]:
        """Every waiting chunk of ``render`` leaves (a canceled render)."""
        record = self._renders.get(render)
        ids = sorted(record.chunks) if record is not None else []
        return [c for c in (self.remove(i) for i in ids) if c is not None]

    def started(self, chunk: Chunk) -> None:
        """A chunk runs that this queue did not hand out (a retry sent straight to a ready queue, a
        queue rebuilt while chunks run): it counts against its workspace's cap until ``finished``."""
        if chunk.id in self._waiting or chunk.id in self._running:
            raise ValueError(f"chunk {chunk.id} is already in the queue")
        self._run(chunk)
        self._recap(chunk.workspace)

    def finished(self, chunk_id: str) -> Chunk | None:
        """A running chunk ended (done, failed for good, or lost); None if it was not running."""
        chunk = self._running.pop(chunk_id, None)
        if chunk is None:
            return None
        self._mark(chunk.workspace, chunk.render)
        self._spaces[chunk.workspace].running -= 1
        self._renders[chunk.render].running -= 1
        self._recap(chunk.workspace)
        self._forget(chunk.workspace, chunk.render)
        return chunk

    def requeue(self, chunk_id: str) -> Chunk | None:
        """A running chunk waits again, first of its render (its node died); None if it was not running."""
        chunk = self.finished(chunk_id)
        if chunk is not None:
            self.add(chunk)
        return chunk

    def set_share(self, workspace: str, share: Share) -> None:
        """The workspace's weight or cap changed (an operator's override, a new plan)."""
        self._mark(workspace)
        old = self._share(workspace)
        self._shares[workspace] = share
        status = self._status.get(workspace)
        if status in (READY, CAPPED) and share.weight != old.weight:
            self._status[workspace] = PENDING  # admitted again: its arrival credit is per weight
            self._pending[workspace] = None
        else:
            self._recap(workspace)
        if workspace not in self._spaces:
            self._idle[workspace] = None

    def raise_priority(self, render: str, priority: str) -> int:
        """Give the render's waiting chunks ``priority`` where theirs ranks below it; returns how many."""
        record = self._renders.get(render)
        if record is None or not record.chunks:
            return 0
        lower = PRIORITIES[PRIORITIES.index(priority) + 1:]
        raised = [c.id for c in record.chunks.values() if c.priority in lower]
        for chunk_id in raised:
            record.chunks[chunk_id] = replace(record.chunks[chunk_id], priority=priority)
        record.first = None
        self._mark(record.workspace, render)
        if raised and render not in self._unranked:
            self._rank(render)
        return len(raised)

    # -- decisions ----------------------------------------------------------------------------

    def take(self, slots: int) -> list[Chunk]:
        """The chunks to dispatch now, in order, for ``slots`` free places; they count as running
        until ``finished``. The same as ``fairness.pick`` (module docstring)."""
        self._prune()
        self._admit()
        chosen: list[Chunk] = []
        while len(chosen) < slots and self._top(True) is not None:
            chosen.append(self._serve(self._ready[0][2]))
        while self.spare and len(chosen) < slots and self._top(False) is not None:
            chosen.append(self._serve(self._capped[0][2], spare=True))  # every place left is spare
        return chosen

    def frames_ahead(self, render: str) -> int:
        """Frames dispatched before the render's next chunk under the policy with no cap binding,
        in fluid form: ``fairness.line``'s figure or a little less (module docstring).
        Every frame waiting for a render none of whose chunks waits."""
        record = self._renders.get(render)
        if record is None or not record.chunks:
            return self._frames
        spaces, renders = self.view(self._status, self._spaces[record.workspace].renders)
        return fluid_ahead(render, record.workspace, spaces, renders)

    # -- reading ------------------------------------------------------------------------------

    @property
    def ledger(self) -> Ledger:
        """A copy of the virtual service kept (``Ledger``)."""
        return self._ledger.copy()

    def waiting_frames(self) -> int:
        """Frames of every waiting chunk."""
        return self._frames

    def chunks_waiting(self, render: str | None = None) -> int:
        """Chunks waiting: of ``render``, or in all."""
        if render is None:
            return len(self._waiting)
        record = self._renders.get(render)
        return len(record.chunks) if record is not None else 0

    def running(self, workspace: str | None = None) -> int:
        """Chunks running (handed out or ``started``, not ``finished``): of ``workspace``, or in all."""
        if workspace is None:
            return len(self._running)
        space = self._spaces.get(workspace)
        return space.running if space is not None else 0

    def backlogged(self) -> list[str]:
        """The workspaces with chunks waiting."""
        return list(self._status)

    def workspaces(self) -> list[str]:
        """The workspaces with chunks waiting or running."""
        return list(self._spaces)

    def has(self, chunk_id: str) -> bool:
        """Whether the chunk waits or runs here."""
        return chunk_id in self._waiting or chunk_id in self._running

    def waiting_ids(self, workspace: str) -> list[str]:
        """The ids of the workspace's waiting chunks."""
        space = self._spaces.get(workspace)
        if space is None:
            return []
        return [c for r in space.renders for c in self._renders[r].chunks]

    def chunk(self, chunk_id: str) -> Chunk | None:
        """A waiting chunk, by id."""
        render = self._waiting.get(chunk_id)
        return self._renders[render].chunks[chunk_id] if render is not None else None

    def share(self, workspace: str) -> Share:
        """The share the queue holds the workspace to."""
        return self._share(workspace)

    def served(self, workspace: str) -> float | None:
        """The workspace's virtual service in the ledger (None: it has no entry)."""
        return self._ledger.served.get(workspace)

    def render_served(self, render: str) -> float | None:
        """The render's virtual service in the ledger (None: it has no entry)."""
        return self._ledger.render_served.get(render)

    @property
    def clock(self) -> float:
        """The ledger's virtual time."""
        return self._ledger.clock

    def waiting_in(self, workspace: str) -> int:
        """Chunks of the workspace waiting."""
        space = self._spaces.get(workspace)
        return space.waiting if space is not None else 0

    def changed(self) -> tuple[set[str], set[str]]:
        """The workspaces and renders whose waiting chunks, running count, share or virtual service
        changed since the last call (what a published ``view`` must write again); clears them."""
        changed, self._changed = self._changed, (set(), set())
        return changed

    def view(self, workspaces: Iterable[str], renders: Iterable[str]) -> tuple[dict[str, SpaceView], dict[str, RenderView]]:
        """What ``fluid_ahead`` reads, for those of ``workspaces`` and ``renders`` with chunks
        waiting: each workspace's ``SpaceView`` and each render's ``RenderView``, its virtual service as
        the next take would admit it (the ledger left as it is)."""
        served = self._would_serve()
        new_heads: dict[str, int] = {}  # per workspace, the least head cost of its renders new to the ledger
        for render in self._unranked:
            record = self._renders[render]
            cost = record.head().cost
            new_heads[record.workspace] = min(cost, new_heads.get(record.workspace, cost))
        spaces = {w: SpaceView(self._spaces[w].waiting, self._spaces[w].frames, served(w), self._share(w).weight,
                               self._first_seq(self._spaces[w]), self._next_cost(w, new_heads.get(w)))
                  for w in workspaces if w in self._status}
        floors: dict[str, float] = {}
        turns: dict[str, RenderView] = {}
        for render in renders:
            found = self._renders.get(render)
            if found is None or not found.chunks:
                continue
            record = found
            if render in self._unranked:
                if record.workspace not in floors:
                    floors[record.workspace] = self._render_floor(self._spaces[record.workspace])
                rank = floors[record.workspace]
            else:
                rank = self._ledger.render_served[render]
            head = record.head()
            turns[render] = RenderView(record.workspace, len(record.chunks), record.frames, rank,
                                       head.priority == "low", head.seq, head.cost)
        return spaces, turns

    def state(self) -> dict[str, Any]:
        """Everything the queue keeps, as plain values (``from_state`` reads it back)."""
        return {"ledger": self._ledger.scopes(),
                "waiting": [asdict(c) for r in self._renders.values() for c in r.chunks.values()],
                "running": [asdict(c) for c in self._running.values()],
                "shares": {w: [s.weight, s.cap] for w, s in self._shares.items()},
                "pending": list(self._pending)}

    @classmethod
    def from_state(cls, stored: Mapping[str, Any], shares: Callable[[str], Share] | None = None,
                   spare: bool = False) -> FairQueue:
        """The queue ``state`` gave, which decides from here as that one would have."""
        queue = cls(shares, Ledger.from_scopes(stored["ledger"].items()), spare)
        queue._shares = {w: Share(float(weight), int(cap)) for w, (weight, cap) in stored["shares"].items()}
        for raw in stored["running"]:
            queue._run(Chunk(**raw))
        for raw in stored["waiting"]:
            queue.add(Chunk(**raw))
        pending = set(stored["pending"])
        for workspace in list(queue._pending):
            if workspace not in pending:
                del queue._pending[workspace]
                queue._place(workspace)
        return queue

    # -- helpers ------------------------------------------------------------------------------

    def _mark(self, workspace: str, render: str | None = None) -> None:
        self._changed[0].add(workspace)
        if render is not None:
            self._changed[1].add(render)

    def _share(self, workspace: str) -> Share:
        found = self._shares.get(workspace)
        if found is None:
            found = self._shares[workspace] = self._share_of(workspace)
        return found

    @staticmethod
    def _push(heap: list[Any], entry: Any, live: int, fresh: Callable[[], list[Any]]) -> None:
        """Push onto a heap whose stale entries are dropped lazily; rebuilt from ``fresh`` when the
        stale ones outnumber the live ones."""
        heapq.heappush(heap, entry)
        if len(heap) > 2 * live + _SLACK:
            heap[:] = fresh()
            heapq.heapify(heap)

    def _turn(self, render: str) -> tuple[float, float, str]:
        return self._ledger.render_served[render], self._renders[render].head().seq, render

    def _rank(self, render: str) -> None:
        """Put the render among its workspace's by turn, as its head and service now are."""
        record = self._renders[render]
        space = self._spaces[record.workspace]
        low = record.head().priority == "low"
        self._push(space.turns[low], self._turn(render), len(space.renders), lambda: [
            self._turn(r) for r in space.renders
            if r not in self._unranked and (self._renders[r].head().priority == "low") == low])

    def _arrivals(self, space: _Space) -> list[tuple[float, str]]:
        return [(c.seq, c.id) for r in space.renders for c in self._renders[r].chunks.values()]

    def _first_seq(self, space: _Space) -> float:
        """The earliest arrival among the workspace's waiting chunks (it has some)."""
        while space.first is None:
            seq, chunk_id = space.arrivals[0]
            render = self._waiting.get(chunk_id)
            if render is not None and self._renders[render].chunks[chunk_id].seq == seq:
                space.first = seq
            else:
                heapq.heappop(space.arrivals)
        return space.first

    def _place(self, workspace: str) -> None:
        """Put an admitted workspace with chunks waiting where its cap says: served next, or aside."""
        space = self._spaces[workspace]
        served = self._ledger.served[workspace]
        if space.running >= self._share(workspace).cap:
            self._status[workspace] = CAPPED
            self._push(self._capped, (served, self._first_seq(space), workspace), len(self._status), lambda: [
                (self._ledger.served[w], self._first_seq(self._spaces[w]), w)
                for w, s in self._status.items() if s == CAPPED])
        else:
            self._status[workspace] = READY
            self._push(self._ready, (served, self._first_seq(space), workspace), len(self._status), lambda: [
                (self._ledger.served[w], self._first_seq(self._spaces[w]), w)
                for w, s in self._status.items() if s == READY])

    def _recap(self, workspace: str) -> None:
        """After its running count or cap changed: moved between served next and aside if it must be."""
        status = self._status.get(workspace)
        if status in (READY, CAPPED):
            capped = self._spaces[workspace].running >= self._share(workspace).cap
            if capped != (status == CAPPED):
                self._place(workspace)

    def _top(self, ready: bool) -> tuple[Any, ...] | None:
        """The first live entry of the ready (or capped) heap, stale ones dropped."""
        heap: list[Any] = self._ready if ready else self._capped
        while heap:
            entry = heap[0]
            workspace = entry[-1]
            if self._status.get(workspace) == (READY if ready else CAPPED) and \
                    entry[0] == self._ledger.served[workspace] and \
                    entry[1] == self._first_seq(self._spaces[workspace]):
                return entry
            heapq.heappop(heap)
        return None

    def _next_render(self, space: _Space) -> str:
        """The workspace's render whose turn it is: normal renders while any waits, then low ones."""
        heap = self._clean(space, False) or self._clean(space, True)
        if not heap:
            raise LookupError("no render of the workspace waits")
        return heap[0][2]

    def _serve(self, workspace: str, spare: bool = False) -> Chunk:
        """Dispatch the next chunk of the workspace on top of the ready heap (whose entry, and its
        render's, are replaced in place: one sift each, not a pop and a push); ``spare``: on top of
        the capped heap, a spare place (``take``)."""
        space = self._spaces[workspace]
        render = self._next_render(space)
        record = self._renders[render]
        chunk = record.head()
        heapq.heappop(record.order)
        self._running[chunk.id] = chunk
        space.running += 1
        record.running += 1
        self._detach(chunk)
        share = self._share(workspace)
        served = self._ledger.served[workspace] = self._ledger.served[workspace] + chunk.cost / share.weight
        rendered = self._ledger.render_served[render] = self._ledger.render_served[render] + chunk.cost
        low = chunk.priority == "low"
        turns = space.turns[low]
        head = record.head() if record.chunks else None
        if head is not None and (head.priority == "low") == low:
            heapq.heapreplace(turns, (rendered, head.seq, render))
        else:
            heapq.heappop(turns)
            if head is not None:
                self._rank(render)
        if spare:
            heapq.heappop(self._capped)
            if space.waiting:
                self._place(workspace)
        elif space.waiting and space.running < share.cap:
            heapq.heapreplace(self._ready, (served, self._first_seq(space), workspace))
        else:
            heapq.heappop(self._ready)
            if space.waiting:
                self._place(workspace)
        return chunk

    def _run(self, chunk: Chunk) -> None:
        self._mark(chunk.workspace, chunk.render)
        self._running[chunk.id] = chunk
        space, render = self._records(chunk)
        space.running += 1
        render.running += 1

    def _records(self, chunk: Chunk) -> tuple[_Space, _Render]:
        """The chunk's workspace and render, made if new."""
        space = self._spaces.get(chunk.workspace)
        if space is None:
            space = self._spaces[chunk.workspace] = _Space()
        render = self._renders.get(chunk.render)
        if render is None:
            render = self._renders[chunk.render] = _Render(chunk.workspace)
        return space, render

    def _detach(self, chunk: Chunk) -> None:
        """Take a waiting chunk out of the counts (its heap entries go stale)."""
        self._mark(chunk.workspace, chunk.render)
        render = self._renders[chunk.render]
        space = self._spaces[chunk.workspace]
        if render.first is not None and render.first.id == chunk.id:
            render.first = None
        if space.first == chunk.seq:
            space.first = None
        del render.chunks[chunk.id]
        del self._waiting[chunk.id]
        render.frames -= chunk.cost
        space.frames -= chunk.cost
        space.waiting -= 1
        self._frames -= chunk.cost
        if not render.chunks:
            del space.renders[chunk.render]
            self._unranked.pop(chunk.render, None)
        if not space.waiting:
            self._status.pop(chunk.workspace, None)
            self._pending.pop(chunk.workspace, None)

    def _forget(self, workspace: str, render: str) -> None:
        """Drop the records of a render and a workspace with nothing waiting or running; their ledger
        entries go at the next take, if they are still idle then (as ``Ledger.prune`` before ``pick``)."""
        record = self._renders.get(render)
        if record is not None and not record.chunks and not record.running:
            del self._renders[render]
            self._idle_renders[render] = None
        space = self._spaces.get(workspace)
        if space is not None and not space.waiting and not space.running:
            del self._spaces[workspace]
            self._idle[workspace] = None

    def _prune(self) -> None:
        for workspace in self._idle:
            if workspace not in self._spaces:
                self._ledger.served.pop(workspace, None)
                self._shares.pop(workspace, None)
                self._changed[0].add(workspace)
        for render in self._idle_renders:
            if render not in self._renders:
                self._ledger.render_served.pop(render, None)
                self._changed[1].add(render)
        self._idle.clear()
        self._idle_renders.clear()

    def _admit(self) -> None:
        """``fairness._admit`` for what changed since the last take (module docstring)."""
        pending = list(self._pending)
        self._pending.clear()
        floor = self._ledger.clock = self._clock(pending)
        for workspace in pending:
            self._mark(workspace)
            self._ledger.served[workspace] = self._admitted(workspace, floor, self._spaces[workspace].running)
        for workspace in pending:
            self._place(workspace)
        new: dict[str, list[str]] = {}
        for render in self._unranked:
            new.setdefault(self._renders[render].workspace, []).append(render)
        self._unranked.clear()
        for workspace, renders in new.items():
            space = self._spaces[workspace]
            tops = [heap[0][0] for heap in (self._clean(space, False), self._clean(space, True)) if heap]
            render_floor = min(tops) if tops else 0.0
            for render in renders:
                self._mark(workspace, render)
                self._ledger.render_served[render] = render_floor
            for render in renders:
                self._rank(render)

    def _clean(self, space: _Space, low: bool) -> list[tuple[float, float, str]]:
        """The workspace's heap of normal (or low) renders by turn, its top live."""
        heap = space.turns[low]
        while heap:
            served, seq, render = heap[0]
            if render in space.renders and render not in self._unranked:
                head = self._renders[render].head()
                if (head.priority == "low") == low and head.seq == seq and \
                        self._ledger.render_served[render] == served:
                    break
            heapq.heappop(heap)
        return heap

    def _clock(self, pending: Iterable[str]) -> float:
        """The virtual time admission sets: never back, up to the least service of those waiting
        (the admitted ones' and those of ``pending`` already in the ledger)."""
        known = [self._ledger.served[w] for w in pending if w in self._ledger.served]
        known += [entry[0] for entry in (self._top(True), self._top(False)) if entry is not None]
        return max(self._ledger.clock, min(known)) if known else self._ledger.clock

    def _admitted(self, workspace: str, floor: float, running: int) -> float:
        credit = ARRIVAL_CREDIT / self._share(workspace).weight
        if workspace in self._ledger.served:
            return max(self._ledger.served[workspace], floor - credit)
        return floor if running else floor - credit

    def _would_serve(self) -> Callable[[str], float]:
        """Each waiting workspace's virtual service as the next take (with nothing running, as
        ``fairness.order`` sees it) would admit it, the ledger left as it is."""
        floor = self._clock(self._pending)
        admitted = {w: self._admitted(w, floor, 0) for w in self._pending}
        return lambda w: admitted[w] if w in admitted else self._ledger.served[w]

    def _render_floor(self, space: _Space) -> float:
        """The virtual service a render new to the ledger would be given in the workspace: the
        least of its ranked renders' (``_admit``)."""
        tops = [heap[0][0] for heap in (self._clean(space, False), self._clean(space, True)) if heap]
        return min(tops) if tops else 0.0

    def _next_cost(self, workspace: str, new_head: int | None) -> int:
        """The least cost of the chunk the workspace may dispatch next: its render whose turn it is
        (normal first), or one new to the ledger (``new_head``, the least of theirs)."""
        space = self._spaces[workspace]
        heap = self._clean(space, False) or self._clean(space, True)
        costs = [self._renders[heap[0][2]].head().cost] if heap else []
        if new_head is not None:
            costs.append(new_head)
        return min(costs) if costs else min(self._renders[r].head().cost for r in space.renders)
