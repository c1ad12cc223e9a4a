"""From a document to video files: segments and whole MP4s (stills are in `reelfarm.renderer.stills`).

A video is cut into chunks of frames; each chunk is drawn and encoded as a closed-GOP segment
that starts with a keyframe, in its own process (skia holds the GIL while drawing, so threads
would not scale), and the segments are joined by stream copy with the audio mix muxed once.
The farm calls `render_segment` and `finish_video` on separate machines; `render_video` does
both on this one.
"""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.audio import clip_sounds, has_audio, mix_audio
from reelfarm.renderer.backends import EncoderChoice, RasterChoice, choose_encoder, choose_raster
from reelfarm.renderer.chunks import plan_chunks
from reelfarm.renderer.concat import concat_segments
from reelfarm.renderer.encode import Encoder, X264Encoder
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Doc, frame_count, parse_doc
from reelfarm.renderer.raster import Rasterizer, SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import as_doc

Progress = Callable[[int, int], None]
CHUNK_X264_THREADS = 2


@dataclass(frozen=True)
class RenderStats:
    path: str
    width: int
    height: int
    fps: int
    frames: int
    seconds: float
    bytes: int

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def duration(self) -> float:
        return self.frames / self.fps


# -- segments ---------------------------------------------------------------------------------

def render_segment(doc: Doc | Mapping[str, Any], path: str, spec: RenderSpec, frames: range,
                   assets: AssetSource | None = None, encoder: Encoder | None = None,
                   progress: Callable[[int], None] | None = None, raster: Rasterizer | None = None) -> int:
    """Draw `frames` (a step-1 range of frame numbers) and encode them as one segment that
    starts with a keyframe.

    Returns the number of frames written. `progress` is called with frames done since the
    last call, every few frames. `raster`, when given, must draw `spec`'s format and size.
    """
    doc = as_doc(doc)
    raster = raster or SkiaRasterizer(doc, spec.format, *spec.size, assets, yuv=True)
    encoder = encoder or X264Encoder()
    pending = 0
    encoder.start(path, spec.width, spec.height, spec.fps, pixel_format=raster.pixel_format)
    try:
        for n in frames:
            encoder.write(raster.render(spec.time(n)))
            pending += 1
            if progress is not None and pending >= 8:
                progress(pending)
                pending = 0
    finally:
        encoder.finish()
    if progress is not None and pending:
        progress(pending)
    return len(frames)


def finish_video(doc: Doc | Mapping[str, Any], segments: Sequence[str], out_path: str,
                 assets: AssetSource | None = None, fmt: str | None = None, container: str = "mp4",
                 fps: int | None = None) -> None:
    """Join segments by stream copy and mux the document's audio mix once (as heard in format
    ``fmt``, the document's own when None); a GIF (``container``) is made from the segments' frames
    at ``fps`` with one palette and no sound (``reelfarm.renderer.encode_web``)."""
    if container == "gif":
        from reelfarm.renderer.encode_web import write_gif
        write_gif(list(segments), out_path, fps or as_doc(doc).fps)
        return
    concat_segments(list(segments), out_path, audio=mix_doc_audio(doc, assets, fmt), container=container)


def mix_doc_audio(doc: Doc | Mapping[str, Any], assets: AssetSource | None = None,
                  fmt: str | None = None, first: int = 0, count: int | None = None) -> Any:
    """The document's audio tracks and the sound of its video clips (as shown in format ``fmt``,
    the document's own when None) mixed over its whole timeline, or over timeline samples
    ``[first, first + count)`` (``reelfarm.renderer.audio``: float32 (2, n) at 48 kHz); None for a
    document with nothing to hear (no tracks, and no clip shown with its sound). The final MP4 and
    the render's stream (``reelfarm.renderer.hls``) both take their sound from this one mix; a
    draft's segments each mix their own span of it."""
    doc = as_doc(doc)

    def resolver(kind: str) -> Callable[[str], str]:
        def resolve(asset_id: str) -> str:
            asset = doc.asset(asset_id)
            if asset is None or assets is None:
                raise AssetError(f"{kind} asset {asset_id!r} cannot be found")
            return assets.path(asset_id, asset)
        return resolve

    sounding: dict[str, bool] = {}  # asset id -> whether its file has sound (opened once)
    clips = []
    for clip in clip_sounds(doc, fmt):
        if clip.asset not in sounding:
            sounding[clip.asset] = has_audio(resolver("video")(clip.asset))
        if sounding[clip.asset]:
            clips.append(clip)
    if not doc.audio and not clips:
        return None
    return mix_audio(doc.audio, resolver("audio"), doc.duration, clips=clips, resolve_clip=resolver("video"),
                     first=first, count=count)


# -- whole videos -----------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}
_Job = tuple[str, range]


def _worker_init(source: Mapping[str, Any], spec: RenderSpec, choice: RasterChoice, assets: Any, counter: Any,
                 family: EncoderChoice, encoder_kw: dict[str, Any]) -> None:
    # Forked children inherit the parent's Python signal handlers; a chunk process must die on
    # SIGTERM and leave SIGINT to its parent.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    doc = parse_doc(source)
    _WORKER.update(doc=doc, spec=spec, counter=counter, family=family, encoder_kw=encoder_kw, assets=assets,
                   raster=choice.make(doc, spec, assets, yuv=True))


def _worker_chunk(job: _Job) -> int:
    path, frames = job
    w = _WORKER
    counter = w["counter"]

    def tick(n: int) -> None:
        with counter.get_lock():
            counter.value += n
    return render_segment(w["doc"], path, w["spec"], frames, w["assets"], w["family"].make(**w["encoder_kw"]), tick,
                          w["raster"])


