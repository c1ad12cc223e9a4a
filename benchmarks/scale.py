"""How a farm scales with its render nodes: the API plus N workers, M renders, per N.

    python -m benchmarks.scale --workers 1,2 --renders 6

For each N it starts, against one throwaway PostgreSQL and one throwaway Redis (``tests/servers.py``:
temporary directories, free ports; no machine service is used), ``reelfarm serve`` (gunicorn, 2
processes, ``--no-migrate`` after ``reelfarm migrate``) and N ``reelfarm worker`` nodes sharing
local file storage, creates M story videos (distinct fields, so no render is deduplicated) and
asks for all M renders at once, then waits for every one. It reports, per N: completed renders
per minute (M over the time from the first request to the last file), p50/p95 render latency
(request to file, from the database's ``created_at``/``finished_at``) and p50/p95 queue wait
(request to first chunk started). Results go to ``benchmarks/results/scale-<time>.json``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, select, text

from tests.servers import free_port, start_postgres, start_redis

ROOT = Path(__file__).resolve().parents[1]
REELFARM = [sys.executable, "-m", "reelfarm"]


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 2)


def _wait_ready(base: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the API never became ready")


def run_one(n_workers: int, renders: int, resolution: int, seconds: int, database_url: str, redis_url: str,
            work: Path) -> dict[str, Any]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATABASE_URL=database_url, REELFARM_REDIS_URL=redis_url, REELFARM_DATA_DIR=str(work),
               REELFARM_SECRET_KEY="b" * 48, REELFARM_PUBLIC_URL=f"http://127.0.0.1:{port}",
               REELFARM_LOG_LEVEL="WARNING", REELFARM_RATE_LIMIT_AGENCY="100000")
    subprocess.run([*REELFARM, "migrate"], env=env, cwd=ROOT, check=True, capture_output=True)
    made = json.loads(subprocess.run([*REELFARM, "admin", "create-workspace", f"scale-{n_workers}", "--plan",
                                      "agency", "--credits", "100000", "--json"], env=env, cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout)
    key = json.loads(subprocess.run([*REELFARM, "admin", "create-key", made["id"], "--name", "bench", "--json"],
                                    env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout)["key"]
    logs = open(work / f"procs-{n_workers}.log", "w")  # noqa: SIM115 - closed below
    procs = [subprocess.Popen([*REELFARM, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
                               "--no-migrate"], env=env, cwd=ROOT, stdout=logs, stderr=subprocess.STDOUT)]
    procs += [subprocess.Popen([*REELFARM, "worker", "--queues", "render,jobs", "--name", f"scale-{n_workers}-{i}"],
                               env=env, cwd=ROOT, stdout=logs, stderr=subprocess.STDOUT) for i in range(n_workers)]
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base)
        http = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        videos = []
        for i in range(renders):
            created = http.post("/videos", json={"storyId": "flash_sale", "fields": {"discount": f"{i + 10}% off"},
                                                 "format": "16:9", "durationSec": seconds})
            created.raise_for_status()
            videos.append(created.json()["id"])
        started = time.monotonic()
        ids = []
        for video in videos:
            asked = http.post(f"/videos/{video}/renders", json={"format": "16:9", "resolution": resolution})
            asked.raise_for_status()
            ids.append(asked.json()["id"])
        pending = set(ids)
        while pending:
            for render_id in list(pending):
                status = http.get(f"/renders/{render_id}").json()["status"]
                if status in ("succeeded", "failed", "canceled"):
                    pending.discard(render_id)
            time.sleep(0.5)
        wall = time.monotonic() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        logs.close()
    return _report(n_workers, database_url, ids, wall)


def _report(n_workers: int, database_url: str, ids: list[str], wall: float) -> dict[str, Any]:
    from reelfarm.shared.tables import renders as renders_table

    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(select(renders_table).where(renders_table.c.id.in_(ids))).all()
    engine.dispose()
    done = [r for r in rows if r.status == "succeeded"]
    latency = [(r.finished_at - r.created_at).total_seconds() for r in done]
    wait = [(r.started_at - r.created_at).total_seconds() for r in rows if r.started_at]
    span = (max(r.finished_at for r in done) - min(r.created_at for r in rows)).total_seconds() if done else wall
    return {"workers": n_workers, "renders": len(ids), "succeeded": len(done),
            "renders_per_minute": round(len(done) / span * 60, 2) if span else None,
            "latency_p50_s": _pct(latency, 0.5), "latency_p95_s": _pct(latency, 0.95),
            "queue_wait_p50_s": _pct(wait, 0.5), "queue_wait_p95_s": _pct(wait, 0.95),
            "mean_latency_s": round(statistics.mean(latency), 2) if latency else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated N")
    parser.add_argument("--renders", type=int, default=6, help="M renders per N")
    parser.add_argument("--resolution", type=int, default=720)
    parser.add_argument("--seconds", type=int, default=6, help="length of each video")
    args = parser.parse_args(argv)
    postgres, redis = start_postgres(), start_redis()
    results = []
    try:
        for n in [int(x) for x in args.workers.split(",")]:
            admin = create_engine(postgres.url, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f"CREATE DATABASE scale_{n}"))
            admin.dispose()
            url = postgres.url.rsplit("/", 1)[0] + f"/scale_{n}"
            with tempfile.TemporaryDirectory(prefix="reelfarm-scale-") as work:
                result = run_one(n, args.renders, args.resolution, args.seconds, url,
                                 redis.url.rsplit("/", 1)[0] + f"/{n % 16}", Path(work))
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        redis.stop()
        postgres.stop()
    out = ROOT / "benchmarks" / "results" / f"scale-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"cpu_count": os.cpu_count(), "args": vars(args), "results": results}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
