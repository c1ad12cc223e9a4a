"""The farm's jobs: module-level functions that take ids and plain values and are idempotent.

They run wherever the queue runs them (an RQ work horse, an embedded pool process, a test's
``SimpleWorker``) and load everything else themselves through the process's task context
(``reelfarm.farm.runtime.context``). Running a job twice is harmless: a chunk overwrites its deterministic
segment key, and every status change is conditional, so a chunk of a canceled or finished render
does nothing.

Failures: a problem the user can act on (an unreadable asset, an unknown font, an invalid
document) fails the render at once with that message, without retries, since a retry would
meet it again. Anything else raises, the queue retries, and when retries are spent the queue
calls ``handle_task_failure``, which fails the render (refunding it) or the job.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from reelfarm.farm.runtime import accounting, draft_tasks
from reelfarm.farm.runtime.context import TaskContext, current, studio_of
from reelfarm.farm.runtime.queue import task_path as current_task_path
from reelfarm.farm.runtime.resilience import Outage, is_database_outage, wait_until
from reelfarm.farm.runtime.scratch import scratch_dir
from reelfarm.farm.services import segments, stream
from reelfarm.farm.services.assets import import_remote_assets, imported_keys
from reelfarm.farm.services.captions import publish_captions
from reelfarm.farm.services.drafts import DRAW_TASK as DRAW_DRAFT_TASK
from reelfarm.farm.services.errors import TaskFailed
from reelfarm.farm.services.graph import IMPORT_ASSETS_TASK, RENDER_CHUNK_TASK, STITCH_TASK
from reelfarm.farm.services.job_lifecycle import JOB_KINDS, JobLifecycle
from reelfarm.farm.services.lifecycle import Finished, OtherEncoderFamily, RenderLifecycle
from reelfarm.farm.services.progress import MAX_UNFINISHED, ProgressBatcher, fraction
from reelfarm.renderer.errors import AssetError, DocInvalid, FontError, SegmentsMismatch
from reelfarm.renderer.model import Doc, parse_doc
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared import storage_keys
from reelfarm.shared.logs import log_context
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos.objects import WorkspaceObjects
from reelfarm.studio.assets import StorageAssets

log = logging.getLogger("reelfarm.farm")

STATUS_CHECK_SEC = 2.0  # how often a running chunk looks whether its render was canceled
# the user's to fix: never retried, and never held against the node (reelfarm.farm.runtime.nodehealth)
PERMANENT = (AssetError, DocInvalid, FontError, SegmentsMismatch, TaskFailed)
_ADVICE = {
    AssetError: "fix or replace the asset, then render again",
    FontError: "choose one of the fonts the renderer ships, then render again",
    SegmentsMismatch: "render again",
    DocInvalid: "fix the document, then render again",
}


class _Stopped(Exception):
    """The render stopped being live while a chunk was drawing it (canceled, or failed elsewhere)."""


# -- renders --------------------------------------------------------------------------------

# One x264 thread per chunk: a node runs one chunk per core (one `reelfarm worker` per core, or
# the embedded executor's one slot per core), and x264's automatic threads on top of that made one
# worker take 1.5 cores, so a second worker on the machine added only a third (benchmarks/farm.py).
CHUNK_ENCODER_THREADS = 1


def job_lifecycle(ctx: TaskContext) -> JobLifecycle:
    return JobLifecycle(ctx.engine, ctx.clock, ctx.storage)


def lifecycle(ctx: TaskContext) -> RenderLifecycle:
    """The render lifecycle on the task context's database, storage and progress store."""
    return RenderLifecycle(ctx.engine, ctx.clock, ctx.storage, ctx.progress)


def _render_logged(task: Callable[..., None]) -> Callable[..., None]:
    """``task(render_id, ...)`` with the render's id, its workspace's and the id of the request
    that asked for it bound to every log line it writes (``reelfarm.shared.logs``), on whichever
    node and queue runs it, so one render can be followed from its request to its stitch."""
    @functools.wraps(task)
    def run(render_id: str, *args: Any) -> None:
        chunk = int(args[0]) if args else None
        with log_context(render_id=render_id, **render_log_fields(render_id)), \
                accounting.measured(task.__name__, render_id, chunk):  # what it used on this node
            task(render_id, *args)
    return run


