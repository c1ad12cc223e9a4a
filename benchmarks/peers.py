"""Peers our renderer is measured against, on the same content.

- `ffmpeg_x264_encode_only`: the encode-only limit. Pre-rendered RGBA frames go over a pipe to the
  ffmpeg binary that imageio-ffmpeg ships, which converts them to BT.709 limited-range YUV 4:2:0
  and encodes them with libx264, the same settings our encoder uses. Nothing is drawn, so no
  renderer that also draws can beat it on the same machine.
- `moviepy_equivalent`: MoviePy 2.x drawing a composition equivalent to a VideoDoc (the subset
  `benchmarks/docs/busy.json` uses) and writing it with libx264.
- `moviepy_frames`: the same MoviePy composition as RGBA frames in memory, a stand-in for our
  rasterizer's frames when that is not available yet.

Nothing here imports the renderer's drawing or encoding: the peers must keep working while our
renderer changes. Frame sizes come from `reelfarm.renderer.spec` (no Skia, no PyAV), the one
definition of the formats.
"""
from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from reelfarm.renderer.spec import frame_size  # noqa: F401 - benchmarks/fps.py sizes the peers' frames with it

CRF = 20
PRESET = "veryfast"

# BT.709 limited range, tagged: the same conversion and tags our encoder promises.
BT709_ARGS = [
    # ffmpeg 7+ takes colour tags from the frames, so setparams stamps them there as well;
    # without it the file says primaries and transfer "unknown" despite the flags below.
    "-vf", ("scale=out_color_matrix=bt709:out_range=tv,format=yuv420p,"
            "setparams=colorspace=bt709:color_primaries=bt709:color_trc=bt709:range=tv"),
    "-pix_fmt", "yuv420p",
    "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
    "-color_range", "tv",
]

def ffmpeg_exe() -> str:
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def count_frames(path: str | os.PathLike[str]) -> int | None:
    """Frames in the first video stream of `path` (from the container), or None if unknown."""
    try:
        import av
    except ImportError:
        return None
    try:
        with av.open(str(path)) as container:
            n = container.streams.video[0].frames
            return int(n) if n else None
    except (av.FFmpegError, IndexError):  # unreadable, or no video stream
        return None


# --------------------------------------------------------------------------------------------
# Encode-only limit
# --------------------------------------------------------------------------------------------


def ffmpeg_x264_command(width: int, height: int, fps: float, out_path: str | os.PathLike[str],
                        crf: int = CRF, preset: str = PRESET) -> list[str]:
    return [
        ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
        "-f", "rawvideo", "-pix_fmt", "rgba", "-s", f"{width}x{height}", "-r", str(fps), "-i", "-",
        "-an", "-c:v", "libx264", "-preset", preset, "-crf", str(crf),
        *BT709_ARGS,
        str(out_path),
    ]


def ffmpeg_x264_encode_only(frames: Iterable[np.ndarray], width: int, height: int, fps: float,
                            out_path: str | os.PathLike[str], crf: int = CRF,
                            preset: str = PRESET) -> dict[str, Any]:
    """Encode RGBA frames with the ffmpeg binary's libx264; time first byte written to exit.

    Args:
        frames: (height, width, 4) uint8 RGBA arrays. Pass frames already in memory: whatever an
            iterator does to produce them is inside the timed span.
    Returns:
        {"fps", "seconds", "frames", "bytes", "command"}.
    Raises:
        RuntimeError: ffmpeg failed.
    """
    cmd = ffmpeg_x264_command(width, height, fps, out_path, crf, preset)
    expected = (height, width, 4)
    with tempfile.TemporaryFile() as errlog:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errlog)
        assert proc.stdin is not None
        n = 0
        t0: float | None = None
        try:
            for frame in frames:
                if frame.shape != expected or frame.dtype != np.uint8:
                    raise ValueError(f"frame {n}: {frame.shape} {frame.dtype}, want {expected} uint8")
                buf = memoryview(np.ascontiguousarray(frame)).cast("B")
                if t0 is None:
                    t0 = time.perf_counter()
                proc.stdin.write(buf)
                n += 1
            proc.stdin.close()
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - (t0 if t0 is not None else time.perf_counter())
        if rc != 0:
            errlog.seek(0)
            raise RuntimeError(f"ffmpeg exited {rc}: {errlog.read().decode(errors='replace')[-2000:]}")
    return {
        "fps": n / seconds if seconds > 0 else float("nan"),
        "seconds": seconds,
        "frames": n,
        "bytes": os.path.getsize(out_path),
        "command": " ".join(cmd[1:]),
    }


