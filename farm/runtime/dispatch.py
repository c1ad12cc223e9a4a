"""Fair dispatch on RQ: chunks wait in per-workspace lists in Redis and are fed to RQ's ready queues
in the order ``reelfarm.farm.services.fairness`` gives, a few at a time.

RQ's own queues, workers, jobs, retries and dependencies stay as they are. What changes is where a
render chunk first lands:

- ``RQQueue.enqueue`` of a chunk (a job with a ``Turn``) puts the RQ job, under its deterministic
  id, in the workspace's *waiting queue* ``<ns>waiting:<workspace>``: a real RQ queue that no worker
  listens to. Dependencies work as ever: a chunk waiting for its render's asset import is deferred
  and RQ releases it into the waiting queue. The turn (render, cost, priority, target queue,
  arrival) is kept in the hash ``reelfarm:<ns>fair:turns``.
- A *round* (``Dispatcher.round``) takes the lock ``reelfarm:<ns>fair:lock`` (one round at a time
  across every process; the lock expires after 5 s, so a dispatcher that dies holds nothing), counts the
  free places of each ready queue (its idle workers and those that said they are about to take a
  job, less what already waits there), asks the policy which waiting chunks take them, and moves
  each one, after an atomic ``LREM`` from its waiting queue (a chunk is never moved twice), into
  its ready queue (``render``, ``render-gpu`` or ``render-nvenc``) with RQ's ``enqueue_job``, the
  chunks of a round in a few pipelines. Moved chunks are remembered in ``fair:active`` until RQ
  calls them finished or failed, which is what the caps count.
- Under ``fair`` the policy decides on the dispatching process's copy of the fair queues, kept
  from round to round by events and published as counters (``reelfarm.farm.runtime.dispatchmirror``):
  a round costs the places it fills, the events since the last and the chunks running, not the
  backlog; a render's place in line and the farm's loads are read from what it publishes. Under
  ``fifo`` (kept to compare against) a round reads every waiting chunk (``held``) and asks
  ``fairness.pick``.
- Rounds run in the farm's one dispatcher (``reelfarm.farm.runtime.dispatchlease``: the process
  holding a Redis lease), woken by each enqueue of a chunk, each chunk's end and each node about to
  take a job (which names itself: a free place), and every few seconds as a sweep; a process
  with no bid for the lease (a script, a test's burst worker) runs rounds itself.
- A retry goes straight back to the ready queue (RQ retries into the job's origin): the chunk had
  its turn. Cancel takes a waiting chunk out of its waiting queue (RQ's ``Job.cancel``).
  Reconciliation after Redis came back empty enqueues lost chunks again the same way, through the
  waiting queues. A held chunk bound for ``render-gpu`` goes to ``render`` when no worker works
  the GPU queue; one bound for ``render-nvenc`` whose render fell back to x264 is retargeted
  (``retarget``). A render asked for again at a higher priority raises its chunks' turns that are
  still held (``raise_priority``); chunks already moved keep their place in the ready queue.

The virtual-service ledger lives in ``fair:ledger:<queue>``;
recent finished chunks (for the estimated start of a waiting render) in ``fair:done``.
"""
from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reelfarm.farm.runtime.dispatchmirror import SWEEP_SEC, Mirror, Round, place, published_loads
from reelfarm.farm.runtime.dispatchshares import (  # Shares and workspace_shares: imported from here too
    DEFAULT_SHARE,
    Shares,  # noqa: F401
    workspace_shares,  # noqa: F401
)
from reelfarm.farm.services.fairness import Chunk, Ledger, Line, Load, Share, line, pick, ranked_below
from reelfarm.farm.services.queues import GPU_QUEUE, NVENC_QUEUE, RENDER_QUEUE, Turn

log = logging.getLogger("reelfarm.farm")

LOCK_MS = 5_000
MAX_HELD_READ = 2000  # per workspace and round: the policy needs the heads, not the whole tail
THROUGHPUT_WINDOW_SEC = 120.0

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# a turn rewritten only as it was read (a round may have moved the chunk meanwhile), and counted
_RAISE = ("if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end "
          "redis.call('hset', KEYS[1], ARGV[1], ARGV[3]) redis.call('incr', KEYS[2]) return 1")


