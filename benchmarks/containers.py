"""GIF and WebM against MP4: render time of one video in each container, and GIF sizes per story.

    python -m benchmarks.containers                           # 12 s at 720p, three rounds; GIFs at 480 px
    python -m benchmarks.containers --rounds 1 --no-sizes     # the times only, once
    python -m benchmarks.containers --story flash_sale --seconds 6

**Times.** One story's video (``--story``, default ``announcement``, 16:9, ``--seconds`` long) is
rendered at ``--height`` (720) by ``reelfarm.renderer.render.render_video`` on two worker processes,
as the embedded farm renders it: an MP4 (H.264, its own 30 fps), a GIF (the API's cap: 24 fps, one
palette for the whole file, no sound), a WebM (VP9 and Opus, 30 fps) and a transparent WebM (VP9
with alpha). Each round renders the four in a rotated order, so a slow moment of the machine falls
on each in turn; the figure per container is the median wall time over the MP4's median, and its
file size. Stories have a background, so the transparent WebM is what the alpha plane costs.

**Sizes.** Every built-in story at its samples, square (1:1, where a GIF is most often shown), as a GIF at 480 px on the
short side and 24 fps (``RenderSpec`` takes any size; the API's GIFs are 720 at most): its bytes,
seconds and kilobytes a second. ``--no-sizes`` skips them.

Results go to benchmarks/results/containers-<time>.json, with the command that made them, the load
average before and after, and the cores other processes took while it ran (``CpuWitness``).
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

from benchmarks.probes import CpuWitness
from reelfarm.renderer.render import render_video
from reelfarm.renderer.spec import RenderSpec
from reelfarm.studio.stories import NEUTRAL_BRAND, list_stories

RESULTS = Path(__file__).resolve().parent / "results"
GIF_FPS = 24  # the API's GIF cap (reelfarm.renderer.spec.clamp_for_container)
KINDS: tuple[tuple[str, str, bool, int | None], ...] = (  # name, container, transparent, fps (None: the video's)
    ("mp4", "mp4", False, None), ("gif", "gif", False, GIF_FPS), ("webm", "webm", False, None),
    ("webm-alpha", "webm", True, None))


def story_doc(story_id: str, fmt: str | None = None, seconds: float | None = None) -> dict[str, Any]:
    story = {s.id: s for s in list_stories()}[story_id]
    return story.build({}, NEUTRAL_BRAND, fmt or "1:1", duration_sec=seconds)


def timed(doc: dict[str, Any], folder: str, name: str, container: str, transparent: bool, fps: int | None,
          height: int) -> dict[str, Any]:
    spec = RenderSpec(doc["format"], height, fps or doc["fps"])
    out = os.path.join(folder, f"{name}.{container}")
    began = time.perf_counter()
    stats = render_video(doc, out, spec, workers=2, container=container, transparent=transparent)
    wall = time.perf_counter() - began
    size = os.path.getsize(out)
    os.unlink(out)
    return {"kind": name, "seconds": wall, "frames": stats.frames, "bytes": size, "fps": spec.fps,
            "width": stats.width, "height": stats.height}


def times(story_id: str, seconds: float, height: int, rounds: int, folder: str) -> dict[str, Any]:
    doc = story_doc(story_id, "16:9", seconds)
    runs: list[dict[str, Any]] = []
    for r in range(rounds):
        order = KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]
        for name, container, transparent, fps in order:
            run = timed(doc, folder, name, container, transparent, fps, height)
            run["round"] = r
            runs.append(run)
            print(f"  round {r + 1}: {name:10s} {run['seconds']:6.2f} s  {run['frames']} frames  "
                  f"{run['bytes'] / 1e6:6.2f} MB", flush=True)
    median = {name: statistics.median(x["seconds"] for x in runs if x["kind"] == name) for name, *_ in KINDS}
    return {"story": story_id, "seconds_of_video": seconds, "height": height, "runs": runs,
            "median_sec": median, "against_mp4": {k: v / median["mp4"] for k, v in median.items()}}


def gif_sizes(height: int, folder: str) -> list[dict[str, Any]]:
    found = []
    for story in list_stories():
        doc = story_doc(story.id)
        run = timed(doc, folder, f"{story.id}-gif", "gif", False, GIF_FPS, height)
        run.update(story=story.id, format=doc["format"], duration_sec=doc["duration"],
                   kb_per_sec=run["bytes"] / 1000 / doc["duration"])
        found.append(run)
        print(f"  {story.id:18s} {doc['format']:5s} {doc['duration']:5.1f} s  {run['bytes'] / 1e6:6.2f} MB  "
              f"{run['kb_per_sec']:7.1f} kB/s  ({run['width']}x{run['height']})", flush=True)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--story", default="announcement")
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gif-height", type=int, default=480)
    parser.add_argument("--no-sizes", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with CpuWitness() as witness, tempfile.TemporaryDirectory(prefix="reelfarm-containers-") as folder:
        print(f"times: {args.story}, {args.seconds:g} s at {args.height}p, {args.rounds} round(s)")
        timing = times(args.story, args.seconds, args.height, args.rounds, folder)
        for name, ratio in timing["against_mp4"].items():
            print(f"  {name:10s} median {timing['median_sec'][name]:6.2f} s  = {ratio:.2f}x the MP4's time")
        sizes: list[dict[str, Any]] = []
        if not args.no_sizes:
            print(f"GIF sizes at {args.gif_height} px, {GIF_FPS} fps")
            sizes = gif_sizes(args.gif_height, folder)
    result = {"command": " ".join(["python -m benchmarks.containers", *(argv if argv is not None else sys.argv[1:])]),
              "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "cores": os.cpu_count(),
              "load_before": load_before, "load_after": os.getloadavg(), "others_cores": witness.other_cores,
              "times": timing, "gif_sizes": sizes}
    out = args.out or RESULTS / f"containers-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
