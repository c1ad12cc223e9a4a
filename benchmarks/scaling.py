"""Speed-up of a render with the number of farm nodes.

    python -m benchmarks.scaling                              # 1, 2, 4 local worker nodes, 30 s 720p
    python -m benchmarks.scaling --nodes 1,2 --seconds 60 --resolution 1080 --pin
    python -m benchmarks.scaling --external --baseline 40     # the nodes already in REELFARM_REDIS_URL

Local nodes are `python -m reelfarm worker` processes on this machine, over real Redis (DB 14,
flushed at start and end) and a throwaway PostgreSQL database. See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import farmkit
from benchmarks.farmkit import summary
from benchmarks.rqfarm import RqFarm


def _counts(text: str) -> list[int]:
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad node list {text!r}")
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError("node counts must be >= 1")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=_counts, default=[1, 2, 4],
                   help="worker processes to start on this machine, comma separated (default 1,2,4)")
    p.add_argument("--external", action="store_true",
                   help="start nothing: use the nodes heartbeating in the farm that REELFARM_REDIS_URL, "
                        "REELFARM_DATABASE_URL, REELFARM_STORAGE_URL and REELFARM_SECRET_KEY name")
    p.add_argument("--namespace", default="", help="the external nodes' --namespace")
    p.add_argument("--baseline", type=float, default=None,
                   help="frames/s of one node (e.g. from an earlier local run): speed-up of --external")
    p.add_argument("--seconds", type=float, default=30.0, help="video length, 6 to 60 (default 30)")
    p.add_argument("--resolution", type=int, default=720, help="short side (default 720)")
    p.add_argument("--repeat", type=int, default=1, help="renders per node count (median; default 1)")
    p.add_argument("--pin", action="store_true", help="local node i may use only core i %% cores")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    if not 6 <= args.seconds <= 60:
        p.error("--seconds must be from 6 to 60 (the stories' range)")
    return args


def measure(args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with RqFarm(seconds=args.seconds, resolution=args.resolution, external=args.external,
                namespace=args.namespace) as farm:
        res: dict[str, Any] = {"story": farmkit.STORY, "seconds": args.seconds, "resolution": args.resolution,
                               "format": farmkit.FORMAT, "fps": farmkit.FPS, "frames": farm.frames,
                               "chunks": -(-farm.frames // (5 * farmkit.FPS)), "external": args.external,
                               "pinned": args.pin, **farm.info}
        if args.external:
            nodes = farm.alive_external_nodes()
            if not nodes:
                raise SystemExit("no node is heartbeating in that Redis (namespace "
                                 f"{args.namespace!r}); start `reelfarm worker` on the nodes first")
            res["external_nodes"] = [{k: n.get(k) for k in ("name", "hostname", "cores", "gpu", "nvenc", "queues")}
                                     for n in nodes]
            notes.append("external nodes: CPU is watched on this machine only (nodes on this host count as "
                         "the farm's); load on other hosts is not seen, so it is not flagged")
            plan = [len(nodes)]
        else:
            plan = args.nodes
        for n in plan:
            runs = []
            for rep in range(args.repeat):
                label = f"{n} node{'s' if n > 1 else ''} rep {rep}"
                print(f"  {label} ...")
                if not args.external:
                    farm.start_workers(n, pin=args.pin)
                try:
                    runs.append(farm.render(label, notes))
                finally:
                    farm.stop_workers()
                print(f"    {runs[-1]['seconds']:.2f} s, {runs[-1]['frames_per_second']:.1f} frames/s")
            secs = summary([r["seconds"] for r in runs])
            rows.append({"nodes": n, "seconds": secs, "frames_per_second": farm.frames / secs["median"],
                         "farm_cores": summary([r["cpu"]["farm_cores"] for r in runs])["median"], "runs": runs})
    base = _baseline(args, rows)
    for row in rows:
        row["speedup"] = row["frames_per_second"] / base if base else None
        row["efficiency"] = row["speedup"] / row["nodes"] if base else None
    res["baseline_frames_per_second"] = base
    res["baseline"] = ("--baseline" if args.external else f"{rows[0]['nodes']} node row, scaled per node")
    res["rows"] = rows
    if any(r["nodes"] > res["chunks"] for r in rows):
        notes.append(f"{res['chunks']} chunks of 5 s: nodes beyond that have nothing to do")
    return res


def _baseline(args: argparse.Namespace, rows: list[dict[str, Any]]) -> float | None:
    """Frames/s of one node: --baseline, or the smallest local count's figure divided by its count."""
    if args.external:
        return args.baseline
    return rows[0]["frames_per_second"] / rows[0]["nodes"] if rows else None


def print_rows(res: dict[str, Any], notes: list[str]) -> None:
    fmt = lambda x, f: "n/a" if x is None else f.format(x)
    rows = [[str(r["nodes"]), f"{r['seconds']['median']:.2f}", f"{r['frames_per_second']:.1f}",
             fmt(r["speedup"], "{:.2f}x"), fmt(r["efficiency"], "{:.0%}"), f"{r['farm_cores']:.2f}"]
            for r in res["rows"]]
    where = "external nodes" if res["external"] else ("local nodes, pinned" if res["pinned"] else "local nodes")
    farmkit.print_table(
        f"Scaling ({where}): {res['story']}, {res['seconds']:g} s {res['resolution']}p30, "
        f"{res['frames']} frames in {res['chunks']} chunks",
        ["nodes", "median s", "frames/s", "speed-up", "per node", "cores used here"], rows, notes)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = farmkit.machine()
    with farmkit.FarmWitness() as idle:
        time.sleep(1.0)
    info["other_cores_at_start"] = round(idle.other_cores or 0, 3)
    if (idle.other_cores or 0) > farmkit.OTHER_LOAD_WARN:
        print(f"WARNING: other processes are using {idle.other_cores:.2f} cores; figures will be low.")
    notes: list[str] = []
    res = measure(args, notes)
    print_rows(res, notes)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    path = args.out / f"scaling-{args.resolution}p-{stamp}.json"
    path.write_text(json.dumps({"benchmark": "scaling", "machine": info, "notes": notes, "result": res,
                                "created": dt.datetime.now().isoformat(timespec="seconds")},
                               indent=2, default=str))
    print(f"  -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