def render_log_fields(render_id: str) -> dict[str, str | None]:
    """The render's workspace id and the id of the request that asked for it, for log lines; empty
    when the render is gone or the database cannot say."""
    try:
        with current().engine.connect() as conn:
            render = renders_repo.find_render(conn, render_id)
    except Exception:  # noqa: BLE001 - the task meets the database's outage itself, and waits it out
        return {}
    return {} if render is None else {"workspace_id": render.workspace_id, "request_id": render.request_id}


@_render_logged
def import_assets(render_id: str) -> None:
    """Fetch the remote images and audio of the render's document into its storage folder, once,
    before any chunk draws (``reelfarm.farm.services.assets``). An asset the user must fix fails the render."""
    ctx = current()
    if (live := _live_render(ctx, render_id)) is None:
        return
    _, doc = live
    try:
        import_remote_assets(doc, studio_of(ctx).asset_fetcher, ctx.storage, storage_keys.render_prefix(render_id))
    except AssetError as exc:
        fail_render(render_id, _user_message(exc))
        return
    lifecycle(ctx).progressed(render_id)


def _live_render(ctx: TaskContext, render_id: str) -> tuple[renders_repo.Render, dict[str, Any]] | None:
    """The render and its version's document while it is queued or running; None once it is not."""
    with ctx.engine.connect() as conn:
        render = renders_repo.find_render(conn, render_id)
        if render is None or render.status not in renders_repo.LIVE:
            return None
        return render, videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc


def _render_assets(ctx: TaskContext, render: renders_repo.Render) -> StorageAssets:
    """The render's assets: its workspace's objects, and what was imported for it."""
    return StorageAssets(ctx.storage, WorkspaceObjects(ctx.engine, render.workspace_id),
                         storage_keys.render_prefix(render.id))


def _spec(render: renders_repo.Render) -> RenderSpec:
    return RenderSpec(render.format, render.resolution, render.fps)


@_render_logged
def render_chunk(render_id: str, index: int) -> None:
    """Draw and encode chunk ``index`` of the render and store it at ``renders/<id>/seg<index>.mp4``,
    and its part of the render's stream (``reelfarm.farm.services.stream``)."""
    ctx = current()
    # OtherEncoderFamily (the render's family is not this node's): raised, retried on another node
    render = lifecycle(ctx).start(render_id, _families(ctx), ctx.raster.kind if ctx.raster else "cpu")
    if render is None:
        return  # canceled, failed, finished or gone: nothing to do
    with ctx.engine.connect() as conn:
        doc = videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc
    try:
        parsed = parse_doc(doc)  # once per chunk: the plan and the drawing share it
    except DocInvalid as exc:
        fail_render(render_id, _user_message(exc))
        return
    chunks = segments.chunk_frames(render, parsed)
    if index >= len(chunks):
        raise RuntimeError(f"render {render_id} has {len(chunks)} chunks, not {index + 1}")
    start, end = chunks[index]
    report = _Reporter(ctx, render_id)
    with scratch_dir("chunk") as tmp:
        path = os.path.join(tmp, f"seg{index}.mp4")
        try:
            family = render.encoder or "x264"
            _draw_segment(ctx, render, parsed, path, range(start, end), report, family)
            if (now := lifecycle(ctx).family(render_id)) not in (None, family):
                # moved to another family while this chunk drew: its segment would not join
                _draw_segment(ctx, render, parsed, path, range(start, end), _Reporter(ctx, render_id), now)
        except _Stopped:
            return
        except PERMANENT as exc:
            fail_render(render_id, _user_message(exc))
            return
        report.flush()
        ctx.storage.put_file(storage_keys.segment_key(render_id, index), path, "video/mp4")
        accounting.encoded(end - start)
        try:  # the stream's part, playable at once (an MP4's only)
            streamed = _publish(ctx, render, parsed, index, path) if render.container == "mp4" else []
        except PERMANENT as exc:
            fail_render(render_id, _user_message(exc))
            return
    _record_chunk(ctx, render_id, streaming=0 in streamed)
    log.info("render %s: chunk %d stored (frames %d to %d)", render_id, index, start, end - 1)