@dataclass(frozen=True)
class _VP9Choice(EncoderChoice):
    """WebM chunks: VP9 (with alpha for a transparent WebM), whatever encoder was asked for."""

    family: str = "vp9"
    alpha: bool = False

    def make(self, **overrides: Any) -> Encoder:
        from reelfarm.renderer.encode_web import VP9Encoder
        return VP9Encoder(alpha=self.alpha, threads=int(overrides.get("threads", 0)))


@dataclass(frozen=True)
class _TransparentChoice(RasterChoice):
    """A transparent WebM's chunks: drawn on the CPU in RGBA, nothing behind scenes without a background."""

    def make(self, doc: Doc, spec: RenderSpec, assets: AssetSource | None = None, yuv: bool = False) -> Rasterizer:
        return SkiaRasterizer(doc, spec.format, spec.width, spec.height, assets, transparent=True)


def render_video(doc: Doc | Mapping[str, Any], out_path: str, spec: RenderSpec | None = None,
                 workers: int | None = None, assets: AssetSource | None = None,
                 progress: Progress | None = None, encoder_kw: dict[str, Any] | None = None,
                 raster: str | RasterChoice = "cpu", encoder: str | EncoderChoice = "x264",
                 container: str = "mp4", transparent: bool = False) -> RenderStats:
    """Render a whole MP4 (or a `container` "gif" or "webm") on this machine, chunks spread over
    `workers` processes.

    `spec` defaults to the document's format and fps at 1080. `raster` names the rasterizer
    ("cpu", "gl", "auto"; see `reelfarm.renderer.backends`); a GL one also converts to YUV on the GPU.
    `encoder` names the encoder family ("x264", "nvenc", "auto"); every chunk uses the same one. A
    WebM's chunks are VP9 whatever `encoder` says, and a `transparent` one is drawn on the CPU; a
    GIF is made from H.264 chunks with one palette (`reelfarm.renderer.encode_web`).
    """
    doc = as_doc(doc)
    spec = spec or RenderSpec.for_doc(doc)
    choice = _TransparentChoice() if container == "webm" and transparent else choose_raster(raster)
    family = _VP9Choice(alpha=transparent) if container == "webm" else choose_encoder(encoder)
    workers = max(1, workers or os.cpu_count() or 1)
    total = frame_count(doc.duration, spec.fps)
    began = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="reelfarm-render-")
    try:
        chunks = plan_chunks(total, workers if total < 8 * spec.fps * workers else workers * 2)
        jobs = [(os.path.join(tmp, f"seg{i:04d}.mp4"), range(a, b)) for i, (a, b) in enumerate(chunks)]
        if workers == 1 or len(jobs) == 1:
            _render_inline(doc, jobs, spec, choice, assets, progress, total, family, encoder_kw or {})
        else:
            _render_pool(doc, jobs, spec, choice, assets, progress, total, workers, family, encoder_kw or {})
        finish_video(doc, [j[0] for j in jobs], out_path, assets, spec.format, container, spec.fps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.perf_counter() - began
    return RenderStats(out_path, spec.width, spec.height, spec.fps, total, seconds, os.path.getsize(out_path))


def _render_inline(doc: Doc, jobs: list[_Job], spec: RenderSpec, choice: RasterChoice,
                   assets: AssetSource | None, progress: Progress | None, total: int, family: EncoderChoice,
                   encoder_kw: dict) -> None:
    done = 0
    raster = choice.make(doc, spec, assets, yuv=True)

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)
    for path, frames in jobs:
        render_segment(doc, path, spec, frames, assets, family.make(**encoder_kw), tick, raster)


def _pool_context(choice: RasterChoice) -> Any:
    if choice.kind == "gl":
        from reelfarm.renderer.gl import context_in_process
        if context_in_process():
            return mp.get_context("spawn")  # EGL state does not survive fork()
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def _render_pool(doc: Doc, jobs: list[_Job], spec: RenderSpec, choice: RasterChoice, assets: AssetSource | None,
                 progress: Progress | None, total: int, workers: int, family: EncoderChoice,
                 encoder_kw: dict) -> None:
    ctx = _pool_context(choice)
    counter = ctx.Value("i", 0)
    # Two x264 threads per chunk process: it encodes one frame while the process draws the next,
    # which one thread each could not (measured at 1080p on 2 cores: about 7% more frames/s).
    encoder_kw = {"threads": CHUNK_X264_THREADS, **encoder_kw} if workers > 1 else encoder_kw
    # What this process dropped is collected here, and the rest frozen while the pool forks, so
    # that no chunk process collects what it inherited: a finalizer needing one of this process's
    # threads (a dropped swscale context joins its slice threads) would wait for ever there.
    gc.collect()
    gc.freeze()
    try:
        pool = ctx.Pool(min(workers, len(jobs)), _worker_init,
                        (dict(doc.source), spec, choice, assets, counter, family, encoder_kw))
    finally:
        gc.unfreeze()
    try:
        result = pool.map_async(_worker_chunk, jobs, chunksize=1)
        while not result.ready():
            result.wait(0.2)
            if progress is not None:
                progress(min(counter.value, total), total)
        result.get()
        # Let the workers exit on their own: terminate() relies on SIGTERM, which a host process
        # (an RQ worker, a server) may have taught its forked children to ignore.
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    if progress is not None:
        progress(total, total)
