"""Noisy neighbours: one workspace's backlog beside another's single render, under fair and FIFO dispatch.

    python -m benchmarks.tenants                       # 20 x 30 s for A, 6 s for B; embedded and rq; fair and fifo
    python -m benchmarks.tenants --quick               # smoke run: 3 x 6 s for A, 6 s for B (about 4 minutes)
    python -m benchmarks.tenants --backends embedded --policies fair,fifo --renders 10

The scenario: workspace A asks for `--renders` (20) renders of `--seconds` (30) s videos at
`--resolution` (720p), the requests sent one after the other as fast as they are answered; two
seconds after A's first request, workspace B asks for one render of a `--b-seconds` (6) s video.
A and B are both on plan pro (the same weight and cap: a fair farm owes them equal shares). Every
video is the `flash_sale` story (16:9, 30 fps) with a discount, headline and code of its own; each
of the story's scenes shows one of them, so no render is deduplicated and no segment of an earlier
render is reused (`reused_frames` is recorded, and a render that reused any is flagged).

For every backend and policy a fresh farm is started with `REELFARM_DISPATCH=<policy>` in the
environment of the server and of the nodes; after one untimed warm-up render (a third workspace,
the server's `dev`) it measures, one after the other:

- `B alone`: B's render on the idle farm, from its request to `succeeded`;
- `A alone`: A's backlog without B, from A's first request to its last render `succeeded`;
- `A + B`: the scenario; B's time as for `B alone`, A's total as for `A alone`.

Backends: `embedded` is `reelfarm serve` (`farmkit.start_server`: gunicorn, 2 workers, the
embedded executor, at most one task per core across them) on a fresh data dir with SQLite; `rq` is
`reelfarm serve` over a throwaway PostgreSQL database and Redis DB `--redis-db` (12; flushed at
start and end, nothing else touched) with two `reelfarm worker` nodes (`RqFarm.start_workers`),
as `benchmarks.load` builds it. Both have two slots on a two-core machine.

Renders are followed with `GET /renders/{id}`: B's every 50 ms, A's every 0.5 s (a sweep over
A's unfinished renders, so A's total is known to about half a second). The server's own
`created_at` and `finished_at` of every render are kept beside the times seen by the client.

How to read it. `B with A / B alone`: how much A's backlog delays B. Under FIFO B waits for
nearly all of A's backlog; the target under fair dispatch is at most 2x. `A total fair / fifo`
(with B, the scenario): what fairness costs the busy workspace; a fair farm is work-conserving, so
the target is at most 1.05x. The two totals come from two farms started one after the other in the
same run, so machine drift enters that ratio; `A with B / A alone` of each policy (each against its
own farm) is printed beside it as a check. The load average around every measurement and the CPU
that processes other than ours used (`other_cores`, `farmkit.FarmWitness`; > 0.15 of a core is
warned about) are in the JSON, `benchmarks/results/tenants-<UTC time>.json`, with every raw time,
the options, the machine and the git commit. Compare ratios from one run only. See
benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks import farmkit
from benchmarks.rqfarm import RqFarm

API = "/api/v1"
RESULTS = farmkit.ROOT / "benchmarks" / "results"
TERMINAL = ("succeeded", "failed", "canceled")
BACKENDS = ("embedded", "rq")
POLICIES = ("fair", "fifo")
PLAN = "pro"
NODES = 2                  # rq: worker processes, one render slot each
B_DELAY = 2.0              # s after A's first request
B_POLL, A_POLL = 0.05, 0.5
B_TARGET = 2.0             # fair: B with A / B alone at most this
A_TARGET = 1.05            # A's total with B, fair / fifo, at most this
SETTLE = 1.0               # idle s before each measurement
RENDER_TIMEOUT = 3600.0    # one measurement, request to the last render finished
DEFAULTS = {"renders": 20, "seconds": 30.0, "b_seconds": 6.0}
QUICK = {"renders": 3, "seconds": 6.0, "b_seconds": 6.0}


def video_fields(k: int) -> dict[str, str]:
    """flash_sale's fields for video k: the badge shows the discount, the details the headline and
    the code, the outro the discount and the headline; all differ from every other k, so no chunk
    of one video matches a segment of another (segments are reused within a workspace)."""
    return {**farmkit.story_fields(k), "discount": f"{k}% OFF", "headline": f"Everything in store, batch {k}"}


# ----------------------------------------------------------------------------- workspaces


@dataclasses.dataclass
class Tenant:
    """One workspace and an httpx client with its API key."""

    name: str
    workspace: str
    http: httpx.Client

    def create_video(self, k: int, seconds: float) -> str:
        r = self.http.post(f"{API}/videos", json={"storyId": farmkit.STORY, "durationSec": seconds,
                                                  "format": farmkit.FORMAT, "fields": video_fields(k)})
        if r.status_code != 201:
            raise RuntimeError(f"{self.name}: POST /videos answered {r.status_code}: {r.text[:300]}")
        return str(r.json()["id"])

    def request(self, video: str, resolution: int) -> dict[str, Any]:
        r = self.http.post(f"{API}/videos/{video}/renders", json={"format": farmkit.FORMAT, "resolution": resolution})
        if r.status_code != 202:
            raise RuntimeError(f"{self.name}: POST /videos/{{id}}/renders answered {r.status_code}: {r.text[:300]}")
        return dict(r.json())

    def get(self, render_id: str) -> dict[str, Any]:
        r = self.http.get(f"{API}/renders/{render_id}")
        if r.status_code != 200:
            raise RuntimeError(f"{self.name}: GET /renders/{{id}} answered {r.status_code}: {r.text[:300]}")
        return dict(r.json())


def create_tenant(database_url: str, base: str, name: str, credits: int) -> Tenant:
    """A workspace on plan pro with `credits` and an API key, written to the farm's database the
    way `RqFarm` creates its workspace (the repositories `reelfarm admin` uses, in this process)."""
    from reelfarm.renderer.tokens import NEUTRAL_BRAND
    from reelfarm.shared.clock import SystemClock
    from reelfarm.shared.db import make_engine, transaction
    from reelfarm.shared.repos import api_keys, workspaces

    engine, clock = make_engine(database_url), SystemClock()
    try:
        with transaction(engine) as conn:
            ws = workspaces.create_workspace(conn, clock, name=f"tenant-{name}-{secrets.token_hex(3)}", plan=PLAN,
                                             brand_tokens=NEUTRAL_BRAND, credits=credits)
            _, key = api_keys.create_api_key(conn, clock, workspace_id=ws.id, name="bench")
    finally:
        engine.dispose()
    return Tenant(name, ws.id, _client(base, key))


def _client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"})


# ----------------------------------------------------------------------------- farms


@dataclasses.dataclass
class Farm:
    base: str
    dev_key: str
    database_url: str
    procs: list[farmkit.Proc]
    roots: Callable[[], list[int]]
    info: dict[str, Any]

    def tails(self, n: int = 30) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.tail(n)}" for p in self.procs)


@contextlib.contextmanager
def start_farm(backend: str, policy: str, redis_db: int, work: Path) -> Iterator[Farm]:
    """A fresh farm of `backend` with REELFARM_DISPATCH=`policy`; everything stopped and removed on exit."""
    from reelfarm.shared.config import Settings

    port = farmkit.free_port()
    data = work / "data"
    base = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        # no drain on SIGTERM: nobody else is served, and the next farm starts 5 s sooner
        common = {"REELFARM_DISPATCH": policy, "REELFARM_DRAIN_SEC": "0"}
        if backend == "embedded":
            env = common
            server, key = farmkit.start_server(data, port, env)
            stack.callback(server.stop)
            procs = [server]
            info: dict[str, Any] = {"server": "reelfarm serve (gunicorn, 2 workers x 4 threads; embedded executor; "
                                              "SQLite)"}
        else:
            redis_url = f"redis://127.0.0.1:6379/{redis_db}"
            pg = stack.enter_context(farmkit.PostgresDB())
            rdb = stack.enter_context(farmkit.RedisDB(redis_url))
            env = {**common, "REELFARM_DATABASE_URL": pg.url, "REELFARM_REDIS_URL": redis_url,
                   "REELFARM_STORAGE_URL": f"file://{data / 'files'}",
                   "REELFARM_SECRET_KEY": secrets.token_urlsafe(48)}
            server, key = farmkit.start_server(data, port, env)
            stack.callback(server.stop)
            # the nodes get what the server has (start_server adds DATA_DIR, PUBLIC_URL, RATE_LIMIT_PRO)
            nodes = RqFarm(seconds=DEFAULTS["b_seconds"], resolution=720, redis_url=redis_url)
            nodes.env = {**env, "REELFARM_DATA_DIR": str(data), "REELFARM_PUBLIC_URL": base,
                         "REELFARM_RATE_LIMIT_PRO": "1000000"}
            nodes.redis = rdb.redis
            stack.callback(nodes.stop_workers)
            nodes.start_workers(NODES)
            procs = [server, *nodes.workers]
            info = {"server": "reelfarm serve (gunicorn, 2 workers x 4 threads) over RQ",
                    "nodes": f"{NODES} x reelfarm worker --queues render,jobs",
                    "database": f"PostgreSQL {pg.version}, throwaway database {pg.name}",
                    "redis": f"Redis {rdb.version}, {redis_url} (flushed at start and end; "
                             f"{rdb.keys_found} keys found)"}
        settings = Settings.from_env({"REELFARM_DATA_DIR": str(data), **env})
        # None: this checkout's settings do not know REELFARM_DISPATCH (then every farm is FIFO)
        info.update(backend=backend, policy=policy, dispatch_setting=getattr(settings, "dispatch", None))
        yield Farm(base, key, settings.database_url, procs,
                   lambda: [p.pid for p in procs], info)


# ----------------------------------------------------------------------------- one measurement


def _since(t0: float) -> float:
    return round(time.perf_counter() - t0, 3)


def _iso(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def _finish(rec: dict[str, Any], state: dict[str, Any], t0: float) -> None:
    rec["done_at"] = _since(t0)
    rec["seconds"] = round(rec["done_at"] - rec["request_at"], 3)
    created, finished = _iso(state.get("created_at")), _iso(state.get("finished_at"))
    rec.update(status=state["status"], error=state.get("error"), reused_frames=state.get("reused_frames"),
               duration_sec=state.get("duration_sec"), created_at=state.get("created_at"),
               finished_at=state.get("finished_at"),
               server_seconds=round((finished - created).total_seconds(), 3) if created and finished else None)


def _request(tenant: Tenant, video: str, resolution: int, t0: float) -> dict[str, Any]:
    rec: dict[str, Any] = {"tenant": tenant.name, "video_id": video, "request_at": _since(t0), "polls": 0}
    rec["render_id"] = tenant.request(video, resolution)["id"]
    rec["answered_at"] = _since(t0)
    return rec


def _b_side(tenant: Tenant, video: str, resolution: int, t0: float, due: float, out: dict[str, Any]) -> None:
    """B's request at `due` (perf_counter), then its render polled every B_POLL s until it finished."""
    try:
        time.sleep(max(0.0, due - time.perf_counter()))
        rec = _request(tenant, video, resolution, t0)
        while True:
            state = tenant.get(rec["render_id"])
            rec["polls"] += 1
            if state["status"] in TERMINAL:
                _finish(rec, state, t0)
                break
            if time.perf_counter() - t0 > RENDER_TIMEOUT:
                raise TimeoutError(f"B's render not finished after {RENDER_TIMEOUT:.0f} s: {state['status']}")
            time.sleep(B_POLL)
        out["b"] = rec
    except BaseException as e:  # noqa: BLE001 - handed to the main thread
        out["error"] = e


