"""CPU milliseconds of one dispatch decision: ``fairness.pick`` over the backlog against ``FairQueue.take``.

    python -m benchmarks.fairqueue                  # 1k chunks in 10 workspaces, 100k in 1,000
    python -m benchmarks.fairqueue --quick          # 100 takes a size (a few seconds)
    python -m benchmarks.fairqueue --sizes 1000:10 10000:100 100000:1000

For each size ``chunks:workspaces``: every workspace has renders of 10 chunks of 150 frames
(a 50 s render at 30 fps), arriving one after another; the workspaces' shares cycle through the
plans' (``reelfarm.shared.plans``), and every third workspace has chunks running, two of them at
their cap. One decision is a take of 10 free places:

- ``pick``: ``fairness.pick(waiting, 10, running=..., shares=..., ledger=copy)``, as the
  dispatcher calls it each round, the waiting chunks a plain list (its reading them is not timed);
- ``take``: ``FairQueue.take(10)`` on a queue holding the same chunks; between two takes (not
  timed) the ten chunks finish and ten new ones of the same renders arrive, so the backlog and the
  running counts stay as they were (``add`` is timed apart, per chunk). ``take hot``: takes one
  after another, so a small queue stays in the processor's caches (1k chunks are about 1 MB of
  objects; 100k, about 60 MB, do not fit); ``take cold``: 64 MiB written between two takes, as a
  dispatcher's I/O between two rounds would, so neither size finds itself in the caches;
- ``line`` and ``frames_ahead``: a render's place in line, ordered whole (``fairness.line``) and
  estimated from the queue's counters.

The first take is checked to choose what ``pick`` chose. CPU time of this process
(``time.process_time``), medians; results in ``benchmarks/results/fairqueue-<UTC time>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reelfarm.farm.services.fairness import Chunk, Ledger, Share, line, pick, plan_share
from reelfarm.farm.services.fairqueue import FairQueue
from reelfarm.shared.plans import PLANS

RESULTS = Path(__file__).resolve().parent / "results"
SLOTS = 10
CHUNKS_PER_RENDER = 10
COST = 150


def backlog(chunks: int, workspaces: int) -> tuple[list[Chunk], dict[str, Share], dict[str, int]]:
    """The waiting chunks, each workspace's share and the chunks running per workspace."""
    plans = list(PLANS)
    shares = {f"w{n:05d}": plan_share(plans[n % len(plans)]) for n in range(workspaces)}
    names = list(shares)
    waiting = []
    for n in range(chunks // CHUNKS_PER_RENDER):
        workspace = names[n % workspaces]
        render = f"r{n:06d}"
        for index in range(CHUNKS_PER_RENDER):
            waiting.append(Chunk(f"{render}-{index}", workspace, render, COST, "normal", float(n), index))
    running = {w: (shares[w].cap if n % 9 == 0 else 1) for n, w in enumerate(names) if n % 3 == 0}
    return waiting, shares, running


def _cpu_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = call()
    return (time.process_time() - start) * 1000, result


def _takes(queue: FairQueue, taken: list[Chunk], chunks: int, rounds: range, sweep: bytearray | None,
           refill: list[float]) -> tuple[list[float], list[Chunk]]:
    """CPU ms of a take each round, the chunks of each finished and as many arriving before the
    next; and the chunks the last one took."""
    takes = []
    for round_ in rounds:
        for chunk in taken:
            queue.finished(chunk.id)
            fresh = Chunk(f"{chunk.id}+{round_}", chunk.workspace, chunk.render, COST, "normal",
                          float(chunks + round_), chunk.index + CHUNKS_PER_RENDER * (round_ + 1))
            ms, _ = _cpu_ms(lambda c=fresh: queue.add(c))
            refill.append(ms)
        if sweep is not None:
            sweep[:] = bytes(len(sweep))
        ms, taken = _cpu_ms(lambda: queue.take(SLOTS))
        takes.append(ms)
    return takes, taken


def measure(chunks: int, workspaces: int, repeat: int) -> dict[str, Any]:
    waiting, shares, running = backlog(chunks, workspaces)
    share = shares.__getitem__
    ledger = Ledger()
    picks = []
    for _ in range(max(3, repeat // 20)):
        ms, chosen = _cpu_ms(lambda: pick(waiting, SLOTS, running=running, shares=share, ledger=ledger.copy()))
        picks.append(ms)
    queue = FairQueue(share)
    for workspace, count in running.items():
        for n in range(count):
            queue.started(Chunk(f"run-{workspace}-{n}", workspace, f"run-{workspace}", COST))
    adds = []
    for chunk in waiting:
        ms, _ = _cpu_ms(lambda c=chunk: queue.add(c))
        adds.append(ms)
    first_ms, first = _cpu_ms(lambda: queue.take(SLOTS))
    assert [c.id for c in first] == [c.id for c in chosen], "the queue chose otherwise than pick"
    refill: list[float] = []
    takes, taken = _takes(queue, first, chunks, range(repeat), None, refill)
    cold, _ = _takes(queue, taken, chunks, range(repeat, repeat + max(20, repeat // 4)), bytearray(64 << 20), refill)
    probe = waiting[len(waiting) // 2].render
    lines = [_cpu_ms(lambda: line((), waiting, shares, ledger, "fair", Share(1.0, 1 << 30)))[0]
             for _ in range(max(1, repeat // 100))]
    aheads = [_cpu_ms(lambda: queue.frames_ahead(probe))[0] for _ in range(max(5, repeat // 10))]
    return {"chunks_waiting": chunks, "workspaces": workspaces, "slots": SLOTS,
            "pick_ms": round(statistics.median(picks), 3), "pick_runs": len(picks),
            "take_ms": round(statistics.median(takes), 4), "take_p90_ms": round(_p90(takes), 4), "take_runs": len(takes),
            "take_cold_ms": round(statistics.median(cold), 4), "take_cold_runs": len(cold),
            "first_take_ms": round(first_ms, 3),
            "add_us_per_chunk": round(statistics.median(adds + refill) * 1000, 2),
            "line_ms": round(statistics.median(lines), 2), "frames_ahead_ms": round(statistics.median(aheads), 3),
            "ratio_pick_to_take": round(statistics.median(picks) / statistics.median(takes), 1)}


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def _git() -> dict[str, Any]:
    def run(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=False,
                              cwd=Path(__file__).resolve().parents[1]).stdout
    return {"commit": run("rev-parse", "HEAD").strip() or None,
            "changed_tracked_files": sorted(run("diff", "--name-only", "HEAD").split())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="*", default=["1000:10", "100000:1000"], help="chunks:workspaces")
    parser.add_argument("--repeat", type=int, default=400, help="takes per size (picks: a twentieth, at least 3)")
    parser.add_argument("--quick", action="store_true", help="100 takes per size")
    args = parser.parse_args(argv)
    repeat = 100 if args.quick else args.repeat
    load_before = os.getloadavg()
    rows = [measure(*(int(x) for x in size.split(":")), repeat=repeat) for size in args.sizes]
    print(f"{'chunks':>8} {'workspaces':>10} {'pick ms':>9} {'take hot':>9} {'hot p90':>8} {'take cold':>9} "
          f"{'pick/hot':>8} {'add us':>7} {'line ms':>9} {'ahead ms':>9}")
    for row in rows:
        print(f"{row['chunks_waiting']:>8} {row['workspaces']:>10} {row['pick_ms']:>9} {row['take_ms']:>9} "
              f"{row['take_p90_ms']:>8} {row['take_cold_ms']:>9} {row['ratio_pick_to_take']:>8} "
              f"{row['add_us_per_chunk']:>7} {row['line_ms']:>9} {row['frames_ahead_ms']:>9}")
    growth = [{"chunks_waiting": row["chunks_waiting"], "workspaces": row["workspaces"],
               "take_hot": round(row["take_ms"] / rows[0]["take_ms"], 2),
               "take_cold": round(row["take_cold_ms"] / rows[0]["take_cold_ms"], 2),
               "pick": round(row["pick_ms"] / rows[0]["pick_ms"], 1)} for row in rows[1:]]
    for g in growth:
        print(f"{g['chunks_waiting']} in {g['workspaces']} workspaces / the first size: take hot {g['take_hot']}x, "
              f"cold {g['take_cold']}x; pick {g['pick']}x")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = RESULTS / f"fairqueue-{stamp}.json"
    out.write_text(json.dumps({"rows": rows, "growth": growth, "repeat": repeat,
                               "load_average": {"before": load_before, "after": os.getloadavg()},
                               "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                                           "platform": platform.platform()}, "git": _git()}, indent=2))
    print(f"wrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
