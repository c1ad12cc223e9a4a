"""CPU milliseconds per frame of drawing plus colour conversion, the part of a render that is not x264.

    python -m benchmarks.drawing                          # 1080p: the test scene, the 60 s six scenes, every story
    python -m benchmarks.drawing --resolution 360 --only busy,six_scenes
    python -m benchmarks.drawing --modes encoder          # only the render path (works on older trees too)
    python -m benchmarks.drawing --check-order 16:9,1:1   # no figures: every frame drawn in order equals it drawn first

Each video is drawn frame after frame in this process exactly as a chunk process draws it for its
encoder: the rasterizer `RasterChoice("cpu").make(doc, spec, assets, yuv=True)` makes, and, where
it hands out BGRA (a tree before yuv420p came out of the CPU rasterizer), swscale's BT.709
conversion of every frame as `X264Encoder.write` did it. Mode `encoder` is that path; mode `whole`
is the same rasterizer with `reuse=False`: every frame drawn and converted whole, the old way.
The figure is CPU time (`time.process_time`, this process only: the conversion runs on one
swscale thread here) over frames, so other load on the machine changes it far less than wall time.

The videos: `busy` is benchmarks/docs/busy.json stretched to 10 s (the test scene of
`benchmarks.fps` and `benchmarks.pipeline`), `six_scenes` is `benchmarks.reuse.six_scene_doc`
(60 s, six scenes with crossfades: the video `benchmarks.watch` renders), and each built-in story
at 16:9 with the neutral brand and its default fields. Results go to benchmarks/results/drawing-*.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.fps import FORMAT, load_doc, scale_doc_time, write_bench_photo


def videos(assets: Path) -> dict[str, dict[str, Any]]:
    from benchmarks.reuse import six_scene_doc
    from reelfarm.renderer.tokens import NEUTRAL_BRAND
    from reelfarm.studio.stories import list_stories

    write_bench_photo(assets)
    out = {"busy": scale_doc_time(load_doc(), 10.0), "six_scenes": six_scene_doc(60.0, 6)}
    for story in list_stories():
        out[f"story:{story.id}"] = story.build({}, NEUTRAL_BRAND, FORMAT, None)
    return out


def measure(doc: dict[str, Any], resolution: int, assets: Path, mode: str) -> dict[str, Any]:
    from av.video.reformatter import VideoReformatter

    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.backends import RasterChoice
    from reelfarm.renderer.encode import rgba_to_bt709
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.raster import SkiaRasterizer
    from reelfarm.renderer.spec import RenderSpec

    parsed = parse_doc(doc)
    spec = RenderSpec(FORMAT, resolution, parsed.fps)
    source = LocalAssets(str(assets))
    c0, t0 = time.process_time(), time.perf_counter()
    if mode == "whole":
        raster: Any = SkiaRasterizer(parsed, spec.format, *spec.size, source, yuv=True, reuse=False)
    else:
        raster = RasterChoice("cpu").make(parsed, spec, source, yuv=True)
    sws = VideoReformatter()
    setup = time.process_time() - c0
    c0 = time.process_time()
    n = parsed.frame_count
    for i in range(n):
        frame = raster.render(spec.time(i))
        if raster.pixel_format != "yuv420p":
            rgba_to_bt709(sws, frame, "yuv420p", src_format=raster.pixel_format)
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    row = {"frames": n, "cpu_ms_per_frame": 1000 * cpu / n, "setup_cpu_ms": 1000 * setup, "wall_s": wall}
    drawn = getattr(raster, "drawn_pixels", None)
    if drawn is not None:
        row["drawn_fraction"] = drawn / (n * spec.width * spec.height)
    planes = getattr(raster, "_planes", None)
    if planes is not None:
        row["converted_fraction"] = planes.converted_pixels / (n * spec.width * spec.height)
    return row


def check_order(doc: dict[str, Any], resolution: int, assets: Path, fmt: str = FORMAT) -> list[tuple[int, int]]:
    """The frames that, drawn in order as a chunk draws them, differ from the same frame drawn
    first (by a rasterizer closed before it: nothing kept), each with its largest difference in
    levels. What chunk seams rely on is that there are none."""
    import numpy as np

    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.backends import RasterChoice
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.spec import RenderSpec

    parsed = parse_doc(doc)
    spec = RenderSpec(fmt, resolution, parsed.fps)
    in_order = RasterChoice("cpu").make(parsed, spec, LocalAssets(str(assets)), yuv=True)
    first = RasterChoice("cpu").make(parsed, spec, LocalAssets(str(assets)), yuv=True)
    differing = []
    for n in range(parsed.frame_count):
        frame = in_order.render(spec.time(n))
        first.close()
        alone = first.render(spec.time(n))
        if not np.array_equal(frame, alone):
            differing.append((n, int(np.abs(frame.astype(np.int16) - alone).max())))
    return differing


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.drawing", description=__doc__.split("\n")[0])
    p.add_argument("--resolution", type=int, default=1080)
    p.add_argument("--modes", default="whole,encoder", help="whole, encoder (comma separated)")
    p.add_argument("--only", default="", help="video names, comma separated (default: all)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--check-order", metavar="FORMATS", default="",
                   help="measure nothing: check that every frame drawn in order equals it drawn first, "
                        "in these formats (comma separated); exit 1 where one differs")
    args = p.parse_args(argv)
    from reelfarm.renderer.raster import SkiaRasterizer

    modes = args.modes.split(",")
    if "reuse" not in inspect.signature(SkiaRasterizer).parameters:
        modes = [m for m in modes if m != "whole"]  # a tree from before reuse=False
    assets = Path(tempfile.mkdtemp(prefix="reelfarm-drawing-"))
    docs = videos(assets)
    if args.only:
        docs = {k: v for k, v in docs.items() if k in args.only.split(",") or k.split(":")[-1] in args.only.split(",")}
    if args.check_order:
        from reelfarm.renderer.tokens import NEUTRAL_BRAND
        from reelfarm.studio.stories import list_stories

        stories = {f"story:{s.id}": s for s in list_stories()}
        bad = 0
        for name, doc in docs.items():
            for fmt in args.check_order.split(","):
                source = stories[name].build({}, NEUTRAL_BRAND, fmt, None) if name in stories else doc
                differing = check_order(source, args.resolution, assets, fmt)
                bad += len(differing)
                print(f"  {name:28s} {fmt:5s} {'every frame the same' if not differing else differing}", flush=True)
        return 1 if bad else 0
    load = os.getloadavg()
    print(f"{args.resolution}p, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    results: dict[str, dict[str, Any]] = {}
    for name, doc in docs.items():
        results[name] = {}
        for mode in modes:
            row = results[name][mode] = measure(doc, args.resolution, assets, mode)
            extra = "".join(f", {k} {row[k]:.2f}" for k in ("drawn_fraction", "converted_fraction") if k in row)
            print(f"  {name:28s} {mode:8s} {row['frames']:5d} frames {row['cpu_ms_per_frame']:6.2f} CPU ms/frame{extra}",
                  flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"drawing-{args.resolution}p-{dt.datetime.now():%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"benchmark": "drawing", "resolution": args.resolution, "modes": modes,
                               "load_average_start": load, "load_average_end": os.getloadavg(),
                               "cores": os.cpu_count(), "results": results}, indent=2))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
