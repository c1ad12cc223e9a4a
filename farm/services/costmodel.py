"""A model of what drawing a document costs the farm, in CPU seconds: the built-in baseline of a
render's estimate (``reelfarm.farm.services.estimates``), which the farm's own measurements scale.

A render is its chunks (as the farm plans them: ``reelfarm.renderer.chunks.scene_chunks``), one
task each, and a stitch. What a chunk costs grows with:

- ``frames``, and ``frames`` × megapixels: every frame is converted to YUV and encoded, drawn or
  not;
- ``active`` × megapixels: the share of each frame where something moves (a layer's enter or
  exit, keyframes, Ken Burns: the layer's box; a transition: the whole frame), summed over the
  chunk's frames: the rasterizer redraws only what changed since the frame before
  (``reelfarm.renderer.damage``), so a still frame costs little more than its encoding;
- ``clip`` × megapixels: frames that show a video clip, each decoded and scaled;
- one task's start (its rasterizer, fonts, encoder).

The stitch costs a start and a little a frame (segments are joined by stream copy; the poster and
the sound are made once). ``BASELINE`` holds the coefficients measured with ``python -m
benchmarks.estimates`` on the built-in stories (its results in ``benchmarks/results``); they are
CPU seconds of one core of that machine. Pure: a function of the document and the render's
format, size and frame rate.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reelfarm.renderer.model import Doc, Layer, Scene
from reelfarm.renderer.spec import DEFAULT_CONTAINER, RenderSpec


@dataclass(frozen=True)
class Output:
    """What a render request asks for, as the estimate reads it."""

    fmt: str
    resolution: int
    fps: int | None = None
    container: str = DEFAULT_CONTAINER
    transparent: bool = False


@dataclass(frozen=True)
class Coefficients:
    """CPU seconds for each unit of a chunk's features (``ChunkWork``) and of the stitch."""

    chunk: float  # a chunk task's start
    frame: float  # a frame, whatever its size
    frame_mpx: float  # a frame's megapixel, encoded
    active_mpx: float  # a megapixel of a frame in which something moves
    clip_mpx: float  # a megapixel of a frame that shows a clip
    stitch: float  # the stitch task's start
    stitch_frame: float  # a frame joined by the stitch


# Fitted by ``python -m benchmarks.estimates --fit`` to the built-in stories at 720p, 1080p and 2160p
# on a 2-core machine with nothing else running (benchmarks/results/estimates-720-1080-2160-20261206T134831.json;
# the fits before were made on a loaded machine, where the same work measured 30-50% more CPU
# seconds: estimates-720-1080-20261206T094507.json); clip_mpx from benchmarks.footage
# (benchmarks/results/footage-1080p-20261206T023701.json: a video of 900 frames whose 300 first show
# a 1080p clip cost 11.4 CPU s more than with a still image, 38 ms a clip frame, 0.018 s a megapixel)
BASELINE = Coefficients(chunk=0.11473, frame=0.0, frame_mpx=0.00787, active_mpx=0.00221, clip_mpx=0.018,
                        stitch=0.0345, stitch_frame=0.000259)


@dataclass(frozen=True)
class ChunkWork:
    """What one chunk draws: its frames, the frames' worth of pixels redrawn because something moved
    (each frame's moving share, at most 1), the frames that show a clip, and a frame's megapixels."""

    frames: int
    active: float
    clip: int
    mpx: float


def chunk_cpu(work: ChunkWork, k: Coefficients = BASELINE) -> float:
    """The model's CPU seconds for one chunk task."""
    return (k.chunk + work.frames * (k.frame + k.frame_mpx * work.mpx)
            + work.mpx * (k.active_mpx * work.active + k.clip_mpx * work.clip))


def stitch_cpu(frames: int, k: Coefficients = BASELINE) -> float:
    """The model's CPU seconds for the stitch of a render of ``frames`` frames."""
    return k.stitch + k.stitch_frame * frames


Span = tuple[float, float]
Moving = tuple[float, float, float]  # from, to (seconds of the video), the share of the frame redrawn


def chunk_work(doc: Doc, spec: RenderSpec, chunks: Sequence[tuple[int, int]]) -> list[ChunkWork]:
    """Each chunk's work (``chunks``: frame ranges, end excluded) in ``spec``'s format and size."""
    moving, clips = _spans(doc, spec.format)
    mpx = spec.width * spec.height / 1e6
    works = []
    for first, end in chunks:
        times = [n / spec.fps for n in range(first, end)]
        active = sum(min(1.0, sum(share for a, b, share in moving if a <= t < b)) for t in times)
        works.append(ChunkWork(end - first, round(active, 3), _count(times, clips), mpx))
    return works


def _count(times: list[float], spans: list[Span]) -> int:
    return sum(1 for t in times if any(a <= t < b for a, b in spans))


def _share(layer: Layer) -> float:
    """The share of the frame a layer's box covers (a text or group without a size: a tenth)."""
    if layer.w <= 0 or layer.h <= 0:
        return 0.1
    return min(1.0, layer.w * layer.scale) * min(1.0, layer.h * layer.scale)


def _spans(doc: Doc, fmt: str) -> tuple[list[Moving], list[Span]]:
    """The times (seconds of the video) in which something moves, with the share of the frame it
    redraws, and those that show a clip."""
    moving: list[Moving] = []
    clips: list[Span] = []
    for index, (start, scene) in enumerate(zip(doc.scene_starts(), doc.scenes, strict=True)):
        if index and scene.transition.type != "cut" and scene.transition.duration > 0:
            moving.append((start, start + scene.transition.duration, 1.0))
        end = start + scene.duration
        background = scene.background
        if background.type == "video":
            clips.append((start, end))
        elif background.ken_burns is not None:
            moving.append((start, end, 1.0))
        _layer_spans(_layers(scene, fmt), start, scene.duration, moving, clips)
    return moving, clips


def _layers(scene: Scene, fmt: str) -> Iterable[Layer]:
    return (layer.for_format(fmt) for layer in scene.layers)


def _layer_spans(layers: Iterable[Layer], offset: float, duration: float, moving: list[Moving],
                 clips: list[Span]) -> None:
    for layer in layers:
        if layer.hidden:
            continue
        begin = offset + layer.start
        end = offset + (duration if layer.end is None else min(layer.end, duration))
        if layer.type == "video":
            clips.append((begin, end))
        share = _share(layer)
        if layer.ken_burns is not None:
            moving.append((begin, end, share))
        if layer.enter is not None:
            enter = begin + layer.enter.delay
            moving.append((enter, enter + layer.enter.duration, share))
        if layer.exit is not None:
            moving.append((end - layer.exit.duration, end, share))
        times = [key.t for _, keys in layer.keyframes for key in keys]
        if len(times) > 1:
            moving.append((offset + min(times), offset + max(times), share))
        _layer_spans(layer.children, offset, duration, moving, clips)
