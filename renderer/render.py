"""From a document to video files: segments and whole MP4s (stills are in `reelfarm.renderer.stills`).

A video is cut into chunks of frames; each chunk is drawn and encoded as a closed-GOP segment
that starts with a keyframe, in its own process (skia holds the GIL while drawing, so threads
would not scale), and the segments are joined by stream copy with the audio mix muxed once.
The farm calls `render_segment` and `finish_video` on separate machines; `render_video` does
both on this one.
"""
from __future__ import annotations

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
from reelfarm.renderer.audio import mix_audio
from reelfarm.renderer.backends import EncoderChoice, RasterChoice, choose_encoder, choose_raster
from reelfarm.renderer.chunks import plan_chunks
from reelfarm.renderer.concat import concat_segments
from reelfarm.renderer.encode import Encoder, X264Encoder
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
                 assets: AssetSource | None = None) -> None:
    """Join segments by stream copy and mux the document's audio mix once."""
    concat_segments(list(segments), out_path, audio=mix_doc_audio(doc, assets))


def mix_doc_audio(doc: Doc | Mapping[str, Any], assets: AssetSource | None = None) -> Any:
    """The document's audio tracks mixed over its whole timeline (``reelfarm.renderer.audio``:
    float32 (2, n) at 48 kHz); None for a document without audio. The final MP4 and the render's
    stream (``reelfarm.renderer.hls``) both take their sound from this one mix."""
    doc = as_doc(doc)
    if not doc.audio:
        return None

    def resolve(asset_id: str) -> str:
        asset = doc.asset(asset_id)
        if asset is None or assets is None:
            from reelfarm.renderer.errors import AssetError
            raise AssetError(f"audio asset {asset_id!r} cannot be found")
        return assets.path(asset_id, asset)
    return mix_audio(doc.audio, resolve, doc.duration)


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


def render_video(doc: Doc | Mapping[str, Any], out_path: str, spec: RenderSpec | None = None,
                 workers: int | None = None, assets: AssetSource | None = None,
                 progress: Progress | None = None, encoder_kw: dict[str, Any] | None = None,
                 raster: str | RasterChoice = "cpu", encoder: str | EncoderChoice = "x264") -> RenderStats:
    """Render a whole MP4 on this machine, chunks spread over `workers` processes.

    `spec` defaults to the document's format and fps at 1080. `raster` names the rasterizer
    ("cpu", "gl", "auto"; see `reelfarm.renderer.backends`); a GL one also converts to YUV on the GPU.
    `encoder` names the encoder family ("x264", "nvenc", "auto"); every chunk uses the same one.
    """
    doc = as_doc(doc)
    spec = spec or RenderSpec.for_doc(doc)
    choice = choose_raster(raster)
    family = choose_encoder(encoder)
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
        finish_video(doc, [j[0] for j in jobs], out_path, assets)
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
    pool = ctx.Pool(min(workers, len(jobs)), _worker_init,
                    (dict(doc.source), spec, choice, assets, counter, family, encoder_kw))
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
