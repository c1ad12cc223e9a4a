"""Renders (MP4, GIF, WebM), stills and variants of a video's current version: the Render a client reads and
the bodies that ask for each."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from reelfarm.api.contract import Pattern, Problem, pattern_meta
from reelfarm.api.schemas.common import RequestSchema
from reelfarm.api.schemas.videos import VideoSchema
from reelfarm.farm.services.fairness import DEFAULT_PRIORITY, PRIORITIES
from reelfarm.farm.services.pools import MAX_TAGS, POOL_PATTERN
from reelfarm.renderer.spec import (
    CONTAINERS,
    DEFAULT_CONTAINER,
    FORMATS,
    FPS_CHOICES,
    GIF_MAX_FPS,
    GIF_MAX_RESOLUTION,
    RESOLUTIONS,
    TRANSPARENT_CONTAINERS,
)
from reelfarm.shared.statuses import RENDER_STATUSES


class RenderQueueSchema(Schema):
    frames_ahead = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "frames of the farm's waiting work that fair dispatch serves before this render's next chunk")})
    chunks_waiting = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "this render's chunks still waiting to be dispatched"})
    estimated_start_at = fields.DateTime(required=True, allow_none=True, metadata={"description": (
        "when its next chunk should start, from the farm's throughput over the last two minutes; "
        "null when the farm finished nothing lately")})


class RenderHeldUpSchema(Schema):
    chunk = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "the earliest chunk held up (chunks are numbered from 0 in the video's order)"})
    reason = fields.String(required=True, validate=validate.OneOf(("node_stopped", "node_silent", "no_frames",
                                                                   "suspended", "no_node_in_pool")),
                           metadata={"description": (
            "`node_silent`: the node drawing it has not been heard from for 8 s or more (a heartbeat missed; "
            "the message says how long); `node_stopped`: it stopped answering for good (15 s without a "
            "heartbeat, or it stopped), and the farm hands the chunk to another node within about 25 s of "
            "its last heartbeat; `no_frames`: its node is alive but has drawn no frame of it for a quarter of "
            "the stall time (at most 30 s; a frozen or stuck work process), and stops and retries it once the "
            "stall time (`REELFARM_CHUNK_STALL_SEC`, 120 s) has passed; `suspended`: the farm's operator holds its waiting chunks back (the "
            "earliest is `chunk`) until they resume it; chunks already running finish; `no_node_in_pool`: its "
            "chunks run in a pool (`pool`) that no live node serves, and wait until one does")})
    message = fields.String(required=True, metadata={"description": "the same, for people"})


class RenderCostSchema(Schema):
    cpu_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={"description": (
        "CPU seconds its tasks used on the farm's nodes (each task's process and the processes it ran), "
        "every attempt counted, retries included")})
    gpu_sec = fields.Float(required=True, allow_none=True, validate=validate.Range(min=0), metadata={"description": (
        "seconds its tasks held a GPU (wall seconds of the tasks that ran on GPU nodes); null when none did")})
    wall_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={"description": (
        "the summed wall-clock seconds of its tasks (chunks running side by side each count)")})
    frames_rendered = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "frames this render drew and encoded itself; 0 for a render whose segments were all reused")})
    frames_reused = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "frames reused from segments an earlier render of the workspace made (as `reused_frames`)")})
    storage_bytes = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "bytes its tasks stored: segments, stream parts, the video and its poster")})
    peak_memory_bytes = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "the highest memory high-water mark of the processes its tasks ran in (a process's peak since it "
        "started, so an upper bound of the task's own)")})


class RenderSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    video_id = fields.String(required=True, metadata={"format": "uuid"})
    version_id = fields.String(required=True, metadata={"format": "uuid"})
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))
    resolution = fields.Integer(required=True, validate=validate.OneOf(RESOLUTIONS))
    fps = fields.Integer(required=True, validate=validate.OneOf(FPS_CHOICES))
    status = fields.String(required=True, validate=validate.OneOf(RENDER_STATUSES))
    progress = fields.Float(required=True)
    progress_stale = fields.Boolean(required=True, metadata={"description": (
        "true while the farm's progress store cannot be reached: `progress` is then the last figure stored with "
        "the render (at its last finished chunk), and may be behind")})
    url = fields.String(required=True, allow_none=True, metadata={"description": (
        "signed URL of the file, 7 days: an MP4, GIF or WebM as `container` says, downloaded as "
        "`<title>-v<N>-<format>-<resolution>p.<mp4|gif|webm>` (`video/mp4`, `image/gif`, `video/webm`)")})
    poster_url = fields.String(required=True, allow_none=True)
    captions_url = fields.String(required=True, allow_none=True, metadata={"description": (
        "signed URL (7 days) of the video's captions as WebVTT (`text/vtt`): the cues it shows (those starting "
        "before its end, each cut there), as the video's `captions` field or its document's `captions` gave them "
        "(translated, in a translated copy); null for a video without captions, and until the render succeeded")})
    stream_url = fields.String(required=True, allow_none=True, metadata={"description": (
        "signed URL (7 days) of the render's HLS playlist: from the moment its first chunk is stored, the part "
        "already rendered plays while the rest renders (an `EVENT` playlist, only appended to; `#EXT-X-ENDLIST` "
        "once it succeeded, then a complete VOD). A failed or canceled render's playlist lists what was "
        "finished and ends there. MPEG-TS segments, each a signed URL. null before any chunk is stored")})
    duration_sec = fields.Float(required=True, allow_none=True)
    bytes = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True)
    priority = fields.String(required=True, validate=validate.OneOf(PRIORITIES), metadata={"description": (
        "its place in the workspace's line: `low` renders wait while any `normal` render of the workspace waits. "
        "The higher of the priorities it was asked for at while in flight: an identical request at `normal` "
        "raises a `low` render (and its chunks still waiting); a request at `low` never lowers it")})
    queue = fields.Nested(RenderQueueSchema, required=True, allow_none=True, metadata={"description": (
        "while some of its chunks wait for the farm: where it stands; null once none waits")})
    held_up = fields.Nested(RenderHeldUpSchema, required=True, allow_none=True, metadata={"description": (
        "a chunk that cannot finish where it was running (its node stopped), until the farm hands it to "
        "another node, or that waits because the farm's operator suspended the render; null otherwise")})
    reused_frames = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "frames whose segments an earlier render of this workspace had already made (an unchanged scene of "
        "an earlier version), reused rather than drawn; counted as done at once. Credits are the same.")})
    cost = fields.Nested(RenderCostSchema, required=True, allow_none=True, metadata={"description": (
        "what its tasks used on the farm's nodes, as measured there: while it runs, the tasks ended so far; "
        "a task whose node died before it ended is not counted. An identical request answered with this "
        "render adds nothing. null in webhook payloads")})
    container = fields.String(required=True, validate=validate.OneOf(CONTAINERS), metadata={"description": (
        "the file: `mp4` (H.264 and AAC), `gif` (one palette, no sound) or `webm` (VP9 and Opus)")})
    transparent = fields.Boolean(required=True, metadata={"description": (
        "a WebM whose scenes without a background are transparent (VP9 with alpha, yuva420p)")})
    clamped = fields.List(fields.String(validate=validate.OneOf(("resolution", "fps"))), required=True,
                          metadata={"description": (
        f"the values asked for that were lowered to the container's limits (a GIF is made at most "
        f"{GIF_MAX_RESOLUTION} px on its short side and {GIF_MAX_FPS} fps): `resolution` and `fps` show "
        "what was made; empty when nothing was lowered")})
    pool = fields.String(required=True, metadata={"description": (
        "the pool of the farm's nodes its chunks run in (tags comma-separated, sorted: `gpu,region=eu`), as asked "
        "for or the workspace's default; empty: any node")})
    created_at = fields.DateTime(required=True)
    finished_at = fields.DateTime(required=True, allow_none=True)


class RenderListSchema(Schema):
    data = fields.List(fields.Nested(RenderSchema), required=True)


class OutputFields(RequestSchema):
    """What kind of file a render request asks for (a render's own request and variants)."""

    container = fields.String(load_default=DEFAULT_CONTAINER, validate=validate.OneOf(CONTAINERS), metadata={
        "description": (f"`gif`: no sound, at most {GIF_MAX_RESOLUTION} px and {GIF_MAX_FPS} fps (larger values "
                        "lowered, see `clamped`); `webm`: VP9 and Opus")})
    transparent = fields.Boolean(load_default=False, metadata={"description": (
        "`webm` only: scenes without a background stay transparent")})

    @validates_schema(skip_on_field_errors=False)
    def transparent_needs_webm(self, data: dict[str, Any], **_: Any) -> None:
        container = data.get("container", DEFAULT_CONTAINER)
        if data.get("transparent") and "container" in data and container not in TRANSPARENT_CONTAINERS:
            raise ValidationError({"transparent": [Problem("unsupported", (
                f"transparent needs container {' or '.join(TRANSPARENT_CONTAINERS)}, not {container}"))]})


class PoolField(RequestSchema):
    """Where on the farm a render request's renders run (a render's own request and variants)."""

    pool = fields.String(validate=[validate.Length(1, 200), Pattern(POOL_PATTERN, Problem(
        "unknown_pool", f"not a pool: 1 to {MAX_TAGS} tags, comma-separated, each a word or name=value of "
                        "lower-case letters, digits, '_', '.' and '-' (up to 40 each)"))],
        metadata=pattern_meta(POOL_PATTERN, description=(
            "the pool of the farm's nodes to run on (those carrying every tag, e.g. `region=eu,gpu`): one of the "
            "pools the farm's operator limited the workspace to (else 400 `forbidden_pool`); default: the "
            "workspace's default pool, else any node")))


class RenderCreateSchema(OutputFields, PoolField):
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))
    resolution = fields.Integer(load_default=1080, validate=validate.OneOf(RESOLUTIONS))
    fps = fields.Integer(validate=validate.OneOf(FPS_CHOICES), metadata={"description": "default: the video's"})
    priority = fields.String(load_default=DEFAULT_PRIORITY, validate=validate.OneOf(PRIORITIES), metadata={
        "description": "`low` for batch work: it yields to the workspace's `normal` renders"})


class StillsCreateSchema(RequestSchema):
    times = fields.List(fields.Float(validate=validate.Range(min=0)), required=True,
                        validate=validate.Length(1, 20), metadata={
                            "description": "seconds, 0 <= t <= duration; a time past this video's end is a 409"})
    format = fields.String(validate=validate.OneOf(FORMATS))


class VariantsCreateSchema(OutputFields, PoolField):
    formats = fields.List(fields.String(validate=validate.OneOf(FORMATS)), required=True,
                          validate=validate.Length(1, 4))
    locales = fields.List(fields.String(validate=validate.Length(2, 35)), validate=validate.Length(max=20))
    resolution = fields.Integer(load_default=1080, validate=validate.OneOf(RESOLUTIONS))
    priority = fields.String(load_default=DEFAULT_PRIORITY, validate=validate.OneOf(PRIORITIES), metadata={
        "description": "`low` for batch work such as large variant sets: it yields to the workspace's `normal` renders"})


class VariantsSchema(Schema):
    renders = fields.List(fields.Nested(RenderSchema), required=True)
    translations = fields.List(fields.Nested(VideoSchema), required=True)
