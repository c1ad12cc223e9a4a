"""Footage: what a video clip costs a render beside a still image, and how soon a chunk that starts
deep inside a clip draws its first frame.

    python -m benchmarks.footage                         # 30 s at 1080p30, the issue's figures
    python -m benchmarks.footage --seconds 9 --height 540   # a quick look
    python -m benchmarks.footage --repeat 2              # two render pairs, image and clip alternating

1. Speed. A three-scene video (`footage_doc`): scene 1 (a third of the video) has a full-frame
   clip as its background, scenes 2 and 3 are gradients, text and a moving shape joined by
   crossfades. The same video with a PNG of one of the clip's frames in the clip's place is the
   baseline. Both are rendered by `render_video(doc, out, spec, workers=2, assets)` (the local
   render: chunk processes, x264, stream-copy join), one after the other in this run; the figure is
   clip frames/s over image frames/s. A third render shows the PNG zoomed and panned through scene 1
   (Ken Burns), so that x264 meets whole-frame motion as with the clip: clip frames/s over its
   frames/s is what decoding costs, apart from what encoding moving pictures costs. Beside it, to
   say where the time goes: the clip decoded
   alone (PyAV, the renderer's threading), decoded and scaled to BGRA as the renderer does, and
   scene 1 drawn alone by the chunk rasterizer with each background, all as CPU ms per frame.
2. Chunk start. A clip whose keyframes are 10 s apart (x264 `keyint` = 10 * fps, `scenecut=0`) is a
   video's only scene; 1 s chunks are drawn the way a farm node draws one (a fresh rasterizer from
   `RasterChoice("cpu").make(..., yuv=True)`, then `render_segment` with x264) starting on the
   keyframe at 10 s, half-way to the next (15 s), and one frame before it (19.97 s: 299 frames to
   decode). The figure is the time from making the rasterizer to the first frame drawn.

The clips are made here with PyAV (H.264 High, yuv420p, x264 `faster` at CRF 20): a textured
landscape panned and zoomed with moving discs and a little grain, so x264 sees motion and texture
(their bitrates are in the output). Results go to benchmarks/results/footage-<height>p-<time>.json.
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

import numpy as np

from benchmarks.probes import CpuWitness

FORMAT = "16:9"
FPS = 30
WORKERS = 2
CLIP_KEY, STILL_KEY, LONG_GOP_KEY = "bench/clip.mp4", "bench/still.png", "bench/gop10.mp4"
TARGET_RATIO = 0.8
TARGET_FIRST_FRAME_S = 1.5
CHUNK_SECONDS = 1.0
GOP10_SECONDS = 10.0


# ----------------------------------------------------------------------------- inputs


def landscape(width: int, height: int, seed: int) -> np.ndarray:
    """A smooth, textured RGB picture 1.5 times the frame each way, to pan and zoom over."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    w, h = int(width * 1.5), int(height * 1.5)
    coarse = rng.uniform(30, 225, size=(6, 9, 3)).astype(np.uint8)
    img = np.asarray(Image.fromarray(coarse).resize((w, h), Image.Resampling.BICUBIC), np.float32)
    mid = rng.normal(0, 24, size=(h // 24 + 1, w // 24 + 1, 3)).astype(np.float32)
    img += np.asarray(Image.fromarray(np.clip(mid + 128, 0, 255).astype(np.uint8))
                      .resize((w, h), Image.Resampling.BICUBIC), np.float32) - 128
    img += rng.normal(0, 7, size=(h, w, 1))  # fine detail that moves with the picture
    return np.clip(img, 0, 255).astype(np.uint8)


def clip_frame(scene: np.ndarray, grain: list[np.ndarray], i: int, width: int, height: int,
               fps: int) -> np.ndarray:
    """Frame `i`: a slow pan and zoom over `scene`, three discs moving across it, grain on top."""
    from PIL import Image

    t = i / fps
    zoom = 1.0 + 0.12 * (0.5 + 0.5 * np.sin(t * 0.7))
    cw, ch = int(width * 1.4 / zoom), int(height * 1.4 / zoom)
    x = int((scene.shape[1] - cw) * (0.5 + 0.5 * np.sin(t * 0.45)))
    y = int((scene.shape[0] - ch) * (0.5 + 0.5 * np.cos(t * 0.31)))
    crop = Image.fromarray(scene[y:y + ch, x:x + cw]).resize((width, height), Image.Resampling.BILINEAR)
    rgb = np.array(crop)
    r = max(4, height // 12)
    for k, colour in enumerate(((250, 200, 40), (40, 200, 250), (240, 80, 120))):
        cx = int((width - 2 * r) * (0.5 + 0.5 * np.sin(t * (0.9 + 0.4 * k) + k))) + r
        cy = int((height - 2 * r) * (0.5 + 0.5 * np.cos(t * (0.7 + 0.3 * k) + 2 * k))) + r
        yy, xx = np.ogrid[-r:r, -r:r]
        disc = (xx * xx + yy * yy) < r * r
        rgb[cy - r:cy + r, cx - r:cx + r][disc] = colour
    noisy = rgb.astype(np.int16) + grain[i % len(grain)]
    return np.clip(noisy, 0, 255).astype(np.uint8)


def make_clip(path: Path, width: int, height: int, seconds: float, gop_frames: int, fps: int = FPS,
              seed: int = 46) -> dict[str, Any]:
    """Write an H.264 clip of moving, textured content with a keyframe every `gop_frames` frames
    and no others (`scenecut=0`); returns its size and bitrate."""
    import av

    rng = np.random.default_rng(seed)
    scene = landscape(width, height, seed)
    grain = [rng.integers(-3, 4, size=(height, width, 1), dtype=np.int16) for _ in range(5)]
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = round(seconds * fps)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.gop_size = gop_frames
        stream.codec_context.thread_type = "FRAME"
        stream.options = {"preset": "faster", "crf": "20",
                          "x264-params": f"keyint={gop_frames}:min-keyint={gop_frames}:scenecut=0"}
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(clip_frame(scene, grain, i, width, height, fps), format="rgb24")
            frame.pts = i
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    size = path.stat().st_size
    return {"path": str(path), "width": width, "height": height, "frames": frames, "gop_frames": gop_frames,
            "bytes": size, "mbit_per_s": round(size * 8 / seconds / 1e6, 2)}


def write_still(clip: Path, out: Path, at_frame: int) -> None:
    """Save frame `at_frame` of `clip` as a PNG (the image the baseline shows)."""
    import av

    with av.open(str(clip)) as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i == at_frame:
                frame.to_image().save(out)
                return
    raise SystemExit(f"{clip} has fewer than {at_frame + 1} frames")


def text_layers(title: str, seconds: float) -> list[dict[str, Any]]:
    return [
        {"id": "title", "type": "text", "text": title, "size": 0.075, "x": 0.5, "y": 0.38, "w": 0.8,
         "font": {"family": "Inter", "weight": 700}, "color": "#FFFFFF",
         "enter": {"preset": "slide", "duration": 0.6}},
        {"id": "sub", "type": "text", "text": "Real footage, drawn frame by frame", "size": 0.04,
         "x": 0.5, "y": 0.55, "w": 0.8, "color": "#FFFFFF", "enter": {"preset": "fade", "duration": 0.6}},
        {"id": "bar", "type": "shape", "shape": "rounded_rect", "x": 0.5, "y": 0.75, "w": 0.3, "h": 0.06,
         "radius": 0.02, "fill": "#F59E0B", "keyframes": {"x": [{"t": 0, "v": 0.3}, {"t": seconds, "v": 0.7}]}},
    ]


def footage_doc(seconds: float, background: dict[str, Any], asset: dict[str, Any]) -> dict[str, Any]:
    """Three scenes of `seconds / 3`: the first on `background` (a clip or an image, full frame),
    the other two on gradients, crossfading in; each with a heading, a line and a moving bar."""
    each = seconds / 3
    scenes = [{"id": "footage", "duration": each, "background": background,
               "layers": text_layers("Scene 1: on location", each)}]
    for i in (2, 3):
        scenes.append({"id": f"s{i}", "duration": each, "transition": {"type": "crossfade", "duration": 0.5},
                       "background": {"type": "linear", "colors": ["#0B1020", "#312E81"], "angle": 30 * i},
                       "layers": text_layers(f"Scene {i}: the spring line", each)})
    return {"version": 1, "fps": FPS, "duration": seconds, "format": FORMAT, "assets": {"bg": asset},
            "scenes": scenes}


def clip_doc(seconds: float) -> dict[str, Any]:
    return footage_doc(seconds, {"type": "video", "asset": "bg", "fit": "cover"},
                       {"type": "video", "key": CLIP_KEY})


def image_doc(seconds: float) -> dict[str, Any]:
    return footage_doc(seconds, {"type": "image", "asset": "bg", "fit": "cover"},
                       {"type": "image", "key": STILL_KEY})


def panned_doc(seconds: float) -> dict[str, Any]:
    """The still, zoomed and panned through scene 1 (Ken Burns): every frame moves, as the clip's
    do, so x264 meets motion in both, and what is left between the two is the clip's decoding."""
    return footage_doc(seconds, {"type": "image", "asset": "bg", "fit": "cover",
                                 "ken_burns": {"from": {"scale": 1.0, "x": 0.5, "y": 0.5},
                                               "to": {"scale": 1.25, "x": 0.35, "y": 0.6}, "easing": "linear"}},
                       {"type": "image", "key": STILL_KEY})


def long_gop_doc(seconds: float) -> dict[str, Any]:
    """One scene on the long-GOP clip, nothing over it: the chunk start is the clip's alone."""
    return {"version": 1, "fps": FPS, "duration": seconds, "format": FORMAT,
            "assets": {"bg": {"type": "video", "key": LONG_GOP_KEY}},
            "scenes": [{"id": "footage", "duration": seconds,
                        "background": {"type": "video", "asset": "bg", "fit": "cover"}, "layers": []}]}


# ----------------------------------------------------------------------------- measurements


def measure_decode(clip: Path, width: int, height: int, to_bgra: bool) -> dict[str, Any]:
    """Every frame of `clip` decoded with the renderer's threading (and scaled to BGRA at the
    output size, as `footage.frame_image` does, when `to_bgra`): CPU and wall ms per frame."""
    import av

    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        n, c0, t0 = 0, time.process_time(), time.perf_counter()
        for frame in container.decode(stream):
            if to_bgra:
                frame.reformat(width=width, height=height, format="bgra").to_ndarray()
            n += 1
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {"frames": n, "cpu_ms_per_frame": round(1000 * cpu / n, 2), "wall_ms_per_frame": round(1000 * wall / n, 2)}


def measure_scene(doc: dict[str, Any], height: int, assets: Path, frames: range, out: Path) -> dict[str, Any]:
    """`frames` drawn in this process by the chunk rasterizer and encoded by x264 on one thread (so
    that its CPU time is the calling thread's): CPU ms per frame of each apart."""
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.backends import RasterChoice
    from reelfarm.renderer.encode import X264Encoder
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.spec import RenderSpec

    parsed = parse_doc(doc)
    spec = RenderSpec(FORMAT, height, FPS)
    raster = RasterChoice("cpu").make(parsed, spec, LocalAssets(str(assets)), yuv=True)
    encoder = X264Encoder(threads=1)
    draw = encode = 0.0
    encoder.start(str(out), spec.width, spec.height, spec.fps, pixel_format=raster.pixel_format)
    try:
        for n in frames:
            c0 = time.process_time()
            frame = raster.render(spec.time(n))
            c1 = time.process_time()
            encoder.write(frame)
            draw, encode = draw + c1 - c0, encode + time.process_time() - c1
    finally:
        c1 = time.process_time()
        encoder.finish()
        encode += time.process_time() - c1
        raster.close()
    return {"frames": len(frames), "draw_cpu_ms_per_frame": round(1000 * draw / len(frames), 2),
            "encode_cpu_ms_per_frame": round(1000 * encode / len(frames), 2)}


def measure_render(doc: dict[str, Any], height: int, assets: Path, out: Path) -> dict[str, Any]:
    """One whole local render (`render_video`, 2 chunk processes): frames/s, and the cores other
    processes took meanwhile."""
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.render import render_video
    from reelfarm.renderer.spec import RenderSpec

    before = os.times()
    with CpuWitness() as witness:
        stats = render_video(doc, str(out), RenderSpec(FORMAT, height, FPS), workers=WORKERS,
                             assets=LocalAssets(str(assets)))
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # this process and its chunk processes (reaped)
    return {"frames": stats.frames, "seconds": round(stats.seconds, 3), "fps": round(stats.frames_per_second, 2),
            "cpu_s": round(cpu, 2), "cores_busy": round(cpu / stats.seconds, 2), "bytes": stats.bytes,
            "other_cores": None if witness.other_cores is None else round(witness.other_cores, 2)}


class FirstFrameClock:
    """A rasterizer that notes when its first frame was drawn, counted from `began`."""

    def __init__(self, raster: Any, began: float) -> None:
        self.raster, self.began = raster, began
        self.width, self.height, self.pixel_format = raster.width, raster.height, raster.pixel_format
        self.first_frame_s: float | None = None

    def render(self, t: float) -> np.ndarray:
        frame = self.raster.render(t)
        if self.first_frame_s is None:
            self.first_frame_s = time.perf_counter() - self.began
        return frame

    def close(self) -> None:
        self.raster.close()


def measure_chunk_start(doc: dict[str, Any], height: int, assets: Path, first: int, out: Path) -> dict[str, Any]:
    """One 1 s chunk from frame `first`, drawn as a farm node draws one: seconds from making the
    rasterizer to its first frame drawn, and to the chunk's end; frames decoded and seeks."""
    from reelfarm.renderer.assets import LocalAssets
    from reelfarm.renderer.backends import RasterChoice
    from reelfarm.renderer.encode import X264Encoder
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.render import render_segment
    from reelfarm.renderer.spec import RenderSpec

    parsed = parse_doc(doc)
    spec = RenderSpec(FORMAT, height, FPS)
    source = LocalAssets(str(assets))
    frames = range(first, first + round(CHUNK_SECONDS * FPS))
    with CpuWitness() as witness:
        began = time.perf_counter()
        clock = FirstFrameClock(RasterChoice("cpu").make(parsed, spec, source, yuv=True), began)
        try:
            render_segment(parsed, str(out), spec, frames, source, X264Encoder(threads=WORKERS), raster=clock)
            chunk_s = time.perf_counter() - began
            reader = clock.raster.clips.reader("bg", "scene:footage")
            decoded, seeks = reader.decoded, reader.seeks
        finally:
            clock.close()
    return {"first_frame_s": round(clock.first_frame_s or 0.0, 3), "chunk_s": round(chunk_s, 3),
            "frames_decoded": decoded, "seeks": seeks,
            "other_cores": None if witness.other_cores is None else round(witness.other_cores, 2)}


def measure_index(clip: Path) -> float:
    """Seconds to index a clip (its packets read, not decoded), as a chunk's first frame does."""
    from reelfarm.renderer.footage import probe_clip

    t0 = time.perf_counter()
    probe_clip(str(clip))
    return round(time.perf_counter() - t0, 3)


# ----------------------------------------------------------------------------- runs


def speed_figures(seconds: float, height: int, assets: Path, scratch: Path, repeat: int) -> dict[str, Any]:
    from reelfarm.renderer.spec import frame_size

    width, _ = frame_size(FORMAT, height)
    scene_seconds = seconds / 3
    clip_info = make_clip(assets / CLIP_KEY, width, height, scene_seconds, gop_frames=2 * FPS)
    write_still(assets / CLIP_KEY, assets / STILL_KEY, at_frame=FPS)
    clip, image, panned = clip_doc(seconds), image_doc(seconds), panned_doc(seconds)
    pairs = []
    for i in range(repeat):
        order = [("image", image), ("panned", panned), ("clip", clip)]
        order = order if i % 2 == 0 else order[::-1]
        pair: dict[str, Any] = {name: measure_render(doc, height, assets, scratch / f"{name}{i}.mp4") for name, doc in order}
        pair["ratio"] = round(pair["clip"]["fps"] / pair["image"]["fps"], 3)
        pair["ratio_panned"] = round(pair["clip"]["fps"] / pair["panned"]["fps"], 3)
        pairs.append(pair)
        print(f"  render {i + 1}: image {pair['image']['fps']:.1f} fps, panned image {pair['panned']['fps']:.1f} fps, "
              f"clip {pair['clip']['fps']:.1f} fps; clip / image {pair['ratio']:.2f}x, clip / panned image "
              f"{pair['ratio_panned']:.2f}x", flush=True)
    scene = range(round(scene_seconds * FPS))
    return {
        "clip": clip_info, "pairs": pairs, "ratio_median": statistics.median(p["ratio"] for p in pairs),
        "ratio_panned_median": statistics.median(p["ratio_panned"] for p in pairs),
        "decode": measure_decode(assets / CLIP_KEY, width, height, to_bgra=False),
        "decode_to_bgra": measure_decode(assets / CLIP_KEY, width, height, to_bgra=True),
        "scene1": {name: measure_scene(doc, height, assets, scene, scratch / f"scene1-{name}.mp4")
                   for name, doc in (("image", image), ("panned", panned), ("clip", clip))},
    }


def chunk_figures(height: int, assets: Path, scratch: Path, tries: int) -> dict[str, Any]:
    from reelfarm.renderer.spec import frame_size

    width, _ = frame_size(FORMAT, height)
    gop = round(GOP10_SECONDS * FPS)
    length = 2 * GOP10_SECONDS + CHUNK_SECONDS + 0.5
    clip_info = make_clip(assets / LONG_GOP_KEY, width, height, length, gop_frames=gop)
    doc = long_gop_doc(length)
    starts = {"on_keyframe_10s": gop, "mid_gop_15s": gop + gop // 2, "before_keyframe_19.97s": 2 * gop - 1}
    rows = {}
    for name, first in starts.items():
        runs = [measure_chunk_start(doc, height, assets, first, scratch / f"chunk-{first}-{k}.mp4")
                for k in range(tries)]
        rows[name] = {"first_frame": first, "start_s": round(first / FPS, 3), "runs": runs,
                      "first_frame_s_median": statistics.median(r["first_frame_s"] for r in runs)}
    return {"clip": clip_info, "index_s": measure_index(assets / LONG_GOP_KEY), "starts": rows}


def print_table(speed: dict[str, Any], chunks: dict[str, Any], seconds: float, height: int) -> None:
    frames = round(seconds * FPS)
    print(f"\nFootage, {seconds:g} s at {height}p{FPS} ({frames} frames), {WORKERS} chunk processes, "
          f"{os.cpu_count()} cores")
    for i, p in enumerate(speed["pairs"], 1):
        print(f"  {'render ' + str(i):34s} image {p['image']['fps']:7.1f} fps   panned image "
              f"{p['panned']['fps']:7.1f} fps   clip {p['clip']['fps']:7.1f} fps")
        print(f"  {'':34s} clip / image {p['ratio']:.2f}x (target >= {TARGET_RATIO}), clip / panned image "
              f"{p['ratio_panned']:.2f}x")
        print(f"  {'':34s} CPU {p['image']['cpu_s']:.1f}, {p['panned']['cpu_s']:.1f} and {p['clip']['cpu_s']:.1f} s; "
              f"others took {p['image']['other_cores']}, {p['panned']['other_cores']} and "
              f"{p['clip']['other_cores']} of a core")
    c = speed["clip"]
    print(f"  clip: {c['width']}x{c['height']}, GOP {c['gop_frames']} frames, {c['mbit_per_s']} Mbit/s")
    for key, label in (("decode", "decode alone"), ("decode_to_bgra", "decode + scale to BGRA")):
        d = speed[key]
        print(f"  {label:34s} {d['cpu_ms_per_frame']:7.2f} CPU ms/frame  ({d['wall_ms_per_frame']:.2f} wall ms)")
    for key in ("image", "panned", "clip"):
        d = speed["scene1"][key]
        print(f"  {'scene 1, ' + key + ' background':34s} {d['draw_cpu_ms_per_frame']:7.2f} CPU ms/frame drawing, "
              f"{d['encode_cpu_ms_per_frame']:.2f} encoding (x264, 1 thread)")
    g = chunks["clip"]
    print(f"  1 s chunks in a clip with keyframes {GOP10_SECONDS:g} s apart ({g['mbit_per_s']} Mbit/s); "
          f"indexing it: {chunks['index_s']:.3f} s")
    for name, row in chunks["starts"].items():
        firsts = ", ".join(f"{r['first_frame_s']:.2f}" for r in row["runs"])
        r0 = row["runs"][0]
        print(f"  {'from ' + str(row['start_s']) + ' s (' + name + ')':34s} first frame after "
              f"{row['first_frame_s_median']:.2f} s (tries {firsts}; target <= {TARGET_FIRST_FRAME_S}); "
              f"{r0['frames_decoded']} frames decoded, chunk {r0['chunk_s']:.2f} s; others took "
              f"{max(r['other_cores'] or 0 for r in row['runs'])} of a core at most")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.footage", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=30.0, help="video length (default 30; scene 1 is a third)")
    p.add_argument("--height", type=int, default=1080, help="short side in pixels (default 1080)")
    p.add_argument("--repeat", type=int, default=1, help="render pairs, image and clip first in turn")
    p.add_argument("--chunk-tries", type=int, default=3, help="times each chunk start is measured")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    load = os.getloadavg()
    print(f"{args.seconds:g} s at {args.height}p, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="reelfarm-footage-") as tmp:
        assets, scratch = Path(tmp) / "assets", Path(tmp) / "out"
        scratch.mkdir(parents=True)
        speed = speed_figures(args.seconds, args.height, assets, scratch, max(1, args.repeat))
        chunks = chunk_figures(args.height, assets, scratch, max(1, args.chunk_tries))
    print_table(speed, chunks, args.seconds, args.height)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"footage-{args.height}p-{dt.datetime.now():%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps({
        "benchmark": "footage", "seconds": args.seconds, "height": args.height, "fps": FPS, "workers": WORKERS,
        "cores": os.cpu_count(), "load_average_start": load, "load_average_end": os.getloadavg(),
        "targets": {"clip_over_image": TARGET_RATIO, "first_frame_s": TARGET_FIRST_FRAME_S},
        "speed": speed, "chunk_start": chunks}, indent=2))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
