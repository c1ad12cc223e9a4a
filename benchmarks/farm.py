"""What the farm adds over the renderer alone, and how two worker nodes scale on two cores.

    python -m benchmarks.farm                  # both measurements
    python -m benchmarks.farm api              # POST /renders .. succeeded vs render_video, 15 s 1080p30
    python -m benchmarks.farm workers --pin    # 1 vs 2 `reelfarm worker`s on a 60 s 1080p30 video

See benchmarks/README.md for what each figure means.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import farmkit, fps, peers
from benchmarks.farmkit import FarmWitness, ThreadSampler, summary
from benchmarks.rqfarm import RqFarm

API_SECONDS = 15.0
WORKERS_SECONDS = 60.0
RESOLUTION = 1080
OVERHEAD_AIM = 0.15
SPEEDUP_AIM = 1.7


# ----------------------------------------------------------------------------- API vs renderer


def run_api(args: argparse.Namespace, work: Path, notes: list[str]) -> dict[str, Any]:
    """A `reelfarm serve` (gunicorn, embedded farm, SQLite) on a fresh data dir, driven over HTTP."""
    import httpx

    port = farmkit.free_port()
    data_dir = work / "serve-data"
    assets = work / "assets"
    assets.mkdir()
    server, key = farmkit.start_server(data_dir, port)
    roots = lambda: [server.pid]
    runs: list[dict[str, Any]] = []
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                            headers={"Authorization": f"Bearer {key}"})
        created = http.post("/api/v1/videos", json={"storyId": farmkit.STORY, "durationSec": args.seconds,
                                                    "format": farmkit.FORMAT, "fields": farmkit.story_fields(0)})
        assert created.status_code == 201, created.text
        video = created.json()
        for rep in range(args.repeat):
            if rep:
                patched = http.patch(f"/api/v1/videos/{video['id']}", json={"fields": farmkit.story_fields(rep)})
                assert patched.status_code == 200, patched.text
                video = patched.json()
            doc = video["current_version"]["doc"]
            doc_file = work / f"doc-{rep}.json"
            doc_file.write_text(json.dumps(doc))
            run: dict[str, Any] = {"rep": rep, "version": video["current_version"]["number"],
                                   "frames": round(doc["duration"] * farmkit.FPS)}
            for what in (("api", "alone") if rep % 2 == 0 else ("alone", "api")):
                print(f"  rep {rep + 1}/{args.repeat}: {'API + embedded farm' if what == 'api' else 'renderer alone'} ...")
                if what == "api":
                    run["api"] = _api_render(http, video["id"], roots, data_dir, work, notes, f"api rep {rep}")
                else:
                    with FarmWitness(roots) as cpu:
                        alone = fps.measure_ours_e2e(doc_file, assets, RESOLUTION, work / "alone.mp4", work)
                    farmkit.flag_load(f"renderer alone rep {rep}", cpu, notes)
                    run["alone"] = {k: alone[k] for k in ("seconds", "fps", "frames", "frames_in_file", "bytes",
                                                          "peak_pss_tree_bytes")}
                    run["alone"]["cpu"] = cpu.as_dict()
                    run["alone"]["cpu"]["note"] = "own_cores = the render_video child; farm_cores = the idle server"
            run["overhead"] = run["api"]["seconds"] / run["alone"]["seconds"] - 1
            print(f"    API {run['api']['seconds']:.2f} s, alone {run['alone']['seconds']:.2f} s, "
                  f"overhead {run['overhead']:+.1%}")
            runs.append(run)
        http.close()
    finally:
        server.stop()
    api_med = summary([r["api"]["seconds"] for r in runs])
    alone_med = summary([r["alone"]["seconds"] for r in runs])
    overhead = api_med["median"] / alone_med["median"] - 1
    return {"story": farmkit.STORY, "seconds": args.seconds, "resolution": RESOLUTION, "format": farmkit.FORMAT,
            "fps": farmkit.FPS, "server": "reelfarm serve (gunicorn, 2 workers x 4 threads; embedded farm; SQLite)",
            "renderer_alone": "renderer.render_video(doc, out, '16:9', 1080, 30, workers=2) in a fresh process",
            "runs": runs, "api_seconds": api_med, "alone_seconds": alone_med,
            "overhead_of_medians": overhead, "overhead_per_run": summary([r["overhead"] for r in runs]),
            "aim": f"overhead < {OVERHEAD_AIM:.0%}", "aim_met": overhead < OVERHEAD_AIM}


def _api_render(http: Any, video_id: str, roots: Any, data_dir: Path, work: Path, notes: list[str],
                label: str) -> dict[str, Any]:
    with FarmWitness(roots) as cpu, ThreadSampler(roots) as threads:
        t0 = time.perf_counter()
        posted = http.post(f"/api/v1/videos/{video_id}/renders",
                           json={"format": farmkit.FORMAT, "resolution": RESOLUTION})
        t_post = time.perf_counter() - t0
        assert posted.status_code == 202, posted.text
        rid = posted.json()["id"]
        done, polls = farmkit.poll_until_done(lambda: _ok(http.get(f"/api/v1/renders/{rid}")))
        wall = time.perf_counter() - t0
    if done["status"] != "succeeded":
        raise RuntimeError(f"{label}: render {done['status']}: {done['error']}")
    farmkit.flag_load(label, cpu, notes)
    mp4 = work / "api.mp4"
    mp4.write_bytes(http.get(done["url"]).content)
    return {"render_id": rid, "seconds": wall, "post_seconds": t_post, "polls": polls, "bytes": done["bytes"],
            "frames_in_file": peers.count_frames(mp4), "cpu": cpu.as_dict(), "processes": threads.as_dict(),
            "timeline": _embedded_timeline(data_dir, rid)}


def _ok(response: Any) -> dict[str, Any]:
    if response.status_code != 200:
        raise RuntimeError(f"GET {response.url} answered {response.status_code}: {response.text[:300]}")
    return response.json()


def _embedded_timeline(data_dir: Path, render_id: str) -> dict[str, Any]:
    """From the server's SQLite database: when the render started and finished, and when each of
    its tasks finished, in seconds after the render row was created."""
    from sqlalchemy import select

    from reelfarm.shared.db import make_engine
    from reelfarm.shared.tables import queued_tasks, renders

    engine = make_engine(f"sqlite:///{data_dir}/reelfarm.db")
    try:
        with engine.connect() as conn:
            r = conn.execute(select(renders).where(renders.c.id == render_id)).one()
            tasks = conn.execute(select(queued_tasks.c.id, queued_tasks.c.finished_at, queued_tasks.c.attempts)
                                 .where(queued_tasks.c.id.like(f"render-{render_id}-%"))).all()
    finally:
        engine.dispose()
    at = lambda d: None if d is None else round((d - r.created_at).total_seconds(), 2)
    return {"chunks": r.chunks, "started": at(r.started_at), "finished": at(r.finished_at),
            "tasks_finished": {t.id.rsplit("-", 1)[-1] if "chunk" in t.id else "stitch": at(t.finished_at)
                               for t in sorted(tasks, key=lambda t: t.finished_at or r.created_at)},
            "attempts": sum(t.attempts for t in tasks)}


# ----------------------------------------------------------------------------- 1 vs 2 workers


def run_workers(args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    variants = [False, True] if args.pin else [False]
    out: dict[str, Any] = {"story": farmkit.STORY, "seconds": args.workers_seconds, "resolution": RESOLUTION,
                           "format": farmkit.FORMAT, "fps": farmkit.FPS, "variants": {}}
    with RqFarm(seconds=args.workers_seconds, resolution=RESOLUTION) as farm:
        out.update(farm.info, frames=farm.frames)
        for pin in variants:
            name = "pinned" if pin else "unpinned"
            runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
            for rep in range(args.workers_repeat):
                for n in ((1, 2) if rep % 2 == 0 else (2, 1)):
                    label = f"{n} worker{'s' if n > 1 else ''} ({name}) rep {rep}"
                    print(f"  {label} ...")
                    farm.start_workers(n, pin=pin)
                    try:
                        res = farm.render(label, notes)
                    finally:
                        farm.stop_workers()
                    print(f"    {res['seconds']:.2f} s, {res['frames_per_second']:.1f} frames/s, "
                          f"farm used {res['cpu']['farm_cores']:.2f} cores, "
                          f"up to {res['processes']['peak_threads_in_a_busy_process']} threads in a rendering process")
                    runs[n].append(res)
            one, two = (summary([r["seconds"] for r in runs[n]]) for n in (1, 2))
            ratio = one["median"] / two["median"]
            out["variants"][name] = {
                "pinned_to_cores": pin, "runs": runs, "seconds_1": one, "seconds_2": two,
                "frames_per_second_1": out["frames"] / one["median"],
                "frames_per_second_2": out["frames"] / two["median"],
                "farm_cores_1": summary([r["cpu"]["farm_cores"] for r in runs[1]])["median"],
                "farm_cores_2": summary([r["cpu"]["farm_cores"] for r in runs[2]])["median"],
                "throughput_ratio": ratio, "aim": f">= {SPEEDUP_AIM}x", "aim_met": ratio >= SPEEDUP_AIM}
    return out


# ----------------------------------------------------------------------------- output


def print_api(res: dict[str, Any], notes: list[str]) -> None:
    rows = []
    for r in res["runs"]:
        a, b = r["api"], r["alone"]
        rows.append([f"rep {r['rep'] + 1} (v{r['version']})", f"{a['seconds']:.2f}", f"{b['seconds']:.2f}",
                     f"{r['overhead']:+.1%}", f"{a['cpu']['farm_cores']:.2f}", f"{b['cpu']['own_cores']:.2f}",
                     str(a["processes"]["peak_threads_in_a_busy_process"])])
    rows.append(["median", f"{res['api_seconds']['median']:.2f}", f"{res['alone_seconds']['median']:.2f}",
                 f"{res['overhead_of_medians']:+.1%}", "", "", ""])
    farmkit.print_table(
        f"API + embedded farm vs renderer alone: {res['story']}, {res['seconds']:g} s {RESOLUTION}p30",
        ["run", "API s", "alone s", "overhead", "farm cores", "alone cores", "threads (busy proc)"], rows,
        [f"aim: farm adds < {OVERHEAD_AIM:.0%}: {'MET' if res['aim_met'] else 'NOT MET'}"] + notes)


def print_workers(res: dict[str, Any], notes: list[str]) -> None:
    rows = []
    for name, v in res["variants"].items():
        for n in (1, 2):
            s = v[f"seconds_{n}"]
            rows.append([f"{n} worker{'s' if n > 1 else ''} ({name})", f"{s['median']:.2f}",
                         f"{v[f'frames_per_second_{n}']:.1f}", f"{v[f'farm_cores_{n}']:.2f}",
                         f"{v['throughput_ratio']:.2f}x" if n == 2 else ""])
    farmkit.print_table(
        f"RQ workers: {res['story']}, {res['seconds']:g} s {RESOLUTION}p30, {res['frames']} frames",
        ["nodes", "median s", "frames/s", "farm cores", "2 vs 1"], rows,
        [f"{k}: {'MET' if v['aim_met'] else 'NOT MET'} ({v['throughput_ratio']:.2f}x, aim >= {SPEEDUP_AIM}x)"
         for k, v in res["variants"].items()] + notes)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.farm", description=__doc__.split("\n")[0])
    p.add_argument("what", nargs="?", choices=("all", "api", "workers"), default="all")
    p.add_argument("--repeat", type=int, default=3, help="API runs (each beside a renderer run; default 3)")
    p.add_argument("--seconds", type=float, default=API_SECONDS, help="API video length (default 15)")
    p.add_argument("--workers-repeat", type=int, default=1, help="runs per worker count (default 1)")
    p.add_argument("--workers-seconds", type=float, default=WORKERS_SECONDS, help="default 60")
    p.add_argument("--pin", action="store_true",
                   help="also run the workers pinned one per core (x264 then sees one core)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = farmkit.machine()
    with farmkit.FarmWitness() as idle:
        time.sleep(1.0)
    info["other_cores_at_start"] = round(idle.other_cores or 0, 3)
    if (idle.other_cores or 0) > farmkit.OTHER_LOAD_WARN:
        print(f"WARNING: other processes are using {idle.other_cores:.2f} cores; figures will be low.")
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    status = 0
    for what in (("api", "workers") if args.what == "all" else (args.what,)):
        notes: list[str] = []
        work = Path(tempfile.mkdtemp(prefix=f"reelfarm-bench-{what}-"))
        print(f"\n== {what} ==")
        try:
            res = run_api(args, work, notes) if what == "api" else run_workers(args, notes)
        except Exception as e:  # noqa: BLE001 - record it, go on with the next part
            import traceback

            traceback.print_exc()
            res, status = {"error": f"{type(e).__name__}: {e}"}, 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if "error" not in res:
            (print_api if what == "api" else print_workers)(res, notes)
        path = args.out / f"farm-{what}-{stamp}.json"
        path.write_text(json.dumps({"benchmark": f"farm {what}", "machine": info, "notes": notes, "result": res,
                                    "created": dt.datetime.now().isoformat(timespec="seconds")},
                                   indent=2, default=str))
        print(f"  -> {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