def _publish(ctx: TaskContext, render: renders_repo.Render, parsed: Doc, index: int | None = None,
             path: str | None = None) -> list[int]:
    """Store chunk ``index``'s stream segment (from its MP4 at ``path``) and, for a video with
    sound, those of stored chunks still without one (reused before the render's audio was mixed;
    ``reelfarm.farm.services.stream``); returns the chunks whose segments it stored."""
    audio = stream.stream_audio(ctx.storage, render, parsed, _render_assets(ctx, render))
    done = []
    if index is not None and path is not None and stream.publish_segment(ctx.storage, render, index, path, audio):
        done.append(index)
    if audio is not None:
        done += stream.publish_stored(ctx.storage, render, lambda i: storage_keys.segment_key(render.id, i), audio)
    return done


def _record_chunk(ctx: TaskContext, render_id: str, streaming: bool = False) -> None:
    """Mark the render alive after a chunk is stored, with its progress so far (the figure the API
    shows while the progress store cannot be reached), waiting out a database outage: the segment
    is already in storage, and failing here would only have it drawn again."""
    done = fraction(ctx.progress, render_id, None)
    wait_until(lambda: lifecycle(ctx).progressed(render_id, done or None, streaming), Outage("the database"),
               doing="recording a finished chunk", is_down=is_database_outage, resumed="chunk recorded")


def _families(ctx: TaskContext) -> tuple[str, ...]:
    """The encoder families this node can encode: its own, and x264, which every node has."""
    own = ctx.encoder.family if ctx.encoder is not None else "x264"
    return (own,) if own == "x264" else (own, "x264")


def _draw_segment(ctx: TaskContext, render: renders_repo.Render, parsed: Doc, path: str, frames: range,
                  report: _Reporter, family: str = "x264") -> None:
    """Draw ``frames`` with the node's rasterizer (GL falls back to the CPU with a logged reason)
    and encode them with the render's encoder ``family`` (the node's own encoder when it is that
    family, x264 otherwise)."""
    spec, assets = _spec(render), _render_assets(ctx, render)
    from reelfarm.renderer.backends import choose_raster  # loaded only where a chunk runs
    from reelfarm.renderer.render import render_segment

    choice = ctx.raster or choose_raster(ctx.settings.raster if ctx.settings else "cpu")
    if render.container == "webm":  # VP9 on the CPU, whatever the node's own encoder
        from reelfarm.renderer.encode_web import webm_segment_tools
        raster, encoder = webm_segment_tools(parsed, spec, assets, choice, render.transparent, CHUNK_ENCODER_THREADS)
    else:
        raster = choice.make(parsed, spec, assets, yuv=True)
        encoder = _encoder(ctx, family, render.id).make(threads=CHUNK_ENCODER_THREADS)
    try:
        render_segment(parsed, path, spec, frames, assets=assets, progress=report, raster=raster, encoder=encoder)
    finally:
        raster.close()


def _encoder(ctx: TaskContext, family: str, render_id: str) -> Any:
    from reelfarm.renderer.backends import EncoderChoice

    if ctx.encoder is not None and ctx.encoder.family == family:
        return ctx.encoder
    if family != "x264":
        raise OtherEncoderFamily(render_id, family, "/".join(_families(ctx)))
    return EncoderChoice("x264")


