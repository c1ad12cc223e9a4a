"""Where a render node's time goes, measured on the same frames in one run.

    python -m benchmarks.pipeline                          # 1080p, 6 s of busy.json
    python -m benchmarks.pipeline --resolution 1080,2160 --seconds 6
    python -m benchmarks.pipeline --scaling                # also N = 1..cores chunk processes
    python -m benchmarks.pipeline --raster gl              # the whole-process run on GL

For each resolution, on frames drawn once by our rasterizer and held in memory:

- conversion: BGRA -> 4:2:0 BT.709 limited range per option (swscale interpolation, yuv420p or
  nv12, swscale threads), in ms per frame on one thread;
- x264 alone: `X264Encoder` fed ready yuv420p (the x264-alone-on-YUV limit);
- encode only: `X264Encoder` fed BGRA (conversion + x264: the encode-only limit);
- whole process: `reelfarm render` as a user runs it (a fresh interpreter, start-up included),
  next to the figure it prints itself (in-process);
- CPU: the cores each of the three kept busy (CPU seconds over wall seconds, children included)
  and its CPU milliseconds per frame, which bound what the whole process can reach on N cores;
- start-up to the first frame: `reelfarm still --resolution 360` from launch to exit (a fresh
  interpreter, the document checked, the rasterizer made, one small frame drawn and written),
  the median of five.

By default the in-memory runs hold every frame of the video, so all three encode the same frames.

`--scaling` renders the same video with 1, 2, .. N chunk processes (N up to the cores present)
as whole processes, so the speed-up per N on a 2-core and a 16-core machine comes from the same
script. Results go to benchmarks/results/pipeline-*.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from benchmarks.fps import DOC_PATH, FORMAT, FPS, ROOT, load_doc, scale_doc_time, write_bench_photo
from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.encode import X264Encoder, rgba_to_bt709
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec

CONVERSIONS = [  # (name, target, interpolation, threads)
    ("yuv420p bilinear (default), 1 thread", "yuv420p", None, 1),
    ("yuv420p area, 1 thread", "yuv420p", "AREA", 1),
    ("yuv420p fast_bilinear, 1 thread", "yuv420p", "FAST_BILINEAR", 1),
    ("yuv420p point, 1 thread", "yuv420p", "POINT", 1),
    ("nv12 bilinear, 1 thread", "nv12", None, 1),
    ("yuv420p bilinear, 2 threads", "yuv420p", None, 2),
]


def _convert(sws: VideoReformatter, frame: np.ndarray, target: str, interpolation: str | None,
             threads: int) -> av.VideoFrame:
    src = av.VideoFrame.from_numpy_buffer(frame, format="bgra")
    kw: dict[str, Any] = {"interpolation": interpolation} if interpolation else {}
    return sws.reformat(src, format=target, src_colorspace="ITU709", dst_colorspace="ITU709",
                        src_color_range="JPEG", dst_color_range="MPEG", threads=threads, **kw)


def measure_conversions(frames: list[np.ndarray]) -> dict[str, float]:
    out = {}
    for name, target, interpolation, threads in CONVERSIONS:
        sws = VideoReformatter()
        _convert(sws, frames[0], target, interpolation, threads)
        t0 = time.perf_counter()
        for f in frames:
            _convert(sws, f, target, interpolation, threads)
        out[name] = 1000 * (time.perf_counter() - t0) / len(frames)
    red = np.zeros((16, 16, 4), np.uint8)
    red[..., 2], red[..., 3] = 255, 255  # BGRA pure red
    out["pure red Y (default)"] = float(_convert(VideoReformatter(), red, "yuv420p", None, 1).to_ndarray()[0, 0])
    return out


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _encode(frames: list[np.ndarray], pixel_format: str, path: Path) -> dict[str, float]:
    h, w = (frames[0].shape[0] * 2 // 3, frames[0].shape[1]) if pixel_format == "yuv420p" else frames[0].shape[:2]
    enc = X264Encoder()
    t0, c0 = time.perf_counter(), _cpu_seconds()
    try:
        enc.start(str(path), w, h, FPS, pixel_format=pixel_format)
        for f in frames:
            enc.write(f)
    finally:
        enc.finish()
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    return {"fps": len(frames) / wall, "cores": cpu / wall, "cpu_ms_per_frame": 1000 * cpu / len(frames)}


def startup_to_first_frame(doc_file: Path, assets: Path, out: Path, runs: int = 5) -> float:
    """Median seconds of `reelfarm still --resolution 360`, launch to exit."""
    cmd = [sys.executable, "-m", "reelfarm.cli", "still", str(doc_file), "-o", str(out), "--assets", str(assets),
           "--resolution", "360"]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return sorted(times)[runs // 2]


def whole_process(doc_file: Path, assets: Path, resolution: int, out: Path, workers: int | None,
                  raster: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "reelfarm.cli", "render", str(doc_file), "-o", str(out), "--assets", str(assets),
           "--resolution", str(resolution), "--raster", raster]
    if workers:
        cmd += ["--workers", str(workers)]
    t0, c0 = time.perf_counter(), _cpu_seconds()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    line = done.stdout.strip().splitlines()[-1]
    frames = int(re.search(r"(\d+) frames,", line).group(1))
    inside = float(re.search(r"= ([\d.]+) frames/s", line).group(1))
    return {"fps": frames / wall, "seconds": wall, "in_process_fps": inside, "frames": frames, "line": line,
            "cores": cpu / wall, "cpu_ms_per_frame": 1000 * cpu / frames}


def run_resolution(doc: dict[str, Any], doc_file: Path, assets: Path, resolution: int, work: Path,
                   args: argparse.Namespace) -> dict[str, Any]:
    spec = RenderSpec(FORMAT, resolution, FPS)
    raster = SkiaRasterizer(parse_doc(doc), FORMAT, *spec.size, LocalAssets(str(assets)))
    n = min(parse_doc(doc).frame_count, args.frames or 10**9)
    frames = [raster.render(spec.time(i)).copy() for i in range(n)]
    print(f"== {spec.width}x{spec.height}: {n} frames held ==")
    res: dict[str, Any] = {"resolution": resolution, "frames": n, "conversion_ms": measure_conversions(frames)}
    sws = VideoReformatter()
    yuv = [rgba_to_bt709(sws, f, "yuv420p", src_format="bgra").to_ndarray() for f in frames]
    res["x264_alone"] = _encode(yuv, "yuv420p", work / "alone.mp4")
    res["encode_only"] = _encode(frames, "bgra", work / "encode.mp4")
    res["x264_alone_fps"], res["encode_only_fps"] = res["x264_alone"]["fps"], res["encode_only"]["fps"]
    del frames, yuv
    res["whole_process"] = whole_process(doc_file, assets, resolution, work / "whole.mp4", None, args.raster)
    w = res["whole_process"]["fps"]
    res["ratios"] = {"whole_process_over_encode_only": w / res["encode_only_fps"],
                     "whole_process_over_x264_alone": w / res["x264_alone_fps"]}
    if args.scaling:
        rows = [whole_process(doc_file, assets, resolution, work / "n.mp4", n_proc, args.raster)
                for n_proc in range(1, (os.cpu_count() or 1) + 1)]
        res["scaling"] = [{"processes": i + 1, "fps": r["fps"], "speedup": r["fps"] / rows[0]["fps"]}
                          for i, r in enumerate(rows)]
    return res


def print_result(res: dict[str, Any]) -> None:
    for name, ms in res["conversion_ms"].items():
        print(f"  conversion {name:42s} {ms:7.2f}" + ("" if "Y" in name else " ms/frame"))
    rows = (("x264 alone on yuv420p", res["x264_alone"]), ("encode only (convert + x264)", res["encode_only"]),
            ("whole process", res["whole_process"]))
    for name, row in rows:
        print(f"  {name:28s} {row['fps']:7.1f} frames/s, {row['cores']:.2f} cores, "
              f"{row['cpu_ms_per_frame']:.1f} CPU ms/frame")
    wp = res["whole_process"]
    print(f"  whole process: {wp['seconds']:.2f} s, in-process {wp['in_process_fps']:.1f} frames/s")
    print(f"  in-process / x264 alone {wp['in_process_fps'] / res['x264_alone_fps']:.2f}x")
    r = res["ratios"]
    print(f"  whole / encode-only {r['whole_process_over_encode_only']:.2f}x, "
          f"whole / x264 alone {r['whole_process_over_x264_alone']:.2f}x")
    for row in res.get("scaling", []):
        print(f"  {row['processes']:2d} processes: {row['fps']:7.1f} frames/s, speed-up {row['speedup']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.pipeline", description=__doc__.split("\n")[0])
    p.add_argument("--resolution", default="1080", help="short sides, comma separated (default 1080)")
    p.add_argument("--seconds", type=float, default=6.0, help="video length, at least 6 (default 6)")
    p.add_argument("--frames", type=int, default=0, help="frames held for the in-memory runs (default: all)")
    p.add_argument("--raster", choices=("auto", "cpu", "gl"), default="cpu")
    p.add_argument("--scaling", action="store_true", help="also 1..cores chunk processes")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="reelfarm-pipeline-"))
    assets = work / "assets"
    write_bench_photo(assets)
    doc = scale_doc_time(load_doc(), args.seconds)
    doc_file = work / "doc.json"
    doc_file.write_text(json.dumps(doc))
    startup = startup_to_first_frame(doc_file, assets, work / "first.png")
    print(f"start-up to the first frame (reelfarm still, 360p, median of 5): {startup:.3f} s")
    results = []
    for resolution in (int(r) for r in args.resolution.split(",")):
        res = run_resolution(doc, doc_file, assets, resolution, work, args)
        print_result(res)
        results.append(res)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"pipeline-{dt.datetime.now():%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({"benchmark": "pipeline", "doc": str(DOC_PATH.relative_to(ROOT)),
                               "cores": os.cpu_count(), "raster": args.raster, "seconds": args.seconds,
                               "startup_to_first_frame_s": startup, "results": results}, indent=2))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