def measure(farm: Farm, label: str, resolution: int, a: list[tuple[Tenant, str]],
            b: tuple[Tenant, str] | None, notes: list[str]) -> dict[str, Any]:
    """A's renders requested at once (one after the other), B's `B_DELAY` s after A's first (at
    once without A); every render followed until it finished. Times in s after the first request."""
    time.sleep(SETTLE)
    load_before = os.getloadavg()
    out: dict[str, Any] = {}
    with farmkit.FarmWitness(farm.roots) as cpu:
        t0 = time.perf_counter()
        thread = None
        if b is not None:
            due = t0 + (B_DELAY if a else 0.0)
            thread = threading.Thread(target=_b_side, args=(*b, resolution, t0, due, out), daemon=True)
            thread.start()
        pending = [(tenant, _request(tenant, video, resolution, t0)) for tenant, video in a]
        a_runs = [rec for _, rec in pending]
        while pending:
            for tenant, rec in list(pending):
                state = tenant.get(rec["render_id"])
                rec["polls"] += 1
                if state["status"] in TERMINAL:
                    _finish(rec, state, t0)
                    pending.remove((tenant, rec))
            if pending:
                if time.perf_counter() - t0 > RENDER_TIMEOUT:
                    raise TimeoutError(f"{label}: {len(pending)} of A's renders not finished after "
                                       f"{RENDER_TIMEOUT:.0f} s\n{farm.tails()}")
                time.sleep(A_POLL)
        if thread is not None:
            thread.join(RENDER_TIMEOUT)
    if "error" in out:
        raise RuntimeError(f"{label}: B's side failed: {out['error']!r}\n{farm.tails()}") from out["error"]
    renders = a_runs + ([out["b"]] if "b" in out else [])
    failed = [r for r in renders if r["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{label}: {len(failed)} renders did not succeed: "
                           f"{[(r['tenant'], r['status'], r['error']) for r in failed]}\n{farm.tails()}")
    reused = [r for r in renders if r.get("reused_frames")]
    if reused:
        notes.append(f"{label}: {len(reused)} renders reused segments ({sum(r['reused_frames'] for r in reused)} "
                     "frames): less work than planned")
    farmkit.flag_load(label, cpu, notes)
    res: dict[str, Any] = {"label": label, "load_average": {"before": [round(x, 2) for x in load_before],
                                                            "after": [round(x, 2) for x in os.getloadavg()]},
                           "cpu": cpu.as_dict(), "wall_s": round(cpu.wall, 3), "renders": renders}
    if a_runs:
        res["a_requests_span_s"] = round(a_runs[-1]["answered_at"] - a_runs[0]["request_at"], 3)
        res["a_total_s"] = round(max(r["done_at"] for r in a_runs) - a_runs[0]["request_at"], 3)
        created = [_iso(r["created_at"]) for r in a_runs]
        finished = [_iso(r["finished_at"]) for r in a_runs]
        if all(created) and all(finished):
            res["a_total_server_s"] = round((max(f for f in finished if f) - min(c for c in created if c))
                                            .total_seconds(), 3)
    if "b" in out:
        res["b_s"] = out["b"]["seconds"]
        res["b_server_s"] = out["b"]["server_seconds"]
        res["b_requested_at_s"] = out["b"]["request_at"]
    return res


# ----------------------------------------------------------------------------- one farm, one policy


def run_policy(backend: str, policy: str, args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    """A fresh farm with this policy: warm-up, B alone, A alone, A + B."""
    work = Path(tempfile.mkdtemp(prefix=f"reelfarm-bench-tenants-{backend}-{policy}-"))
    tag = f"{backend}/{policy}"
    t0 = time.perf_counter()
    phases: dict[str, float] = {}
    try:
        with start_farm(backend, policy, args.redis_db, work) as farm:
            phases["farm_started"] = _since(t0)
            credits = 4 * args.renders + 20
            a = create_tenant(farm.database_url, farm.base, "A", credits)
            b = create_tenant(farm.database_url, farm.base, "B", credits)
            dev = Tenant("warm-up", "dev", _client(farm.base, farm.dev_key))
            try:
                k = itertools.count(1)
                print(f"  {tag}: creating {2 * args.renders + 3} videos ...", flush=True)
                warm = dev.create_video(next(k), args.b_seconds)
                b_alone, b_with = (b.create_video(next(k), args.b_seconds) for _ in range(2))
                a_alone = [a.create_video(next(k), args.seconds) for _ in range(args.renders)]
                a_with = [a.create_video(next(k), args.seconds) for _ in range(args.renders)]
                phases["videos_created"] = _since(t0)
                measure(farm, f"{tag} warm-up", args.resolution, [], (dev, warm), notes)
                phases["warmed_up"] = _since(t0)
                out: dict[str, Any] = {"farm": farm.info, "workspaces": {"A": a.workspace, "B": b.workspace},
                                       "plan": PLAN}
                out["b_alone"] = measure(farm, f"{tag} B alone", args.resolution, [], (b, b_alone), notes)
                print(f"  {tag}: B alone {out['b_alone']['b_s']:.2f} s", flush=True)
                out["a_alone"] = measure(farm, f"{tag} A alone", args.resolution, [(a, v) for v in a_alone], None,
                                         notes)
                print(f"  {tag}: A alone {out['a_alone']['a_total_s']:.2f} s", flush=True)
                out["a_with_b"] = measure(farm, f"{tag} A + B", args.resolution, [(a, v) for v in a_with],
                                          (b, b_with), notes)
                m = out["a_with_b"]
                print(f"  {tag}: A + B: B {m['b_s']:.2f} s, A {m['a_total_s']:.2f} s", flush=True)
                phases["measured"] = _since(t0)
            finally:
                for t in (a, b, dev):
                    t.http.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["phases_s"] = {**phases, "stopped": _since(t0)}
    out["b_ratio"] = round(out["a_with_b"]["b_s"] / out["b_alone"]["b_s"], 3)
    out["a_ratio"] = round(out["a_with_b"]["a_total_s"] / out["a_alone"]["a_total_s"], 3)
    return out


def compare(policies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The targets, where the policies they need were run."""
    out: dict[str, Any] = {}
    if "fair" in policies:
        r = policies["fair"]["b_ratio"]
        out["b_with_a_over_alone_fair"] = {"value": r, "target": f"<= {B_TARGET}x", "met": r <= B_TARGET}
    if "fair" in policies and "fifo" in policies:
        fair, fifo = policies["fair"], policies["fifo"]
        r = round(fair["a_with_b"]["a_total_s"] / fifo["a_with_b"]["a_total_s"], 3)
        out["a_total_fair_over_fifo"] = {"value": r, "target": f"<= {A_TARGET}x", "met": r <= A_TARGET,
                                         "note": "A's total with B; two farms, one after the other"}
        out["a_ratio_fair_over_fifo"] = round(fair["a_ratio"] / fifo["a_ratio"], 3)
    return out


# ----------------------------------------------------------------------------- output


def git_commit() -> dict[str, Any]:
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=farmkit.ROOT, capture_output=True, text=True, timeout=30,
                              check=False).stdout

    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD").strip() or None, "changed_tracked_files": changed}


def print_backend(backend: str, res: dict[str, Any], args: argparse.Namespace, notes: list[str]) -> None:
    rows = []
    for policy, p in res["policies"].items():
        m = p["a_with_b"]
        rows.append([policy, f"{p['b_alone']['b_s']:.2f}", f"{m['b_s']:.2f}", f"{p['b_ratio']:.2f}x",
                     f"{p['a_alone']['a_total_s']:.2f}", f"{m['a_total_s']:.2f}", f"{p['a_ratio']:.3f}x"])
    lines = []
    c = res["comparison"]
    if "b_with_a_over_alone_fair" in c:
        t = c["b_with_a_over_alone_fair"]
        lines.append(f"target: B with A within {B_TARGET:g}x of B alone (fair): {t['value']:.2f}x "
                     f"{'MET' if t['met'] else 'NOT MET'}")
    if "a_total_fair_over_fifo" in c:
        t = c["a_total_fair_over_fifo"]
        lines.append(f"target: A's total (with B) fair within {A_TARGET:g}x of fifo: {t['value']:.3f}x "
                     f"{'MET' if t['met'] else 'NOT MET'} (each policy's A with B / A alone, fair over fifo: "
                     f"{c['a_ratio_fair_over_fifo']:.3f}x)")
    farmkit.print_table(
        f"{backend}: A {args.renders} x {args.seconds:g} s, B {args.b_seconds:g} s {B_DELAY:g} s later, "
        f"{args.resolution}p30",
        ["policy", "B alone s", "B with A s", "B ratio", "A alone s", "A with B s", "A ratio"], rows,
        lines + [n for n in notes if n.startswith(f"{backend}/")])


def _names(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        got = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in got if x not in allowed]
        if not got or bad or len(set(got)) != len(got):
            raise argparse.ArgumentTypeError(f"a comma-separated list of {', '.join(allowed)}, each once")
        return got
    return parse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from reelfarm.renderer.spec import RESOLUTIONS

    p = argparse.ArgumentParser(prog="python -m benchmarks.tenants", description=__doc__.split("\n")[0])
    p.add_argument("--renders", type=int, default=None, help="A's renders (default 20; --quick 3)")
    p.add_argument("--seconds", type=float, default=None, help="A's video length, 6 to 60 (default 30; --quick 6)")
    p.add_argument("--b-seconds", type=float, default=None, help="B's video length, 6 to 60 (default 6)")
    p.add_argument("--resolution", type=int, default=720, choices=RESOLUTIONS, help="short side (default 720)")
    p.add_argument("--backends", type=_names(BACKENDS), default=list(BACKENDS), help="default embedded,rq")
    p.add_argument("--policies", type=_names(POLICIES), default=list(POLICIES),
                   help="REELFARM_DISPATCH values, each on a fresh farm, in this order (default fair,fifo)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 3 renders of 6 s for A (options given explicitly still apply)")
    p.add_argument("--redis-db", type=int, default=12, help="rq: the Redis DB, flushed at start and end (default 12)")
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON (default benchmarks/results)")
    args = p.parse_args(argv)
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.renders < 1:
        p.error("--renders must be >= 1")
    if not (6 <= args.seconds <= 60 and 6 <= args.b_seconds <= 60):
        p.error("--seconds and --b-seconds must be from 6 to 60 (the stories' range)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    with farmkit.FarmWitness() as idle:
        time.sleep(1.0)
    result: dict[str, Any] = {
        "benchmark": "tenants", "started": started.isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks.tenants", *(sys.argv[1:] if argv is None else argv)]),
        "options": {k: v if not isinstance(v, Path) else str(v) for k, v in vars(args).items()},
        "scenario": {"story": farmkit.STORY, "format": farmkit.FORMAT, "fps": farmkit.FPS, "plan": PLAN,
                     "b_delay_s": B_DELAY, "poll_s": {"A": A_POLL, "B": B_POLL}, "settle_s": SETTLE,
                     "order": ["warm-up", "B alone", "A alone", "A + B"]},
        "targets": {"b_with_a_over_alone_fair": f"<= {B_TARGET}x", "a_total_fair_over_fifo": f"<= {A_TARGET}x"},
        "git": git_commit(), "machine": farmkit.machine(), "load_average_start": os.getloadavg(),
        "other_cores_at_start": round(idle.other_cores or 0, 3), "backends": {}, "notes": []}
    notes: list[str] = result["notes"]
    print(f"A: {args.renders} x {args.seconds:g} s, B: {args.b_seconds:g} s, {args.resolution}p; "
          f"backends {','.join(args.backends)}; policies {','.join(args.policies)}", flush=True)
    status = 0
    for backend in args.backends:
        res: dict[str, Any] = {"policies": {}}
        result["backends"][backend] = res
        try:
            for policy in args.policies:
                res["policies"][policy] = run_policy(backend, policy, args, notes)
        except Exception as e:  # noqa: BLE001 - record it, go on with the next backend
            import traceback

            traceback.print_exc()
            res["error"], status = f"{type(e).__name__}: {e}", 1
            continue
        res["comparison"] = compare(res["policies"])
        print_backend(backend, res, args, notes)
    result["load_average_end"] = os.getloadavg()
    result["finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"tenants-{started.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    print(f"  -> {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
