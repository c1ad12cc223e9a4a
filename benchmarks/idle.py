"""What idle render nodes cost their Redis: commands a second from N ``reelfarm worker`` nodes
with nothing to do.

    python -m benchmarks.idle --nodes 1,4,8 --seconds 10 --label after

For each N it starts a Redis of its own (``tests/servers.py``: free port, nothing persisted) and N
real ``reelfarm worker --queues render,jobs`` processes on one throwaway PostgreSQL (migrated once),
waits until every node has registered and ``--settle`` seconds more (the first heartbeats and
maintenance rounds are past), then reads ``INFO commandstats`` twice, ``--seconds`` apart, on a
connection of its own. The difference, less the benchmark's own ``INFO``, is what the idle farm
sent: commands a second in all, per node, and by command (a command a Lua script runs counts as
one more, as Redis counts it). Results go to ``benchmarks/results/idle-<label>-<time>.json``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from redis import Redis

from tests.servers import start_postgres, start_redis

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
REELFARM = [sys.executable, "-m", "reelfarm"]


def command_calls(redis: Redis) -> dict[str, int]:
    """Calls of each command so far (``INFO commandstats``), without ``info`` itself."""
    stats: dict[str, Any] = redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(values["calls"]) for name, values in stats.items()
            if name != "cmdstat_info"}


def wait_registered(redis: Redis, n: int, timeout: float) -> None:
    """Until RQ lists ``n`` workers (each node registers once it is ready to take work)."""
    deadline = time.monotonic() + timeout
    while redis.scard("rq:workers") < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {redis.scard('rq:workers')} of {n} nodes registered in {timeout:g} s")
        time.sleep(0.5)


def run_one(n: int, seconds: float, settle: float, database_url: str, work: Path) -> dict[str, Any]:
    server = start_redis()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATABASE_URL=database_url, REELFARM_REDIS_URL=server.url, REELFARM_DATA_DIR=str(work),
               REELFARM_SECRET_KEY="b" * 48, REELFARM_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    log = open(work / f"idle-{n}.log", "w")  # noqa: SIM115 - closed below
    nodes = [subprocess.Popen([*REELFARM, "worker", "--queues", "render,jobs"], env=env, cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True) for _ in range(n)]
    redis = Redis.from_url(server.url)
    try:
        wait_registered(redis, n, timeout=60 + 15 * n)
        time.sleep(settle)
        before, began = command_calls(redis), time.monotonic()
        time.sleep(seconds)
        after, elapsed = command_calls(redis), time.monotonic() - began
        dead = [node.pid for node in nodes if node.poll() is not None]
        if dead:
            raise RuntimeError(f"nodes {dead} exited; see {work / f'idle-{n}.log'}")
    finally:
        for node in nodes:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGTERM)
        for node in nodes:
            try:
                node.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)
                node.wait()
        log.close()
        redis.close()
        server.kill()
        server.stop()
    by_command = {name: after[name] - before.get(name, 0) for name in after if after[name] - before.get(name, 0)}
    total = sum(by_command.values())
    return {"nodes": n, "seconds": round(elapsed, 2), "commands": total,
            "commands_per_sec": round(total / elapsed, 2), "per_node_per_sec": round(total / elapsed / n, 2),
            "by_command_per_sec": {k: round(v / elapsed, 2)
                                   for k, v in sorted(by_command.items(), key=lambda kv: -kv[1])}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,4,8", help="comma-separated N")
    parser.add_argument("--seconds", type=float, default=10.0, help="the span measured")
    parser.add_argument("--settle", type=float, default=12.0, help="seconds after every node registered")
    parser.add_argument("--label", default="run", help="part of the result's file name (before, after)")
    args = parser.parse_args(argv)
    postgres = start_postgres()
    results = []
    try:
        subprocess.run([*REELFARM, "migrate"], env={**os.environ, "REELFARM_DATABASE_URL": postgres.url}, cwd=ROOT,
                       check=True, capture_output=True)
        for n in [int(x) for x in args.nodes.split(",")]:
            with tempfile.TemporaryDirectory(prefix="reelfarm-idle-") as work:
                result = run_one(n, args.seconds, args.settle, postgres.url, Path(work))
            print(json.dumps({k: v for k, v in result.items() if k != "by_command_per_sec"}), flush=True)
            print("  " + ", ".join(f"{k} {v}" for k, v in list(result["by_command_per_sec"].items())[:8]), flush=True)
            results.append(result)
    finally:
        postgres.stop()
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"idle-{args.label}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"cpu_count": os.cpu_count(), "args": vars(args), "results": results}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
