"""GET /healthz: the answer when every dependency answered."""
from __future__ import annotations

from marshmallow import Schema, fields, validate


class HealthChecksSchema(Schema):
    """Each dependency that answered; one that does not makes the answer a 503 instead."""

    database = fields.String(required=True, validate=validate.OneOf(["ok"]))
    queue = fields.String(required=True, validate=validate.OneOf(["ok"]),
                          metadata={"description": "the job and render queue (Redis in a farm)"})


class HealthSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ok"]))
    checks = fields.Nested(HealthChecksSchema, required=True)
