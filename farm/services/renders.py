"""Render requests: dedup, credits and the chunk plan (the Render resource: ``reelfarm.farm.services.resources``).

``RenderService.request`` is the one place a render is born. Under the workspace row lock (taken
first, as everywhere; SQLite's ``BEGIN IMMEDIATE`` serialises the same way) it looks for an
identical render, charges the version if no live render of it is paid for, and writes the row;
only after the commit does it hand the chunk and stitch jobs to the queue. If the queue cannot
take them, a compensating transaction removes the row and its ledger rows and the caller gets
``QueueUnavailable``: nothing is left behind.

Dedup: ``dedup_hash`` is SHA-256 over (version doc hash, format, resolution, fps, renderer
version), and the container and its transparency for a GIF or WebM (an MP4's hash is as it always
was), so an MP4 and a GIF of one version are two renders and two GIFs one.

Containers (``reelfarm.renderer.encode_web``): a GIF is made at most 720 px on its short side and
24 fps (``clamp_for_container``: the values asked for are lowered, and the render's ``clamped``
names them); its chunks are the x264 segments an MP4 would have (shared with one through segment
reuse), turned into one GIF with one palette at the stitch. A WebM's chunks are VP9 segments joined
by stream copy, with Opus sound. Neither is encoded with NVENC: their chunks go to CPU encoders
(family x264). Only an MP4 has a stream while it renders (HLS of MPEG-TS segments with AAC: a
WebM's VP9 chunks cannot be such segments, and a GIF is watched once it is made). Within a video, a queued, running or succeeded render with the hash is returned (a
unique partial index backs this); failed and canceled ones are not reused. The scope is the
video, not the hash alone: two workspaces with identical documents must not share a render.

Pools (``reelfarm.farm.services.pools``): a render runs in the pool of nodes it names (``pool``), one
its workspace is limited to (``pool_problems``: else 400 ``forbidden_pool``), or in its workspace's
default, or on any node; the pool is fixed on the row (``renders.pool``) and its chunks carry it to
the dispatcher. The pool is not part of the dedup hash: where a render is drawn does not change a
byte of it, so an identical render asked for in another pool is that render, in the pool it was
first asked in (and its segments are reused across pools as across renders).

Priority: a render in flight asked for again at a higher priority takes it, so a person asking
for ``normal`` does not wait behind a batch because the batch asked first. Its row is raised in
the transaction, its chunks still waiting in the queue after the commit
(``JobQueue.raise_priority``); chunks already running are left as they are, and a request at a
lower priority never lowers one. If the queue cannot take the raise, the row is set back with the
rest (``QueueUnavailable``); chunks raised before the queue failed stay raised, as a retry of the
request would leave them. A render raised between its creation's commit and its enqueue (its
chunks not in the queue yet) has them raised by its creator, which reads the row again after.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from reelfarm.farm.services import captions, costs, segments, stream
from reelfarm.farm.services.assets import remote_assets
from reelfarm.farm.services.costmodel import Output
from reelfarm.farm.services.errors import InvalidRequest, QueueUnavailable
from reelfarm.farm.services.fairness import DEFAULT_PRIORITY, PRIORITIES, outranks
from reelfarm.farm.services.graph import enqueue_graph, graph_of, render_job_ids
from reelfarm.farm.services.lifecycle import RenderLifecycle
from reelfarm.farm.services.pools import pool_problems, render_pool
from reelfarm.farm.services.progress import ProgressStore
from reelfarm.farm.services.queues import NVENC_QUEUE, RENDER_QUEUE, JobQueue, family_of
from reelfarm.farm.services.resources import RenderResource, render_resource
from reelfarm.renderer import RENDERER_VERSION
from reelfarm.renderer.chunks import scene_chunks
from reelfarm.renderer.model import Doc, build_doc, frame_count
from reelfarm.renderer.spec import (
    DEFAULT_CONTAINER,
    RenderSpec,
    clamp_for_container,
    container_problems,
    spec_problems,
)
from reelfarm.shared.clock import Clock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.logs import current_context
from reelfarm.shared.repos import renders as repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as workspaces_repo
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.repos.objects import WorkspaceObjects
from reelfarm.shared.storage import Storage
from reelfarm.shared.storage_keys import segment_key
from reelfarm.studio.videos import check_usable

log = logging.getLogger("reelfarm.farm")

# -- names and numbers ----------------------------------------------------------------------

if TYPE_CHECKING:  # the allowance estimates renders with what this module computes: handed in, not imported
    from reelfarm.farm.services.allowance import ComputeAllowance, Gate, Quote


def allowance_output(resolution: int, fps: int | None, output: _Output) -> Output:
    """A request's output as the allowance's estimate reads it (its format set per format)."""
    return Output("", resolution, fps, output.container, output.transparent)


def dedup_hash(doc_hash: str, spec: RenderSpec, renderer_version: str = RENDERER_VERSION,
               container: str = DEFAULT_CONTAINER, transparent: bool = False) -> str:
    """SHA-256 (hex) identifying a render's output: equal hashes make equal files."""
    parts: list[Any] = [doc_hash, spec.format, spec.resolution, spec.fps, renderer_version]
    if container != DEFAULT_CONTAINER:  # an MP4's hash stays what it was before containers
        parts += [container, transparent]
    canonical = json.dumps(parts, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def credits_for(duration_sec: float) -> int:
    """What rendering a version costs: one credit per started minute, at least one."""
    return max(1, math.ceil(duration_sec / 60))


# -- the service ----------------------------------------------------------------------------

class RenderService:
    """Requests, reads and cancels renders; the API's only way into them."""

    def __init__(self, engine: Engine, queue: JobQueue, storage: Storage, clock: Clock,
                 progress: ProgressStore, settings: Settings | None = None, retries: int = 2,
                 allowance: ComputeAllowance | None = None) -> None:
        self.engine = engine
        self.allowance = allowance  # the workspace's monthly compute allowance, checked before a render is made
        self.queue = queue
        self.storage = storage
        self.clock = clock
        self.progress = progress
        self.settings = settings
        self.retries = retries
        self.lifecycle = RenderLifecycle(engine, clock, storage, progress)
        self.streams = stream.StreamLinks(settings.secret_key, settings.public_url, clock) if settings else None

    def request(self, workspace_id: str, video_id: str, fmt: str, resolution: int = 1080,
                fps: int | None = None, priority: str = DEFAULT_PRIORITY, container: str = DEFAULT_CONTAINER,
                transparent: bool = False, pool: str | None = None) -> RenderResource:
        """The render of the video's current version in ``fmt``: an identical one, or a new one.

        Raises:
            InvalidRequest: format, resolution or fps out of range, a pool that is not one, or one the
                workspace's renders may not run in.
            shared.errors.NotFound: no such video in the workspace.
            studio.videos.VideoStateError: the video is generating or archived.
            shared.errors.InsufficientCredits: the version needs a charge the balance cannot pay.
            AllowanceExceeded: the render would pass the workspace's monthly compute allowance.
            QueueUnavailable: the queue is down; nothing was created or charged.
        """
        return self.request_many(workspace_id, video_id, [fmt], resolution, fps, priority, container,
                                 transparent, pool)[0]

    def request_many(self, workspace_id: str, video_id: str, formats: Sequence[str], resolution: int = 1080,
                     fps: int | None = None, priority: str = DEFAULT_PRIORITY, container: str = DEFAULT_CONTAINER,
                     transparent: bool = False, pool: str | None = None) -> list[RenderResource]:
        """One render per format (variants), created and charged together: all or nothing.

        A repeated format gets the same render. ``priority`` (``normal`` or ``low``) places new
        renders in the workspace's line (``reelfarm.farm.services.fairness``); an identical render in
        flight asked for at a lower one is raised to it, with its chunks still waiting (the module
        docstring's "Priority"), and one asked for at a higher one keeps its own. Raises what
        ``request`` raises. New renders run in ``pool`` (the module docstring's "Pools").
        """
        allowed = self._allowed_pools(workspace_id)
        _validate(formats, resolution, fps, priority, container, transparent, pool_problems(pool, allowed))
        output = _Output(container, transparent)
        with self.engine.connect() as conn:  # 404 and 409 before 503: they tell the client more
            check_usable(videos_repo.get_video(conn, workspace_id, video_id), "render")
        quote = None if self.allowance is None else \
            self.allowance.quote(workspace_id, video_id, formats, allowance_output(resolution, fps, output))
        self.queue.ping()  # fail before writing anything when the queue is known to be down
        in_pool = render_pool(pool, allowed)
        chunk_queue = self.queue.chunk_queue(in_pool)  # render-nvenc, render-gpu or render, from the pool's live nodes
        if container != DEFAULT_CONTAINER and chunk_queue == NVENC_QUEUE:
            chunk_queue = RENDER_QUEUE  # NVENC makes H.264 for MP4s only; a GIF's or WebM's chunks encode on a CPU
        asked = self._create(workspace_id, video_id, list(dict.fromkeys(formats)), resolution, fps, priority,
                             family_of(chunk_queue), output, in_pool, quote)
        self._hand_over_or_undo(asked, chunk_queue)
        found = asked.renders
        if asked.created:  # as enqueued: with their family planned and the frames they reused
            with self.engine.connect() as conn:
                found = [repo.get_render(conn, workspace_id, r.id) for r in found]
            self._catch_up(asked.created, found)
        by_format = {r.format: r for r in found}
        return [self._resource(_as_asked(by_format[f], resolution, fps)) for f in formats]

    def get(self, workspace_id: str, render_id: str) -> RenderResource:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            render = repo.get_render(conn, workspace_id, render_id)
        return self._resource(render)

    def list_for_video(self, workspace_id: str, video_id: str) -> list[RenderResource]:
        """The video's renders, newest first. Raises NotFound for no such video."""
        with self.engine.connect() as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            renders = repo.list_renders(conn, workspace_id, video_id)
            numbers = {v.id: v.number for v in videos_repo.list_versions(conn, workspace_id, video_id)} \
                if any(r.status == "succeeded" for r in renders) else {}
        return [self._resource(r, (video.title, numbers.get(r.version_id))) for r in renders]

    def cancel(self, workspace_id: str, render_id: str) -> RenderResource:
        """``queued|running -> canceled`` with the charge released.

        Raises:
            shared.errors.NotFound: no such render in the workspace.
            StateConflict: the render has already finished (succeeded, failed or canceled).
        """
        ended = self.lifecycle.cancel(workspace_id, render_id)
        self._drop_jobs(ended)  # its tasks would find the render canceled and do nothing anyway
        title, version = self._named(ended)
        return render_resource(ended, self.storage, self.progress, stream_url=self._stream_url(ended),
                               title=title, version=version)

    def playlist(self, render_id: str, expires: str, sig: str, part: str | None = None) -> str | None:
        """The render's HLS playlist behind a signed ``stream_url`` (``reelfarm.farm.services.stream``),
        or for a video with captions the multivariant playlist, and ``part`` one of its
        ``captions.STREAM_PARTS`` (``reelfarm.farm.services.captions``).

        Returns None when the link is not genuine for this render or has expired (a 403), and
        raises NotFound for no such render, one without a stream, or a captions part of a render
        without captions.
        """
        with self.engine.connect() as conn:
            render = repo.find_render(conn, render_id)
            if render is None or self.streams is None:
                raise NotFound("render", render_id)
            left = self.streams.verify(render, expires, sig)
            if left is None:
                return None
            doc = videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc
        with_captions = captions.doc_captions(doc) is not None
        public_url = self.settings.public_url if self.settings else ""
        if part is None and with_captions:
            made: str | None = captions.stream_master(public_url, render, doc, expires, sig)
        elif part in (None, "video.m3u8"):
            made = stream.playlist(self.storage, render, left)
        elif part == "captions.m3u8" and with_captions:
            made = captions.stream_subtitles(public_url, render, doc, expires, sig)
        elif part == "captions.vtt" and with_captions:
            made = captions.captions_webvtt(doc, stream=True)
        else:
            made = None
        if made is None:
            raise NotFound("render", render_id)
        return made

    # -- helpers ----------------------------------------------------------------------------

    def _named(self, render: repo.Render) -> tuple[str | None, int | None]:
        """The video's title and the number of the render's version, which name a succeeded
        render's downloads (no read for others)."""
        if render.status != "succeeded":
            return None, None
        with self.engine.connect() as conn:
            return download_naming(conn, render.workspace_id, render.video_id, render.version_id)

    def _resource(self, render: repo.Render, named: tuple[str | None, int | None] | None = None) -> RenderResource:
        """The Render resource, with where it stands while chunks of it wait and a chunk held up
        by a node that stopped (best effort: a queue that cannot be reached leaves both null
        rather than fail a read, and marks the progress shown, the last the database holds,
        as possibly stale: the progress store is on the same server)."""
        standing = held_up = None
        stale = False
        title, version = named if named is not None else self._named(render)
        if render.status in repo.LIVE:
            try:
                standing = self.queue.standing(render.id)
                held_up = self.queue.held_up(render.id)
            except QueueUnavailable:
                stale = True
        with self.engine.connect() as conn:
            cost = costs.render_cost(conn, render.id, render.reused_frames)
        return render_resource(render, self.storage, None if stale else self.progress, standing, held_up=held_up,
                               progress_stale=stale, stream_url=self._stream_url(render),
                               title=title, version=version, cost=cost)

    def _stream_url(self, render: repo.Render) -> str | None:
        """The render's signed playlist link, once its first segment is stored."""
        if self.streams is None or not stream.has_stream(render):
            return None
        return self.streams.url(render)

    def _allowed_pools(self, workspace_id: str) -> list[str] | None:
        """The pools the workspace's renders are limited to (None: any node)."""
        with self.engine.connect() as conn:
            return workspaces_repo.get_workspace(conn, workspace_id).pools

    def _create(self, workspace_id: str, video_id: str, formats: list[str], resolution: int,
                fps: int | None, priority: str, family: str, output: _Output, pool: str = "",
                quote: Quote | None = None) -> _Asked:
        """The renders of the video's current version in ``formats``, found (raised to ``priority``
        where lower) or created (with ``family``, the encoder family their chunks are routed for,
        planned before any chunk can start); under a compute allowance, only if ``quote`` passes it
        (decided here, with the workspace locked, before the first new render), each new render
        keeping its estimate."""
        for attempt in range(3):
            try:
                with transaction(self.engine) as conn:
                    lock_workspace(conn, workspace_id)
                    gate = None if quote is None or self.allowance is None else \
                        self.allowance.gate(workspace_id, quote)
                    video = videos_repo.get_video(conn, workspace_id, video_id)
                    version = renderable_version(conn, video)
                    parsed = build_doc(version.doc)  # a stored version: valid already
                    results = [self._find_or_create(conn, video, version, parsed, fmt, resolution, fps, priority,
                                                    family, output, pool, gate) for fmt in formats]
                return _Asked([r for r, _, _ in results], [r for r, new, _ in results if new],
                              [(r, was) for r, _, was in results if was is not None], version.doc, parsed)
            except IntegrityError:
                # The unique index caught a render that another transaction created meanwhile
                # (the workspace lock makes this rare); look again.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _find_or_create(self, conn: Connection, video: videos_repo.Video, version: videos_repo.Version, parsed: Doc,
                        fmt: str, resolution: int, fps: int | None, priority: str,
                        family: str, output: _Output, pool: str = "",
                        gate: Gate | None = None) -> tuple[repo.Render, bool, str | None]:
        """The render, whether it was created here, and the priority it had when it was found and
        raised here (else None)."""
        used_resolution, used_fps, clamped = clamp_for_container(output.container, resolution,
                                                                 int(fps or version.doc.get("fps") or 30))
        spec = RenderSpec(fmt, used_resolution, used_fps)
        digest = dedup_hash(version.doc_hash, spec, container=output.container, transparent=output.transparent)
        existing = repo.find_active_render(conn, version.video_id, digest)
        if existing is not None:
            if existing.status in repo.LIVE and outranks(priority, existing.priority):
                repo.set_priority(conn, existing.id, priority, was=existing.priority)
                return dataclasses.replace(existing, priority=priority), False, existing.priority
            return existing, False, None
        if gate is not None:
            gate.before_insert(conn)
        duration = float(version.doc["duration"])
        frames = frame_count(duration, spec.fps)
        amount = 0 if repo.version_is_paid(conn, version.id) else credits_for(duration)
        chunks = scene_chunks(parsed, spec.fps)
        render = repo.insert_render(conn, self.clock, repo.NewRender(
            workspace_id=video.workspace_id, video_id=video.id, version_id=version.id,
            format=spec.format, resolution=spec.resolution, fps=spec.fps, dedup_hash=digest, frames=frames,
            chunks=len(chunks), chunk_starts=[a for a, _ in chunks], priority=priority,
            request_id=current_context().get("request_id"), container=output.container,
            transparent=output.transparent, clamped=clamped, pool=pool,
            estimate_cpu_sec=None if gate is None else gate.estimate(spec.format)), charged_credits=amount)
        if amount:
            repo.charge_render(conn, self.clock, render, amount)
        repo.set_encoder(conn, render.id, family)
        return dataclasses.replace(render, encoder=family), True, None

    def _hand_over_or_undo(self, asked: _Asked, chunk_queue: str) -> None:
        """After the commit: the raised renders' waiting chunks raised, the created renders' jobs
        enqueued; if the queue cannot take them, the rows are set back (created ones deleted with
        their charges, raised ones lowered again) and QueueUnavailable is raised."""
        try:
            for render, _ in asked.raised:
                self.queue.raise_priority(render.id, render.priority)
            for render in asked.created:
                self._enqueue(render, asked.doc, asked.parsed, chunk_queue)
        except QueueUnavailable:
            created = asked.created
            with transaction(self.engine) as conn:
                for render in created:
                    repo.delete_render(conn, render.id)
                for render, was in asked.raised:
                    repo.set_priority(conn, render.id, was, was=render.priority)
            for render in created:
                self.progress.clear(render.id)
                self._drop_jobs(render)
                for index in range(render.chunks or 0):  # segments copied in for reuse
                    self.storage.delete(segment_key(render.id, index))
                for key in stream.stream_keys(render):
                    self.storage.delete(key)
            raise

    def _catch_up(self, enqueued: list[repo.Render], now: list[repo.Render]) -> None:
        """Raise the chunks of renders that another request raised while this one enqueued them
        at their former priority; best effort (the render is made and answered for)."""
        former = {r.id: r.priority for r in enqueued}
        for render in now:
            if render.id in former and outranks(render.priority, former[render.id]):
                try:
                    self.queue.raise_priority(render.id, render.priority)
                except QueueUnavailable:
                    log.warning("render %s was raised to %s while it was enqueued, and the queue could not "
                                "take the raise; its waiting chunks keep %s", render.id, render.priority,
                                former[render.id])

    def _drop_jobs(self, render: repo.Render) -> None:
        """Best effort: jobs that made it into the queue find no render and do nothing anyway."""
        for job_id in render_job_ids(render.id, render.chunks or 0):
            try:
                self.queue.cancel(job_id)
            except QueueUnavailable:
                return

    def _enqueue(self, render: repo.Render, doc: dict[str, Any], parsed: Doc, chunk_queue: str) -> None:
        """The render's job graph (``reelfarm.farm.services.graph``): its chunks on the queue
        ``reelfarm.farm.runtime.routing`` picks, after the import of its remote assets when its document has
        any (``reelfarm.farm.services.assets``), then its stitch. Chunks whose segments the workspace
        already has (``reelfarm.farm.services.segments``) are copied in, not drawn."""
        self.progress.set_total(render.id, render.frames or 0)
        reused = self._reuse(render, doc, parsed)  # with the family set at its creation
        pending = [i for i in range(render.chunks or 0) if i not in reused]
        graph = graph_of(render, needs_import=bool(remote_assets(doc)), chunk_queue=chunk_queue, pending=pending,
                         stitch_queue=self.queue.stitch_queue(render.pool))
        skipped = {graph.chunk(i).job_id for i in reused}
        # one write for the graph (the embedded queue), all or nothing
        enqueue_graph(self.queue, [task for task in graph if task.job_id not in skipped], self.retries)

    def _reuse(self, render: repo.Render, doc: dict[str, Any], parsed: Doc) -> list[int]:
        """Chunks whose segments this workspace's earlier renders made, copied into place; their
        frames are counted as done and recorded on the render."""
        prints = segments.fingerprints(self.storage, WorkspaceObjects(self.engine, render.workspace_id), render,
                                       parsed)
        # with sound, the stream waits for the audio its chunks mix; only an MP4 has a stream
        silent = not doc.get("audio") and render.container == "mp4"
        reused = segments.reuse(self.engine, self.clock, self.storage, render, prints,
                                lambda i: segment_key(render.id, i), streams=silent)
        if reused:
            frames = segments.chunk_frames(render, parsed)
            self.lifecycle.reused(render.id, sum(frames[i][1] - frames[i][0] for i in reused),
                                  streaming=silent and 0 in reused)
        return reused


