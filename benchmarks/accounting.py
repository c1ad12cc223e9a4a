"""What the farm's accounting costs: the same batch of renders with it on and off, interleaved.

    python -m benchmarks.accounting                          # 5 pairs of 4 stories at 720p
    python -m benchmarks.accounting --pairs 8 --resolution 1080 --stories quote,hiring

The accounting (``reelfarm.farm.runtime.accounting.measured``) wraps every render task: it reads
``getrusage`` before and after, counts the bytes the task stores, and writes one ``task_costs`` row
an attempt (the stitch's twice: ``settle`` before the render reads as succeeded, then its end).
``accounting.RECORDING = False`` makes ``measured`` run the task and nothing else; the task
processes inherit it when the embedded farm forks its pool, so each run sets it, starts the farm
and stops it after.

A run: a new workspace (nothing to reuse from an earlier run), one video a story (each built
from its samples, 16:9, at its sample length), every render asked for at once on the embedded
farm (``RenderService``, its queue, its chunk and stitch tasks in the task processes, SQLite), and
waited for until all succeeded. Its throughput is frames over the wall seconds from the first
request to the last success; its CPU is that of this process and its task processes
(``benchmarks.reuse.TreeCpu``) a frame. The runs come in pairs, on then off, then off then on, so
that load that grows or falls over the benchmark falls on both alike. Each pair's ratio is on over
off; the figure is the median of the pairs' throughput ratios (overhead: 1 less it) and of their
CPU ratios. Each run also counts the ``task_costs`` rows written, to show the switch works (0 off).

On a shared 2-core machine the throughput of a run moves by tens of per cent with the others'
load, far more than the 1% looked for. So the accounting's own work is also timed where it runs:
in the task processes, each call of what ``measured`` does beside the task (``_cpu``, the two
``getrusage`` reads; ``node_name``; ``_store``, the row's write with its waits for the database)
is timed (wall and CPU seconds) and summed per run, over the tasks' own wall and CPU seconds as
their rows give them (``accounting_share``). The timing wraps those functions before the farm
forks its task processes, in the "on" runs only.

Results go to benchmarks/results/accounting-<time>.json, with the command that made them and the
load average before and after.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from benchmarks.estimates import settings
from benchmarks.reuse import TreeCpu
from reelfarm.api.services import Services
from reelfarm.farm.runtime import accounting
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.tables import renders, task_costs
from reelfarm.studio.stories import NEUTRAL_BRAND, list_stories

RESULTS = Path(__file__).resolve().parent / "results"
STORIES = "announcement,quote,flash_sale,hiring"
TARGET = 0.01


class Timed:
    """Wraps ``accounting``'s own steps to time each call, appended to ``path`` by whichever process
    makes it (a task process, forked after the wrapping)."""

    STEPS = ("_cpu", "node_name", "_store")

    def __init__(self, path: Path) -> None:
        self.path = path
        for name in self.STEPS:
            setattr(accounting, name, self._timed(name, getattr(accounting, name)))

    def _timed(self, name: str, step: Any) -> Any:
        def run(*args: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return step(*args)
            finally:
                with self.path.open("a") as out:
                    out.write(f"{name} {time.perf_counter() - wall:.6f} {time.process_time() - cpu:.6f}\n")
        return run

    def taken(self) -> dict[str, float]:
        """Wall and CPU seconds the steps took since the last call, and how many calls, in all and
        per step; the file is emptied."""
        lines = self.path.read_text().split() if self.path.exists() else []
        self.path.write_text("")
        names, walls, cpus = lines[0::3], [float(v) for v in lines[1::3]], [float(v) for v in lines[2::3]]
        steps = {name: {"calls": names.count(name),
                        "wall_sec": round(sum(w for n, w in zip(names, walls, strict=True) if n == name), 4),
                        "cpu_sec": round(sum(c for n, c in zip(names, cpus, strict=True) if n == name), 4)}
                 for name in self.STEPS}
        return {"calls": len(walls), "wall_sec": round(sum(walls), 4), "cpu_sec": round(sum(cpus), 4),
                "longest_wall_sec": round(max(walls, default=0.0), 4), "steps": steps}


class TaskCpu(TreeCpu):
    """``TreeCpu`` of the task processes alone (this process's children): the drawing and the
    accounting, without this process's dispatching and polling, which grow with the run's length."""

    def processes(self, me: Any) -> list[Any]:
        return list(me.children(recursive=True))


def _statuses(services: Services, ids: list[str]) -> dict[str, str]:
    """The renders' statuses, read as cheaply as can be (polling costs this process CPU)."""
    with services.engine.connect() as conn:
        return dict(conn.execute(select(renders.c.id, renders.c.status).where(renders.c.id.in_(ids))).all())


def one_run(services: Services, recording: bool, story_ids: list[str], resolution: int,
            timed: Timed | None = None) -> dict[str, Any]:
    """The batch rendered once with accounting ``recording`` or not."""
    stories = {story.id: story for story in list_stories()}
    with transaction(services.engine) as conn:
        ws = ws_repo.create_workspace(conn, services.clock, name="bench", plan="pro", credits=10_000,
                                      brand_tokens=NEUTRAL_BRAND).id
        videos = []
        for story_id in story_ids:
            doc = stories[story_id].build({}, NEUTRAL_BRAND, "16:9")
            video, _ = videos_repo.create_video(
                conn, services.clock, workspace_id=ws, title=story_id, status="ready", default_format="16:9",
                first_version=videos_repo.NewVersion(source="doc", doc=doc, duration_sec=float(doc["duration"])))
            videos.append(video.id)
    accounting.RECORDING = recording
    services.farm.start()
    try:
        cpu, tasks_cpu = TreeCpu(), TaskCpu()
        load = os.getloadavg()[0]
        cpu_before, tasks_before, started = cpu.sample(), tasks_cpu.sample(), time.perf_counter()
        ids = [services.renders.request(ws, video, "16:9", resolution, None)["id"] for video in videos]
        statuses = _statuses(services, ids)
        while any(status not in ("succeeded", "failed", "canceled") for status in statuses.values()):
            time.sleep(0.25)
            cpu.sample()
            tasks_cpu.sample()
            statuses = _statuses(services, ids)
        wall = time.perf_counter() - started
        used, tasks_used = cpu.sample() - cpu_before, tasks_cpu.sample() - tasks_before
    finally:
        services.farm.stop(30)
        accounting.RECORDING = True
    if failed := [rid for rid, status in statuses.items() if status != "succeeded"]:
        raise SystemExit(f"render {failed[0]} did not succeed: {services.renders.get(ws, failed[0])['error']}")
    with services.engine.connect() as conn:
        tasks = conn.execute(select(func.count(), func.coalesce(func.sum(task_costs.c.wall_sec), 0.0),
                                    func.coalesce(func.sum(task_costs.c.cpu_sec), 0.0))
                             .where(task_costs.c.workspace_id == ws)).one()
        frames = sum(renders_repo.get_render(conn, ws, rid).frames or 0 for rid in ids)
    figures = {"recording": recording, "frames": frames, "wall_sec": round(wall, 3), "cpu_sec": round(used, 3),
               "frames_per_sec": round(frames / wall, 3), "cpu_ms_per_frame": round(used / frames * 1000, 3),
               "task_processes_cpu_sec": round(tasks_used, 3),
               "task_cpu_ms_per_frame": round(tasks_used / frames * 1000, 3),
               "task_costs_rows": tasks[0], "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}
    if timed is not None:
        taken = timed.taken()
        if recording:
            figures["accounting"] = {**taken, "tasks_wall_sec": round(tasks[1], 3), "tasks_cpu_sec": round(tasks[2], 3),
                                     "share_of_wall": round(taken["wall_sec"] / tasks[1], 5) if tasks[1] else None,
                                     "share_of_cpu": round(taken["cpu_sec"] / tasks[2], 5) if tasks[2] else None}
    return figures


def run(pairs: int, story_ids: list[str], resolution: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="reelfarm-accounting-") as data:
        services = Services.from_settings(settings(data))
        timed = Timed(Path(data) / "accounting-steps.txt")
        one_run(services, True, story_ids[:1], resolution, timed)  # warm: fonts, caches, the database file
        made = []
        for index in range(pairs):
            order = (True, False) if index % 2 == 0 else (False, True)
            runs = {recording: one_run(services, recording, story_ids, resolution, timed) for recording in order}
            on, off = runs[True], runs[False]
            pair = {"order": ["on" if r else "off" for r in order], "on": on, "off": off,
                    "throughput_ratio": round(on["frames_per_sec"] / off["frames_per_sec"], 4),
                    "cpu_ratio": round(on["cpu_ms_per_frame"] / off["cpu_ms_per_frame"], 4),
                    "task_cpu_ratio": round(on["task_cpu_ms_per_frame"] / off["task_cpu_ms_per_frame"], 4)}
            made.append(pair)
            print(f"pair {index + 1} ({' then '.join(pair['order'])}): on {on['frames_per_sec']:.1f} frames/s "
                  f"{on['cpu_ms_per_frame']:.1f} CPU ms/frame ({on['task_costs_rows']} rows); off "
                  f"{off['frames_per_sec']:.1f} frames/s {off['cpu_ms_per_frame']:.1f} CPU ms/frame "
                  f"({off['task_costs_rows']} rows); on/off throughput {pair['throughput_ratio']:.3f}, "
                  f"CPU {pair['cpu_ratio']:.3f} (task processes {pair['task_cpu_ratio']:.3f}); load {on['load_average']} {off['load_average']}; accounting's "
                  f"own steps {on['accounting']['share_of_wall']:.3%} of the tasks' wall time, "
                  f"{on['accounting']['share_of_cpu']:.3%} of their CPU", flush=True)
    return made


def summary(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    throughput = statistics.median(p["throughput_ratio"] for p in pairs)
    cpu = statistics.median(p["cpu_ratio"] for p in pairs)

    def pooled(mode: str, key: str, over: str) -> float:
        return sum(p[mode][key] for p in pairs) / sum(p[mode][over] for p in pairs)

    steps = [p["on"]["accounting"] for p in pairs]
    return {"throughput_ratio_median": throughput, "overhead": round(1 - throughput, 4),
            "accounting_share_of_wall": round(sum(s["wall_sec"] for s in steps) / sum(s["tasks_wall_sec"] for s in steps), 5),
            "accounting_share_of_cpu": round(sum(s["cpu_sec"] for s in steps) / sum(s["tasks_cpu_sec"] for s in steps), 5),
            "cpu_ratio_median": cpu, "cpu_overhead": round(cpu - 1, 4),
            "task_cpu_ratio_median": statistics.median(p["task_cpu_ratio"] for p in pairs),
            "task_cpu_ratios": sorted(p["task_cpu_ratio"] for p in pairs),
            "throughput_ratio_pooled": round(pooled("on", "frames", "wall_sec") / pooled("off", "frames", "wall_sec"), 4),
            "throughput_ratios": sorted(p["throughput_ratio"] for p in pairs),
            "cpu_ratios": sorted(p["cpu_ratio"] for p in pairs), "target_overhead": TARGET}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--resolution", type=int, default=720)
    parser.add_argument("--stories", default=STORIES, help=f"comma-separated story ids (default {STORIES})")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    pairs = run(max(1, args.pairs), args.stories.split(","), args.resolution)
    figures = {"benchmark": "accounting", "command": "python -m benchmarks." + " ".join(["accounting", *sys.argv[1:]]),
               "cores": os.cpu_count(), "resolution": args.resolution, "stories": args.stories.split(","),
               "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
               "task_priority": os.environ.get("REELFARM_TASK_PRIORITY", "idle (the default)"),
               "summary": summary(pairs), "pairs": pairs}
    print(json.dumps(figures["summary"]))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"accounting-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(figures, indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
