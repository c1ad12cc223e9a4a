"""Partitions: how long a farm across hosts takes to notice a silent link or a dead node, to
recover, and what it loses (the target: nothing).

Run as root (it makes network namespaces): ``python -m benchmarks.partitions``. Each scenario
builds a farm of its own with ``tests.e2e.partitioned.PartitionedFarm``: ``reelfarm serve`` and
paced ``reelfarm worker`` nodes on this machine, PostgreSQL, Redis and (for the storage
scenario) a moto S3 server each on a host of its own (``tests.netbed``), whose link is silenced
with a blackhole route and restored.

Scenarios (``--only`` picks some):

- ``database``: the API's database host silent for ``--silent`` seconds (60) under three clients
  asking in turn for /me, /videos, a video and /stories. Detect: the first 503. Recover: the
  first 200 after the link returns. Lost: requests with no answer within the bound.
- ``redis``: the API's Redis host silent while a render runs: every ``GET /renders/{id}``'s
  time (the bound: 1 s). Lost: reads over the bound.
- ``farm``: a 30 s render (1:1, 720p24) on two nodes whose PostgreSQL and Redis go silent
  together for 25 s mid-render. Recover: from the link's return to the render's success. Lost:
  frames missing from the MP4, charges beyond the one, a failed render.
- ``storage``: the storage host silent for 20 s while the chunks store their segments; as ``farm``.
- ``badnode``: two nodes, one of them with a full disk (its temporary folder a full 1 MiB tmpfs,
  as in ``tests/integration/farm/test_node_health.py``), and a 60 s render. Detect: the bad node
  set aside (``REELFARM_NODE_SETASIDE_AFTER`` failures in a row). Recover: the render succeeded
  on the good node. Lost: as ``farm``.
- ``node``: the only node (on a host of its own) killed mid-chunk, and another started. Detect:
  the Render says the chunk waits on a node that stopped (``held_up``). Recover: the chunk
  running on the new node.

Prints a table and writes ``benchmarks/results/partitions-<UTC time>.json`` with every raw time.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from reelfarm.shared.db import DATABASE_WAIT_BOUND_SEC

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS = ("database", "redis", "farm", "storage", "node", "badnode")


def _farm(root: Path, **kwargs: Any) -> Any:
    from tests.e2e.partitioned import PartitionedFarm

    return PartitionedFarm(Path(tempfile.mkdtemp(dir=root)), **kwargs)


def _poll(check: Any, timeout: float, interval: float = 0.1) -> float | None:
    """Seconds until ``check()`` is true; None if it never was within ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if check():
            return time.monotonic() - began
        time.sleep(interval)
    return None


def database(root: Path, silent: float) -> dict[str, Any]:
    farm = _farm(root)
    try:
        video = farm.make_video()
        paths = ["/me", "/videos", f"/videos/{video}", "/stories"]
        answers: list[tuple[float, str, int, float]] = []  # (sent, after the silence began), path, status, seconds
        began = time.monotonic()
        stop_at = began + silent

        def client(offset: int) -> None:
            turn = offset
            while time.monotonic() < stop_at:
                path, turn = paths[turn % len(paths)], turn + 1
                sent = time.monotonic()
                try:
                    status = farm.http.get(path).status_code
                except httpx.HTTPError:  # no answer within the client's timeout
                    status = 0
                answers.append((sent - began, path, status, time.monotonic() - sent))

        farm.db_host.silence()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        farm.db_host.restore()
        back = _poll(lambda: farm.http.get(f"/videos/{video}").status_code == 200, 30, 0.1)
        first_503 = min((sent + took for sent, _, status, took in answers if status == 503), default=None)
        bound = DATABASE_WAIT_BOUND_SEC + 1.5
        return {"silent_sec": silent, "requests": len(answers), "answered_503": sum(a[2] == 503 for a in answers),
                "answered_200": sum(a[2] == 200 for a in answers), "bound_sec": bound,
                "longest_sec": round(max(a[3] for a in answers), 3),
                "detect_sec": round(first_503, 2) if first_503 is not None else None,
                "recover_sec": round(back, 2) if back is not None else None,
                "lost": {"hung_requests": sum(a[2] == 0 or a[3] > bound for a in answers)},
                "raw": [(round(s, 3), p, c, round(t, 3)) for s, p, c, t in answers]}
    finally:
        farm.close()


