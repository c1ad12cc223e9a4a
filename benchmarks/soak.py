"""A soak: steady API traffic and renders against one embedded `reelfarm serve`, sampled for growth.

    python -m benchmarks.soak --minutes 60 [--interval 30] [--clients 4] [--render-every 10]

Starts `reelfarm serve` as a user would (SQLite, local files, gunicorn with 2 workers, the
embedded farm's render pool in the same host's processes) on a fresh data dir with a temp folder
of its own (`TMPDIR`, so its scratch folders are counted apart from the machine's). Then, until
the time is up:

- `--clients` threads (httpx, kept-alive) loop over reads (`GET /me`, `GET /videos`,
  `GET /videos/{id}`), a create (`POST /videos`, a headline of its own) every 5th round and stills
  (`POST /videos/{id}/stills`, then `GET /jobs/{id}`) every 10th round, pausing `--think` s (default 1)
  between rounds;
- one thread creates a video with a new promo code (so dedup renders anew) and asks for a 720p
  render every `--render-every` s, polling until it finishes; with `--max-backlog` renders
  unfinished it skips a turn (counted), so a slow machine does not pile up a queue;
- every `--interval` s a sample of the server's process tree: RSS (summed, per role and per
  process), PSS, open descriptors (less those of files a process keeps open for its life once it
  has used them, `KEPT_OPEN`, counted apart), processes, threads, scratch folders, the database's
  size (with its WAL) and the storage folder's.

At the end each series gets a verdict: the Theil-Sen slope (median of pairwise slopes, which a
passing spike does not move) over the second half of the samples, per minute, against a
tolerance of its own (`TOLERANCE`); a series is flat when the slope is within it. Descriptors,
processes and scratch folders must stay flat, or the run exits 1; RSS too when
`--max-rss-slope MB` (MB a minute) is given. The database and storage grow with every create and
render by design: their slope is reported per request, not judged. Writes the samples, the
verdicts, the requests (per endpoint: count, p50/p99, statuses, transport errors) and the
machine (with the load average at every sample) to `--json` (default
benchmarks/results/soak-<time>.json) and prints a table.

`--checkout PATH` serves from another checkout of the project (same virtualenv), as in
`benchmarks.burst`, for a before/after pair.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks import farmkit
from benchmarks.burst import add_credits
from benchmarks.load import Stats

API = "/api/v1"
RESULTS = farmkit.ROOT / "benchmarks" / "results"
RENDER_SECONDS, RENDER_RESOLUTION = 6, 720
TERMINAL = ("succeeded", "failed", "canceled")
MB = 1024 * 1024

# Flat means a second-half slope within this much per minute. Descriptors and processes come and
# go with renders in flight (a chunk's files, an encoder's pipes), hence a little room; a leak of
# one descriptor per render (every 10 s) is 6 a minute.
TOLERANCE: dict[str, float] = {
    "fds": 2.0, "processes": 0.5, "threads": 2.0, "scratch_dirs": 0.5, "tmp_entries": 0.5,
    "rss_mb": 2.0, "pss_mb": 2.0,
}
MUST_BE_FLAT = ("fds", "processes", "scratch_dirs")
REPORTED_ONLY = ("db_mb", "storage_mb")


# ----------------------------------------------------------------------------- the verdict


def theil_sen(xs: list[float], ys: list[float]) -> float:
    """The median of the slopes between every pair of points (0 for fewer than two)."""
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs))
              if xs[j] != xs[i]]
    return statistics.median(slopes) if slopes else 0.0


def verdict(minutes: list[float], values: list[float], tolerance: float) -> dict[str, Any]:
    """Whether a series stopped growing: its Theil-Sen slope per minute over the second half of
    the samples (at least three) is at most `tolerance`. Falling is flat too."""
    half = min(len(values) // 2, max(0, len(values) - 3))
    xs, ys = minutes[half:], values[half:]
    slope = theil_sen(xs, ys)
    return {"first": values[0] if values else None, "last": values[-1] if values else None,
            "min": min(values, default=None), "max": max(values, default=None),
            "slope_per_min_second_half": round(slope, 3), "whole_run_slope_per_min": round(
                theil_sen(minutes, values), 3), "tolerance_per_min": tolerance,
            "flat": slope <= tolerance, "samples_judged": len(ys)}


def verdicts(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    minutes = [s["t_s"] / 60 for s in samples]
    out = {}
    for name in (*TOLERANCE, *REPORTED_ONLY):
        values = [float(s[name]) for s in samples]
        out[name] = verdict(minutes, values, TOLERANCE.get(name, float("inf")))
        if name in REPORTED_ONLY:  # grows by design with every create and render: reported, not judged
            out[name].update(flat=None, tolerance_per_min=None)
    for role in sorted({r for s in samples for r in s["rss_mb_by_role"]}):
        values = [float(s["rss_mb_by_role"].get(role, 0.0)) for s in samples]
        out[f"rss_mb:{role}"] = verdict(minutes, values, TOLERANCE["rss_mb"])
    return out


# ----------------------------------------------------------------------------- the sampler


def role_of(depth: int, cmdline: list[str]) -> str:
    """gunicorn's arbiter is the root, its workers its children, the render pool their children."""
    if depth == 0:
        return "master"
    if depth == 1:
        return "api_worker"
    return "render_pool" if depth == 2 and cmdline and "python" in cmdline[0] else f"other_depth{depth}"


