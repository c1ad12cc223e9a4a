"""The dispatcher's own copy of the fair queue: decisions that cost per decision, not per backlog.

``fairness.pick`` over every waiting chunk, each round, made a round cost the backlog (457 ms at
100,000 chunks in 10 workspaces, 2.1 s in 100). The process that dispatches (``Dispatcher.round``,
under the round lock; in a farm the holder of the dispatch lease) keeps instead one
``FairQueue`` per ready queue (``render-nvenc``, ``render-gpu``, ``render``) in memory, which
decides as ``pick`` does (``reelfarm.farm.services.fairqueue``), and keeps it current from what
changed since its last round:

- **Events.** Every process that changes what waits pushes a line to the Redis list
  ``fair:events``: a chunk arrived in its waiting queue (``a``: an enqueue, or a node releasing the
  chunks that waited on a job it finished), left without running (``g``: canceled), was sent to
  another ready queue (``t``), or a render's chunks were raised to a priority (``p``) or given one
  by an operator (``r``, ``reelfarm.farm.runtime.renderholds``). A round takes
  the whole list in one ``MULTI`` (``LRANGE`` + ``DEL``) and applies it: O(events).
- **Running chunks** are those in ``fair:active``, whose RQ status a round reads (O(chunks
  running: the farm's places, not its backlog)); one that ended leaves the queues' running counts.
  A chunk taken by one ready queue's ``FairQueue`` counts against its workspace's cap in the
  other two (``FairQueue.started``). Each ready queue keeps its own virtual service: a GPU place
  and a CPU place are different resources, shared out each on its own.
- **A generation.** ``fair:gen`` is raised by each round that changed anything; a process whose
  copy is of another generation (another process dispatched meanwhile, a fresh process, Redis that
  came back empty) builds its copy again from the waiting queues, the turns, ``fair:active`` and
  the stored virtual service (``fair:ledger:<queue>``): O(backlog), once per change of hands.
- **A sweep** (every ``SWEEP_SEC`` of a copy's life) is the safety net: each workspace's waiting
  queue's length against the copy's count (one pipelined ``LLEN`` a workspace; a workspace that
  differs is read again whole: a chunk whose event was lost), and the workspaces' shares read
  again (an operator's new weight or cap; ``Shares`` keeps them ``SHARES_TTL_SEC``).

What the rest of the farm reads is **published** by the round, for what it changed only:

- ``fair:counts:<queue>``: workspace -> ``chunks frames served weight first next-cost`` of what waits;
- ``fair:renders:<queue>:<workspace>``: render -> ``chunks frames served low since next-cost``;
- ``fair:where``: render -> ``<queue> <workspace>``; ``fair:since:<queue>``: render -> its next
  chunk's arrival (a sorted set: renders waiting past a time, in one ``ZRANGEBYSCORE``);
- ``fair:ledger:<queue>``: the virtual service (``Ledger.scopes``), what a new copy starts from;
- ``fair:backlog:<queue>``: a list as long as the chunks waiting for that queue (its entries carry
  nothing): what an autoscaler reads (KEDA's Redis list scaler: ``LLEN``); lengthened or cut by
  the difference each round.

A render's place in line (``place``) is then ``fairqueue.fluid_ahead`` over two hashes: the
workspaces of its queue and the renders of its workspace, what the copy's own
``FairQueue.frames_ahead`` computes.
"""
from __future__ import annotations

import heapq
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reelfarm.farm.services.fairness import Chunk, Ledger, Share
from reelfarm.farm.services.fairplace import RenderView, SpaceView, fluid_ahead
from reelfarm.farm.services.fairqueue import FairQueue
from reelfarm.farm.services.pools import queue_key, split_key
from reelfarm.farm.services.queues import GPU_QUEUE, NVENC_QUEUE, RENDER_QUEUE

log = logging.getLogger("reelfarm.farm")

TARGETS = (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)
SWEEP_SEC = 5.0
READ_BATCH = 5_000  # ids a command when a copy is built (HMGET of turns)


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def chunk_of_turn(rq_id: str, workspace: str, entry: Mapping[str, Any]) -> Chunk:
    """The ``Chunk`` a stored turn describes."""
    return Chunk(rq_id, workspace, entry.get("render", rq_id), int(entry.get("cost", 1)),
                 entry.get("priority", "normal"), float(entry.get("seq", 0.0)), int(entry.get("index", 0)))


@dataclass
class Round:
    """What one round's bookkeeping saw: whether anything changed (the generation is raised)."""

    changed: bool = False


