"""Renders (MP4), stills and variants of a video's current version: the Render a client reads and
the bodies that ask for each."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from reelfarm.api.schemas.common import RequestSchema
from reelfarm.api.schemas.videos import VideoSchema
from reelfarm.farm.services.fairness import DEFAULT_PRIORITY, PRIORITIES
from reelfarm.renderer.spec import FORMATS, FPS_CHOICES, RESOLUTIONS
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
    reason = fields.String(required=True, validate=validate.OneOf(("node_stopped",)), metadata={"description": (
        "`node_stopped`: the node drawing it stopped answering; the farm hands the chunk to another node "
        "within about 25 s of its last heartbeat")})
    message = fields.String(required=True, metadata={"description": "the same, for people"})


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
    url = fields.String(required=True, allow_none=True, metadata={"description": "signed MP4 URL, 7 days"})
    poster_url = fields.String(required=True, allow_none=True)
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
        "another node; null otherwise")})
    reused_frames = fields.Integer(required=True, validate=validate.Range(min=0), metadata={"description": (
        "frames whose segments an earlier render of this workspace had already made (an unchanged scene of "
        "an earlier version), reused rather than drawn; counted as done at once. Credits are the same.")})
    created_at = fields.DateTime(required=True)
    finished_at = fields.DateTime(required=True, allow_none=True)


class RenderListSchema(Schema):
    data = fields.List(fields.Nested(RenderSchema), required=True)


class RenderCreateSchema(RequestSchema):
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


class VariantsCreateSchema(RequestSchema):
    formats = fields.List(fields.String(validate=validate.OneOf(FORMATS)), required=True,
                          validate=validate.Length(1, 4))
    locales = fields.List(fields.String(validate=validate.Length(2, 35)), validate=validate.Length(max=20))
    resolution = fields.Integer(load_default=1080, validate=validate.OneOf(RESOLUTIONS))
    priority = fields.String(load_default=DEFAULT_PRIORITY, validate=validate.OneOf(PRIORITIES), metadata={
        "description": "`low` for batch work such as large variant sets: it yields to the workspace's `normal` renders"})


class VariantsSchema(Schema):
    renders = fields.List(fields.Nested(RenderSchema), required=True)
    translations = fields.List(fields.Nested(VideoSchema), required=True)
