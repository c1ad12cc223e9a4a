"""A burst of clients against one embedded `reelfarm serve` while renders run on the same host.

    python -m benchmarks.burst --clients 50 [--background 4] [--checkout PATH] [--label NAME] [--no-wait]
                               [--redis URL]

Starts `reelfarm serve` as a user would (SQLite, local files, gunicorn with 2 workers, the
embedded farm rendering in the same host's processes) on a fresh data dir; first asks for
`--background` renders (12 s, 720p) so renders are already running; then all clients start at
once (a barrier): each creates a story video (6 s, 9:16, its own headline) and asks for a 720p
render, then polls its render every second until it has finished. Prints, per endpoint, the
count, p50, p95, p99 and max latency, any non-2xx answer, and how long until every render had
finished, and the CPU seconds the serving processes spent over the burst (gunicorn's master and
workers, not the processes that render: a figure other load moves far less than the latencies);
writes the same to benchmarks/results/burst-<label>-<time>.json, with the load average before and
after (other work on the machine moves every figure). `--no-wait` ends the run once
every render has been asked for (the creates' and render requests' latencies, not the renders').

`--redis URL` serves as a farm's API on that Redis (an empty database of its own, as
`redis-server --port 6399 --save ""` gives) with no node, so nothing draws: what serving alone
costs, apart from renders on the same cores. Use with `--background 0 --no-wait`.

`--checkout PATH` serves from another checkout of the project (the same virtualenv, so the same
libraries): `git worktree add /tmp/before <commit>` and `--checkout /tmp/before` measure an
earlier commit with the same script in the same session. Figures drift from day to day on
these machines; compare runs made one after the other.
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks import farmkit

API = "/api/v1"
RESULTS = farmkit.ROOT / "benchmarks" / "results"


class Timings:
    """Latencies and statuses per endpoint, from every client thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[str, list[float]] = collections.defaultdict(list)
        self.statuses: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)

    def call(self, client: httpx.Client, name: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        start = time.perf_counter()
        response = client.request(method, path, **kwargs)
        elapsed = time.perf_counter() - start
        with self.lock:
            self.seconds[name].append(elapsed)
            self.statuses[name][response.status_code] += 1
        return response

    def table(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, values in self.seconds.items():
            ordered = sorted(values)
            out[name] = {"count": len(ordered), **{f"p{q}": round(percentile(ordered, q), 3) for q in (50, 95, 99)},
                         "max": round(ordered[-1], 3), "statuses": dict(self.statuses[name])}
        return out


def percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank percentile of an ascending list."""
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def client_run(base: str, key: str, i: int, barrier: threading.Barrier, timings: Timings,
               finished: dict[int, float], started: float, wait: bool = True) -> None:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        barrier.wait()
        created = timings.call(client, "POST /videos", "POST", f"{API}/videos", json={
            "storyId": "announcement", "format": "9:16", "durationSec": 6,
            "fields": {"headline": f"Client {i} opens a studio"}})
        if created.status_code != 201:
            return
        video_id = created.json()["id"]
        render = timings.call(client, "POST /videos/{id}/renders", "POST", f"{API}/videos/{video_id}/renders",
                              json={"format": "9:16", "resolution": 720})
        if render.status_code != 202:
            return
        render_id = render.json()["id"]
        while wait:
            time.sleep(1.0)
            state = timings.call(client, "GET /renders/{id}", "GET", f"{API}/renders/{render_id}")
            if state.status_code == 200 and state.json()["status"] in ("succeeded", "failed", "canceled"):
                finished[i] = time.perf_counter() - started
                return


def background_renders(base: str, key: str, count: int) -> None:
    """Ask for ``count`` longer renders before the burst, and wait until one of them runs."""
    if not count:
        return
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        ids = []
        for i in range(count):
            video = client.post(f"{API}/videos", json={"storyId": "flash_sale", "durationSec": 12,
                                                      "fields": farmkit.story_fields(i)}).json()
            ids.append(client.post(f"{API}/videos/{video['id']}/renders",
                                   json={"format": "16:9", "resolution": 720}).json()["id"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(client.get(f"{API}/renders/{r}").json()["status"] == "running" for r in ids):
                return
            time.sleep(0.2)


def run(clients: int, background: int, checkout: Path, wait: bool = True, redis: str | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reelfarm-burst-") as tmp:
        port = farmkit.free_port()
        data = Path(tmp) / "data"
        farm = {"REELFARM_REDIS_URL": redis} if redis else {}
        proc, key = farmkit.start_server(data, port, extra_env=farm, cwd=checkout)
        base = f"http://127.0.0.1:{port}"
        env = farmkit.clean_env(REELFARM_DATA_DIR=str(data), REELFARM_PUBLIC_URL=base, **farm)
        try:
            # the dev workspace's 100 credits are not enough for a big burst
            add_credits(checkout, env, key, clients + background)
            background_renders(base, key, background)
            timings, finished = Timings(), {}
            released: list[float] = []  # this process's CPU when the clients set off (their httpx clients made)
            barrier = threading.Barrier(clients, action=lambda: released.append(time.process_time()))
            serving = server_cpu_s(proc.pid)
            started = time.perf_counter()
            threads = [threading.Thread(target=client_run,
                                        args=(base, key, i, barrier, timings, finished, started, wait))
                       for i in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            serving, own = server_cpu_s(proc.pid) - serving, time.process_time() - released[0]
            return {"clients": clients, "background_renders": background, "endpoints": timings.table(),
                    "clients_cpu_s": round(own, 2),
                    "all_renders_done_s": round(max(finished.values()), 1) if finished else None,
                    "renders_finished": len(finished),
                    "serving_cpu_s": round(serving, 2), "serving_cpu_ms_per_client": round(1000 * serving / clients, 1)}
        finally:
            proc.stop()


def server_cpu_s(master: int) -> float:
    """CPU seconds of the serving processes so far: gunicorn's master and its workers (the request
    threads and each worker's dispatcher), not the pool processes that render (their children).
    Other load on the machine moves it far less than the latencies."""
    import psutil

    try:
        workers = [c.pid for c in psutil.Process(master).children(recursive=False)]
    except psutil.Error:
        return 0.0
    return sum(farmkit.stat_cpu_s(pid, with_children=False) for pid in (master, *workers))


def add_credits(checkout: Path, env: dict[str, str], key: str, renders: int) -> None:
    """Give the dev workspace two credits per render the run will ask for."""
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as client:
        me = client.get(f"{env['REELFARM_PUBLIC_URL']}{API}/me").json()
    subprocess.run([sys.executable, "-m", "reelfarm", "admin", "add-credits", me["workspace"]["id"], str(renders * 2)],
                   cwd=checkout, env=env, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--background", type=int, default=4, help="renders already running when the burst starts")
    parser.add_argument("--checkout", type=Path, default=farmkit.ROOT, help="serve from this checkout")
    parser.add_argument("--label", default="current")
    parser.add_argument("--no-wait", dest="wait", action="store_false",
                        help="end once every render has been asked for, without waiting for the renders")
    parser.add_argument("--redis", help="serve as a farm's API on this (empty) Redis, with no node: nothing draws")
    args = parser.parse_args(argv)
    if args.redis and (args.wait or args.background):
        parser.error("--redis draws nothing: use it with --background 0 --no-wait")
    load_before = os.getloadavg()
    result = {"label": args.label, "checkout": str(args.checkout), "machine": farmkit.machine(),
              "redis": bool(args.redis), **run(args.clients, args.background, args.checkout.resolve(), args.wait, args.redis),
              "load_average": {"before": [round(x, 2) for x in load_before],
                               "after": [round(x, 2) for x in os.getloadavg()]}}
    print(f"burst of {args.clients} clients, {args.background} renders already running ({args.label})")
    print(f"{'endpoint':28} {'count':>6} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} {'max s':>7}  statuses")
    for name, row in result["endpoints"].items():
        print(f"{name:28} {row['count']:>6} {row['p50']:>7.3f} {row['p95']:>7.3f} {row['p99']:>7.3f} "
              f"{row['max']:>7.3f}  {row['statuses']}")
    print(f"serving processes' CPU over the burst: {result['serving_cpu_s']} s, "
          f"{result['serving_cpu_ms_per_client']} ms per client; the clients' own (this process): "
          f"{result['clients_cpu_s']} s")
    if args.wait:
        print(f"all {result['renders_finished']} renders finished after {result['all_renders_done_s']} s")
    print(f"load average (1, 5, 15 min): before {result['load_average']['before']}, "
          f"after {result['load_average']['after']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    (RESULTS / f"burst-{args.label}-{stamp}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
