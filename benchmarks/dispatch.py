"""What a round of fair dispatch costs at 1k to 100k waiting chunks, and how soon a freed place
gets a chunk with many processes bidding for the dispatch.

    python -m benchmarks.dispatch rounds --chunks 1000,10000,100000 --workspaces 10,1000
    python -m benchmarks.dispatch freed --processes 16 --chunks 10000

``rounds``: for each (chunks, workspaces) a Redis of its own (``tests/servers.py``), the chunks
held and put in their workspaces' waiting queues as ``RQQueue.enqueue`` leaves them (turns in
``fair:turns``, RQ jobs in ``waiting:<workspace>``; written in pipelines so that 100k take
seconds), then rounds filling 10 places (``Dispatcher.round(slots=10)``), each followed by the
10 chunks' ends (their RQ status set to finished, their ready queue emptied), as a farm's would be:

- ``kept``: the dispatcher's copy of the fair queues (``reelfarm.farm.runtime.dispatchmirror``);
  its first round builds the copy (``build_ms``, once per change of hands), the rest are timed;
- ``scan``: the same rounds by ``Dispatcher._scan_round``, ``fairness.pick`` over every waiting
  chunk, as every round was before the copy.

Each reports the median and p90 wall milliseconds of a round and the Redis commands a round
(``INFO commandstats``, less the benchmark's own). ``freed``: ``--processes`` processes, each an
RQ worker registered as busy on ``render`` with an ``RQQueue`` started (so one of them holds the
dispatch lease), ``--chunks`` waiting across 100 workspaces; each process in turn says it is free
(``wake(free=<its name>)``, what a node does before it takes a job), waits on the ready queue
(``BLPOP``) and notes how long the chunk took to come, "runs" it (10-50 ms asleep) and marks it
finished; a process that has freed its places keeps its bid for the lease until all have (a process
leaving hands the lease over: the next builds its copy, not a freed place's wait). Reported: the
median, p90 and p99 wait of a freed place (each process's first is a warm-up, not counted), and
the Redis commands sent meanwhile.
Results go to ``benchmarks/results/dispatch-<mode>-<time>.json``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import random
import statistics
import time
from pathlib import Path
from typing import Any

from redis import Redis

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares, waiting_queue
from tests.servers import start_redis

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NS = "bench-"
SLOTS = 10


def _calls(redis: Redis) -> int:
    stats: dict[str, Any] = redis.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


def fill(redis: Redis, chunks: int, workspaces: int, cost: int = 150, seed: int = 7) -> None:
    """``chunks`` held chunks across ``workspaces``, renders of 1-40 chunks, in waiting queues as
    ``RQQueue.enqueue`` leaves them, plus the arrival events of the dispatcher's copy."""
    from rq import Queue

    rng = random.Random(seed)
    dispatcher = Dispatcher(redis, NS, shares=Shares(None))
    made, render_no = 0, 0
    pipe = redis.pipeline(transaction=False)
    arrived: list[str] = []
    while made < chunks:
        render_no += 1
        workspace = f"ws{rng.randrange(workspaces):05d}"
        render = f"r{render_no:07d}"
        size = min(chunks - made, rng.randint(1, 40))
        queue = Queue(f"{NS}{waiting_queue(workspace)}", connection=redis)
        datas = []
        for index in range(size):
            rq_id = f"{NS}render-{render}-chunk-{index}"
            entry = {"workspace": workspace, "render": render, "cost": cost, "priority": "normal", "index": index,
                     "target": "render", "seq": time.time()}
            pipe.hset(dispatcher.key("turns"), rq_id, json.dumps(entry))
            pipe.hincrby(dispatcher.key("owed"), workspace, 1)
            pipe.sadd(dispatcher.key("workspaces"), workspace)
            datas.append(Queue.prepare_data("os.getpid", job_id=rq_id, timeout=600))
            arrived.append(rq_id)
        pipe.execute()
        queue.enqueue_many(datas)
        made += size
    for start in range(0, len(arrived), 10_000):
        dispatcher.arrived(*arrived[start:start + 10_000])