@dataclasses.dataclass(frozen=True)
class _Output:
    """The kind of file asked for: its container, and for a WebM whether it keeps alpha."""

    container: str = DEFAULT_CONTAINER
    transparent: bool = False


@dataclasses.dataclass(frozen=True)
class _Asked:
    """What a request found or created, for what follows its commit (``_hand_over_or_undo``)."""

    renders: list[repo.Render]  # one per format asked for, found or created
    created: list[repo.Render]
    raised: list[tuple[repo.Render, str]]  # found and raised (as raised), with the priority each had
    doc: dict[str, Any]  # the version's document as stored
    parsed: Doc  # and as built, once for all its renders


def _as_asked(render: repo.Render, resolution: int, fps: int | None) -> repo.Render:
    """The render with ``clamped`` naming what this request asked for above the container's limits
    (an identical render found may have been asked for within them)."""
    clamped = [name for name, asked, used in (("resolution", resolution, render.resolution), ("fps", fps, render.fps))
               if asked is not None and asked > used]
    if fps is None and "fps" in (render.clamped or []):
        clamped.append("fps")  # the video's own fps, the same for every request of this version
    return dataclasses.replace(render, clamped=clamped)


def download_naming(conn: Connection, workspace_id: str, video_id: str, version_id: str) -> tuple[str, int]:
    """The video's title and the number of version ``version_id``: what a render's or a still's
    downloads are named after (``resources.download_name``)."""
    title = videos_repo.get_video(conn, workspace_id, video_id).title
    return title, videos_repo.get_version_by_id(conn, workspace_id, version_id).number