def waiting_queue(workspace: str) -> str:
    """The (un-namespaced) RQ queue a workspace's chunks wait in for their turn."""
    return f"waiting:{workspace}"


@dataclass(frozen=True)
class Held:
    """A chunk waiting in a waiting queue, with where it goes when its turn comes."""

    chunk: Chunk
    target: str


class Dispatcher:
    """Rounds of fair dispatch over one Redis and namespace (see the module docstring)."""

    def __init__(self, redis: Any, namespace: str = "", *, shares: Callable[[Iterable[str]], dict[str, Share]],
                 policy: str = "fair", gpu_wait_sec: float = 30.0, spare_caps: bool = False) -> None:
        self.redis = redis
        self.namespace = namespace
        self.shares = shares
        self.policy = policy
        self.gpu_wait_sec = gpu_wait_sec
        self.spare_caps = spare_caps  # caps give way to places nothing else takes (``fairness.pick``'s ``spare``)
        self._mirror: Mirror | None = None  # this process's copy of the fair queues (``dispatchmirror``)

    # -- keys ---------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        return f"reelfarm:{self.namespace}fair:{name}"

    def waiting_list(self, workspace: str) -> str:
        return f"rq:queue:{self.namespace}{waiting_queue(workspace)}"

    def ready_list(self, queue: str) -> str:
        return f"rq:queue:{self.namespace}{queue}"

    def backlog_list(self, queue: str) -> str:
        """A Redis list of the chunks waiting for their turn that are bound for ``queue``, rewritten
        each round: its length is what an autoscaler (KEDA's Redis list scaler) reads beside the
        ready queue's."""
        return self.key(f"backlog:{queue}")

    # -- what enqueue and cancel call -----------------------------------------------------------

    def hold(self, rq_job_id: str, turn: Turn, target: str) -> str:
        """Record a chunk's turn before RQ puts it in its waiting queue; returns that queue's name."""
        entry = {"workspace": turn.workspace, "render": turn.render, "cost": turn.cost, "priority": turn.priority,
                 "index": turn.index, "target": target, "seq": time.time(), "pool": turn.pool}
        with self.redis.pipeline() as pipe:
            pipe.hset(self.key("turns"), rq_job_id, json.dumps(entry))
            pipe.hincrby(self.key("owed"), turn.workspace, 1)
            pipe.sadd(self.key("workspaces"), turn.workspace)
            pipe.execute()
        return f"{self.namespace}{waiting_queue(turn.workspace)}"

    def arrived(self, *rq_job_ids: str) -> None:
        """Chunks are in their waiting queues (enqueued, or released by the job they waited on): the
        dispatcher's copy takes them in at its next round (``dispatchmirror``)."""
        if rq_job_ids:
            self._event("a", *rq_job_ids)

    def forget(self, rq_job_id: str, *, moved: bool = False) -> None:
        """The chunk no longer waits for a turn (``moved`` by a round, or canceled or gone)."""
        raw = self.redis.hget(self.key("turns"), rq_job_id)
        if raw is not None and self.redis.hdel(self.key("turns"), rq_job_id):
            self.redis.hincrby(self.key("owed"), json.loads(raw)["workspace"], -1)
        if not moved:
            self._event("g", rq_job_id)

    def _event(self, kind: str, *args: str) -> None:
        if self.policy == "fair":
            self.redis.rpush(self.key("events"), "\t".join((kind, *args)))

    def retarget(self, rq_job_id: str, target: str) -> bool:
        """Send a chunk still waiting for its turn to ``target`` when it comes; False when it is not waiting."""
        raw = self.redis.hget(self.key("turns"), rq_job_id)
        if raw is None:
            return False
        entry = json.loads(raw)
        if self.redis.lpos(self.waiting_list(entry["workspace"]), rq_job_id) is None:
            return False
        entry["target"] = target
        self.redis.hset(self.key("turns"), rq_job_id, json.dumps(entry))
        self._event("t", rq_job_id, target)
        return True

    def raise_priority(self, render: str, priority: str) -> int:
        """Give the render's chunks still waiting for their turn (or deferred, their turn kept for
        when they arrive) ``priority`` where theirs is lower; returns how many. Each change counts
        in ``fair:raised``, which a kept line's basis holds (``kept_line``)."""
        lower = ranked_below(priority)
        raised = 0
        for rq_id, raw in self.redis.hscan_iter(self.key("turns"), match=f"*{_glob_escaped(render)}*"):
            entry = json.loads(raw)
            if entry.get("render") != render or entry.get("priority", "normal") not in lower:
                continue
            entry["priority"] = priority
            raised += int(self.redis.eval(_RAISE, 2, self.key("turns"), self.key("raised"), rq_id, raw,
                                          json.dumps(entry)))
        if raised:
            self._event("p", render, priority)
        return raised

    # -- rounds -------------------------------------------------------------------------------

    def round(self, worker: Any = None, slots: int | None = None, wait: float = 0.0,
              free: Iterable[str] = ()) -> list[str]:
        """One round if no other process is in one; returns the RQ ids of the chunks moved.

        ``worker``: the RQ worker about to take a job, counted as a free place of its queues.
        ``slots``: free places of each ready queue, instead of counting idle workers (a burst
        worker started afterwards, as in tests and scripts). ``wait``: seconds to keep trying for
        the lock while another process holds it (a process that died holding it holds it
        ``LOCK_MS`` at most). ``free``: names of workers that said they are about to take a job
        (``reelfarm.farm.runtime.dispatchlease.wake``), counted as free places.
        """
        token = secrets.token_hex(8)
        deadline = time.monotonic() + wait
        while not self.redis.set(self.key("lock"), token, nx=True, px=LOCK_MS):
            if time.monotonic() >= deadline:
                return []
            time.sleep(0.1)
        try:
            if self.policy == "fair":
                return self._fair_round(worker, slots, set(free))
            return self._scan_round(worker, slots, set(free))
        finally:
            self.redis.eval(_RELEASE, 1, self.key("lock"), token)

    def _fair_round(self, worker: Any, slots: int | None, free_names: set[str]) -> list[str]:
        """A round on this process's copy of the fair queues (``dispatchmirror``): O(events +
        chunks running + places filled x log(workspaces)), whatever waits."""
        mirror, done = self._mirror, Round()
        gen, paused = self.redis.mget(self.key("gen"), self.key("paused"))
        if mirror is None or gen is None or int(gen) != mirror.gen:
            mirror = self._mirror = Mirror(self.key, self.waiting_list, self.redis, self.shares, DEFAULT_SHARE,
                                           self.spare_caps)
            mirror.build()
            done.changed = True
        else:
            mirror.catch_up(done)
        self._record_ended([rq_id for rq_id, _ in mirror.ended(done)])
        if time.monotonic() - mirror.swept >= SWEEP_SEC:
            mirror.sweep(done)
        if paused is not None or not any(queue.chunks_waiting() for queue in mirror.queues.values()):
            mirror.publish(done)  # paused, or nothing waits: no place to count (an idle farm's round)
            return []
        from reelfarm.farm.runtime.poolrounds import fill_pools
        from reelfarm.farm.runtime.routing import works

        nodes = self._live_nodes()
        workers = self._workers(nodes) if slots is None else {}
        free = {q: self._free(q, workers, worker, free_names) if slots is None else slots
                for q in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)}
        waited = set(mirror.fall_back(any(works(n, GPU_QUEUE) for n in nodes), free[GPU_QUEUE],
                                      time.time() - self.gpu_wait_sec))
        moved, used = fill_pools(self, mirror, nodes, worker, slots, free_names)  # tagged nodes' pools first
        free = {q: n - used.get(q, 0) for q, n in free.items()}
        for target in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE):
            queue = mirror.queues[target]
            if free[target] <= 0 or not queue.chunks_waiting():
                continue
            chosen = queue.take(free[target])
            done_here = self._move(chosen, target)
            for chunk in chosen:
                if chunk.id in done_here:
                    moved.append(chunk.id)
                    mirror.took(target, chunk)
                else:
                    queue.finished(chunk.id)  # canceled meanwhile: it holds no place
        done.changed = done.changed or bool(moved)
        mirror.publish(done)
        if waited:  # in the CPU queue's line now, dispatched there in its turn
            log.warning("moved %d chunk(s) that waited over %.0f s for a GPU node to %s: %s", len(waited),
                        self.gpu_wait_sec, RENDER_QUEUE, ", ".join(sorted(waited)))
        return moved

    def _scan_round(self, worker: Any, slots: int | None, free_names: set[str]) -> list[str]:
        """A round over every waiting chunk (``fairness.pick``): the ``fifo`` policy, kept to compare against."""
        held = self.held()
        running = self._running()
        ledger = self._load_ledger()
        before = ledger.scopes()  # written back only when the round changed it
        if not held:
            self._save_ledger(ledger, running, before=before)
            self._publish_backlog([])
            return []
        share = self.shares({h.chunk.workspace for h in held} | set(running))
        moved: list[str] = []
        from reelfarm.farm.runtime.routing import works

        nodes = self._live_nodes()
        workers = self._workers(nodes) if slots is None else {}
        free = {q: self._free(q, workers, worker, free_names) if slots is None else slots
                for q in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)}
        gpu_live = any(works(n, GPU_QUEUE) for n in nodes)
        by_target: dict[str, list[Held]] = {}
        cutoff = time.time() - self.gpu_wait_sec
        waited: set[str] = set()
        for h in held:
            target = h.target
            if target == GPU_QUEUE and (not gpu_live or (free[GPU_QUEUE] <= 0 and h.chunk.seq < cutoff)):
                target = RENDER_QUEUE  # no node draws on a GPU now, or it waited past the wait for one
                if gpu_live:
                    waited.add(h.chunk.id)
            by_target.setdefault(target, []).append(h)
        for target in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE):
            items = by_target.get(target, [])
            if not items or free[target] <= 0:
                continue
            chosen = pick([h.chunk for h in items], free[target], running=running,
                          shares=lambda w: share.get(w, DEFAULT_SHARE), ledger=ledger, policy=self.policy,
                          spare=self.spare_caps)
            done_here = self._move(chosen, target)
            for chunk in chosen:
                if chunk.id in done_here:
                    moved.append(chunk.id)
                    running[chunk.workspace] = running.get(chunk.workspace, 0) + 1
        self._save_ledger(ledger, running, held, before=before)
        self._publish_backlog([h for h in held if h.chunk.id not in set(moved)])
        if waited & set(moved):
            log.warning("moved %d chunk(s) that waited over %.0f s for a GPU node to %s: %s", len(waited & set(moved)),
                        self.gpu_wait_sec, RENDER_QUEUE, ", ".join(sorted(waited & set(moved))))
        return moved

    def held(self) -> list[Held]:
        """Every chunk waiting for its turn (the first ``MAX_HELD_READ`` of each workspace): a read
        of the whole backlog, for ``fifo``'s rounds, operators' tools and tests, never a ``fair`` round."""
        found: list[Held] = []
        for raw in self.redis.smembers(self.key("workspaces")):
            workspace = raw.decode() if isinstance(raw, bytes) else raw
            ids = [i.decode() for i in self.redis.lrange(self.waiting_list(workspace), 0, MAX_HELD_READ - 1)]
            if not ids:
                # chunks deferred on their render's asset import land here later: keep the
                # workspace while any turn of it is owed
                if int(self.redis.hget(self.key("owed"), workspace) or 0) <= 0:
                    self.redis.srem(self.key("workspaces"), workspace)
                    self.redis.hdel(self.key("owed"), workspace)
                    if self.redis.llen(self.waiting_list(workspace)):  # one arrived meanwhile
                        self.redis.sadd(self.key("workspaces"), workspace)
                continue
            for rq_id, raw_turn in zip(ids, self.redis.hmget(self.key("turns"), ids)):
                entry = json.loads(raw_turn) if raw_turn else {}
                found.append(Held(Chunk(rq_id, workspace, entry.get("render", rq_id), int(entry.get("cost", 1)),
                                        entry.get("priority", "normal"), float(entry.get("seq", 0.0)),
                                        int(entry.get("index", 0))), entry.get("target", RENDER_QUEUE)))
        return found

    def kept_line(self, known: Line | None, render: str | None = None) -> Line:
        """The fair line now (``fairness.Line``): ``known`` when the chunks waiting, the ledger, the
        shares and the count of raised priorities (``raise_priority``) are those it was computed
        from (and it knows ``render``'s place), else computed again (``held``, ``order``): up to
        ``render``'s first chunk when the line changed, whole when only ``render`` was beyond what
        ``known`` ordered (``fairrows.kept_line``)."""
        raised = self.redis.get(self.key("raised"))  # read first: a raise after it computes the line again
        with self.redis.pipeline(transaction=False) as pipe:
            workspaces = [w.decode() if isinstance(w, bytes) else w for w in self.redis.smembers(self.key("workspaces"))]
            for workspace in workspaces:
                pipe.lrange(self.waiting_list(workspace), 0, MAX_HELD_READ - 1)
            ids = frozenset(i for listed in pipe.execute() for i in listed)
        ledger = frozenset(self.redis.hgetall(self.key("ledger")).items())
        same = (known is not None and known.basis == (self.policy, ids, ledger, raised)
                and self.shares(known.shares.keys()) == known.shares)
        if known is not None and same and (render is None or known.knows(render)):
            return known
        chunks = [h.chunk for h in self.held()]
        basis_ids = frozenset(c.id.encode() for c in chunks)
        return line((self.policy, basis_ids, ledger, raised), chunks, self.shares({c.workspace for c in chunks}),
                    Ledger.from_scopes(ledger), self.policy, DEFAULT_SHARE, until=None if same else render)

    def throughput(self) -> float:
        """Frames a second the farm finished over the last ``THROUGHPUT_WINDOW_SEC`` (0 when none)."""
        since = time.time() - THROUGHPUT_WINDOW_SEC
        entries = self.redis.zrangebyscore(self.key("done"), since, "+inf")
        frames = sum(int((e.decode() if isinstance(e, bytes) else e).rsplit(":", 1)[1]) for e in entries)
        return frames / THROUGHPUT_WINDOW_SEC

    def place(self, render: str) -> tuple[int, int] | None:
        """(frames ahead of its next chunk, chunks waiting) of a render waiting for its turn, None
        when none of its chunks does: under ``fair``, from what rounds publish (O(workspaces +
        renders of its workspace): ``dispatchmirror.place``); else from the line (``kept_line``)."""
        if self.policy == "fair":
            return place(self.redis, self.key, render)
        known = self.kept_line(None, render)
        waiting = known.waiting.get(render, 0)
        return (known.frames_ahead(render), waiting) if waiting else None

    def pause(self, by: str, reason: str = "") -> dict[str, Any]:
        """Stop dispatching chunks farm-wide until ``resume``: rounds keep their copy current and
        move nothing (chunks running go on; stitches, imports and stills, which never wait for a
        turn, are not held). Returns the pause as recorded (by, at, reason); a second pause keeps
        the first's record."""
        record = {"by": by, "at": time.time(), "reason": reason}
        self.redis.set(self.key("paused"), json.dumps(record), nx=True)
        return self.paused() or record

    def resume(self) -> bool:
        """Dispatch again; False when it was not paused. The dispatcher is woken at once."""
        from reelfarm.farm.runtime.dispatchlease import wake

        resumed = bool(self.redis.delete(self.key("paused")))
        if resumed:
            wake(self.redis, self.namespace)
        return resumed

    def paused(self) -> dict[str, Any] | None:
        """The pause in force (by, at, reason), or None."""
        raw = self.redis.get(self.key("paused"))
        return json.loads(raw) if raw is not None else None

    def stale_renders(self, target: str, before: float) -> list[str]:
        """Renders with a chunk waiting for its turn, bound for ``target``, since before ``before``
        (epoch s), oldest first."""
        if self.policy == "fair":
            return [r.decode() if isinstance(r, bytes) else r
                    for r in self.redis.zrangebyscore(self.key(f"since:{target}"), "-inf", before)]
        found: list[str] = []
        for h in sorted(self.held(), key=lambda h: h.chunk.seq):
            if h.target == target and h.chunk.seq <= before and h.chunk.render not in found:
                found.append(h.chunk.render)
        return found

    def loads(self) -> dict[str, Load]:
        """Each workspace's chunks running (dispatched, not finished) and waiting; only reads (under
        ``fair``, what rounds publish: O(workspaces + chunks running))."""
        loads: dict[str, Load] = {}
        if self.policy == "fair":
            for workspace, (chunks, frames) in published_loads(self.redis, self.key).items():
                loads[workspace] = Load(0, chunks, frames)
        else:
            for h in self.held():
                loads[h.chunk.workspace] = loads.get(h.chunk.workspace, Load()) + Load(0, 1, h.chunk.cost)
        active = self.active()
        with self.redis.pipeline() as pipe:
            for rq_id in active:
                pipe.hget(f"rq:job:{rq_id}", "status")
            statuses = pipe.execute() if active else []
        for (rq_id, entry), status in zip(active.items(), statuses):
            if (status.decode() if isinstance(status, bytes) else status) in ("queued", "started", "scheduled"):
                loads[entry["workspace"]] = loads.get(entry["workspace"], Load()) + Load(1, 0, 0)
        return loads

    def active(self) -> dict[str, dict[str, Any]]:
        """Chunks dispatched and not yet finished: RQ id -> {workspace, cost, queue}."""
        return {(k.decode() if isinstance(k, bytes) else k): json.loads(v)
                for k, v in self.redis.hgetall(self.key("active")).items()}

    # -- helpers ------------------------------------------------------------------------------

    def _running(self) -> dict[str, int]:
        """Chunks dispatched and not finished, per workspace; finished ones are counted as done."""
        active = self.active()
        if not active:
            return {}
        ids = list(active)
        with self.redis.pipeline() as pipe:
            for rq_id in ids:
                pipe.hget(f"rq:job:{rq_id}", "status")
            statuses = pipe.execute()
        running: dict[str, int] = {}
        ended = []
        for rq_id, status in zip(ids, statuses):
            status = status.decode() if isinstance(status, bytes) else status
            if status in ("queued", "started", "scheduled", "deferred"):
                running[active[rq_id]["workspace"]] = running.get(active[rq_id]["workspace"], 0) + 1
            else:
                ended.append(rq_id)
        self._record_ended(ended, active)
        return running

    def _record_ended(self, ended: list[str], active: dict[str, dict[str, Any]] | None = None) -> None:
        """Dispatched chunks that ended leave ``fair:active`` and count in the farm's throughput."""
        if not ended:
            return
        if active is None:
            active = {rq_id: json.loads(raw) for rq_id, raw in zip(ended, self.redis.hmget(self.key("active"), ended))
                      if raw is not None}
        now = time.time()
        done = {f"{rq_id}:{now}:{active[rq_id]['cost']}": now for rq_id in ended if rq_id in active}
        with self.redis.pipeline() as pipe:
            pipe.hdel(self.key("active"), *ended)
            if done:
                pipe.zadd(self.key("done"), done)
            pipe.zremrangebyscore(self.key("done"), 0, now - THROUGHPUT_WINDOW_SEC)
            pipe.execute()

    def _live_nodes(self) -> list[dict[str, Any]]:
        """The live nodes' records (``reelfarm.farm.runtime.nodes``), read once a round; none when
        the registry cannot be read (RQ's registrations alone, and the CPU queue, which every node works)."""
        from reelfarm.farm.runtime.nodes import NodeRegistry

        try:
            return NodeRegistry(self.redis, self.namespace).live_nodes()
        except Exception:  # noqa: BLE001
            return []

    def _workers(self, nodes: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
        """Live workers per ready queue, (name, state): RQ's registrations, and the nodes' own
        heartbeats (``nodes``), which cover a node whose RQ registration Redis lost (it came back
        empty) until the node registers again."""
        from reelfarm.farm.runtime.routing import works

        found: dict[str, list[tuple[str, str]]] = {}
        for queue in (RENDER_QUEUE, GPU_QUEUE, NVENC_QUEUE):
            keys = [k.decode() if isinstance(k, bytes) else k
                    for k in self.redis.smembers(f"rq:workers:{self.namespace}{queue}")]
            if not keys:
                continue
            with self.redis.pipeline() as pipe:
                for key in keys:
                    pipe.hget(key, "state")
                states = pipe.execute()
            found[queue] = [(k.removeprefix("rq:worker:"), (s.decode() if isinstance(s, bytes) else s) or "")
                            for k, s in zip(keys, states) if s is not None]
        for node in nodes:
            for queue in (RENDER_QUEUE, GPU_QUEUE, NVENC_QUEUE):
                known = {name for name, _ in found.get(queue, [])}
                if works(node, queue) and node["name"] not in known:
                    found.setdefault(queue, []).append((node["name"], str(node.get("state", ""))))
        return found

    def _free(self, target: str, workers: dict[str, list[tuple[str, str]]], worker: Any,
              free_names: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        """Places free on ``target``: its idle workers (and the worker about to take a job, and those
        that said they are), less the jobs already waiting there."""
        me = getattr(worker, "name", None)
        idle = sum(1 for name, state in workers.get(target, [])
                   if (state == "idle" or name in free_names) and name != me)
        if worker is not None and f"{self.namespace}{target}" in worker.queue_names():
            idle += 1
        return idle - int(self.redis.llen(self.ready_list(target)))

    def _move(self, chunks: Sequence[Chunk], target: str, pool: str = "") -> set[str]:
        """Move chunks from their waiting queues to ``target``'s ready queue, in a few pipelines
        whatever their number; returns the ids moved. A chunk is taken out of its waiting queue by
        an atomic ``LREM`` first: one canceled meanwhile, or moved by a round that held the lock
        before, is not moved (its turn is dropped all the same). A chunk of a ``pool`` carries it
        in its job's meta (``poolrounds.rescue_stranded`` reads it)."""
        from rq import Queue
        from rq.job import Job

        from reelfarm.farm.runtime.parking import park_suspended

        chunks = park_suspended(self.redis, self.key, self.waiting_list, chunks)  # a suspended render's wait apart
        if not chunks:
            return set()
        with self.redis.pipeline(transaction=False) as pipe:
            for chunk in chunks:
                pipe.lrem(self.waiting_list(chunk.workspace), 1, chunk.id)
            taken = [c for c, removed in zip(chunks, pipe.execute()) if removed]
        with self.redis.pipeline(transaction=False) as pipe:
            for chunk in chunks:
                pipe.hdel(self.key("turns"), chunk.id)
            dropped = pipe.execute()
        with self.redis.pipeline(transaction=False) as pipe:
            for chunk, gone in zip(chunks, dropped):
                if gone:
                    pipe.hincrby(self.key("owed"), chunk.workspace, -1)
            pipe.execute()
        jobs = Job.fetch_many([c.id for c in taken], connection=self.redis) if taken else []
        ready = Queue(f"{self.namespace}{target}", connection=self.redis)
        moved: set[str] = set()
        with self.redis.pipeline() as pipe:
            for chunk, job in zip(taken, jobs):
                if job is None:
                    continue
                job._dependency_ids = []  # released by RQ already: every dependency finished
                if pool:
                    job.meta["pool"] = pool
                ready.enqueue_job(job, pipeline=pipe)
                pipe.hset(self.key("active"), chunk.id, json.dumps(
                    {"workspace": chunk.workspace, "cost": chunk.cost, "render": chunk.render, "queue": target}))
                moved.add(chunk.id)
            pipe.execute()
        return moved

    def _publish_backlog(self, held: Sequence[Held]) -> None:
        by_target: dict[str, list[str]] = {}
        for h in held:
            by_target.setdefault(h.target, []).append(h.chunk.id)
        if not by_target:  # an idle farm's round: one command
            self.redis.delete(*(self.backlog_list(q) for q in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE)))
            return
        with self.redis.pipeline() as pipe:  # MULTI: a reader sees the old list or the new one
            for queue in (NVENC_QUEUE, GPU_QUEUE, RENDER_QUEUE):
                pipe.delete(self.backlog_list(queue))
                if by_target.get(queue):
                    pipe.rpush(self.backlog_list(queue), *by_target[queue])
            pipe.execute()

    def _load_ledger(self) -> Ledger:
        return Ledger.from_scopes(self.redis.hgetall(self.key("ledger")).items())

    def _save_ledger(self, ledger: Ledger, running: dict[str, int], held: Sequence[Held] = (),
                     before: dict[str, float] | None = None) -> None:
        if self.policy != "fair":
            return
        ledger.prune({h.chunk.workspace for h in held} | {w for w, n in running.items() if n},
                     {h.chunk.render for h in held})
        mapping = ledger.scopes()
        if mapping == before:
            return  # as stored (rounds are one at a time, under the lock)
        with self.redis.pipeline() as pipe:
            pipe.delete(self.key("ledger"))
            if mapping:
                pipe.hset(self.key("ledger"), mapping=mapping)
            pipe.execute()


def _glob_escaped(text: str) -> str:
    """``text`` matched literally in a Redis MATCH pattern."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
