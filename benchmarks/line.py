"""CPU milliseconds to read a queued render's place in line (the Render's ``queue``).

    python -m benchmarks.line                        # the embedded queue: 100, 500 and 2000 chunks waiting
    python -m benchmarks.line --chunks 5000 --reads 50
    python -m benchmarks.line --redis redis://127.0.0.1:6399/0   # also RQ's (an empty Redis of its own)

Every read of a render that waits (``GET /renders/{id}``, the render request's answer, a video's
renders) answers where it stands. ``fresh`` computes the whole fair order for it, as every read did
before the line was kept; ``kept`` is ``EmbeddedQueue.standing`` now, which computes it once and
afterwards only checks that what decides it (the chunks waiting, the ledger, the shares) is
unchanged. The chunks belong to renders of 5 chunks each, spread over 20 workspaces, in a
SQLite database of their own (and, with ``--redis``, in RQ's fair line under a namespace of their
own, removed afterwards); CPU time of this process (``time.process_time``).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _fill(queue: Any, chunks: int) -> list[str]:
    from reelfarm.farm.services.queues import Turn

    renders = []
    with queue.batch():
        for n in range(chunks // 5):
            render, workspace = str(uuid.uuid4()), f"w{n % 20:02d}"
            renders.append(render)
            for index in range(5):
                queue.enqueue("os.getpid", job_id=f"render-{render}-chunk-{index}",
                              turn=Turn(workspace, render, 150, "normal", index))
    return renders


def _time(make: Any, queue: Any, probe: str, reads: int) -> dict[str, float]:
    figures = {}
    for mode in ("fresh", "kept"):
        answers = []
        start = time.process_time()
        for _ in range(reads):
            reader = make() if mode == "fresh" else queue
            answers.append(reader.standing(probe))
        figures[mode] = round((time.process_time() - start) / reads * 1000, 2)
        assert all(a == answers[0] for a in answers)
    return figures


def measure(chunks: int, reads: int, redis_url: str | None = None) -> dict[str, Any]:
    from reelfarm.farm.runtime.embedded import EmbeddedQueue
    from reelfarm.shared.db import make_engine, migrate

    if redis_url:
        return _measure_rq(chunks, reads, redis_url)
    with tempfile.TemporaryDirectory(prefix="reelfarm-line-") as tmp:
        engine = make_engine(f"sqlite:///{tmp}/line.db")
        migrate(engine)
        queue = EmbeddedQueue(engine)
        renders = _fill(queue, chunks)
        figures = _time(lambda: EmbeddedQueue(engine), queue, renders[len(renders) // 2], reads)
        engine.dispose()
    return {"queue": "embedded", "chunks_waiting": chunks, "reads": reads, "cpu_ms_per_read": figures,
            "ratio_kept_to_fresh": round(figures["kept"] / figures["fresh"], 3)}


def _measure_rq(chunks: int, reads: int, redis_url: str) -> dict[str, Any]:
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.runtime.wiring import make_redis

    redis, namespace = make_redis(redis_url), f"line{uuid.uuid4().hex[:8]}-"
    try:
        queue = RQQueue(redis, namespace=namespace)
        renders = _fill(queue, chunks)
        figures = _time(lambda: RQQueue(redis, namespace=namespace), queue, renders[len(renders) // 2], reads)
    finally:
        for key in redis.scan_iter(match=f"*{namespace}*", count=1000):
            redis.delete(key)
    return {"queue": "rq", "chunks_waiting": chunks, "reads": reads, "cpu_ms_per_read": figures,
            "ratio_kept_to_fresh": round(figures["kept"] / figures["fresh"], 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, nargs="*", default=[100, 500, 2000])
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--redis", help="also RQ's queue, on this Redis")
    args = parser.parse_args(argv)
    rows = [measure(n, args.reads) for n in args.chunks]
    if args.redis:
        rows += [measure(n, args.reads, args.redis) for n in args.chunks]
    print(f"{'queue':>9} {'chunks waiting':>15} {'fresh ms':>9} {'kept ms':>8} {'kept/fresh':>10}")
    for row in rows:
        print(f"{row['queue']:>9} {row['chunks_waiting']:>15} {row['cpu_ms_per_read']['fresh']:>9} "
              f"{row['cpu_ms_per_read']['kept']:>8} {row['ratio_kept_to_fresh']:>10}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    (RESULTS / f"line-{stamp}.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
