"""Frames per second of our renderer beside two peers, on the busy reference VideoDoc.

    python -m benchmarks.fps                       # 1080p, 10 s
    python -m benchmarks.fps --resolution 720,1080,2160 --seconds 10
    python -m benchmarks.fps --skip-peers

See benchmarks/README.md for what each figure means.
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from benchmarks import peers
from benchmarks.probes import CpuWitness, TreeMemory

ROOT = Path(__file__).resolve().parents[1]
DOC_PATH = Path(__file__).resolve().parent / "docs" / "busy.json"
SCHEMA_PATH = ROOT / "renderer" / "videodoc.schema.json"
FORMAT = "16:9"
FPS = 30
WORKERS = 2
PHOTO_KEY = "bench/photo.png"
FULL_ENCODE_MAX_RES = 1080     # above this, the encode-only runs use a prefix of the frames
BIG_ENCODE_FRAMES = 60         # 60 x 33 MB = 2 GB of RGBA at 2160p


# ----------------------------------------------------------------------------- inputs


def load_doc(path: Path = DOC_PATH) -> dict[str, Any]:
    """Load the reference doc and check it against the VideoDoc schema."""
    import jsonschema

    doc = json.loads(path.read_text())
    schema = json.loads(SCHEMA_PATH.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    if errors:
        lines = [f"  /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:20]]
        raise SystemExit(f"{path} is not a valid VideoDoc:\n" + "\n".join(lines))
    total = sum(s["duration"] for s in doc["scenes"])
    if abs(total - doc["duration"]) > 1e-6:
        raise SystemExit(f"{path}: duration {doc['duration']} != sum of scenes {total}")
    return doc


def scale_doc_time(doc: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The doc with every time stretched so it lasts `seconds` (keeps both scenes and the fade)."""
    f = seconds / float(doc["duration"])
    if abs(f - 1.0) < 1e-9:
        return copy.deepcopy(doc)
    d = copy.deepcopy(doc)
    d["duration"] = seconds
    for scene in d["scenes"]:
        scene["duration"] *= f
        if "transition" in scene and "duration" in scene["transition"]:
            scene["transition"]["duration"] = min(5.0, scene["transition"]["duration"] * f)
        for layer in _walk_layers(scene["layers"]):
            for key in ("start", "end"):
                if key in layer:
                    layer[key] *= f
            for track in layer.get("keyframes", {}).values():
                for k in track:
                    k["t"] *= f
            for key in ("enter", "exit"):
                if key in layer:
                    m = layer[key]
                    m["duration"] = min(10.0, m.get("duration", 0.6) * f)
                    if "delay" in m:
                        m["delay"] *= f
    return d


def _walk_layers(layers: list[dict[str, Any]]):
    for layer in layers:
        yield layer
        yield from _walk_layers(layer.get("children", []))