def sample_tree(root: int) -> dict[str, Any]:
    """RSS, PSS, descriptors, threads of `root` and its descendants (psutil)."""
    import psutil

    try:
        top = psutil.Process(root)
        members = [(top, 0)] + [(p, _depth(p, root)) for p in top.children(recursive=True)]
    except psutil.Error:
        return {"processes": 0, "rss_mb": 0.0, "pss_mb": 0.0, "fds": 0, "threads": 0, "rss_mb_by_role": {},
                "per_process": []}
    rows = []
    for proc, depth in members:
        try:
            with proc.oneshot():
                mem = proc.memory_full_info()
                fds = proc.num_fds()
                kept = sum(1 for f in proc.open_files() if kept_open(f.path))
                rows.append({"pid": proc.pid, "role": role_of(depth, proc.cmdline()), "rss_mb": mem.rss / MB,
                             "pss_mb": mem.pss / MB, "uss_mb": mem.uss / MB, "fds": fds - kept,
                             "fds_kept_open": kept, "threads": proc.num_threads()})
        except psutil.Error:
            continue  # exited between the listing and the read
    by_role: dict[str, float] = {}
    for row in rows:
        by_role[row["role"]] = round(by_role.get(row["role"], 0.0) + row["rss_mb"], 1)
    return {"processes": len(rows), "rss_mb": round(sum(r["rss_mb"] for r in rows), 1),
            "pss_mb": round(sum(r["pss_mb"] for r in rows), 1), "fds": sum(r["fds"] for r in rows),
            "fds_kept_open": sum(r["fds_kept_open"] for r in rows),
            "threads": sum(r["threads"] for r in rows), "rss_mb_by_role": by_role,
            "per_process": [{k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()} for r in rows]}


# Files a process opens on first use and keeps open for its life, whose descriptors are not what the
# "fds" series judges: the SQLite database (and its WAL, shared memory and the writers' lock), the
# rate limiter's file and Prometheus's per-process metric files. Each render-pool process opens the
# database at its first task (3 descriptors, once: seen as growth when a process got its first task
# in a short run's second minute); its connections are bounded by SQLAlchemy's pool. Reported apart
# as "fds_kept_open".
KEPT_OPEN = ("reelfarm.db", "reelfarm.db-wal", "reelfarm.db-shm", "reelfarm.db-writer", "ratelimits.v1")


def kept_open(path: str) -> bool:
    name = os.path.basename(path)
    return name in KEPT_OPEN or os.path.basename(os.path.dirname(path)).startswith("reelfarm-metrics-")


