"""Comments on a video: the Comment a client reads, its list, and the body that makes one."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from reelfarm.api.schemas.common import RequestSchema


class CommentSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    video_id = fields.String(required=True, metadata={"format": "uuid"})
    body = fields.String(required=True)
    time_sec = fields.Float(required=True, allow_none=True,
                            metadata={"description": "seconds into the video the comment is about, or null"})
    author = fields.String(required=True, allow_none=True)
    created_at = fields.DateTime(required=True)


class CommentListSchema(Schema):
    data = fields.List(fields.Nested(CommentSchema), required=True)


class CommentCreateSchema(RequestSchema):
    body = fields.String(required=True, validate=validate.Length(1, 5000))
    time_sec = fields.Float(allow_none=True, validate=validate.Range(min=0),
                            metadata={"description": "seconds, 0 <= t <= the video's duration"})
    author = fields.String(allow_none=True, validate=validate.Length(1, 200))
