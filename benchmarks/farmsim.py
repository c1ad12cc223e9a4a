"""A render farm in simulated time, dispatched by the farm's own policy (``FairQueue``).

    python -m benchmarks.farmsim                # 10, 100, 1,000 nodes x 10 .. 10,000 workspaces, load 1.0 and 1.2
    python -m benchmarks.farmsim --quick        # a fifth of the simulated time
    python -m benchmarks.farmsim --caps none --nodes 1000 --workspaces 10000 --load 1.0 --seconds 600

A discrete-event model (a heap of events, simulated seconds) of ``nodes`` render nodes and
``workspaces`` workspaces. Nothing of the policy is copied: every dispatch decision is
``reelfarm.farm.services.fairqueue.FairQueue.take`` (``fairness.pick``'s decisions, kept), and a
node that fails is set aside by ``reelfarm.farm.services.nodehealth.after_failure``.

**Nodes.** One node is one render slot (a core's worth of work, as ``reelfarm worker`` runs one
chunk at a time). A chunk of ``f`` frames takes ``start + f x frame`` seconds on it:

- CPU: 18.5 ms a 1080p frame, the whole process ``reelfarm render`` on the quiet machine
  (benchmarks/README.md, "python -m benchmarks.pipeline", ``pipeline-20261124T201643.json``);
- GPU: 12.7 ms a frame, x264 alone on ready yuv420p in the same run: an H100/H200 node draws and
  converts on the GPU and encodes on its CPU (RENDER-NOTES: those GPUs have no NVENC), so x264 is
  its bound. Worked out, not measured: no GPU figure of the renderer exists yet;
- start: 0.215 s, start-up to the first frame (``reelfarm still``, the same README section).

A fraction ``--gpu-fraction`` of the nodes are GPU nodes; free GPU nodes are used first.
``--latency`` (0.05 s, an assumption) passes between a decision and the chunk starting on its node.

**Faults.** Each node dies after an exponential time (``--mtbf``); its chunk counts as running
until the farm notices, 16 s later (the ``node`` scenario of ``benchmarks.partitions`` measured 16.0 s
from the kill to the chunk running again), then waits again, first of its render
(``FairQueue.requeue``); the node comes back ``--restart`` seconds after it died. A fraction
``--bad-fraction`` of the nodes fail every chunk ``--fail-after`` seconds in; the failed chunk waits
again the same way, and the node is set aside after ``SetAsidePolicy().after`` failures in a row
(the farm's defaults: 3, then 600 s; on probation after that).

**Work.** Each workspace alternates bursts (exponential, mean ``--on``) and pauses (Pareto, shape
1.5, mean ``--off``); in a burst it asks for renders as a Poisson process. A render lasts a Pareto
number of seconds (shape ``--alpha``, from 6 s to ``--max-sec``), at 30 fps, cut as the farm cuts it
(``renderer.chunks``: a 1 s leading chunk, then pieces of about 5 s). The request rate is set so
that the frames asked for per second are ``--load`` times what the nodes can render (chunk
start-up and latency counted). Workspaces' shares are their plans' (``reelfarm.shared.plans``),
drawn with odds 1/weight^2 (the cheaper plans are the common ones), with their caps, with their
caps giving way to places nothing else takes (``--caps spare``: ``REELFARM_CAPS=spare``), or with
none (``--caps none``: each may take every node, its weight kept).

**The probe.** At 40% of the run a workspace on the heaviest plan's weight with no cap (the
worst neighbour) asks for ``--backlog`` chunks of 150 frames at once; 10 s later a new
workspace on the lightest plan asks for a 6 s render (two chunks: 30 and 150 frames). Its
slowdown is its time from request to last chunk done over the same render's time on the same
farm with nothing else (no faults either).

**What it reports**, over the ``--seconds`` simulated (the run goes on past them only until the
probe is done, and counts nothing else there):

- utilisation while work waits: node-seconds running chunks over node-seconds of nodes that take
  work (alive, not set aside), over the time when some chunk waits; beside it the same over the
  time when some chunk waits that a cap does not hold back (the dispatcher's work conservation),
  and how much of the waiting time every waiting chunk was held by its workspace's cap;
- Jain's index ``(sum x)^2 / (n sum x^2)`` of the frames dispatched to each workspace in a window of
  ``--window`` seconds, among the workspaces of one share (weight and cap) that had chunks
  waiting throughout that window (groups of two or more), weighted by group size over the windows.
  The window must let each of them be served several chunks, or the index measures only that a
  chunk is not divisible (a workspace given one chunk and one given none score 0.5 in a window
  where both were treated alike); by default it is 60 s x sqrt(1,000 / nodes): 60 s at 1,000
  nodes, 600 s at 10. The frames each was given in a window are reported beside it;
- queue wait (request to first chunk dispatched) and turnaround (to last chunk done) percentiles,
  by render size: up to 12 s (the arrival credit), 1 min, 10 min, longer. A render not started by
  the end counts as waiting until then (so a percentile is a lower bound where there are such:
  ``not_started_by_the_end``); turnarounds are of the renders finished by then.

Results: ``benchmarks/results/farmsim-<UTC time>.json``.
"""
from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from reelfarm.farm.services.fairness import Chunk, Share, plan_share
from reelfarm.farm.services.fairqueue import FairQueue
from reelfarm.farm.services.nodehealth import SetAsidePolicy, Standing, after_failure
from reelfarm.renderer.chunks import LEAD_SEC, plan_chunks
from reelfarm.shared.plans import PLANS