def _depth(proc: Any, root: int) -> int:
    depth, p = 0, proc
    while p is not None and p.pid != root and depth < 16:
        p, depth = p.parent(), depth + 1
    return depth


def folder_mb(path: Path) -> float:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return round(total / MB, 2)


@dataclass
class Places:
    data: Path
    tmp: Path

    def disk(self) -> dict[str, Any]:
        scratch = self.tmp / "reelfarm-scratch"
        db = sum(p.stat().st_size for p in self.data.glob("reelfarm.db*") if p.is_file())
        return {"scratch_dirs": sum(1 for p in scratch.iterdir() if p.is_dir()) if scratch.is_dir() else 0,
                "tmp_entries": sum(1 for p in self.tmp.iterdir() if p.name != "reelfarm-scratch"),
                "db_mb": round(db / MB, 2), "storage_mb": folder_mb(self.data / "files")}


# ----------------------------------------------------------------------------- traffic


@dataclass
class Traffic:
    base: str
    key: str
    stop: threading.Event
    stats: Stats = field(default_factory=Stats)
    renders: list[dict[str, Any]] = field(default_factory=list)
    stills: dict[str, int] = field(default_factory=dict)
    skipped_renders: int = 0
    drain_deadline: float = float("inf")  # once stopped, unfinished renders are polled until then
    lock: threading.Lock = field(default_factory=threading.Lock)

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=60, headers={"Authorization": f"Bearer {self.key}"})

    def client(self, i: int, think: float) -> None:
        """Reads every round; a create every 5th, stills every 10th (checked on the next round)."""
        videos: list[str] = []
        job: str | None = None
        with self.http() as http:
            for n in range(1_000_000_000):
                if self.stop.is_set():
                    return
                self.stats.call(http, "GET /me", "GET", f"{API}/me")
                self.stats.call(http, "GET /videos", "GET", f"{API}/videos", params={"limit": 20})
                if n % 5 == 0 or not videos:
                    r = self.stats.call(http, "POST /videos", "POST", f"{API}/videos", json={
                        "storyId": "announcement", "format": "9:16", "durationSec": RENDER_SECONDS,
                        "fields": {"headline": f"Soak client {i} round {n}"}})
                    if r is not None and r.status_code == 201:
                        videos = (videos + [r.json()["id"]])[-10:]
                if videos:
                    self.stats.call(http, "GET /videos/{id}", "GET", f"{API}/videos/{videos[n % len(videos)]}")
                if job is not None:
                    job = self._check_stills(http, job)
                elif n % 10 == 5 and videos:
                    r = self.stats.call(http, "POST /videos/{id}/stills", "POST", f"{API}/videos/{videos[-1]}/stills",
                                        json={"times": [0.5 + (n % 4), 5.0]})
                    job = r.json()["id"] if r is not None and r.status_code == 202 else None
                self.stop.wait(think)

    def _check_stills(self, http: httpx.Client, job: str) -> str | None:
        r = self.stats.call(http, "GET /jobs/{id}", "GET", f"{API}/jobs/{job}")
        status = r.json().get("status") if r is not None and r.status_code == 200 else None
        if status in TERMINAL:
            with self.lock:
                self.stills[status] = self.stills.get(status, 0) + 1
            return None
        return job

    def renderer(self, every: float, max_backlog: int) -> None:
        """A new render every `every` s, each with its own promo code; polls the unfinished."""
        open_: dict[str, dict[str, Any]] = {}
        next_at, n = time.monotonic(), 0
        with self.http() as http:
            while not self.stop.is_set() or open_:
                if self.stop.is_set() and time.monotonic() > self.drain_deadline:
                    break
                if not self.stop.is_set() and time.monotonic() >= next_at:
                    next_at += every
                    if len(open_) >= max_backlog:
                        self.skipped_renders += 1
                    else:
                        self._start_render(http, n, open_)
                        n += 1
                for rid in list(open_):
                    r = self.stats.call(http, "GET /renders/{id}", "GET", f"{API}/renders/{rid}")
                    if r is not None and r.status_code == 200 and r.json()["status"] in TERMINAL:
                        rec = open_.pop(rid)
                        rec.update(status=r.json()["status"], error=r.json().get("error"),
                                   seconds=round(time.monotonic() - rec.pop("t0"), 2))
                        with self.lock:
                            self.renders.append(rec)
                time.sleep(1.0)
        with self.lock:
            self.renders.extend({"id": rid, "status": "unfinished at the end"} for rid in open_)

    def _start_render(self, http: httpx.Client, n: int, open_: dict[str, dict[str, Any]]) -> None:
        r = self.stats.call(http, "POST /videos", "POST", f"{API}/videos", json={
            "storyId": farmkit.STORY, "durationSec": RENDER_SECONDS, "format": farmkit.FORMAT,
            "fields": farmkit.story_fields(n)})
        if r is None or r.status_code != 201:
            return
        r = self.stats.call(http, "POST /videos/{id}/renders", "POST", f"{API}/videos/{r.json()['id']}/renders",
                            json={"format": farmkit.FORMAT, "resolution": RENDER_RESOLUTION})
        if r is not None and r.status_code == 202:
            open_[r.json()["id"]] = {"id": r.json()["id"], "n": n, "t0": time.monotonic()}


