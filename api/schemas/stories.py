"""The built-in stories as listed: each with its editable fields as a JSON Schema."""
from __future__ import annotations

from marshmallow import Schema, fields


class StorySchema(Schema):
    id = fields.String(required=True)
    name = fields.String(required=True)
    category = fields.String(required=True)
    description = fields.String(required=True)
    default_duration_sec = fields.Float(required=True)
    fields_ = fields.Dict(required=True, data_key="fields",
                          metadata={"description": "JSON Schema (2020-12) of the story's editable fields"})


class StoryListSchema(Schema):
    data = fields.List(fields.Nested(StorySchema), required=True)