def write_bench_photo(assets_dir: Path) -> Path:
    """Write the deterministic 1024x683 test photo under assets_dir/bench/photo.png."""
    from PIL import Image

    w, h = 1024, 683
    rng = np.random.default_rng(20240611)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    # A smooth "scene": diagonal colour ramps and soft blobs, then low- and high-frequency noise
    # so x264 sees photo-like texture rather than flat colour.
    r = 90 + 120 * xx / w + 30 * np.sin(yy / 47.0)
    g = 60 + 140 * yy / h + 25 * np.cos(xx / 61.0)
    b = 170 - 90 * xx / w + 40 * np.sin((xx + yy) / 83.0)
    img = np.stack([r, g, b], axis=-1)
    for _ in range(12):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rad = rng.uniform(40, 160)
        col = rng.uniform(-80, 80, size=3)
        img += col * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * rad * rad))[..., None]
    coarse = rng.normal(0, 14, size=(h // 32 + 1, w // 32 + 1, 3)).astype(np.float32)
    coarse = np.asarray(Image.fromarray(np.clip(coarse + 128, 0, 255).astype(np.uint8))
                        .resize((w, h), Image.Resampling.BICUBIC), dtype=np.float32) - 128
    img += coarse + rng.normal(0, 6, size=(h, w, 3))
    out = assets_dir / PHOTO_KEY
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(out, optimize=False)
    return out


# ----------------------------------------------------------------------------- our renderer


def import_ours() -> tuple[Any, str | None]:
    """Our renderer's names the benchmark uses, each from its module, else (None, reason)."""
    try:
        from reelfarm.renderer.assets import LocalAssets
        from reelfarm.renderer.encode import X264Encoder
        from reelfarm.renderer.model import parse_doc
        from reelfarm.renderer.raster import SkiaRasterizer
        from reelfarm.renderer.render import render_video
        from reelfarm.renderer.spec import RenderSpec, frame_size
    except Exception as e:  # noqa: BLE001 - ImportError, or skia failing to load libGL, ...: reported with its type
        return None, f"import renderer failed: {type(e).__name__}: {e}"
    return SimpleNamespace(parse_doc=parse_doc, SkiaRasterizer=SkiaRasterizer, X264Encoder=X264Encoder,
                           render_video=render_video, frame_size=frame_size, LocalAssets=LocalAssets,
                           RenderSpec=RenderSpec), None


def _start_encoder(enc: Any, out_path: Path, width: int, height: int, fps: int) -> None:
    """Call enc.start() with whatever names its signature uses for path, size and rate."""
    import inspect

    out = str(out_path)

    aliases = {
        "path": out, "out_path": out, "output": out, "out": out,
        "dest": out, "filename": out, "file": out, "target": out,
        "width": width, "w": width, "height": height, "h": height,
        "fps": fps, "rate": fps, "frame_rate": fps,
        "size": (width, height),
    }
    try:
        params = inspect.signature(enc.start).parameters
    except (TypeError, ValueError):
        params = {}
    names = [p for p in params if p != "self"]
    if names and all(n in aliases or params[n].default is not inspect.Parameter.empty
                     for n in names):
        enc.start(**{n: aliases[n] for n in names if n in aliases})
    else:
        enc.start(out, width, height, fps)


def measure_ours_render(ours: Any, doc: dict[str, Any], assets_dir: Path, resolution: int,
                        n_frames: int, keep: int) -> tuple[dict[str, Any], list[np.ndarray]]:
    """Time r.render(t) for every frame; copy the first `keep` frames out of the timed span."""
    d = ours.parse_doc(doc)
    w, h = ours.frame_size(FORMAT, resolution)
    assets = ours.LocalAssets(str(assets_dir))
    t0 = time.perf_counter()
    r = ours.SkiaRasterizer(d, FORMAT, w, h, assets)
    setup = time.perf_counter() - t0
    kept: list[np.ndarray] = []
    busy = 0.0
    for i in range(n_frames):
        t1 = time.perf_counter()
        frame = r.render(i / FPS)
        busy += time.perf_counter() - t1
        if i < keep:
            kept.append(np.array(frame, copy=True))
    return {"fps": n_frames / busy, "seconds": busy, "frames": n_frames,
            "setup_seconds": setup, "width": w, "height": h}, kept


def measure_ours_encode(ours: Any, frames: list[np.ndarray], out_path: Path) -> dict[str, Any]:
    h, w = frames[0].shape[:2]
    enc = ours.X264Encoder(crf=peers.CRF, preset=peers.PRESET)
    t0 = time.perf_counter()
    try:
        _start_encoder(enc, out_path, w, h, FPS)
        for f in frames:
            enc.write(f)
    finally:
        enc.finish()
    seconds = time.perf_counter() - t0
    return {"fps": len(frames) / seconds, "seconds": seconds, "frames": len(frames),
            "bytes": out_path.stat().st_size if out_path.exists() else None}


# The end-to-end render runs in a fresh child process so that its peak memory is its own (not
# the frames this process holds for the encode-only runs).

def _e2e_child(spec_path: str, started: float) -> None:
    spec = json.loads(Path(spec_path).read_text())
    ours, why = import_ours()
    if ours is None:
        raise SystemExit(why)
    doc = ours.parse_doc(json.loads(Path(spec["doc"]).read_text()))
    assets = ours.LocalAssets(spec["assets_dir"])
    # Linux carries ru_maxrss across exec: a child forked from a big parent starts "big".
    ru_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    startup = time.time() - started  # interpreter, imports, document: what the user waits for first
    t0 = time.perf_counter()
    stats = ours.render_video(doc, spec["out"], ours.RenderSpec(FORMAT, spec["resolution"], FPS),
                              workers=WORKERS, assets=assets, raster=spec.get("raster", "cpu"))
    wall = time.perf_counter() - t0
    ru_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    Path(spec["result"]).write_text(json.dumps({
        "wall_seconds": wall,
        "startup_seconds": startup,
        # RenderStats.fps is the video's frame rate; its throughput is frames_per_second.
        "reported": {k: getattr(stats, k, None)
                     for k in ("fps", "frames_per_second", "seconds", "frames")},
        "maxrss_self_bytes": ru_self if ru_self > ru_start else None,
        "maxrss_self_inherited_bytes": ru_start,
        "maxrss_largest_child_bytes": ru_kids,
    }))


def measure_ours_e2e(doc_file: Path, assets_dir: Path, resolution: int, out_path: Path,
                     work: Path, raster: str = "cpu") -> dict[str, Any]:
    spec = {"doc": str(doc_file), "assets_dir": str(assets_dir), "resolution": resolution,
            "out": str(out_path), "result": str(work / f"e2e-{resolution}.json"), "raster": raster}
    spec_path = work / f"e2e-{resolution}-spec.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.fps", "--e2e-child", str(spec_path),
                             "--e2e-started", repr(time.time())],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with TreeMemory(proc.pid) as mem:
        output, _ = proc.communicate()
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"end-to-end child exited {proc.returncode}:\n"
                           + output.decode(errors="replace")[-3000:])
    res = json.loads(Path(spec["result"]).read_text())
    frames = res["reported"]["frames"] or peers.count_frames(out_path)
    counted = peers.count_frames(out_path)
    return {
        "fps": frames / res["wall_seconds"],
        "seconds": res["wall_seconds"],
        # The whole process, start-up and exit included, as a user running it sees it.
        "whole_process_fps": frames / total,
        "whole_process_seconds": total,
        "startup_seconds": res["startup_seconds"],
        "raster": raster,
        "frames": frames,
        "frames_in_file": counted,
        "reported_by_render_video": res["reported"],
        "child_process_seconds": total,
        "bytes": out_path.stat().st_size if out_path.exists() else None,
        "peak_rss_tree_bytes": mem.peak_rss,
        "peak_pss_tree_bytes": mem.peak_pss or None,
        "peak_processes": mem.peak_procs,
        "memory_sampler": (f"process tree via {mem.source}; RSS every {mem.interval * 1000:.0f} ms, "
                           f"PSS every {mem.interval * mem.pss_every * 1000:.0f} ms"),
        "maxrss_self_bytes": res["maxrss_self_bytes"],
        "maxrss_self_inherited_bytes": res["maxrss_self_inherited_bytes"],
        "maxrss_largest_child_bytes": res["maxrss_largest_child_bytes"],
    }