# ----------------------------------------------------------------------------- the run


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reelfarm-soak-") as tmp:
        places = Places(Path(tmp) / "data", Path(tmp) / "tmp")
        places.tmp.mkdir()
        port = farmkit.free_port()
        base = f"http://127.0.0.1:{port}"
        proc, key = farmkit.start_server(places.data, port, {"TMPDIR": str(places.tmp)}, cwd=args.checkout)
        try:
            env = farmkit.clean_env(REELFARM_DATA_DIR=str(places.data), REELFARM_PUBLIC_URL=base)
            add_credits(args.checkout, env, key, 50_000)
            return drive(args, proc.pid, base, key, places)
        finally:
            proc.stop(timeout=40)


def drive(args: argparse.Namespace, root: int, base: str, key: str, places: Places) -> dict[str, Any]:
    traffic = Traffic(base, key, threading.Event())
    threads = [threading.Thread(target=traffic.client, args=(i, args.think), daemon=True)
               for i in range(args.clients)]
    threads.append(threading.Thread(target=traffic.renderer, args=(args.render_every, args.max_backlog),
                                    daemon=True))
    samples: list[dict[str, Any]] = []
    t0 = time.monotonic()
    end = t0 + args.minutes * 60
    for thread in threads:
        thread.start()
    while True:
        samples.append(take_sample(root, places, time.monotonic() - t0, traffic))
        print_sample(samples[-1])
        if time.monotonic() >= end - 1:
            break
        time.sleep(max(0.0, min(end, t0 + len(samples) * args.interval) - time.monotonic()))
    traffic.drain_deadline = time.monotonic() + 60
    traffic.stop.set()
    for thread in threads:
        thread.join(timeout=90)
    return {"samples": samples, "requests": traffic.stats.as_dict(), "requests_total": traffic.stats.total(),
            "renders": summarize_renders(traffic), "stills_jobs": traffic.stills, "after_drain": settled(places)}


def settled(places: Places, within_s: float = 15.0) -> dict[str, Any]:
    """The folders once traffic stopped and its renders ended: a render's scratch folder is removed
    as it ends, so any left after `within_s` was left behind (a leak whatever the slope said)."""
    deadline = time.monotonic() + within_s
    disk = places.disk()
    while disk["scratch_dirs"] and time.monotonic() < deadline:
        time.sleep(0.5)
        disk = places.disk()
    return disk


def take_sample(root: int, places: Places, t: float, traffic: Traffic) -> dict[str, Any]:
    with traffic.lock:
        renders_done = len(traffic.renders)
    return {"t_s": round(t, 1), **sample_tree(root), **places.disk(), "load_avg": os.getloadavg(),
            "requests": traffic.stats.total(), "renders_done": renders_done}