RESULTS = Path(__file__).resolve().parent / "results"
FPS = 30
CHUNK_FRAMES = 150
CLASSES = ((12.0, "<=12s"), (60.0, "<=1min"), (600.0, "<=10min"), (math.inf, ">10min"))
PROBE_SEC = 6.0
ARRIVE, BURST, START, END, FAIL, DIE, DETECT, REVIVE, RETURN, WINDOW, SUBMIT = range(11)


@dataclass(frozen=True)
class NodeKind:
    """How fast a node renders: seconds a frame, and to start a chunk."""

    name: str
    frame_sec: float
    start_sec: float = 0.215


CPU = NodeKind("cpu", 0.0185)
GPU = NodeKind("gpu", 0.0127)


@dataclass(frozen=True)
class Config:
    nodes: int = 100
    workspaces: int = 100
    seconds: float = 1800.0
    gpu_fraction: float = 0.25
    load: float = 1.0
    latency: float = 0.05
    mtbf: float = 6 * 3600.0
    detect: float = 16.0
    restart: float = 120.0
    bad_fraction: float = 0.02
    fail_after: float = 1.0
    on: float = 180.0
    off: float = 900.0
    alpha: float = 1.3
    max_sec: float = 1800.0
    window: float = 0.0  # seconds; 0: 60 x sqrt(1000 / nodes), at least 60
    backlog: int = 10_000
    caps: bool = True  # the plans' caps; False: every workspace may take every node (weights kept)
    spare: bool = False  # the caps give way to places nothing else takes (REELFARM_CAPS=spare)
    probe: bool = True
    drain: bool = False  # go on after ``seconds`` (no new requests) until every chunk is done
    seed: int = 1


@dataclass(slots=True)
class Render:
    workspace: str
    seconds: float
    chunks: int
    submitted: float
    started: float | None = None
    done: int = 0
    finished: float | None = None


def cut(seconds: float) -> list[int]:
    """A render's chunks in frames, as the farm plans them (``renderer.chunks``)."""
    total = max(1, round(seconds * FPS))
    lead = round(LEAD_SEC * FPS)
    head = [lead] if total > 2 * lead else []
    rest = total - sum(head)
    return head + [b - a for a, b in plan_chunks(rest, max(1, math.ceil(rest / CHUNK_FRAMES)))]


def pareto(rng: random.Random, low: float, alpha: float, high: float = math.inf) -> float:
    """A Pareto draw of shape ``alpha`` from ``low``, truncated at ``high``."""
    span = 1 - (low / high) ** alpha
    return float(low / (1 - rng.random() * span) ** (1 / alpha))