def redis(root: Path, silent: float) -> dict[str, Any]:
    farm = _farm(root)
    try:
        farm.start_node("node-a", frame_sec="0.05")
        render = farm.request_render(farm.make_video(30))
        _poll(lambda: farm.render(render)["progress"] > 0.1, 120, 0.5)
        farm.redis_host.silence()
        times, stale = [], 0
        stop_at = time.monotonic() + silent
        while time.monotonic() < stop_at:
            sent = time.monotonic()
            shown = farm.render(render)
            times.append(time.monotonic() - sent)
            stale += bool(shown["progress_stale"])
            time.sleep(0.25)
        farm.redis_host.restore()
        back = _poll(lambda: not farm.render(render)["progress_stale"], 30, 0.1)
        ended = farm.finished(render, 600)
        return {"silent_sec": silent, "reads": len(times), "said_stale": stale,
                "longest_sec": round(max(times), 3), "median_sec": round(sorted(times)[len(times) // 2], 3),
                "recover_sec": round(back, 2) if back is not None else None, "status": ended["status"],
                "lost": {"reads_over_1_s": sum(t >= 1.0 for t in times), "failed": ended["status"] != "succeeded"},
                "raw": [round(t, 3) for t in times]}
    finally:
        farm.close()


def _render_through(root: Path, cut: str, silent: float) -> dict[str, Any]:
    from tests.e2e.partitioned import FPS

    farm = _farm(root, storage=cut == "storage")
    try:
        farm.start_node("node-a", frame_sec="0.02")
        farm.start_node("node-b", frame_sec="0.02")
        duration = 30
        credits = farm.credits()
        began = time.monotonic()
        render = farm.request_render(farm.make_video(duration))
        charged = farm.credits()
        _poll(lambda: farm.render(render)["progress"] > 0.2, 300, 0.2)
        hosts = [farm.storage_host] if cut == "storage" else [farm.db_host, farm.redis_host]
        for host in hosts:
            host.silence()
        cut_at = time.monotonic() - began
        time.sleep(silent)
        for host in hosts:
            host.restore()
        restored = time.monotonic()
        ended = farm.finished(render, 600)
        recover = time.monotonic() - restored
        frames = farm.frames_of(ended) if ended["status"] == "succeeded" else 0
        return {"silent_sec": silent, "cut_at_sec": round(cut_at, 2), "status": ended["status"],
                "recover_sec": round(recover, 2), "whole_sec": round(time.monotonic() - began, 2),
                "lost": {"frames": duration * FPS - frames, "extra_charges": (credits - farm.credits()) - (credits - charged),
                         "failed": ended["status"] != "succeeded"}}
    finally:
        farm.close()


def node(root: Path) -> dict[str, Any]:
    from tests.e2e.partitioned import FPS
    from tests.e2e.test_node_drain import end_tree
    from tests.e2e.test_partitions import chunk_jobs

    farm = _farm(root)
    try:
        victim = farm.start_node("node-a", frame_sec="0.08", own_host=True)
        render = farm.request_render(farm.make_video(10))
        found: list[str] = []
        _poll(lambda: bool(found.extend(j for j, h in chunk_jobs(farm, render).items()
                                        if h.get("status") == "started" and h.get("worker_name") == "node-a")
                           or found) and farm.render(render)["progress"] > 0, 120, 0.1)
        drawing = found[0]
        killed = time.monotonic()
        end_tree(victim)
        detect = _poll(lambda: farm.render(render)["held_up"] is not None, 60, 0.2)
        farm.start_node("node-c", frame_sec="0.01", own_host=True)
        recover = _poll(lambda: chunk_jobs(farm, render)[drawing].get("worker_name") == "node-c", 90, 0.2)
        recover_total = time.monotonic() - killed
        ended = farm.finished(render, 300)
        frames = farm.frames_of(ended) if ended["status"] == "succeeded" else 0
        return {"detect_sec": round(detect, 2) if detect is not None else None,
                "recover_sec": round(recover_total, 2) if recover is not None else None,
                "status": ended["status"], "lost": {"frames": 10 * FPS - frames, "failed": ended["status"] != "succeeded"}}
    finally:
        farm.close()


def badnode(root: Path) -> dict[str, Any]:
    from redis import Redis

    from reelfarm.farm.runtime.nodes import NodeRegistry
    from tests.e2e.partitioned import FPS
    from tests.integration.farm.test_node_health import chunks_taken, full_disk

    farm = _farm(root)
    try:
        env, prefix = full_disk(Path(tempfile.mkdtemp(dir=root)) / "bad-tmp")
        farm.start_node("good", frame_sec="0.01")
        farm.start_node("bad", frame_sec="0.01", prefix=tuple(prefix), **env)
        assert farm.bed.redis is not None
        registry = NodeRegistry(Redis.from_url(farm.bed.redis.url))
        _poll(lambda: sum(n["alive"] for n in registry.nodes()) == 2, 60, 0.2)
        duration = 60
        credits = farm.credits()
        began = time.monotonic()
        render = farm.request_render(farm.make_video(duration), resolution=720)
        charged = farm.credits()
        detect = _poll(lambda: registry.standing("bad").set_aside(time.time()), 300, 0.2)
        ended = farm.finished(render, 600)
        recover = time.monotonic() - began
        frames = farm.frames_of(ended) if ended["status"] == "succeeded" else 0
        return {"detect_sec": round(detect, 2) if detect is not None else None, "recover_sec": round(recover, 2),
                "status": ended["status"], "bad_node_chunks": chunks_taken(farm.log("bad")),
                "failure": registry.standing("bad").failure,
                "lost": {"frames": duration * FPS - frames, "extra_charges": (credits - farm.credits()) - (credits - charged),
                         "failed": ended["status"] != "succeeded"}}
    finally:
        farm.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.partitions", description=__doc__.split("\n")[0])
    p.add_argument("--only", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    p.add_argument("--silent", type=float, default=60.0, help="seconds the API's database or Redis is silent")
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON (default benchmarks/results)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(chosen) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    root = Path(tempfile.mkdtemp(prefix="reelfarm-partitions-"))
    runs = {"database": lambda: database(root, args.silent), "redis": lambda: redis(root, min(args.silent, 30.0)),
            "farm": lambda: _render_through(root, "farm", 25.0), "storage": lambda: _render_through(root, "storage", 20.0),
            "node": lambda: node(root), "badnode": lambda: badnode(root)}
    result: dict[str, Any] = {"when": datetime.now(UTC).isoformat(), "scenarios": {}}
    print(f"{'scenario':<10} {'detect s':>9} {'recover s':>10}  lost")
    for name in chosen:
        outcome = runs[name]()
        result["scenarios"][name] = outcome
        print(f"{name:<10} {outcome.get('detect_sec', '-')!s:>9} {outcome.get('recover_sec', '-')!s:>10}  "
              f"{json.dumps(outcome['lost'])}  "
              + ", ".join(f"{k}={v}" for k, v in outcome.items() if k not in ("lost", "raw", "detect_sec", "recover_sec")),
              flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"partitions-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