@_render_logged
def stitch(render_id: str) -> None:
    """Join the render's segments, mux its audio, write the poster, and mark it succeeded."""
    ctx = current()
    if (live := _live_render(ctx, render_id)) is None:
        return
    render, doc = live
    from reelfarm.renderer.concat import check_segments
    from reelfarm.renderer.render import finish_video
    from reelfarm.renderer.stills import write_poster

    keys = [storage_keys.segment_key(render_id, i) for i in range(render.chunks or 0)]
    missing = [key for key in keys if not ctx.storage.exists(key)]
    if missing:
        raise RuntimeError(f"segments missing for render {render_id}: {', '.join(missing)}")
    lifecycle(ctx).start(render_id, None)  # running, should every chunk have been reused (none started it)
    lifecycle(ctx).progressed(render_id, MAX_UNFINISHED)
    assets = _render_assets(ctx, render)
    from reelfarm.renderer.encode_web import content_type
    video_key = storage_keys.video_key(render_id, render.container)
    with scratch_dir("stitch") as tmp:
        out, poster = os.path.join(tmp, f"video.{render.container}"), os.path.join(tmp, "poster.jpg")
        try:
            local = [ctx.storage.open_local(key) for key in keys]
            check_segments(local, names=[f"segment {i + 1}" for i in range(len(keys))])  # one encoder family
            finish_video(doc, local, out, assets, render.format, render.container, render.fps)
            write_poster(doc, poster, _spec(render), assets)
            if render.container == "mp4" and 0 in _publish(ctx, render, parse_doc(doc)):  # all reused: starts here
                lifecycle(ctx).progressed(render_id, MAX_UNFINISHED, streaming=True)
        except PERMANENT as exc:
            fail_render(render_id, _user_message(exc))
            return
        ctx.storage.put_file(video_key, out, content_type(render.container))
        ctx.storage.put_file(storage_keys.poster_key(render_id), poster, "image/jpeg")
        size = os.path.getsize(out)
    captions = publish_captions(ctx.storage, render_id, doc)
    # kept under their fingerprints for the workspace's later renders, before they go as scratch
    prints = segments.fingerprints(ctx.storage, WorkspaceObjects(ctx.engine, render.workspace_id), render, doc)
    segments.keep(ctx.engine, ctx.clock, ctx.storage, render, prints, lambda i: storage_keys.segment_key(render_id, i))
    accounting.settle()  # its cost stored before it reads as succeeded
    done = lifecycle(ctx).succeed(render, Finished(video_key, storage_keys.poster_key(render_id), size,
                                                   tuple(keys + imported_keys(doc, storage_keys.render_prefix(render_id))),
                                                   captions))
    if done is not None:
        log.info("render %s: stitched %d segment(s) into %d bytes", render_id, len(keys), size)


def fail_render(render_id: str, message: str) -> bool:
    """Fail a live render with ``message`` (refunded, ``render.failed``); False when it was not live."""
    return lifecycle(current()).fail(render_id, message)


class _Reporter:
    """The progress callback of a chunk: batches frames into the store, counts them for the node
    that watches for stuck chunks (``TaskContext.frames_drawn``), and every few seconds checks that
    the render is still live, stopping the chunk (``_Stopped``) when it is not."""

    def __init__(self, ctx: TaskContext, render_id: str) -> None:
        self.ctx = ctx
        self.render_id = render_id
        self.batch = ProgressBatcher(ctx.progress, render_id)
        self._checked = time.monotonic()
        self.database = Outage("the database")

    def __call__(self, n: int) -> None:
        self.batch(n)
        if self.ctx.frames_drawn is not None:
            self.ctx.frames_drawn(n)
        if time.monotonic() - self._checked >= STATUS_CHECK_SEC:
            self._checked = time.monotonic()
            try:
                with self.ctx.engine.connect() as conn:
                    render = renders_repo.find_render(conn, self.render_id)
            except Exception as exc:
                if not is_database_outage(exc):
                    raise
                # the check only stops canceled renders early: draw on, and look again later
                self.database.lost(exc, f"checking that render {self.render_id} is live; drawing on")
                return
            self.database.ok()
            if render is None or render.status not in renders_repo.LIVE:
                raise _Stopped()

    def flush(self) -> None:
        self.batch.flush()


# -- stills ---------------------------------------------------------------------------------

def render_stills(job_id: str) -> None:
    """Render the job's stills (stage ``render``, remote assets imported first), store them (stage
    ``upload``), record the result."""
    ctx = current()
    job = job_lifecycle(ctx).start(job_id, "render")
    if job is None:
        return
    with ctx.engine.connect() as conn:
        doc = videos_repo.get_version_by_id(conn, job.workspace_id, job.params["version_id"]).doc
    _render_stills(ctx, job, doc, storage_keys.stills_prefix(job_id))


