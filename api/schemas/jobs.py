"""Asynchronous jobs: their statuses (a render's too), their kinds and what each kind's ``result``
holds, and the Job a client polls."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from reelfarm.shared.statuses import JOB_STATUSES


def _object(title: str, description: str, **properties: Any) -> dict[str, Any]:
    return {"title": title, "description": description, "type": "object", "properties": properties,
            "required": list(properties), "additionalProperties": False}


_UUID = {"type": "string", "format": "uuid"}
JOB_RESULTS = {
    "brand_extract": _object("BrandExtractResult", "A `brand_extract` job's: the brand kit it saved.",
                             brand_kit_id=_UUID),
    "generate": _object("GenerateResult", "A `generate` job's (a video from a brief, or a translated copy): the "
                                          "video and the version it wrote.", video_id=_UUID, version_id=_UUID),
    "stills": _object("StillsResult", "A `stills` job's: one PNG per requested time, in their order.", stills={
        "type": "array", "items": _object(
            "Still", "A frame as a PNG, at a URL signed for 10 minutes (read the job again for fresh ones).",
            time={"type": "number", "description": "seconds into the video"},
            url={"type": "string", "description": "signed PNG URL"},
            width={"type": "integer"}, height={"type": "integer"},
            expires_at={"type": "string", "format": "date-time", "description": "when `url` stops working"})}),
}
"""The job kinds, and what each puts in ``result`` when it succeeds."""


class JobSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    kind = fields.String(required=True, validate=validate.OneOf(list(JOB_RESULTS)))
    status = fields.String(required=True, validate=validate.OneOf(JOB_STATUSES))
    stage = fields.String(required=True, allow_none=True)
    progress = fields.Float(required=True)
    error = fields.String(required=True, allow_none=True)
    result = fields.Raw(required=True, metadata={
        "description": "what the job made, by its `kind`, once it `succeeded`; null before, and for a failed or "
                       "canceled job", "oneOf": [*JOB_RESULTS.values(), {"type": "null"}]})
    created_at = fields.DateTime(required=True)
    finished_at = fields.DateTime(required=True, allow_none=True)
