"""GET /me: the calling key's workspace (its plan and credits), its rate-limit policy and the key itself."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from reelfarm.shared import plans

PLANS = list(plans.NAMES)
_QUOTAS = ", ".join(f"{name} {size // plans.GiB} GiB" if size >= plans.GiB else f"{name} {size // plans.MiB} MiB"
                    for name, size in plans.LIBRARY_BYTES.items())


class RateLimitPolicySchema(Schema):
    limit = fields.Integer(required=True)
    window_sec = fields.Integer(required=True)
    policy = fields.String(required=True, metadata={"example": "600;w=60"})


class WorkspaceSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    name = fields.String(required=True)
    plan = fields.String(required=True, validate=validate.OneOf(PLANS))
    credits = fields.Integer(required=True)


class ApiKeyRefSchema(Schema):
    """The calling key: its id and the prefix shown in lists (never the key itself)."""

    id = fields.String(required=True, metadata={"format": "uuid"})
    prefix = fields.String(required=True, metadata={"example": "rf_live_7Hq2"})


class LibraryUsageSchema(Schema):
    """The media library's bytes against the plan's quota (each distinct upload once; thumbnails free)."""

    used_bytes = fields.Integer(required=True, metadata={"example": 52_428_800})
    limit_bytes = fields.Integer(required=True, metadata={
        "example": 10_737_418_240,
        "description": f"the plan's quota ({_QUOTAS}); an upload that would pass it is refused with 413 "
                       "`quota_exceeded`"})


class MeSchema(Schema):
    workspace = fields.Nested(WorkspaceSchema, required=True)
    rate_limit = fields.Nested(RateLimitPolicySchema, required=True)
    api_key = fields.Nested(ApiKeyRefSchema, required=True)
    library = fields.Nested(LibraryUsageSchema, required=True)
