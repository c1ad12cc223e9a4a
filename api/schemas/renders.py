"""Renders (MP4), stills and variants of a video's current version: the Render a client reads and
the bodies that ask for each."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from reelfarm.api.schemas.common import RequestSchema
from reelfarm.api.schemas.jobs import JOB_STATUSES
from reelfarm.api.schemas.videos import VideoSchema
from reelfarm.renderer.spec import FORMATS, FPS_CHOICES, RESOLUTIONS


class RenderSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    video_id = fields.String(required=True, metadata={"format": "uuid"})
    version_id = fields.String(required=True, metadata={"format": "uuid"})
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))
    resolution = fields.Integer(required=True, validate=validate.OneOf(RESOLUTIONS))
    fps = fields.Integer(required=True, validate=validate.OneOf(FPS_CHOICES))
    status = fields.String(required=True, validate=validate.OneOf(JOB_STATUSES))
    progress = fields.Float(required=True)
    url = fields.String(required=True, allow_none=True, metadata={"description": "signed MP4 URL, 7 days"})
    poster_url = fields.String(required=True, allow_none=True)
    duration_sec = fields.Float(required=True, allow_none=True)
    bytes = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True)
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


class VariantsSchema(Schema):
    renders = fields.List(fields.Nested(RenderSchema), required=True)
    translations = fields.List(fields.Nested(VideoSchema), required=True)
