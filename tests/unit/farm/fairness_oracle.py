"""The dispatch policy's first, plainest form: every question a pass over the waiting renders.

``reelfarm.farm.services.fairness`` answers the same questions from heaps (a burst of one
workspace's renders made each pass quadratic); ``test_fairness_heaps.py`` holds it to this.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from reelfarm.farm.services.fairness import ARRIVAL_CREDIT, Chunk, Ledger, Share


def pick(waiting: Sequence[Chunk], slots: int, *, running: Mapping[str, int] | None = None,
         shares: Callable[[str], Share] | None = None, ledger: Ledger | None = None) -> list[Chunk]:
    ledger = ledger if ledger is not None else Ledger()
    running = dict(running or {})
    share_of = shares or (lambda _w: Share(1.0, 1 << 30))
    queues = _Queues(waiting)
    _admit(ledger, queues, share_of, running)
    chosen: list[Chunk] = []
    heap = [(ledger.served[w], queues.first_seq(w), w) for w in queues.workspaces()]
    heapq.heapify(heap)
    while heap and len(chosen) < slots:
        _, _, workspace = heapq.heappop(heap)
        share = share_of(workspace)
        if running.get(workspace, 0) >= share.cap:
            continue
        chunk = _next_in(workspace, queues, ledger)
        chosen.append(chunk)
        running[workspace] = running.get(workspace, 0) + 1
        ledger.served[workspace] += chunk.cost / share.weight
        ledger.render_served[chunk.render] = ledger.render_served.get(chunk.render, 0.0) + chunk.cost
        if queues.has(workspace):
            heapq.heappush(heap, (ledger.served[workspace], queues.first_seq(workspace), workspace))
    return chosen


class _Queues:
    def __init__(self, waiting: Iterable[Chunk]) -> None:
        self.by_render: dict[str, list[Chunk]] = {}
        for chunk in sorted(waiting, key=lambda c: (c.seq, c.index, c.id), reverse=True):
            self.by_render.setdefault(chunk.render, []).append(chunk)
        for chunks in self.by_render.values():
            chunks.sort(key=lambda c: (c.index, c.seq, c.id), reverse=True)
        self.renders_of: dict[str, list[str]] = {}
        for render, chunks in self.by_render.items():
            self.renders_of.setdefault(chunks[-1].workspace, []).append(render)

    def workspaces(self) -> list[str]:
        return [w for w, renders in self.renders_of.items() if renders]

    def has(self, workspace: str) -> bool:
        return bool(self.renders_of.get(workspace))

    def first_seq(self, workspace: str) -> float:
        return min(min(c.seq for c in self.by_render[r]) for r in self.renders_of[workspace])

    def candidates(self, workspace: str) -> list[str]:
        renders = self.renders_of[workspace]
        normal = [r for r in renders if self.by_render[r][-1].priority != "low"]
        return normal or renders

    def take(self, render: str) -> Chunk:
        chunks = self.by_render[render]
        chunk = chunks.pop()
        if not chunks:
            del self.by_render[render]
            self.renders_of[chunk.workspace].remove(render)
        return chunk


def _admit(ledger: Ledger, queues: _Queues, share_of: Callable[[str], Share], running: Mapping[str, int]) -> None:
    waiting = queues.workspaces()
    known = [ledger.served[w] for w in waiting if w in ledger.served]
    if known:
        ledger.clock = max(ledger.clock, min(known))
    floor = ledger.clock
    for workspace in waiting:
        if workspace in ledger.served:
            ledger.served[workspace] = max(ledger.served[workspace], floor - ARRIVAL_CREDIT / share_of(workspace).weight)
        elif running.get(workspace, 0):
            ledger.served[workspace] = floor
        else:
            ledger.served[workspace] = floor - ARRIVAL_CREDIT / share_of(workspace).weight
        renders = queues.renders_of[workspace]
        seen = [ledger.render_served[r] for r in renders if r in ledger.render_served]
        render_floor = min(seen) if seen else 0.0
        for render in renders:
            ledger.render_served[render] = max(ledger.render_served.get(render, render_floor), render_floor)


def _next_in(workspace: str, queues: _Queues, ledger: Ledger) -> Chunk:
    def rank(render: str) -> tuple[float, float, str]:
        head = queues.by_render[render][-1]
        return ledger.render_served.get(render, 0.0), head.seq, render
    return queues.take(min(queues.candidates(workspace), key=rank))