@dataclass
class Mirror:
    """One process's copy of the fair queues (module docstring)."""

    keys: Callable[[str], str]  # the Dispatcher's key(name)
    waiting_list: Callable[[str], str]
    redis: Any
    shares: Callable[[Iterable[str]], dict[str, Share]]
    default_share: Share
    spare: bool = False  # caps give way to places nothing else takes
    gen: int = 0
    queues: dict[str, FairQueue] = field(default_factory=dict)
    gpu_arrivals: list[tuple[float, str]] = field(default_factory=list)  # heap of (seq, id) bound for the GPU queue
    render_at: dict[str, tuple[str, str]] = field(default_factory=dict)  # render -> (queue, workspace) published
    backlog: dict[str, int] = field(default_factory=dict)  # the length published per queue
    swept: float = field(default_factory=time.monotonic)

    # -- building and keeping current ---------------------------------------------------------

    def _share(self, workspace: str) -> Share:
        return self.shares([workspace]).get(workspace, self.default_share)

    def build(self) -> None:
        """The copy from what Redis holds now (O(backlog)); everything is published again."""
        r, key = self.redis, self.keys
        with r.pipeline() as pipe:  # the events so far are in what is read next
            pipe.delete(key("events"))
            for target in TARGETS:
                pipe.hgetall(key(f"ledger:{target}"))
                pipe.hkeys(key(f"counts:{target}"))
            found = pipe.execute()[1:]
        ledgers = {t: Ledger.from_scopes(found[2 * i].items()) for i, t in enumerate(TARGETS)}
        stale = {t: [_text(w) for w in found[2 * i + 1]] for i, t in enumerate(TARGETS)}
        pooled = [_text(k) for k in r.smembers(key("pools"))]  # pools' queues are made again as chunks arrive
        stale.update({k: [_text(w) for w in r.hkeys(key(f"counts:{k}"))] for k in pooled})
        workspaces = sorted(_text(w) for w in r.smembers(key("workspaces")))
        with r.pipeline(transaction=False) as pipe:
            for workspace in workspaces:
                pipe.lrange(self.waiting_list(workspace), 0, -1)
            listed = pipe.execute() if workspaces else []
        active = {_text(k): json.loads(v) for k, v in r.hgetall(key("active")).items()}
        waiting = {_text(i) for ids in listed for i in ids}
        again = [rq_id for rq_id in active if rq_id in waiting]  # enqueued again (a fall-back, a repair)
        if again:
            r.hdel(key("active"), *again)
            for rq_id in again:
                del active[rq_id]
        self.shares(set(workspaces) | {e["workspace"] for e in active.values()})  # one read, kept
        self.queues = {t: FairQueue(self._share, ledgers[t], self.spare) for t in TARGETS}
        self.gpu_arrivals = []
        for rq_id, entry in active.items():
            chunk = Chunk(rq_id, entry["workspace"], entry.get("render", rq_id), int(entry.get("cost", 1)))
            for queue in self.queues.values():
                queue.started(chunk)
        for workspace, ids in zip(workspaces, listed):
            self._arrive(workspace, [_text(i) for i in ids])
        with r.pipeline() as pipe:  # what was published is written again whole
            for target in pooled:
                pipe.delete(key(f"counts:{target}"), key(f"since:{target}"), key(f"backlog:{target}"),
                            *(key(f"renders:{target}:{w}") for w in stale[target]))
            for target in TARGETS:
                pipe.delete(key(f"counts:{target}"), key(f"since:{target}"),
                            *(key(f"renders:{target}:{w}") for w in stale[target]))
            pipe.delete(key("where"))
            pipe.incr(key("gen"))
            self.gen = int(pipe.execute()[-1])
        self.render_at = {}
        self.backlog = {t: -1 for t in TARGETS}
        self.swept = time.monotonic()

    def catch_up(self, done: Round) -> None:
        """Apply the events pushed since the last round."""
        with self.redis.pipeline() as pipe:
            pipe.lrange(self.keys("events"), 0, -1)
            pipe.delete(self.keys("events"))
            events = [_text(e).split("\t") for e in pipe.execute()[0]]
        if not events:
            return
        done.changed = True
        arrived: list[str] = []
        for event in events:
            kind, args = event[0], event[1:]
            if kind == "a":
                arrived.extend(args)
            elif kind == "g":
                for rq_id in args:
                    for queue in self.queues.values():
                        queue.remove(rq_id)
            elif kind == "t" and len(args) == 2:
                self._retarget(args[0], args[1])
            elif kind == "p" and len(args) == 2:
                for queue in self.queues.values():
                    queue.raise_priority(args[0], args[1])
            elif kind == "r" and len(args) == 2:  # an operator set the render's priority
                for queue in self.queues.values():
                    for chunk in queue.cancel(args[0]):
                        queue.add(replace(chunk, priority=args[1]))
        if arrived:
            self._arrive_checked(arrived)

    def _arrive_checked(self, rq_ids: list[str]) -> None:
        """Chunks said to have arrived: those in a waiting queue now (RQ's status ``queued``) join."""
        ids = [i for i in dict.fromkeys(rq_ids) if not any(q.chunk(i) for q in self.queues.values())]
        if not ids:
            return
        with self.redis.pipeline(transaction=False) as pipe:
            for rq_id in ids:
                pipe.hget(f"rq:job:{rq_id}", "status")
                pipe.hget(f"rq:job:{rq_id}", "origin")
            found = pipe.execute()
        by_workspace: dict[str, list[str]] = {}
        waiting_prefix = self.waiting_list("")
        for i, rq_id in enumerate(ids):
            status, origin = found[2 * i], found[2 * i + 1]
            if status is None or _text(status) != "queued" or origin is None:
                continue  # deferred still (the sweep, or the release's own event, brings it), or gone
            name = f"rq:queue:{_text(origin)}"
            if name.startswith(waiting_prefix):
                by_workspace.setdefault(name.removeprefix(waiting_prefix), []).append(rq_id)
        self._not_running([i for listed in by_workspace.values() for i in listed])
        for workspace, listed in by_workspace.items():
            self._arrive(workspace, listed)

    def _not_running(self, rq_ids: list[str]) -> None:
        """Chunks counted as running that wait again (enqueued again after they ran: a fall-back
        to another encoder, a repair) leave the running counts and ``fair:active``."""
        for rq_id in rq_ids:
            for queue in self.queues.values():
                queue.finished(rq_id)  # None where it was not running
        if rq_ids:
            self.redis.hdel(self.keys("active"), *rq_ids)

    def _arrive(self, workspace: str, rq_ids: list[str]) -> None:
        """Chunks of a workspace in its waiting queue join the queue their turn names."""
        for start in range(0, len(rq_ids), READ_BATCH):
            batch = rq_ids[start:start + READ_BATCH]
            for rq_id, raw in zip(batch, self.redis.hmget(self.keys("turns"), batch)):
                if raw is None or any(q.has(rq_id) for q in self.queues.values()):
                    continue  # no turn: canceled or moved meanwhile
                entry = json.loads(raw)
                target = entry.get("target", RENDER_QUEUE)
                self._add(queue_key(target if target in TARGETS else RENDER_QUEUE, entry.get("pool", "")),
                          chunk_of_turn(rq_id, workspace, entry))

    def _add(self, key: str, chunk: Chunk) -> None:
        self.queue(key).add(chunk)
        if key == GPU_QUEUE:
            heapq.heappush(self.gpu_arrivals, (chunk.seq, chunk.id))

    def queue(self, key: str) -> FairQueue:
        """The fair queue of a ready queue and pool (``pools.queue_key``); a pool's made the first
        time one of its chunks arrives: its stored virtual service, the chunks running counted."""
        found = self.queues.get(key)
        if found is None:
            found = self.queues[key] = FairQueue(self._share, Ledger.from_scopes(
                self.redis.hgetall(self.keys(f"ledger:{key}")).items()), self.spare)
            for rq_id, entry in self.redis.hgetall(self.keys("active")).items():
                entry = json.loads(entry)
                found.started(Chunk(_text(rq_id), entry["workspace"], entry.get("render", _text(rq_id)),
                                    int(entry.get("cost", 1))))
            self.redis.sadd(self.keys("pools"), key)
        return found

    def _retarget(self, rq_id: str, target: str) -> None:
        for name, queue in list(self.queues.items()):
            chunk = queue.chunk(rq_id)
            dest = queue_key(target, split_key(name)[1])
            if chunk is not None and name != dest and target in TARGETS:
                queue.remove(rq_id)
                self._add(dest, chunk)

    def ended(self, done: Round) -> list[tuple[str, dict[str, Any]]]:
        """Chunks dispatched that ended (RQ status neither waiting nor running): they leave the
        running counts; returned (id, entry) for the farm's throughput."""
        active = {_text(k): json.loads(v) for k, v in self.redis.hgetall(self.keys("active")).items()}
        if not active:
            return []
        with self.redis.pipeline(transaction=False) as pipe:
            for rq_id in active:
                pipe.hmget(f"rq:job:{rq_id}", "status", "origin")
            statuses = pipe.execute()
        ended, again = [], []
        waiting_prefix = self.waiting_list("")
        for (rq_id, entry), (status, origin) in zip(active.items(), statuses):
            if status is None or _text(status) not in ("queued", "started", "scheduled", "deferred"):
                ended.append((rq_id, entry))
            elif origin is not None and f"rq:queue:{_text(origin)}".startswith(waiting_prefix):
                again.append(rq_id)  # waiting for its turn again: the sweep or its event brings it in
            elif not self.queues[RENDER_QUEUE].has(rq_id):  # moved by a process this copy missed
                chunk = Chunk(rq_id, entry["workspace"], entry.get("render", rq_id), int(entry.get("cost", 1)))
                for queue in self.queues.values():
                    if not queue.has(rq_id):
                        queue.started(chunk)
        for rq_id, _entry in ended:
            for queue in self.queues.values():
                queue.finished(rq_id)
        if again:
            self._not_running(again)
            self._arrive_checked(again)
        if ended or again:
            done.changed = True
        return ended

    def took(self, target: str, chunk: Chunk) -> None:
        """A chunk the ``target`` queue handed out runs: it counts against its cap in the others."""
        for name, queue in self.queues.items():
            if name != target:
                queue.started(chunk)

    def fall_back(self, gpu_live: bool, gpu_free: int, cutoff: float) -> list[str]:
        """Chunks bound for the GPU queue go to ``render``: all of them when no live node draws on a
        GPU, else those that waited since before ``cutoff`` while no GPU place was free; returns the
        ids of the latter."""
        gpu, cpu = self.queues[GPU_QUEUE], self.queues[RENDER_QUEUE]
        if not gpu.chunks_waiting():
            self.gpu_arrivals = []
            return []
        waited: list[str] = []
        if not gpu_live:
            for workspace in gpu.backlogged():
                for rq_id in gpu.waiting_ids(workspace):
                    chunk = gpu.remove(rq_id)
                    if chunk is not None:
                        cpu.add(chunk)
            self.gpu_arrivals = []
        elif gpu_free <= 0:
            while self.gpu_arrivals and self.gpu_arrivals[0][0] < cutoff:
                _seq, rq_id = heapq.heappop(self.gpu_arrivals)
                chunk = gpu.remove(rq_id)
                if chunk is not None:
                    cpu.add(chunk)
                    waited.append(rq_id)
        return waited

    def sweep(self, done: Round) -> None:
        """The safety net (module docstring): waiting queues' lengths against the copy, shares again."""
        self.swept = time.monotonic()
        r, key = self.redis, self.keys
        listed = {_text(w) for w in r.smembers(key("workspaces"))}
        known = {w for q in self.queues.values() for w in q.backlogged()}
        workspaces = sorted(listed | known)
        with r.pipeline(transaction=False) as pipe:
            for workspace in workspaces:
                pipe.llen(self.waiting_list(workspace))
                pipe.hget(key("owed"), workspace)
            found = pipe.execute() if workspaces else []
        for i, workspace in enumerate(workspaces):
            length, owed = int(found[2 * i]), int(found[2 * i + 1] or 0)
            if length != sum(q.waiting_in(workspace) for q in self.queues.values()):
                self._resync(workspace)
                done.changed = True
            if not length and owed <= 0 and workspace in listed:
                # chunks deferred on their render's asset import land later: the workspace is kept
                # while any turn of it is owed
                r.srem(key("workspaces"), workspace)
                r.hdel(key("owed"), workspace)
                if r.llen(self.waiting_list(workspace)):  # one arrived meanwhile
                    r.sadd(key("workspaces"), workspace)
        busy = {w for q in self.queues.values() for w in q.workspaces()}
        if busy:
            fresh = self.shares(busy)
            for queue in self.queues.values():
                for workspace in queue.workspaces():
                    share = fresh.get(workspace, self.default_share)
                    if share != queue.share(workspace):
                        queue.set_share(workspace, share)
                        done.changed = True

    def _resync(self, workspace: str) -> None:
        ids = [_text(i) for i in self.redis.lrange(self.waiting_list(workspace), 0, -1)]
        present = set(ids)
        for queue in self.queues.values():
            for rq_id in queue.waiting_ids(workspace):
                if rq_id not in present:
                    queue.remove(rq_id)
        self._arrive(workspace, ids)

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, done: Round) -> None:
        """Write what the round changed (module docstring), and raise the generation if anything did."""
        key = self.keys
        with self.redis.pipeline() as pipe:  # MULTI: a reader sees the round's view or the last one
            wrote = False
            for target, queue in self.queues.items():
                workspaces, renders = queue.changed()
                if workspaces or renders:
                    wrote = True
                    self._write(pipe, target, queue, workspaces, renders)
                waiting = queue.chunks_waiting()
                if waiting != self.backlog.get(target):
                    wrote = True
                    self._write_backlog(pipe, target, waiting)
            if done.changed or wrote:
                pipe.incr(key("gen"))
            results = pipe.execute()
        if done.changed or wrote:
            self.gen = int(results[-1])

    def _write(self, pipe: Any, target: str, queue: FairQueue, workspaces: set[str], renders: set[str]) -> None:
        key = self.keys
        spaces, turns = queue.view(workspaces, renders)
        counts = key(f"counts:{target}")
        for workspace in workspaces:
            space = spaces.get(workspace)
            if space is None:
                pipe.hdel(counts, workspace)
            else:
                pipe.hset(counts, workspace, f"{space.chunks} {space.frames} {space.served!r} {space.weight!r} "
                                             f"{space.first!r} {space.next_cost}")
            served = queue.served(workspace)
            if served is None:
                pipe.hdel(key(f"ledger:{target}"), f"w:{workspace}")
            else:
                pipe.hset(key(f"ledger:{target}"), f"w:{workspace}", served)
        for render in renders:
            turn = turns.get(render)
            served = queue.render_served(render)
            if served is None:
                pipe.hdel(key(f"ledger:{target}"), f"r:{render}")
            else:
                pipe.hset(key(f"ledger:{target}"), f"r:{render}", served)
            if turn is not None:
                pipe.hset(key(f"renders:{target}:{turn.workspace}"), render,
                          f"{turn.chunks} {turn.frames} {turn.served!r} {int(turn.low)} {turn.since!r} {turn.next_cost}")
                pipe.hset(key("where"), render, f"{target} {turn.workspace}")
                pipe.zadd(key(f"since:{target}"), {render: turn.since})
                self.render_at[render] = (target, turn.workspace)
            elif self.render_at.get(render, ("", ""))[0] == target:
                _target, workspace = self.render_at.pop(render)
                pipe.hdel(key(f"renders:{target}:{workspace}"), render)
                pipe.hdel(key("where"), render)
                pipe.zrem(key(f"since:{target}"), render)
        pipe.hset(key(f"ledger:{target}"), "v:clock", queue.clock)

    def _write_backlog(self, pipe: Any, target: str, waiting: int) -> None:
        name = self.keys(f"backlog:{target}")
        before = self.backlog.get(target, -1)
        if waiting == 0:
            pipe.delete(name)
        elif before < 0 or waiting < before:
            if before < 0:
                pipe.delete(name)
                pipe.rpush(name, *([1] * waiting))
            else:
                pipe.ltrim(name, 0, waiting - 1)
        else:
            pipe.rpush(name, *([1] * (waiting - before)))
        self.backlog[target] = waiting