def pareto_mean(low: float, alpha: float, high: float) -> float:
    span = 1 - (low / high) ** alpha
    return alpha * low ** alpha * (low ** (1 - alpha) - high ** (1 - alpha)) / ((alpha - 1) * span)


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one has everything."""
    total, squares = sum(values), sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares else 1.0


class FarmSim:
    """One run. ``kinds``: the nodes (default from ``config``); ``shares`` and ``script``: named
    workspaces and their requests ``(time, workspace, chunk frames)`` beside the generated ones."""

    def __init__(self, config: Config, kinds: Sequence[NodeKind] | None = None,
                 shares: dict[str, Share] | None = None,
                 script: Sequence[tuple[float, str, Sequence[int]]] = ()) -> None:
        self.config = config
        self.rng = random.Random(config.seed)  # the workload and the faults
        self.plans = random.Random(config.seed + 1)  # workspaces' plans, drawn apart: as many draws whoever asks
        gpus = round(config.gpu_fraction * config.nodes)
        self.kind = list(kinds) if kinds is not None else [GPU] * gpus + [CPU] * (config.nodes - gpus)
        count = len(self.kind)
        self.bad = set(self.rng.sample(range(count), round(config.bad_fraction * count)))
        self.shares = dict(shares or {})
        self.queue = FairQueue(self._share, spare=config.spare)
        self.events: list[tuple[float, int, int, Any, Any]] = []
        self.sequence = 0
        self.alive = [True] * count
        self.aside = [False] * count
        self.epoch = [0] * count
        self.running: list[Chunk | None] = [None] * count
        self.began: list[float | None] = [None] * count  # when its chunk started (None: not yet)
        self.standing = [Standing()] * count
        self.is_free = [True] * count
        self.free = {GPU.name: [i for i in range(count) if self.kind[i] is GPU],
                     CPU.name: [i for i in range(count) if self.kind[i] is not GPU]}
        self.free_count, self.eligible, self.busy = count, count, 0
        self.renders: dict[str, Render] = {}
        self.waiting: dict[str, int] = {}  # per workspace, chunks waiting
        self.since: dict[str, float] = {}  # per workspace with chunks waiting: waiting since
        self.window_frames: dict[str, int] = {}
        self.window = config.window or round(60.0 * max(1.0, (1000 / max(1, count)) ** 0.5))
        self.done: set[str] = set()
        self.on_until: dict[str, float] = {}
        self.rate = 0.0
        self.now = self.last = 0.0
        self.capped_only = False
        self.acc = dict.fromkeys(("waiting_sec", "busy", "capacity", "busy_free", "capacity_free", "capped_sec",
                                  "lost_node_sec", "failed_node_sec"), 0.0)
        self.counts = dict.fromkeys(("renders", "chunks", "frames", "dispatched", "done_chunks", "done_frames",
                                     "deaths", "requeued_after_death", "failures", "set_aside", "takes"), 0)
        self.take_sec = 0.0
        self.jain_groups: list[tuple[float, int, float]] = []  # index, workspaces, mean frames each
        self.probe: str | None = None
        for at, workspace, frames in script:
            self._schedule(at, SUBMIT, workspace, list(frames))

    # -- set-up -------------------------------------------------------------------------------

    def _share(self, workspace: str) -> Share:
        if workspace not in self.shares:
            plans = sorted(PLANS.values(), key=lambda p: p.dispatch_weight)
            odds = [1 / p.dispatch_weight ** 2 for p in plans]
            self.shares[workspace] = self._capped(plan_share(self.plans.choices(plans, odds)[0]))
        return self.shares[workspace]

    def _capped(self, share: Share) -> Share:
        return share if self.config.caps else Share(share.weight, max(1, len(self.kind)))

    def _schedule(self, at: float, kind: int, a: Any = None, b: Any = None) -> None:
        if at < self.now:
            raise AssertionError(f"an event scheduled at {at} s, before now ({self.now} s)")
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, a, b))

    def _start_workload(self) -> None:
        cfg = self.config
        if cfg.workspaces:
            per_node = [CHUNK_FRAMES / (cfg.latency + k.start_sec + CHUNK_FRAMES * k.frame_sec) for k in self.kind]
            duty = cfg.on / (cfg.on + cfg.off)
            mean_frames = pareto_mean(6.0, cfg.alpha, cfg.max_sec) * FPS
            self.rate = cfg.load * sum(per_node) / (cfg.workspaces * duty * mean_frames)  # requests/s in a burst
            for n in range(cfg.workspaces):
                workspace = f"w{n:05d}"
                self._schedule(0.0 if self.rng.random() < duty else self.rng.uniform(0, 2 * cfg.off), BURST, workspace)
        for node in range(len(self.kind)):
            self._schedule_death(node)
        self._schedule(self.window, WINDOW, 0.0)
        if cfg.probe:
            inject = 0.4 * cfg.seconds
            heavy = max(p.dispatch_weight for p in PLANS.values())
            self.shares["backlog"] = Share(float(heavy), max(1, len(self.kind)))
            light = min(PLANS.values(), key=lambda p: p.dispatch_weight)
            self.shares["probe"] = self._capped(plan_share(light))
            for r in range(0, cfg.backlog, 100):
                self._schedule(inject, SUBMIT, "backlog", [CHUNK_FRAMES] * min(100, cfg.backlog - r))
            self._schedule(inject + 10.0, SUBMIT, "probe", cut(PROBE_SEC))

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        wall = time.process_time()
        self._start_workload()
        handlers = {ARRIVE: self._arrive, BURST: self._burst, START: self._start, END: self._end, FAIL: self._fail,
                    DIE: self._die, DETECT: self._detect, REVIVE: self._revive, RETURN: self._return,
                    WINDOW: self._window, SUBMIT: self._submit}
        while self.events:
            at, _, kind, a, b = heapq.heappop(self.events)
            if at < self.now:
                raise AssertionError(f"an event at {at} s after the clock reached {self.now} s")
            if at > self.config.seconds and not self._going_on() or at > 20 * self.config.seconds:
                break  # the horizon; going on past it for the probe or the drain, never past 20 times it
            self._advance(at)
            handlers[kind](a, b)
            self._dispatch()
        self._advance(max(self.now, self.config.seconds))
        return self._report(time.process_time() - wall)

    def _going_on(self) -> bool:
        if self.config.drain:
            return self.counts["done_chunks"] < self.counts["chunks"]
        probe = self.renders.get(self.probe) if self.probe else None
        return probe is not None and probe.finished is None

    def _advance(self, at: float) -> None:
        """Count the time since the last event (up to ``seconds``), the state having stood still."""
        span = min(at, self.config.seconds) - min(self.last, self.config.seconds)
        if span > 0 and self.queue.chunks_waiting():
            acc = self.acc
            acc["waiting_sec"] += span
            acc["busy"] += self.busy * span
            acc["capacity"] += self.eligible * span
            if self.capped_only:
                acc["capped_sec"] += span
            else:
                acc["busy_free"] += self.busy * span
                acc["capacity_free"] += self.eligible * span
        self.last = self.now = at

    def _dispatch(self) -> None:
        if self.free_count and self.queue.chunks_waiting():
            start = time.process_time()
            chosen = self.queue.take(self.free_count)
            self.take_sec += time.process_time() - start
            self.counts["takes"] += 1
            for chunk in chosen:
                self._assign(self._free_node(), chunk)
        self.capped_only = self.free_count > 0 and self.queue.chunks_waiting() > 0

    def _free_node(self) -> int:
        for kind in (GPU.name, CPU.name):
            stack = self.free[kind]
            while stack:
                node = stack.pop()
                if self.is_free[node]:
                    self.is_free[node] = False
                    self.free_count -= 1
                    return node
        raise LookupError("no free node")

    def _release(self, node: int) -> None:
        self.is_free[node] = True
        self.free_count += 1
        self.free[GPU.name if self.kind[node] is GPU else CPU.name].append(node)

    def _assign(self, node: int, chunk: Chunk) -> None:
        self.running[node] = chunk
        self.counts["dispatched"] += 1
        self._waits(chunk.workspace, -1)
        self.window_frames[chunk.workspace] = self.window_frames.get(chunk.workspace, 0) + chunk.cost
        render = self.renders[chunk.render]
        if render.started is None:
            render.started = self.now
        self._schedule(self.now + self.config.latency, START, node, self.epoch[node])

    def _waits(self, workspace: str, change: int) -> None:
        before = self.waiting.get(workspace, 0)
        self.waiting[workspace] = before + change
        if before == 0:
            self.since[workspace] = self.now
        elif before + change == 0:
            del self.since[workspace]

    # -- events -------------------------------------------------------------------------------

    def _burst(self, workspace: str, _: Any) -> None:
        if self.now <= self.config.seconds:
            self.on_until[workspace] = self.now + self.rng.expovariate(1 / self.config.on)
            self._next_request(workspace)

    def _arrive(self, workspace: str, _: Any) -> None:
        if self.now <= self.config.seconds:
            self._submit(workspace, cut(pareto(self.rng, 6.0, self.config.alpha, self.config.max_sec)))
            self._next_request(workspace)

    def _next_request(self, workspace: str) -> None:
        """The burst's next request, or, past its end, the next burst (a Pareto pause of mean ``off``)."""
        at = self.now + self.rng.expovariate(self.rate)
        if at <= self.on_until[workspace]:
            self._schedule(at, ARRIVE, workspace)
        else:
            self._schedule(self.on_until[workspace] + pareto(self.rng, self.config.off / 3, 1.5), BURST, workspace)

    def _submit(self, workspace: str, frames: list[int]) -> None:
        name = f"r{self.counts['renders']}"
        self.counts["renders"] += 1
        self.renders[name] = Render(workspace, sum(frames) / FPS, len(frames), self.now)
        if workspace == "probe":
            self.probe = name
        for index, cost in enumerate(frames):
            self.queue.add(Chunk(f"{name}-{index}", workspace, name, cost, seq=self.now, index=index))
            self._waits(workspace, 1)
            self.counts["chunks"] += 1
            self.counts["frames"] += cost

    def _start(self, node: int, epoch: int) -> None:
        if epoch != self.epoch[node]:
            return
        chunk = self.running[node]
        assert chunk is not None
        self.busy += 1
        self.began[node] = self.now
        kind = self.kind[node]
        if node in self.bad:
            self._schedule(self.now + self.config.fail_after, FAIL, node, epoch)
        else:
            self._schedule(self.now + kind.start_sec + chunk.cost * kind.frame_sec, END, node, epoch)

    def _end(self, node: int, epoch: int) -> None:
        if epoch != self.epoch[node]:
            return
        chunk = self.running[node]
        assert chunk is not None and self.queue.finished(chunk.id) == chunk
        if chunk.id in self.done:
            raise AssertionError(f"chunk {chunk.id} rendered twice")
        self.done.add(chunk.id)
        self.counts["done_chunks"] += 1
        self.counts["done_frames"] += chunk.cost
        render = self.renders[chunk.render]
        render.done += 1
        if render.done == render.chunks:
            render.finished = self.now
        self.busy -= 1
        self.running[node] = self.began[node] = None
        self.standing[node] = Standing()
        self._release(node)

    def _fail(self, node: int, epoch: int) -> None:
        if epoch != self.epoch[node]:
            return
        chunk = self.running[node]
        assert chunk is not None and self.queue.requeue(chunk.id) == chunk
        self._waits(chunk.workspace, 1)
        self.counts["failures"] += 1
        self.acc["failed_node_sec"] += self.config.fail_after if self.now <= self.config.seconds else 0.0
        self.busy -= 1
        self.running[node] = self.began[node] = None
        others = self.eligible - 1 > 0
        self.standing[node] = after_failure(self.standing[node], "the node's own fault", self.now, SetAsidePolicy(),
                                            others)
        if self.standing[node].set_aside(self.now):
            self.aside[node] = True
            self.eligible -= 1
            self.counts["set_aside"] += 1
            self._schedule(self.standing[node].until, RETURN, node, epoch)
        else:
            self._release(node)

    def _die(self, node: int, epoch: int) -> None:
        if epoch != self.epoch[node] or not self.alive[node]:
            return
        self.counts["deaths"] += 1
        self.alive[node] = False
        self.epoch[node] += 1
        if self.is_free[node]:
            self.is_free[node] = False
            self.free_count -= 1
        if not self.aside[node]:
            self.eligible -= 1
        chunk, began = self.running[node], self.began[node]
        if chunk is not None:
            self._schedule(self.now + self.config.detect, DETECT, chunk.id)
            self.running[node] = self.began[node] = None
            if began is not None:
                self.busy -= 1
                self.acc["lost_node_sec"] += self.now - began if self.now <= self.config.seconds else 0.0
        self._schedule(self.now + self.config.restart, REVIVE, node)

    def _detect(self, chunk_id: str, _: Any) -> None:
        chunk = self.queue.requeue(chunk_id)
        assert chunk is not None
        self._waits(chunk.workspace, 1)
        self.counts["requeued_after_death"] += 1

    def _revive(self, node: int, _: Any) -> None:
        self.alive[node] = True
        self.aside[node] = False
        self.standing[node] = Standing()
        self.eligible += 1
        self._release(node)
        self._schedule_death(node)

    def _schedule_death(self, node: int) -> None:
        if math.isfinite(self.config.mtbf):
            self._schedule(self.now + self.rng.expovariate(1 / self.config.mtbf), DIE, node, self.epoch[node])

    def _return(self, node: int, epoch: int) -> None:
        if epoch == self.epoch[node] and self.aside[node]:
            self.aside[node] = False
            self.eligible += 1
            self._release(node)

    def _window(self, opened: float, _: Any) -> None:
        """Jain's index per share among the workspaces waiting throughout the window just ended."""
        groups: dict[Share, list[float]] = {}
        for workspace, since in self.since.items():
            if since <= opened:
                groups.setdefault(self._share(workspace), []).append(self.window_frames.get(workspace, 0))
        for values in groups.values():
            if len(values) >= 2:
                self.jain_groups.append((jain(values), len(values), sum(values) / len(values)))
        self.window_frames = {}
        if self.now + self.window <= self.config.seconds:
            self._schedule(self.now + self.window, WINDOW, self.now)

    # -- the report ---------------------------------------------------------------------------

    def _report(self, cpu_sec: float) -> dict[str, Any]:
        acc, horizon = self.acc, self.config.seconds
        classes: dict[str, dict[str, list[float]]] = {name: {"wait": [], "turnaround": []} for _, name in CLASSES}
        unstarted = dict.fromkeys(classes, 0)
        for render in self.renders.values():
            if render.workspace in ("backlog", "probe") or render.submitted > horizon:
                continue
            name = next(n for top, n in CLASSES if render.seconds <= top)
            if render.started is None or render.started > horizon:
                unstarted[name] += 1  # it waited at least until the end: counted so, a lower bound
                classes[name]["wait"].append(horizon - render.submitted)
                continue
            classes[name]["wait"].append(render.started - render.submitted)
            if render.finished is not None and render.finished <= horizon:
                classes[name]["turnaround"].append(render.finished - render.submitted)
        waits = {name: {"renders": len(v["wait"]), "not_started_by_the_end": unstarted[name],
                        "wait_p50": _pct(v["wait"], 50), "wait_p90": _pct(v["wait"], 90), "wait_p99": _pct(v["wait"], 99),
                        "turnaround_p50": _pct(v["turnaround"], 50), "turnaround_p90": _pct(v["turnaround"], 90)}
                 for name, v in classes.items()}
        groups = sum(n for _, n, _ in self.jain_groups)
        probe = self.renders.get(self.probe) if self.probe else None
        return {
            "utilisation_while_waiting": _ratio(acc["busy"], acc["capacity"]),
            "utilisation_while_uncapped_work_waits": _ratio(acc["busy_free"], acc["capacity_free"]),
            "waiting_share_of_time": _ratio(acc["waiting_sec"], horizon),
            "capped_share_of_waiting_time": _ratio(acc["capped_sec"], acc["waiting_sec"]),
            "jain": {"mean": _ratio(sum(j * n for j, n, _ in self.jain_groups), groups),
                     "p5": _pct([j for j, _, _ in self.jain_groups], 5),
                     "min": min((round(j, 4) for j, _, _ in self.jain_groups), default=None),
                     "groups": len(self.jain_groups), "workspaces_per_group": _ratio(groups, len(self.jain_groups)),
                     "frames_per_workspace": _ratio(sum(f * n for _, n, f in self.jain_groups), groups),
                     "window_sec": self.window},
            "by_size": waits,
            "probe": None if probe is None else {
                "waited": None if probe.started is None else round(probe.started - probe.submitted, 3),
                "turnaround": None if probe.finished is None else round(probe.finished - probe.submitted, 3)},
            "counts": dict(self.counts),
            "node_sec": {"lost_to_deaths": round(acc["lost_node_sec"], 1), "failed_attempts": round(acc["failed_node_sec"], 1),
                         "of_capacity_while_waiting": round(acc["capacity"], 1)},
            "cpu_sec": round(cpu_sec, 2), "take_us_mean": _ratio(self.take_sec * 1e6, self.counts["takes"]),
        }