def _render_stills(ctx: TaskContext, job: jobs_repo.Job, doc: dict[str, Any], prefix: str) -> None:
    from reelfarm.renderer.stills import iter_stills_png

    times: list[float] = list(job.params["times"])
    fmt, resolution = job.params["format"], int(job.params["resolution"])
    # A still's pixels do not depend on fps.
    spec = RenderSpec(fmt, resolution)
    width, height = spec.size
    images = []
    failure = None
    try:
        import_remote_assets(doc, studio_of(ctx).asset_fetcher, ctx.storage, prefix)
        stills = iter_stills_png(doc, times, spec, StorageAssets(ctx.storage, WorkspaceObjects(ctx.engine, job.workspace_id), prefix))
        for i in range(len(times)):
            images.append(next(stills))
            if not _stage(ctx, job.id, "render", 0.8 * (i + 1) / len(times)):
                return  # canceled
    except PERMANENT as exc:
        failure = _user_message(exc)
    finally:
        # the imported copies go once drawn, before the job's end is recorded
        for key in imported_keys(doc, prefix):
            ctx.storage.delete(key)
    if failure is not None:
        fail_job(job.id, failure)
        return
    results = []
    for i, (t, png) in enumerate(zip(times, images)):
        key = storage_keys.stills_key(job.id, i)
        ctx.storage.put_bytes(key, png, "image/png")
        results.append({"time": t, "key": key, "width": width, "height": height})
        if not _stage(ctx, job.id, "upload", 0.8 + 0.2 * (i + 1) / len(times)):
            return
    job_lifecycle(ctx).succeed(job.id, lambda conn: {"stills": results})


def fail_job(job_id: str, message: str) -> bool:
    """Fail a live job with ``message``; False when it was not live. A failed generation fails its
    video and writes ``video.generation_failed`` in the same transaction."""
    return job_lifecycle(current()).fail(job_id, message)


def _stage(ctx: TaskContext, job_id: str, stage: str, progress: float) -> bool:
    return job_lifecycle(ctx).stage(job_id, stage, progress)


# -- failures -------------------------------------------------------------------------------

def handle_task_failure(func_path: str, args: Sequence[Any], reason: str) -> None:
    """The queues' failure handler: a task failed for good (retries spent, or its process died)."""
    handlers: dict[str, Callable[[Sequence[Any], str], None]] = {
        IMPORT_ASSETS_TASK: lambda a, r: _fail_render_quietly(
            a[0], r if _advised(r) else f"fetching the video's images and audio failed: {r}"),
        RENDER_CHUNK_TASK: lambda a, r: _fail_render_quietly(a[0], f"rendering chunk {int(a[1]) + 1} failed: {r}"),
        STITCH_TASK: lambda a, r: _fail_render_quietly(a[0], f"joining the rendered chunks failed: {r}"),
        DRAW_DRAFT_TASK: lambda a, r: draft_tasks.fail_for_good(a[0], r),
    }
    for kind in JOB_KINDS.values():
        handlers[kind.task] = functools.partial(_fail_job_task, kind.doing)
    handler = handlers.get(current_task_path(func_path))
    if handler is None:
        log.error("task %s%r failed for good: %s", func_path, tuple(args), reason)
        return
    handler(args, reason)


def _advised(reason: str) -> bool:
    """Whether a failure's reason already says what to change (``AssetUnreachable``'s do)."""
    return reason.endswith(", then render again")


def _fail_render_quietly(render_id: str, message: str) -> None:
    fail_render(render_id, message if _advised(message) else f"{message}; try again")


def _fail_job_task(doing: str, args: Sequence[Any], reason: str) -> None:
    fail_job(args[0], f"{doing} failed: {reason}; try again")


def _user_message(exc: BaseException) -> str:
    for kind, advice in _ADVICE.items():
        if isinstance(exc, kind):
            return f"{exc}; {advice}"
    return str(exc)