# --------------------------------------------------------------------------------------------
# A minimal reading of the VideoDoc features busy.json uses (kept apart from renderer/ on purpose)
# --------------------------------------------------------------------------------------------

def _ease(name: str, p: float) -> float:
    # The curves are plain maths, shared so both sides move identically; the drawing is MoviePy's.
    from reelfarm.renderer.easing import ease

    return ease(name, p)


def _track(keys: list[dict[str, Any]] | None, default: float) -> Callable[[float], float]:
    """Value of a keyframe track at scene time t (first value before, last value after)."""
    if not keys:
        return lambda t: default
    keys = sorted(keys, key=lambda k: k["t"])

    def value(t: float) -> float:
        if t <= keys[0]["t"]:
            return float(keys[0]["v"])
        for a, b in pairwise(keys):
            if t < b["t"]:
                p = (t - a["t"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 1.0
                return a["v"] + (b["v"] - a["v"]) * _ease(b.get("easing", "linear"), p)
        return float(keys[-1]["v"])

    return value


def _rgba(color: str) -> tuple[int, int, int, int]:
    if not (isinstance(color, str) and color.startswith("#") and len(color) in (7, 9)):
        raise NotImplementedError(f"colour {color!r}: the MoviePy peer takes #RRGGBB[AA] only")
    v = color[1:]
    a = int(v[6:8], 16) if len(v) == 8 else 255
    return int(v[0:2], 16), int(v[2:4], 16), int(v[4:6], 16), a


def linear_gradient(width: int, height: int, colors: list[str], stops: list[float] | None,
                    angle: float) -> np.ndarray:
    """(h, w, 3) uint8 full-frame linear gradient; angle 0 = left to right, 90 = top to bottom.

    The gradient line runs through the frame centre and is just long enough for the corners to
    reach the first and last colours (the CSS convention).
    """
    rad = math.radians(angle)
    dx, dy = math.cos(rad), math.sin(rad)
    half = (abs(dx) * width + abs(dy) * height) / 2.0
    xs = (np.arange(width, dtype=np.float32) + 0.5 - width / 2.0) * dx
    ys = (np.arange(height, dtype=np.float32) + 0.5 - height / 2.0) * dy
    p = (ys[:, None] + xs[None, :]) / (2.0 * half) + 0.5
    cols = np.array([_rgba(c)[:3] for c in colors], dtype=np.float32)
    st = np.array(stops if stops else np.linspace(0, 1, len(colors)), dtype=np.float32)
    out = np.empty((height, width, 3), dtype=np.uint8)
    for ch in range(3):
        out[..., ch] = np.clip(np.interp(p, st, cols[:, ch]) + 0.5, 0, 255).astype(np.uint8)
    return out


def _rounded_rect_rgba(w: int, h: int, radius: float, rgba: tuple[int, int, int, int],
                       canvas: tuple[int, int] | None = None) -> np.ndarray:
    """Antialiased (4x supersampled) rounded rectangle, centred on a transparent canvas."""
    from PIL import Image, ImageDraw

    cw, ch = canvas or (w, h)
    ss = 4
    mask = Image.new("L", (cw * ss, ch * ss), 0)
    x0, y0 = (cw - w) / 2 * ss, (ch - h) / 2 * ss
    ImageDraw.Draw(mask).rounded_rectangle(
        [x0, y0, x0 + w * ss - 1, y0 + h * ss - 1], radius=radius * ss, fill=255)
    alpha = np.asarray(mask.resize((cw, ch), Image.Resampling.LANCZOS), dtype=np.float32)
    out = np.empty((ch, cw, 4), dtype=np.uint8)
    out[..., :3] = rgba[:3]
    out[..., 3] = np.clip(alpha * (rgba[3] / 255.0) + 0.5, 0, 255).astype(np.uint8)
    return out


_ANCHOR_FRACTION = {
    "top-left": (0, 0), "top": (0.5, 0), "top-right": (1, 0),
    "left": (0, 0.5), "center": (0.5, 0.5), "right": (1, 0.5),
    "bottom-left": (0, 1), "bottom": (0.5, 1), "bottom-right": (1, 1),
}


def _font_file(family: str) -> str:
    """A .ttf from the installed fontpkg_* packages for `family` (variable fonts: default weight)."""
    try:
        import fontpkg

        return str(fontpkg.path(family, 400, nearest=True))
    except (ImportError, LookupError):  # no fontpkg, or the family is not installed
        import site

        slug = "fontpkg_" + family.lower().replace(" ", "_").replace("-", "_")
        for base in site.getsitepackages():
            hits = sorted(Path(base, slug).glob("**/*.ttf"))
            hits = [h for h in hits if "Italic" not in h.name] or hits
            if hits:
                return str(hits[0])
    raise FileNotFoundError(f"no font file for family {family!r}")


_SUPPORTED_LAYER_KEYS = {
    "id", "type", "x", "y", "w", "h", "anchor", "keyframes", "shape", "fill", "radius", "text",
    "font", "size", "color", "align", "enter", "asset", "fit", "start", "end",
}


def _check_supported(layer: dict[str, Any]) -> None:
    extra = set(layer) - _SUPPORTED_LAYER_KEYS
    if extra:
        raise NotImplementedError(f"layer {layer['id']}: MoviePy peer lacks {sorted(extra)}")
    if layer["type"] == "shape" and layer["shape"] not in ("rect", "rounded_rect"):
        raise NotImplementedError(f"layer {layer['id']}: shape {layer['shape']}")
    if set(layer.get("keyframes", {})) - {"x", "y", "rotation"}:
        raise NotImplementedError(f"layer {layer['id']}: keyframes other than x/y/rotation")
    enter = layer.get("enter")
    if enter and enter["preset"] not in ("fade", "slide"):
        raise NotImplementedError(f"layer {layer['id']}: enter {enter['preset']}")
    if layer.get("align", "left") not in ("left", "start"):
        raise NotImplementedError(f"layer {layer['id']}: align {layer.get('align')}")


# --------------------------------------------------------------------------------------------
# MoviePy composition
# --------------------------------------------------------------------------------------------


def _load_doc(doc: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    if isinstance(doc, dict):
        return copy.deepcopy(doc)
    return json.loads(Path(doc).read_text())


def _asset_path(doc: dict[str, Any], asset_id: str, assets_dir: str | os.PathLike[str]) -> Path:
    asset = doc["assets"][asset_id]
    if "key" in asset:
        return Path(assets_dir) / asset["key"]
    url = asset["url"]
    return Path(url.removeprefix("file://"))


def _layer_clip(layer: dict[str, Any], doc: dict[str, Any], scene_dur: float, W: int, H: int,
                assets_dir: str | os.PathLike[str]) -> Any:
    from moviepy import ImageClip, TextClip, vfx
    from PIL import Image

    _check_supported(layer)
    short = min(W, H)
    start = float(layer.get("start", 0.0))
    end = float(layer.get("end", scene_dur))
    kf = layer.get("keyframes", {})
    fx = _track(kf.get("x"), float(layer.get("x", 0.5)))
    fy = _track(kf.get("y"), float(layer.get("y", 0.5)))
    frot = _track(kf.get("rotation"), float(layer.get("rotation", 0.0)))
    ax, ay = _ANCHOR_FRACTION[layer.get("anchor", "center")]
    effects: list[Any] = []
    enter = layer.get("enter")
    enter_at = start + (enter.get("delay", 0.0) if enter else 0.0)
    enter_dur = enter.get("duration", 0.6) if enter else 0.0
    # Before a fade begins the layer is fully transparent: leave it out of the composite then.
    clip_start = enter_at if enter and enter["preset"] == "fade" else start

    def slide_offset(t: float) -> tuple[float, float]:
        """Pixels the slide enter still has to travel at scene time t (0, 0 when done)."""
        if not enter or enter["preset"] != "slide":
            return 0.0, 0.0
        left = 1.0 - _ease(enter.get("easing", "out-cubic"), (t - enter_at) / enter_dur)
        d = enter.get("distance", 0.08)
        return {
            "left": (-d * W * left, 0.0), "right": (d * W * left, 0.0),
            "up": (0.0, -d * H * left), "down": (0.0, d * H * left),
        }[enter.get("direction", "left")]

    if layer["type"] == "shape":
        bw, bh = round(layer["w"] * W), round(layer["h"] * H)
        radius = float(layer.get("radius", 0.0)) * short if layer["shape"] == "rounded_rect" else 0
        if not isinstance(layer["fill"], str):
            raise NotImplementedError("gradient fills")
        rotates = "rotation" in kf or layer.get("rotation", 0)
        # Rotating inside a square canvas as wide as the diagonal keeps the clip's size constant,
        # so positions stay exact without tracking PIL's expanded bounding box.
        side = math.ceil(math.hypot(bw, bh)) + 2 if rotates else None
        canvas = (side, side) if side else (bw, bh)
        clip = ImageClip(_rounded_rect_rgba(bw, bh, radius, _rgba(layer["fill"]), canvas))
        if rotates:
            # VideoDoc rotation is clockwise on screen; PIL (and so MoviePy) turns anticlockwise.
            effects.append(vfx.Rotate(lambda t: -frot(t + clip_start), expand=False))
        cw, ch = canvas

        def pos(t: float) -> tuple[float, float]:
            ts = t + clip_start  # clip time -> scene time
            cx = fx(ts) * W + (0.5 - ax) * bw
            cy = fy(ts) * H + (0.5 - ay) * bh
            return cx - cw / 2, cy - ch / 2

    elif layer["type"] == "text":
        from PIL import ImageFont

        font_file = _font_file(layer.get("font", {}).get("family", "Inter"))
        px = round(layer["size"] * short)
        # MoviePy 2.2 with Pillow 11 sizes labels from the glyph bbox but sets the baseline at the
        # font ascent, cutting descenders off; a bottom margin of the font's descent undoes that.
        descent = ImageFont.truetype(font_file, px).getmetrics()[1]
        clip = TextClip(font=font_file, text=layer["text"], font_size=px,
                        color=layer.get("color", "#FFFFFF"), method="label",
                        margin=(0, 0, 0, descent))
        _, th = clip.size

        def pos(t: float) -> tuple[float, float]:
            ts = t + clip_start
            ox, oy = slide_offset(ts)
            # The text block is left-aligned at its box's left edge; box anchor gives the point.
            left = fx(ts) * W - ax * layer.get("w", 0) * W
            return left + ox, fy(ts) * H - th / 2 + oy

    elif layer["type"] == "image":
        if layer.get("fit", "cover") != "cover":
            raise NotImplementedError("fit contain")
        bw, bh = round(layer["w"] * W), round(layer["h"] * H)
        img = Image.open(_asset_path(doc, layer["asset"], assets_dir)).convert("RGB")
        # Pre-scale once (cover), crop the centre: the per-frame work is only compositing.
        s = max(bw / img.width, bh / img.height)
        sw, sh = max(bw, round(img.width * s)), max(bh, round(img.height * s))
        img = img.resize((sw, sh), Image.Resampling.LANCZOS)
        l, tp = (sw - bw) // 2, (sh - bh) // 2
        rgb = np.asarray(img.crop((l, tp, l + bw, tp + bh)))
        rgba = _rounded_rect_rgba(bw, bh, float(layer.get("radius", 0.0)) * short, (0, 0, 0, 255))
        rgba[..., :3] = rgb
        clip = ImageClip(rgba)

        def pos(t: float) -> tuple[float, float]:
            ts = t + clip_start
            return fx(ts) * W - ax * bw, fy(ts) * H - ay * bh

    else:
        raise NotImplementedError(f"layer type {layer['type']}")

    if enter and enter["preset"] == "fade":
        if enter.get("easing", "linear") != "linear":
            raise NotImplementedError("fade easings other than linear")
        effects.append(vfx.CrossFadeIn(enter_dur))
    clip = clip.with_duration(end - clip_start)
    if effects:
        clip = clip.with_effects(effects)
    return clip.with_start(clip_start).with_position(pos)


def _background(bg: dict[str, Any] | None, W: int, H: int, dur: float) -> Any:
    from moviepy import ColorClip, ImageClip

    if not bg:
        return ColorClip((W, H), color=(0, 0, 0), duration=dur)
    if bg["type"] == "solid":
        return ColorClip((W, H), color=_rgba(bg["color"])[:3], duration=dur)
    if bg["type"] == "linear":
        arr = linear_gradient(W, H, bg["colors"], bg.get("stops"), bg.get("angle", 0.0))
        return ImageClip(arr, duration=dur)
    raise NotImplementedError(f"background {bg['type']}")


def build_moviepy_clip(doc: str | os.PathLike[str] | dict[str, Any], width: int, height: int,
                       fps: float, assets_dir: str | os.PathLike[str]) -> Any:
    """The MoviePy composition equivalent to `doc` (the feature subset busy.json uses)."""
    from moviepy import CompositeVideoClip, concatenate_videoclips, vfx

    d = _load_doc(doc)
    scenes = []
    for scene in d["scenes"]:
        dur = float(scene["duration"])
        layers = [_background(scene.get("background"), width, height, dur)]
        layers += [_layer_clip(l, d, dur, width, height, assets_dir)
                   for l in scene["layers"] if not l.get("hidden")]
        # The opaque full-frame background is the base: no extra black canvas, no scene mask.
        comp = CompositeVideoClip(layers, size=(width, height), use_bgclip=True).with_duration(dur)
        scenes.append((scene, comp))

    parts = [scenes[0][1]]
    for (prev_scene, prev), (scene, comp) in pairwise(scenes):
        tr = scene.get("transition") or {"type": "cut"}
        tdur = min(float(tr.get("duration", 0.5)), float(scene["duration"]))
        if tr["type"] == "cut" or tdur <= 0:
            parts.append(comp)
            continue
        if tr["type"] != "crossfade" or tr.get("easing", "linear") != "linear":
            raise NotImplementedError(f"transition {tr}")
        # The new scene fades in over the previous scene's last frame, held.
        held = prev.to_ImageClip(t=float(prev_scene["duration"]) - 1.0 / fps, with_mask=False,
                                 duration=tdur)
        head = comp.subclipped(0, tdur).with_effects([vfx.CrossFadeIn(tdur)])
        parts.append(CompositeVideoClip([held, head], size=(width, height), use_bgclip=True)
                     .with_duration(tdur))
        if tdur < float(scene["duration"]):
            parts.append(comp.subclipped(tdur, float(scene["duration"])))
    final = concatenate_videoclips(parts, method="chain") if len(parts) > 1 else parts[0]
    return final.with_duration(float(d["duration"]))


def moviepy_equivalent(doc_path_or_dict: str | os.PathLike[str] | dict[str, Any], width: int,
                       height: int, fps: float, out_path: str | os.PathLike[str],
                       assets_dir: str | os.PathLike[str], crf: int = CRF,
                       preset: str = PRESET, threads: int = 2) -> dict[str, Any]:
    """Build the MoviePy composition for the doc and time `write_videofile` (the whole write).

    Returns:
        {"fps", "seconds", "frames", "build_seconds", "bytes"}.
    """
    t0 = time.perf_counter()
    clip = build_moviepy_clip(doc_path_or_dict, width, height, fps, assets_dir)
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    clip.write_videofile(str(out_path), fps=fps, codec="libx264", preset=preset,
                         ffmpeg_params=["-crf", str(crf)], audio=False, threads=threads,
                         logger=None)
    seconds = time.perf_counter() - t1
    frames = count_frames(out_path) or round(clip.duration * fps)
    clip.close()
    return {"fps": frames / seconds, "seconds": seconds, "frames": frames,
            "build_seconds": build, "bytes": os.path.getsize(out_path)}


def moviepy_frames(doc_path_or_dict: str | os.PathLike[str] | dict[str, Any], width: int,
                   height: int, fps: float, assets_dir: str | os.PathLike[str],
                   count: int | None = None) -> Iterator[np.ndarray]:
    """RGBA frames of the MoviePy composition (stand-in content for encode-only measurements)."""
    clip = build_moviepy_clip(doc_path_or_dict, width, height, fps, assets_dir)
    total = round(clip.duration * fps)
    alpha = np.full((height, width, 1), 255, dtype=np.uint8)
    for i in range(total if count is None else min(count, total)):
        rgb = clip.get_frame(i / fps)
        yield np.concatenate([rgb.astype(np.uint8, copy=False), alpha], axis=2)


def moviepy_process(doc_file: str | os.PathLike[str], width: int, height: int, fps: float,
                    out_path: str | os.PathLike[str], assets_dir: str | os.PathLike[str],
                    work: str | os.PathLike[str]) -> dict[str, Any]:
    """``moviepy_equivalent`` in a child process: its own figures, plus the whole process's wall
    time from spawn to exit (interpreter and imports included), as ours is measured."""
    result = Path(work) / f"moviepy-{height}.json"
    spec = {"doc": str(doc_file), "width": width, "height": height, "fps": fps, "out": str(out_path),
            "assets_dir": str(assets_dir), "result": str(result)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.peers", json.dumps(spec)], check=False,
                          cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"MoviePy child exited {proc.returncode}:\n" + proc.stdout.decode(errors="replace")[-3000:])
    res = json.loads(result.read_text())
    return {**res, "whole_process_fps": res["frames"] / total, "whole_process_seconds": total}


if __name__ == "__main__":  # the child of moviepy_process
    _spec = json.loads(sys.argv[1])
    Path(_spec["result"]).write_text(json.dumps(moviepy_equivalent(
        _spec["doc"], _spec["width"], _spec["height"], _spec["fps"], _spec["out"], _spec["assets_dir"])))