# ----------------------------------------------------------------------------- one resolution


OTHER_LOAD_WARN = 0.15


def _guard(results: dict[str, Any], key: str, fn, *args, **kwargs) -> Any:
    try:
        with CpuWitness() as cpu:
            value = fn(*args, **kwargs)
        results[key] = value
        if isinstance(value, tuple):
            value[0]["other_cores"] = cpu.other_cores
        elif isinstance(value, dict):
            value["other_cores"] = cpu.other_cores
        if cpu.other_cores is not None and cpu.other_cores > OTHER_LOAD_WARN:
            msg = (f"{key}: other processes used {cpu.other_cores:.2f} cores meanwhile; "
                   "this figure is too low")
            results.setdefault("notes", []).append(msg)
            print(f"  ! {msg}", file=sys.stderr)
        return value
    except Exception as e:  # noqa: BLE001 - a failed measurement is recorded with its traceback; the others go on
        results[key] = {"error": f"{type(e).__name__}: {e}",
                        "traceback": traceback.format_exc(limit=6)}
        print(f"  ! {key} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def run_resolution(doc: dict[str, Any], doc_file: Path, assets_dir: Path, resolution: int,
                   args: argparse.Namespace, ours: Any, ours_why: str | None,
                   work: Path) -> dict[str, Any]:
    w, h = peers.frame_size(FORMAT, resolution)
    n_frames = round(doc["duration"] * FPS)
    keep = n_frames if resolution <= FULL_ENCODE_MAX_RES else min(n_frames, BIG_ENCODE_FRAMES)
    if args.encode_frames:
        keep = min(n_frames, args.encode_frames)
    res: dict[str, Any] = {"resolution": resolution, "width": w, "height": h, "fps_target": FPS,
                           "frames": n_frames, "encode_only_frames": keep, "notes": []}
    if keep < n_frames:
        res["notes"].append(f"encode-only figures use the first {keep} of {n_frames} frames "
                            f"({keep * w * h * 4 / 2**30:.1f} GiB of RGBA held in memory)")
    print(f"\n== {w}x{h} ({resolution}p), {n_frames} frames at {FPS} fps ==")

    frames: list[np.ndarray] | None = None
    if ours is not None:
        print("  ours: render only ...")
        got = _guard(res, "ours_render", measure_ours_render, ours, doc, assets_dir, resolution,
                     n_frames, keep)
        if got is not None:
            res["ours_render"], frames = got
            got = None
            if (res["ours_render"]["width"], res["ours_render"]["height"]) != (w, h):
                res["notes"].append(f"renderer.frame_size gave {res['ours_render']['width']}x"
                                    f"{res['ours_render']['height']}, peers use {w}x{h}")
                w, h = res["ours_render"]["width"], res["ours_render"]["height"]
            res["frames_source"] = "our SkiaRasterizer"
    else:
        res["ours_unavailable"] = ours_why

    if not frames and (ours is not None or not args.skip_peers):
        print(f"  stand-in frames (MoviePy composition, {keep} frames) ...")
        t0 = time.perf_counter()
        frames = list(peers.moviepy_frames(doc, w, h, FPS, assets_dir, count=keep))
        res["frames_source"] = "STAND-IN: MoviePy composition of busy.json (not our renderer)"
        res["notes"].append(f"encode-only frames are a stand-in drawn by MoviePy "
                            f"({time.perf_counter() - t0:.1f} s to draw)")
    if ours is not None and frames:
        print("  ours: encode only ...")
        _guard(res, "ours_encode", measure_ours_encode, ours, frames,
               work / f"ours-enc-{resolution}.mp4")
    if not args.skip_peers and frames:
        print("  peer: ffmpeg x264 encode-only limit ...")
        _guard(res, "ffmpeg_encode_only", peers.ffmpeg_x264_encode_only, frames, w, h, FPS,
               work / f"ffmpeg-{resolution}.mp4")
    frames = None  # free the frames before the end-to-end run and MoviePy

    if ours is not None:
        print(f"  ours: end to end (render_video, workers={WORKERS}, separate process) ...")
        _guard(res, "ours_e2e", measure_ours_e2e, doc_file, assets_dir, resolution,
               work / f"ours-e2e-{resolution}.mp4", work, args.raster)

    if not args.skip_peers:
        print("  peer: MoviePy equivalent ...")
        _guard(res, "moviepy", peers.moviepy_process, doc_file, w, h, FPS, work / f"moviepy-{resolution}.mp4",
               assets_dir, work)

    res["ratios"] = _ratios(res)
    return res