def renderable_version(conn: Connection, video: videos_repo.Video) -> videos_repo.Version:
    """The version a render or still of the video uses. Raises VideoStateError when there is none."""
    return videos_repo.get_version_by_id(conn, video.workspace_id, check_usable(video, "render"))


def _validate(formats: Sequence[str], resolution: Any, fps: Any, priority: Any = DEFAULT_PRIORITY,
              container: Any = DEFAULT_CONTAINER, transparent: Any = False,
              pool_details: Sequence[dict[str, str]] = ()) -> None:
    details = [problem.as_dict() for problem in container_problems(container, transparent)] + list(pool_details)
    if priority not in PRIORITIES:
        details.append({"field": "/priority", "code": "invalid",
                        "message": f"priority must be one of {', '.join(PRIORITIES)}"})
    if not formats:
        details.append({"field": "/formats", "code": "required", "message": "give at least one format"})
    for i, fmt in enumerate(formats):
        for problem in spec_problems(fmt=fmt):
            details.append({**problem.as_dict(), "field": "/format" if len(formats) == 1 else f"/formats/{i}"})
    given = {"resolution": resolution} if fps is None else {"resolution": resolution, "fps": fps}
    details += [problem.as_dict() for problem in spec_problems(**given)]
    if details:
        raise InvalidRequest(details)
