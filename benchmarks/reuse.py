"""Re-rendering an edited video: how much of the second render's time segment reuse saves.

    python -m benchmarks.reuse [--seconds 60] [--resolution 1080] [--scenes 6]

A video of six scenes (60 s at 1080p by default, crossfades between them) is rendered once on the
embedded farm (this machine's cores, the service's own code: `RenderService`, its queue, its
tasks); then one text in scene 4 is changed and the new version rendered. The second render
redraws scene 4's chunks and scene 5's crossfade in (the 0.5 s chunk that blends from scene 4)
and copies the rest. Printed: both wall times, their ratio (measured in the same run), the CPU
seconds each took (this process and the render pool; less moved by other load than wall time),
the load average around them and the frames reused.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from reelfarm.api.services import Services
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo


def six_scene_doc(seconds: float, scenes: int) -> dict[str, Any]:
    each = seconds / scenes
    made = []
    for i in range(scenes):
        made.append({
            "id": f"s{i}", "duration": each,
            "background": {"type": "linear", "colors": ["#0B1020", "#1E293B" if i % 2 else "#312E81"], "angle": 30},
            "transition": {"type": "crossfade", "duration": 0.5} if i else {"type": "cut"},
            "layers": [
                {"id": "title", "type": "text", "text": f"Scene {i + 1}: the spring line", "size": 0.08,
                 "x": 0.5, "y": 0.35, "w": 0.8, "font": {"family": "Inter", "weight": 700},
                 "enter": {"preset": "slide", "duration": 0.6}},
                {"id": "sub", "type": "text", "text": "Everything 20% off this week", "size": 0.045,
                 "x": 0.5, "y": 0.55, "w": 0.8, "enter": {"preset": "fade", "duration": 0.6}},
                {"id": "bar", "type": "shape", "shape": "rounded_rect", "x": 0.5, "y": 0.75, "w": 0.3, "h": 0.06,
                 "radius": 0.02, "fill": "#F59E0B",
                 "keyframes": {"x": [{"t": 0, "v": 0.3}, {"t": each, "v": 0.7}]}},
            ],
        })
    return {"version": 1, "fps": 30, "duration": seconds, "format": "16:9", "brand": NEUTRAL_BRAND, "scenes": made}


class TreeCpu:
    """CPU seconds (user + system) used by this process and its descendants (the embedded farm's
    render pool), sampled while polling so a process that exits meanwhile still counts. A figure
    that other load on the machine changes far less than wall time does."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, float], float] = {}  # (pid, create time) -> CPU seconds

    def processes(self, me: Any) -> list[Any]:
        """The processes counted (psutil's): this one and its descendants."""
        return [me, *me.children(recursive=True)]

    def sample(self) -> float:
        try:
            import psutil
        except ImportError:
            return float("nan")
        for proc in self.processes(psutil.Process()):
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    self.seen[(proc.pid, proc.create_time())] = times.user + times.system
            except psutil.Error:
                continue
        return sum(self.seen.values())


def timed_render(services: Services, workspace: str, video: str, resolution: int,
                 cpu: TreeCpu) -> tuple[float, float, dict[str, Any]]:
    """Wall time and CPU seconds of one render, from the request to its success."""
    cpu_before = cpu.sample()
    started = time.perf_counter()
    render = services.renders.request(workspace, video, "16:9", resolution, 30)
    while render["status"] not in ("succeeded", "failed", "canceled"):
        time.sleep(0.25)
        cpu.sample()
        render = services.renders.get(workspace, render["id"])
    if render["status"] != "succeeded":
        raise SystemExit(f"render {render['id']} {render['status']}: {render['error']}")
    return time.perf_counter() - started, cpu.sample() - cpu_before, render


def one_pair(services: Services, doc: dict[str, Any], seconds: float, resolution: int) -> dict[str, Any]:
    """Version 1 of a new video in a new workspace (nothing to reuse), then version 2 with one text
    in scene 4 changed; both wall times, the load average around them, the frames reused."""
    load_before = os.getloadavg()[0]
    cpu = TreeCpu()
    with transaction(services.engine) as conn:
        ws = ws_repo.create_workspace(conn, services.clock, name="bench", plan="pro", credits=100,
                                      brand_tokens=NEUTRAL_BRAND).id
        video, _ = videos_repo.create_video(
            conn, services.clock, workspace_id=ws, title="reuse", status="ready", default_format="16:9",
            first_version=videos_repo.NewVersion(source="doc", doc=doc, duration_sec=seconds))
    first, first_cpu, _ = timed_render(services, ws, video.id, resolution, cpu)
    edited = copy.deepcopy(doc)
    edited["scenes"][3]["layers"][0]["text"] = "Scene 4: now 50% off"
    with transaction(services.engine) as conn:
        videos_repo.append_version(conn, services.clock, workspace_id=ws, video_id=video.id,
                                   version=videos_repo.NewVersion(source="doc", doc=edited, duration_sec=seconds))
    second, second_cpu, render = timed_render(services, ws, video.id, resolution, cpu)
    return {"first_render_s": round(first, 2), "second_render_s": round(second, 2),
            "second_over_first": round(second / first, 3), "reused_frames": render["reused_frames"],
            "first_cpu_s": round(first_cpu, 2), "second_cpu_s": round(second_cpu, 2),
            "cpu_second_over_first": round(second_cpu / first_cpu, 3),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--resolution", type=int, default=1080)
    parser.add_argument("--scenes", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=1,
                        help="pairs of renders (each in a new workspace); the median ratio is the figure")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    doc = six_scene_doc(args.seconds, args.scenes)
    with tempfile.TemporaryDirectory(prefix="reelfarm-reuse-") as data:
        services = Services.from_settings(Settings.from_env({"REELFARM_DATA_DIR": data}))
        services.farm.start()
        try:
            pairs = [one_pair(services, doc, args.seconds, args.resolution) for _ in range(max(1, args.repeat))]
        finally:
            services.farm.stop(30)
    frames = round(args.seconds * 30)
    ratio = statistics.median(p["second_over_first"] for p in pairs)
    cpu_ratio = statistics.median(p["cpu_second_over_first"] for p in pairs)
    figures = {"seconds": args.seconds, "resolution": args.resolution, "scenes": args.scenes, "frames": frames,
               "second_over_first": ratio, "cpu_second_over_first": cpu_ratio, "pairs": pairs}
    print(f"{args.seconds:g} s at {args.resolution}p, {args.scenes} scenes ({frames} frames)")
    for pair in pairs:
        print(f"  version 1: {pair['first_render_s']:.1f} s; version 2 (one text in scene 4 changed): "
              f"{pair['second_render_s']:.1f} s; second / first = {pair['second_over_first']:.2f} "
              f"(CPU {pair['first_cpu_s']:.0f} s, {pair['second_cpu_s']:.0f} s: {pair['cpu_second_over_first']:.2f}); "
              f"reused {pair['reused_frames']} of {frames} frames; load average {pair['load_average']}")
    print(f"  second / first (median of {len(pairs)}) = {ratio:.2f} in wall time, {cpu_ratio:.2f} in CPU time")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