def _fps(res: dict[str, Any], key: str) -> float | None:
    v = res.get(key)
    return v.get("fps") if isinstance(v, dict) and "error" not in v else None


def _whole(res: dict[str, Any], ours: str, peer: str) -> float | None:
    a, b = res.get(ours) or {}, res.get(peer) or {}
    if "whole_process_fps" in a and "whole_process_fps" in b:
        return a["whole_process_fps"] / b["whole_process_fps"]
    return None


def _ratios(res: dict[str, Any]) -> dict[str, float | None]:
    e2e, lim, mp = _fps(res, "ours_e2e"), _fps(res, "ffmpeg_encode_only"), _fps(res, "moviepy")
    enc = _fps(res, "ours_encode")
    return {
        "ours_e2e_over_encode_only_limit": e2e / lim if e2e and lim else None,
        "ours_e2e_over_moviepy": e2e / mp if e2e and mp else None,
        "ours_whole_process_over_moviepy_whole_process": _whole(res, "ours_e2e", "moviepy"),
        "ours_encode_over_ffmpeg_encode": enc / lim if enc and lim else None,
    }


# ----------------------------------------------------------------------------- output


ROWS = [
    ("ours_render", "ours: render only (SkiaRasterizer.render)"),
    ("ours_encode", "ours: encode only (X264Encoder)"),
    ("ours_e2e", "ours: end to end (render_video, 2 workers)"),
    ("ffmpeg_encode_only", "peer: ffmpeg x264 encode-only limit"),
    ("moviepy", "peer: MoviePy write_videofile"),
]