def _ratio(top: float, bottom: float) -> float | None:
    return round(top / bottom, 4) if bottom else None


def _pct(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile (None of nothing)."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))], 3)


def simulate(config: Config) -> dict[str, Any]:
    """One run, and the probe's time on the same farm with nothing else (its slowdown)."""
    sim = FarmSim(config)
    report = sim.run()
    if report["probe"] is not None and report["probe"]["turnaround"] is not None:
        quiet = replace(config, workspaces=0, bad_fraction=0.0, mtbf=math.inf, probe=False)
        alone = FarmSim(quiet, kinds=sim.kind, shares={"probe": sim.shares["probe"]},
                        script=[(0.0, "probe", cut(PROBE_SEC))]).run()["probe"]["turnaround"]
        report["probe"].update(alone=alone, slowdown=round(report["probe"]["turnaround"] / alone, 3))
    return {"config": asdict(config), **report}


def sweep_seconds(nodes: int) -> float:
    """Simulated seconds for a farm of ``nodes``: about the same number of chunks whatever its size."""
    return round(600.0 * max(1.0, (1000 / nodes) ** 0.5))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[10, 100, 1000])
    parser.add_argument("--workspaces", type=int, nargs="*", default=[10, 100, 1000, 10000])
    parser.add_argument("--seconds", type=float, help="simulated seconds (default: 600 x sqrt(1000 / nodes), at least 600)")
    parser.add_argument("--quick", action="store_true", help="a fifth of the simulated time")
    parser.add_argument("--load", type=float, nargs="*", default=[1.0, 1.2],
                        help="frames asked per second over what the nodes can render")
    parser.add_argument("--caps", choices=("plans", "spare", "none", "both", "all"), default="plans",
                        help="the plans' caps, the plans' caps giving way to idle places (REELFARM_CAPS=spare), "
                             "none (weights kept), plans and none, or all three")
    for name, default in asdict(Config()).items():
        if name not in ("nodes", "workspaces", "seconds", "probe", "drain", "caps", "spare", "load"):
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = parser.parse_args(argv)
    base = {k: getattr(args, k) for k in asdict(Config())
            if k not in ("nodes", "workspaces", "seconds", "probe", "drain", "caps", "spare", "load")}
    rows = []
    print(f"{'caps':>5} {'load':>4} {'nodes':>5} {'workspaces':>10} {'sim s':>6} {'util':>6} {'util*':>6} {'capped':>6} "
          f"{'jain':>6} {'p5':>6} {'groups':>6} {'frames':>6} {'small wait p90':>14} {'probe':>6} {'alone':>6} {'slow':>5} {'cpu s':>6}")
    variants = {"plans": [(True, False)], "spare": [(True, True)], "none": [(False, False)],
                "both": [(True, False), (False, False)], "all": [(True, False), (True, True), (False, False)]}[args.caps]
    for caps, load, nodes, workspaces in ((c, x, n, w) for c in variants for x in args.load
                                          for n in args.nodes for w in args.workspaces):
        seconds = args.seconds or sweep_seconds(nodes)
        seconds = seconds / 5 if args.quick else seconds
        row = simulate(Config(nodes=nodes, workspaces=workspaces, seconds=seconds, caps=caps[0], spare=caps[1],
                              load=load, **base))
        rows.append(row)
        print(_line(row), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = RESULTS / f"farmsim-{stamp}.json"
    out.write_text(json.dumps({"rows": rows, "quick": args.quick, "machine": {
        "cpu_count": os.cpu_count(), "python": platform.python_version()}}, indent=2))
    print(f"wrote {out}")


def _line(row: dict[str, Any]) -> str:
    cfg, probe, fair = row["config"], row["probe"] or {}, row["jain"]
    name = ("spare" if cfg.get("spare") else "plans") if cfg["caps"] else "none"
    return (f"{name:>5} {cfg['load']:>4} {cfg['nodes']:>5} {cfg['workspaces']:>10} "
            f"{cfg['seconds']:>6.0f} {_show(row['utilisation_while_waiting'])} "
            f"{_show(row['utilisation_while_uncapped_work_waits'])} {_show(row['capped_share_of_waiting_time'])} "
            f"{_show(fair['mean'])} {_show(fair['p5'])} {fair['groups']:>6} {_show(fair['frames_per_workspace'])} "
            f"{_show(row['by_size']['<=12s']['wait_p90']):>14} {_show(probe.get('turnaround'))} "
            f"{_show(probe.get('alone'))} {_show(probe.get('slowdown'), 5)} {row['cpu_sec']:>6}")


def _show(value: float | None, width: int = 6) -> str:
    return f"{value:>{width}.3g}" if value is not None else f"{'-':>{width}}"


if __name__ == "__main__":
    main()