def finish(redis: Redis, moved: list[str]) -> None:
    """The moved chunks ran and ended: out of the ready queue, RQ status finished."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.delete(f"rq:queue:{NS}render")
        for rq_id in moved:
            pipe.hset(f"rq:job:{rq_id}", "status", "finished")
        pipe.execute()


def rounds(chunks: int, workspaces: int, count: int) -> dict[str, Any]:
    row: dict[str, Any] = {"chunks": chunks, "workspaces": workspaces}
    for path in ("kept", "scan"):
        server = start_redis()
        try:
            redis = Redis.from_url(server.url)
            began = time.perf_counter()
            fill(redis, chunks, workspaces)
            fill_sec = time.perf_counter() - began
            dispatcher = Dispatcher(redis, NS, shares=Shares(None))
            walls, commands = [], []
            build_ms = None
            for i in range(count + 1):
                before = _calls(redis)
                began = time.perf_counter()
                if path == "kept":
                    moved = dispatcher.round(slots=SLOTS)
                else:
                    moved = dispatcher._scan_round(None, SLOTS, set())
                wall = (time.perf_counter() - began) * 1000
                sent = _calls(redis) - before - 1  # less the INFO of `before`
                if len(moved) != SLOTS:
                    raise RuntimeError(f"a round moved {len(moved)} chunks, not {SLOTS}")
                finish(redis, moved)
                if i == 0 and path == "kept":
                    build_ms = round(wall, 1)  # the copy is built: once per change of hands
                    continue
                walls.append(wall)
                commands.append(sent)
            walls.sort()
            row[path] = {"median_ms": round(statistics.median(walls), 2),
                         "p90_ms": round(walls[int(0.9 * (len(walls) - 1))], 2),
                         "commands": round(statistics.median(commands), 1), "fill_sec": round(fill_sec, 1),
                         **({"build_ms": build_ms} if build_ms is not None else {})}
        finally:
            server.stop()
        print(f"{chunks:>7} chunks {workspaces:>5} workspaces  {path:<4}  {row[path]}", flush=True)
    return row


def _node(url: str, index: int, cycles: int, ready: Any, results: Any, finished: Any) -> None:
    """One emulated node (the ``freed`` docstring)."""
    from rq import Queue, Worker

    from reelfarm.farm.runtime.queue import RQQueue

    redis = Redis.from_url(url)
    queue = RQQueue(redis, namespace=NS, shares=Shares(None))
    queue.start()  # its bid for the dispatch lease
    worker = Worker([Queue(f"{NS}render", connection=redis)], connection=redis, name=f"node-{index}")
    worker.register_birth()
    worker.set_state("busy")
    blocking = Redis.from_url(url, socket_timeout=30)
    rng = random.Random(index)
    ready.wait()
    waits = []
    try:
        for cycle in range(cycles + 1):
            began = time.perf_counter()
            queue.wake(free=worker.name)
            got = blocking.blpop([f"rq:queue:{NS}render"], timeout=10)
            if got is None:
                continue
            if cycle:  # the first is a warm-up: connections made, the copy built after the lease was taken
                waits.append((time.perf_counter() - began) * 1000)
            time.sleep(rng.uniform(0.01, 0.05))
            redis.hset(f"rq:job:{got[1].decode()}", "status", "finished")
        results.put(waits)
        finished.wait(600)  # the others are measured while this one still bids for the lease
    finally:
        queue.stop(2)
        worker.register_death()


def freed(processes: int, chunks: int, cycles: int) -> dict[str, Any]:
    server = start_redis()
    try:
        redis = Redis.from_url(server.url)
        fill(redis, chunks, 100)
        Dispatcher(redis, NS, shares=Shares(None)).round(slots=0)  # the copy built once, as a lease holder would
        ctx = multiprocessing.get_context("spawn")
        ready, results, finished = ctx.Event(), ctx.Queue(), ctx.Event()
        procs = [ctx.Process(target=_node, args=(server.url, i, cycles, ready, results, finished))
                 for i in range(processes)]
        for proc in procs:
            proc.start()
        time.sleep(3.0)  # every process started, one holds the lease
        before = _calls(redis)
        ready.set()
        waits = [w for _ in procs for w in results.get(timeout=600)]
        sent = _calls(redis) - before
        finished.set()
        for proc in procs:
            proc.join(30)
    finally:
        server.stop()
    waits.sort()
    row = {"processes": processes, "chunks": chunks, "freed": len(waits),
           "median_ms": round(statistics.median(waits), 1), "p90_ms": round(waits[int(0.9 * (len(waits) - 1))], 1),
           "p99_ms": round(waits[int(0.99 * (len(waits) - 1))], 1), "commands": sent}
    print(row, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("rounds", "freed"))
    parser.add_argument("--chunks", default="1000,10000,100000")
    parser.add_argument("--workspaces", default="10,1000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--processes", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=20, help="places each process frees (freed)")
    args = parser.parse_args()
    sizes = [int(c) for c in args.chunks.split(",")]
    if args.mode == "rounds":
        found = [rounds(c, w, args.rounds) for w in (int(x) for x in args.workspaces.split(",")) for c in sizes]
    else:
        found = [freed(args.processes, c, args.cycles) for c in sizes]
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"dispatch-{args.mode}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"mode": args.mode, "args": vars(args), "results": found}, indent=2))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