def _gib(b: float | None) -> str:
    return f"{b / 2**30:.2f} GiB" if b else "-"


def print_table(res: dict[str, Any]) -> None:
    title = f"{res['width']}x{res['height']} ({res['resolution']}p), {res['frames']} frames"
    rows = []
    for key, label in ROWS:
        v = res.get(key)
        if v is None:
            continue
        if "error" in v:
            rows.append((label, "failed", "", "", v["error"][:60]))
            continue
        note = ""
        if key in ("ffmpeg_encode_only", "ours_encode") and "STAND-IN" in res.get("frames_source", ""):
            note = "stand-in frames (MoviePy)"
        if key == "ours_e2e":
            largest = max(v["maxrss_self_bytes"] or 0, v["maxrss_largest_child_bytes"] or 0)
            note = (f"whole process {v['whole_process_fps']:.1f} frames/s ({v['whole_process_seconds']:.2f} s, "
                    f"start-up {v['startup_seconds']:.2f} s, raster {v['raster']}); peak RSS {_gib(v['peak_rss_tree_bytes'])}, PSS "
                    f"{_gib(v['peak_pss_tree_bytes'])}, largest process {_gib(largest)}")
        if key == "moviepy":
            note = (f"+{v['build_seconds']:.1f} s to build; whole process {v['whole_process_fps']:.1f} frames/s "
                    f"({v['whole_process_seconds']:.2f} s)")
        rows.append((label, f"{v['fps']:.1f}", f"{v['seconds']:.2f}", str(v["frames"]), note))
    r = res["ratios"]
    fmt = lambda x: f"{x:.2f}x" if x else "n/a"
    ratio_lines = [
        f"ours end-to-end / encode-only limit: {fmt(r['ours_e2e_over_encode_only_limit'])}",
        f"ours end-to-end / MoviePy:           {fmt(r['ours_e2e_over_moviepy'])}",
        f"  the same, whole processes:         {fmt(r['ours_whole_process_over_moviepy_whole_process'])}",
    ]
    notes = list(res["notes"])
    if res.get("ours_unavailable"):
        notes.insert(0, f"our renderer not measured: {res['ours_unavailable']}")
    if res.get("frames_source"):
        notes.append(f"encode-only frames from: {res['frames_source']}")
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title)
        for col, just in (("measurement", "left"), ("frames/s", "right"), ("seconds", "right"),
                          ("frames", "right"), ("note", "left")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for row in rows:
            t.add_row(*row)
        c = Console(width=None if sys.stdout.isatty() else 120)
        c.print(t)
        for line in ratio_lines + [f"note: {n}" for n in notes]:
            c.print("  " + line, highlight=False, markup=False)
    except ImportError:
        print(title)
        print(f"  {'measurement':46} {'frames/s':>9} {'seconds':>8} {'frames':>6}  note")
        for label, fps, sec, n, note in rows:
            print(f"  {label:46} {fps:>9} {sec:>8} {n:>6}  {note}")
        for line in ratio_lines + [f"note: {n}" for n in notes]:
            print("  " + line)


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": None,
        "memory_bytes": None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "encoder_settings": {"codec": "libx264", "crf": peers.CRF, "preset": peers.PRESET,
                             "pix_fmt": "yuv420p", "matrix": "bt709", "range": "tv"},
        "versions": {},
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_bytes"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    v = info["versions"]
    from importlib import metadata

    for dist in ("skia-python", "av", "moviepy", "numpy", "pillow", "imageio-ffmpeg", "psutil"):
        try:
            v[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v[dist] = None
    try:
        import av

        v["av_ffmpeg_libs"] = {k: ".".join(map(str, x)) for k, x in av.library_versions.items()}
    except ImportError:
        v["av_ffmpeg_libs"] = None
    try:
        import imageio_ffmpeg

        v["ffmpeg_binary"] = imageio_ffmpeg.get_ffmpeg_version()
    except (ImportError, RuntimeError, OSError, subprocess.SubprocessError):  # not installed, no binary, or it fails
        v["ffmpeg_binary"] = None
    return info


# ----------------------------------------------------------------------------- main


def _resolutions(text: str) -> list[int]:
    try:
        out = [int(x.strip().rstrip("pP")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad resolution list {text!r}")
    if not out or any(r < 16 or r % 2 for r in out):
        raise argparse.ArgumentTypeError(f"resolutions must be even numbers: {text!r}")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fps", description=__doc__.split("\n")[0])
    p.add_argument("--resolution", type=_resolutions, default=[1080],
                   help="short side(s), comma separated, e.g. 720,1080,2160 (default 1080)")
    p.add_argument("--seconds", type=float, default=10.0,
                   help="video length; busy.json's times are stretched to fit (default 10)")
    p.add_argument("--skip-peers", action="store_true", help="measure only our renderer")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"),
                   help="folder for the JSON results (default benchmarks/results/)")
    p.add_argument("--encode-frames", type=int, default=None,
                   help=f"frames held for the encode-only runs (default: all up to "
                        f"{FULL_ENCODE_MAX_RES}p, {BIG_ENCODE_FRAMES} above)")
    p.add_argument("--keep-videos", action="store_true", help="keep the MP4s (path printed)")
    p.add_argument("--raster", choices=("auto", "cpu", "gl"), default="cpu",
                   help="our rasterizer for the end-to-end run (default cpu)")
    p.add_argument("--e2e-child", help=argparse.SUPPRESS)
    p.add_argument("--e2e-started", type=float, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.e2e_child:
        _e2e_child(args.e2e_child, args.e2e_started or time.time())
        return 0
    if args.seconds <= 0:
        raise SystemExit("--seconds must be > 0")
    base = load_doc()
    doc = scale_doc_time(base, args.seconds)
    print(f"busy.json: valid VideoDoc; {len(doc['scenes'])} scenes, {doc['duration']:g} s at {FPS} fps")
    ours, why = import_ours()
    if ours is None:
        print(f"our renderer: NOT MEASURED ({why}); running the peers only")
    if ours is None and args.skip_peers:
        print("nothing to measure")
        return 1

    work = Path(tempfile.mkdtemp(prefix="reelfarm-fps-"))
    assets_dir = work / "assets"
    write_bench_photo(assets_dir)
    doc_file = work / "doc.json"
    doc_file.write_text(json.dumps(doc))
    info = machine_info()
    with CpuWitness() as idle:
        time.sleep(1.0)
    info["other_cores_at_start"] = idle.other_cores
    if idle.other_cores is not None and idle.other_cores > OTHER_LOAD_WARN:
        print(f"WARNING: other processes are using {idle.other_cores:.2f} of "
              f"{os.cpu_count()} cores; every figure will be low. Run on a quiet machine.")
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    try:
        for resolution in args.resolution:
            res = run_resolution(doc, doc_file, assets_dir, resolution, args, ours, why, work)
            print_table(res)
            out = args.out / f"fps-{resolution}-{stamp}.json"
            out.write_text(json.dumps({
                "benchmark": "fps", "doc": str(DOC_PATH.relative_to(ROOT)), "seconds": args.seconds,
                "format": FORMAT, "workers": WORKERS, "machine": info, "result": res,
                "created": dt.datetime.now().isoformat(timespec="seconds"),
            }, indent=2, default=str))
            print(f"  -> {out}")
    finally:
        if args.keep_videos:
            print(f"videos kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
