"""Videos and their versions: the Video and Version a client reads, the create and PATCH bodies
with their cross-field rules, restore, and the page query of the video list."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from reelfarm.api.contract import CURSOR, HAS_TEXT, LOCALE, SITE_URL, Pattern, Problem, pattern_meta
from reelfarm.api.schemas.common import SITE_URL_ERROR, RequestSchema, VideoDocField
from reelfarm.api.schemas.jobs import JobSchema
from reelfarm.renderer.spec import DEFAULT_FORMAT, FORMATS
from reelfarm.shared.statuses import VIDEO_STATUSES
from reelfarm.studio.videos import MAX_BRIEF, MAX_NOTE

VERSION_SOURCES = ["story", "generate", "doc", "fields", "translate", "restore"]

_LOCALE_ERROR = "must be a BCP 47 language tag such as de or pt-BR"


class LintWarningSchema(Schema):
    field = fields.String(required=True)
    code = fields.String(required=True)
    message = fields.String(required=True)


class VersionSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    number = fields.Integer(required=True)
    source = fields.String(required=True, validate=validate.OneOf(VERSION_SOURCES))
    note = fields.String(required=True, allow_none=True)
    lint = fields.List(fields.Nested(LintWarningSchema), required=True)
    created_at = fields.DateTime(required=True)
    doc = VideoDocField(required=True)


class VersionListSchema(Schema):
    data = fields.List(fields.Nested(VersionSchema), required=True)


class VideoSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    title = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(VIDEO_STATUSES))
    story_id = fields.String(required=True, allow_none=True)
    brand_kit_id = fields.String(required=True, allow_none=True, metadata={"format": "uuid"})
    default_format = fields.String(required=True, validate=validate.OneOf(FORMATS))
    duration_sec = fields.Float(required=True, allow_none=True)
    locale = fields.String(required=True, allow_none=True)
    source_video_id = fields.String(required=True, allow_none=True, metadata={
        "format": "uuid", "description": "the video this one is a translated copy of"})
    current_version = fields.Nested(VersionSchema, required=True, allow_none=True)
    job = fields.Nested(JobSchema, required=True, allow_none=True, metadata={
        "description": "the generation or translation job while it runs, or the one that failed"})
    created_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)


class VideoListSchema(Schema):
    data = fields.List(fields.Nested(VideoSchema), required=True)
    next_cursor = fields.String(required=True, allow_none=True)


class VideoCreateSchema(RequestSchema):
    title = fields.String(validate=validate.Length(1, 200))
    brief = fields.String(validate=[validate.Length(1, MAX_BRIEF), validate.Regexp(HAS_TEXT, error="must not be blank")],
                          metadata={"description": "what the video should say; moderated before generation"})
    storyId = fields.String(validate=validate.Length(1, 100))
    fields_ = fields.Dict(data_key="fields")
    brandKitId = fields.UUID()
    url = fields.String(validate=[validate.Length(1, 2048), Pattern(SITE_URL, SITE_URL_ERROR)],
                        metadata=pattern_meta(SITE_URL, description="a website to extract the brand from first"))
    format = fields.String(load_default=DEFAULT_FORMAT, validate=validate.OneOf(FORMATS))
    durationSec = fields.Float(validate=validate.Range(6, 60))  # the stories' bounds (studio MIN/MAX_DURATION_SEC)
    locale = fields.String(validate=[validate.Length(2, 35), Pattern(LOCALE, _LOCALE_ERROR)],
                           metadata=pattern_meta(LOCALE, description="BCP 47 tag of the video's language"))

    @validates_schema
    def story_or_generation(self, data: dict[str, Any], **_: Any) -> None:
        """``storyId`` (with ``fields``) builds the video; without it a ``brief`` and/or ``url`` generate it."""
        if data.get("storyId") is None:
            if data.get("fields_") is not None:
                raise ValidationError({"storyId": [Problem("required", "fields need a storyId")]})
            if not data.get("brief") and not data.get("url"):
                raise ValidationError({"brief": [Problem("required", "send storyId (with fields), or a brief or url "
                                                                     "to generate the video from")]})
            return
        problems = {}
        if data.get("brief") is not None:
            problems["brief"] = [Problem("conflict", "a brief is for generation; with storyId the video is built "
                                                     "from fields")]
        if data.get("url") is not None:
            problems["url"] = [Problem("conflict", "with storyId the video is built at once: extract the brand "
                                                   "first (POST /api/v1/brand/extract) and pass brandKitId")]
        if problems:
            raise ValidationError(problems)


class VideoPatchSchema(RequestSchema):
    doc = VideoDocField()
    fields_ = fields.Dict(data_key="fields")
    title = fields.String(validate=validate.Length(1, 200))
    note = fields.String(validate=validate.Length(max=MAX_NOTE))

    @validates_schema
    def doc_or_fields(self, data: dict[str, Any], **_: Any) -> None:
        """A complete ``doc`` or a ``fields`` patch, not both; and something to change."""
        if "doc" in data and "fields_" in data:
            both = Problem("conflict", "send either doc or fields, not both")
            raise ValidationError({"doc": [both], "fields": [both]})
        if not ({"doc", "fields_", "title"} & data.keys()):
            raise ValidationError(Problem("empty_update", "send doc, fields or title"))


class RestoreSchema(RequestSchema):
    """Restore needs no body; ``note`` says why (default ``restored version N``); any other field
    is refused."""

    note = fields.String(validate=validate.Length(1, MAX_NOTE),
                         metadata={"description": "Why this version comes back; `restored version N` if omitted."})


class VideoListQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(1, 100))
    cursor = fields.String(validate=[validate.Length(1, 200), Pattern(CURSOR, "not a cursor from this API")],
                           metadata=pattern_meta(CURSOR, description="`next_cursor` of the previous page"))