def summarize_renders(traffic: Traffic) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for r in traffic.renders:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    seconds = sorted(r["seconds"] for r in traffic.renders if r.get("status") == "succeeded")
    return {"statuses": statuses, "skipped_for_backlog": traffic.skipped_renders,
            "p50_s": seconds[len(seconds) // 2] if seconds else None, "max_s": seconds[-1] if seconds else None,
            "errors": [r.get("error") for r in traffic.renders if r.get("status") == "failed"][:5]}


def print_sample(s: dict[str, Any]) -> None:
    roles = " ".join(f"{k}={v:.0f}" for k, v in sorted(s["rss_mb_by_role"].items()))
    print(f"t={s['t_s']:7.0f}s rss={s['rss_mb']:7.1f}MB ({roles}) pss={s['pss_mb']:7.1f} fds={s['fds']:4} "
          f"procs={s['processes']:2} scratch={s['scratch_dirs']} db={s['db_mb']:.1f}MB "
          f"storage={s['storage_mb']:.1f}MB req={s['requests']} renders={s['renders_done']} "
          f"load={s['load_avg'][0]:.2f}", flush=True)


def failures(judged: dict[str, dict[str, Any]], max_rss_slope: float | None) -> list[str]:
    """The series that grew where they must not."""
    bad = [name for name in MUST_BE_FLAT if not judged[name]["flat"]]
    if max_rss_slope is not None and judged["rss_mb"]["slope_per_min_second_half"] > max_rss_slope:
        bad.append("rss_mb")
    return bad


def print_verdicts(result: dict[str, Any]) -> None:
    rows = [[name, f"{v['first']:.1f}", f"{v['last']:.1f}", f"{v['max']:.1f}", f"{v['slope_per_min_second_half']:+.2f}",
             "-" if v["flat"] is None else f"{v['tolerance_per_min']:g}",
             "reported" if v["flat"] is None else ("flat" if v["flat"] else "GROWING")]
            for name, v in result["verdicts"].items()]
    errors = sum(e["count_5xx"] + e["transport_error_count"] for e in result["requests"].values())
    notes = [f"{result['requests_total']} requests, {errors} 5xx or transport errors; renders {result['renders']}",
             f"stills jobs {result['stills_jobs']}; failing: {result['failing'] or 'none'}"]
    farmkit.print_table(f"soak, {result['minutes']} min, a sample every {result['interval_s']} s",
                        ["series", "first", "last", "max", "slope/min (2nd half)", "tolerance", "verdict"],
                        rows, notes)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--interval", type=float, default=30, help="seconds between samples")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--think", type=float, default=1.0, help="seconds each client pauses between rounds")
    parser.add_argument("--render-every", type=float, default=10)
    parser.add_argument("--max-backlog", type=int, default=3, help="unfinished renders before a turn is skipped")
    parser.add_argument("--max-rss-slope", type=float, default=None, help="fail when RSS grows more MB a minute")
    parser.add_argument("--checkout", type=Path, default=farmkit.ROOT, help="serve from this checkout")
    parser.add_argument("--label", default="current")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.checkout = args.checkout.resolve()
    started = dt.datetime.now(dt.UTC)
    result: dict[str, Any] = {"label": args.label, "checkout": str(args.checkout), "started": started.isoformat(),
                              "minutes": args.minutes, "interval_s": args.interval, "clients": args.clients,
                              "think_s": args.think, "render_every_s": args.render_every,
                              "command": " ".join(["python -m benchmarks.soak", *(argv or sys.argv[1:])]),
                              "machine": farmkit.machine(), **run(args)}
    result["verdicts"] = verdicts(result["samples"])
    result["failing"] = failures(result["verdicts"], args.max_rss_slope)
    if result["after_drain"]["scratch_dirs"]:
        result["failing"].append("scratch_dirs_after_drain")
    out = args.json or RESULTS / f"soak-{args.label}-{started.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print_verdicts(result)
    print(f"written to {out}")
    return 1 if result["failing"] else 0


if __name__ == "__main__":
    sys.exit(main())