def place(redis: Any, key: Callable[[str], str], render: str) -> tuple[int, int] | None:
    """(frames ahead, chunks waiting) of a render with chunks waiting, from what rounds publish
    (two hashes: its queue's workspaces and its workspace's renders); None when none waits."""
    where = redis.hget(key("where"), render)
    if where is None:
        return None
    target, workspace = _text(where).split(" ", 1)
    with redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(key(f"counts:{target}"))
        pipe.hgetall(key(f"renders:{target}:{workspace}"))
        counts, listed = pipe.execute()
    spaces = {}
    for raw, value in counts.items():
        chunks, frames, served, weight, first, next_cost = _text(value).split()
        spaces[_text(raw)] = SpaceView(int(chunks), int(frames), float(served), float(weight), float(first),
                                       int(next_cost))
    renders = {}
    for raw, value in listed.items():
        chunks, frames, served, low, since, next_cost = _text(value).split()
        renders[_text(raw)] = RenderView(workspace, int(chunks), int(frames), float(served), low == "1", float(since),
                                         int(next_cost))
    if render not in renders or workspace not in spaces:
        return None
    return fluid_ahead(render, workspace, spaces, renders), renders[render].chunks


def published_loads(redis: Any, key: Callable[[str], str]) -> dict[str, tuple[int, int]]:
    """Each workspace's chunks and frames waiting, over the ready queues, as rounds publish them."""
    with redis.pipeline(transaction=False) as pipe:
        for target in (*TARGETS, *(_text(k) for k in redis.smembers(key("pools")))):
            pipe.hgetall(key(f"counts:{target}"))
        found = pipe.execute()
    loads: dict[str, tuple[int, int]] = {}
    for counts in found:
        for raw, value in counts.items():
            chunks, frames = (int(x) for x in _text(value).split()[:2])
            before = loads.get(_text(raw), (0, 0))
            loads[_text(raw)] = (before[0] + chunks, before[1] + frames)
    return loads
