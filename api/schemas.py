"""Marshmallow schemas: request validation and the OpenAPI 3.1 document come from the same code."""
from __future__ import annotations

import math
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from reelfarm.api.contract import (
    CURSOR,
    HAS_TEXT,
    LOCALE,
    SITE_URL,
    WEBHOOK_URL,
    Pattern,
    Problem,
    pattern_meta,
)
from reelfarm.renderer.spec import FORMATS, FPS_CHOICES, RESOLUTIONS
from reelfarm.shared import plans
from reelfarm.studio.webhooks import EVENT_KINDS as WEBHOOK_EVENT_KINDS

VIDEO_STATUSES = ["draft", "generating", "ready", "failed", "archived"]
JOB_STATUSES = ["queued", "running", "succeeded", "failed", "canceled"]
VERSION_SOURCES = ["story", "generate", "doc", "fields", "translate", "restore"]
PLANS = list(plans.NAMES)


_SITE_URL_ERROR = "must be a website address: http(s)://host[:port][/path], or host[/path]"
_WEBHOOK_URL_ERROR = "must be an absolute http:// or https:// URL"
_LOCALE_ERROR = "must be a BCP 47 language tag such as de or pt-BR"


class RequestSchema(Schema):
    """Base of every request body: refuses what JSON parsers accept but no database can store
    (NaN and Infinity, NUL characters, lone surrogates), anywhere in the body, as a 400."""

    @pre_load
    def refuse_unstorable(self, data: Any, **_: Any) -> Any:
        problems: dict[Any, Any] = {}
        _collect_unstorable(data, [], problems)
        if problems:
            raise ValidationError(problems)
        return data

    @pre_load
    def refuse_loose_types(self, data: Any, **_: Any) -> Any:
        """JSON types as documented: marshmallow alone would take ``"8"`` for a number and
        ``0``/``1`` for a boolean."""
        problems: dict[Any, Any] = {}
        _check_types(self, data, problems)
        if problems:
            raise ValidationError(problems)
        return data


def _changes_something(data: dict[str, Any], what: str) -> None:
    """A PATCH must change something: an empty one is one problem at the body (``""``)."""
    if not data:
        raise ValidationError(Problem("empty_update", f"send {what}"))


_TYPE_ERRORS = ((fields.Boolean, "Not a valid boolean.", lambda v: isinstance(v, bool)),
                (fields.Integer, "Not a valid integer.", lambda v: isinstance(v, int) and not isinstance(v, bool)),
                (fields.Number, "Not a valid number.",
                 lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)))


def _check_types(schema: Schema, data: Any, problems: dict[Any, Any]) -> None:
    if not isinstance(data, dict):
        return
    for name, field in schema.fields.items():
        key = field.data_key or name
        if key in data:
            found = _type_problem(field, data[key])
            if found:
                problems[key] = found


def _type_problem(field: fields.Field, value: Any) -> Any:
    if value is None:
        return None
    for kind, message, ok in _TYPE_ERRORS:
        if isinstance(field, kind):
            return None if ok(value) else [message]
    if isinstance(field, fields.List) and isinstance(value, list):
        items = {i: p for i, v in enumerate(value) if (p := _type_problem(field.inner, v))}
        return items or None
    if isinstance(field, fields.Nested) and isinstance(value, dict) and isinstance(field.schema, Schema):
        nested: dict[Any, Any] = {}
        _check_types(field.schema, value, nested)
        return nested or None
    return None


def _collect_unstorable(node: Any, path: list[Any], problems: dict[Any, Any]) -> None:
    message = None
    if isinstance(node, float) and not math.isfinite(node):
        message = "Must be a finite number."
    elif isinstance(node, str) and not _storable(node):
        message = "Must not contain NUL characters or unpaired surrogates."
    elif isinstance(node, dict):
        for key, value in node.items():
            _collect_unstorable(value if _storable(str(key)) else str(key), [*path, key], problems)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _collect_unstorable(value, [*path, index], problems)
    if message and path:
        tree = problems
        for part in path[:-1]:
            tree = tree.setdefault(part, {})
        tree[path[-1]] = [message]


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


class VideoDocField(fields.Dict):
    """A complete VideoDoc; documented as a reference to the `VideoDoc` component."""


class ErrorDetailSchema(Schema):
    field = fields.String(required=True, metadata={"description": "JSON pointer into the body, or a query/header name"})
    code = fields.String(required=True)
    message = fields.String(required=True)


class ErrorBodySchema(Schema):
    code = fields.String(required=True, metadata={"example": "validation_failed"})
    message = fields.String(required=True)
    details = fields.List(fields.Nested(ErrorDetailSchema), required=True, allow_none=True)
    request_id = fields.String(required=True, metadata={"example": "req_3f2a9c1e0b7d4e55"})


class ErrorEnvelopeSchema(Schema):
    error = fields.Nested(ErrorBodySchema, required=True)


# -- brand kits --------------------------------------------------------------------------------

class FontTokenSchema(Schema):
    family = fields.String(required=True, validate=validate.Length(1, 100),
                           metadata={"description": "a family the renderer ships"})
    weight = fields.Integer(load_default=400, validate=validate.Range(100, 900))
    original = fields.String(allow_none=True, validate=validate.Length(max=200),
                             metadata={"description": "the family the website declared, when it was mapped"})


class ColorTokensSchema(Schema):
    _hex = validate.Regexp(r"^#[0-9A-Fa-f]{6}$", error="must be a #RRGGBB colour")
    primary = fields.String(required=True, validate=_hex)
    secondary = fields.String(required=True, validate=_hex)
    accent = fields.String(required=True, validate=_hex)
    background = fields.String(required=True, validate=_hex)
    text = fields.String(required=True, validate=_hex)


class FontsTokensSchema(Schema):
    heading = fields.Nested(FontTokenSchema, required=True)
    body = fields.Nested(FontTokenSchema, required=True)


class LogoSchema(Schema):
    url = fields.String(required=True)
    width = fields.Float(allow_none=True, load_default=None)
    height = fields.Float(allow_none=True, load_default=None)
    dominant_color = fields.String(allow_none=True, load_default=None)


class BrandTokensSchema(Schema):
    colors = fields.Nested(ColorTokensSchema, required=True)
    palette = fields.List(fields.String(validate=validate.Regexp(r"^#[0-9A-Fa-f]{6}$")), required=True,
                          validate=validate.Length(max=32))
    fonts = fields.Nested(FontsTokensSchema, required=True)
    logo = fields.Nested(LogoSchema, allow_none=True, required=True)
    radius = fields.Float(required=True, validate=validate.Range(0, 0.5))
    tagline = fields.String(allow_none=True, required=True, validate=validate.Length(max=300))


class BrandKitSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    name = fields.String(required=True)
    source_url = fields.String(required=True, allow_none=True)
    is_default = fields.Boolean(required=True)
    tokens = fields.Nested(BrandTokensSchema, required=True)
    created_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)


class BrandKitListSchema(Schema):
    data = fields.List(fields.Nested(BrandKitSchema), required=True)


class BrandKitPatchSchema(RequestSchema):
    name = fields.String(validate=validate.Length(1, 200))
    is_default = fields.Boolean(validate=validate.Equal(True, error="make another kit the default instead"))
    tokens = fields.Nested(BrandTokensSchema)

    @validates_schema
    def changes_something(self, data: dict[str, Any], **_: Any) -> None:
        _changes_something(data, "name, tokens or is_default")


# -- stories -----------------------------------------------------------------------------------

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


# -- jobs, versions, videos --------------------------------------------------------------------

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
    brief = fields.String(validate=[validate.Length(1, 5000), validate.Regexp(HAS_TEXT, error="must not be blank")],
                          metadata={"description": "what the video should say; moderated before generation"})
    storyId = fields.String(validate=validate.Length(1, 100))
    fields_ = fields.Dict(data_key="fields")
    brandKitId = fields.UUID()
    url = fields.String(validate=[validate.Length(1, 2048), Pattern(SITE_URL, _SITE_URL_ERROR)],
                        metadata=pattern_meta(SITE_URL, description="a website to extract the brand from first"))
    format = fields.String(load_default="16:9", validate=validate.OneOf(FORMATS))
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


class BrandExtractSchema(RequestSchema):
    url = fields.String(required=True, validate=[validate.Length(1, 2048), Pattern(SITE_URL, _SITE_URL_ERROR)],
                        metadata=pattern_meta(SITE_URL, description="website address; https is added when missing",
                                              example="https://example.com"))


class LocaleSchema(Schema):
    code = fields.String(required=True, metadata={"description": "BCP 47 tag", "example": "de"})
    name = fields.String(required=True, metadata={"example": "German"})
    direction = fields.String(required=True, validate=validate.OneOf(("ltr", "rtl")))
    engines = fields.List(fields.String(), required=True)


class LocaleListSchema(Schema):
    source = fields.String(required=True, metadata={"description": "the language translated from"})
    data = fields.List(fields.Nested(LocaleSchema), required=True)


class LocaleQuerySchema(Schema):
    source = fields.String(load_default="en", validate=validate.Regexp(r"^[A-Za-z]{2,3}$"),
                           metadata={"description": "the language to translate from (default en)"})


class VideoPatchSchema(RequestSchema):
    doc = VideoDocField()
    fields_ = fields.Dict(data_key="fields")
    title = fields.String(validate=validate.Length(1, 200))
    note = fields.String(validate=validate.Length(max=500))

    @validates_schema
    def doc_or_fields(self, data: dict[str, Any], **_: Any) -> None:
        """A complete ``doc`` or a ``fields`` patch, not both; and something to change."""
        if "doc" in data and "fields_" in data:
            both = Problem("conflict", "send either doc or fields, not both")
            raise ValidationError({"doc": [both], "fields": [both]})
        if not ({"doc", "fields_", "title"} & data.keys()):
            raise ValidationError(Problem("empty_update", "send doc, fields or title"))


class RestoreSchema(RequestSchema):
    """Restore takes no body; an optional empty object is accepted and any field is refused."""


class VideoListQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(1, 100))
    cursor = fields.String(validate=[validate.Length(1, 200), Pattern(CURSOR, "not a cursor from this API")],
                           metadata=pattern_meta(CURSOR, description="`next_cursor` of the previous page"))


# -- me ----------------------------------------------------------------------------------------

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


class MeSchema(Schema):
    workspace = fields.Nested(WorkspaceSchema, required=True)
    rate_limit = fields.Nested(RateLimitPolicySchema, required=True)
    api_key = fields.Nested(ApiKeyRefSchema, required=True)


class HealthChecksSchema(Schema):
    """Each dependency that answered; one that does not makes the answer a 503 instead."""

    database = fields.String(required=True, validate=validate.OneOf(["ok"]))
    queue = fields.String(required=True, validate=validate.OneOf(["ok"]),
                          metadata={"description": "the job and render queue (Redis in a farm)"})


class HealthSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ok"]))
    checks = fields.Nested(HealthChecksSchema, required=True)


# -- renders, stills, variants -----------------------------------------------------------------

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


# -- comments ----------------------------------------------------------------------------------

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


# -- webhooks ----------------------------------------------------------------------------------

_EVENTS_DESCRIPTION = "event kinds to receive; absent, null or empty means every kind"


class WebhookSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    url = fields.String(required=True)
    description = fields.String(required=True, allow_none=True)
    events = fields.List(fields.String(), required=True, metadata={"description": _EVENTS_DESCRIPTION})
    enabled = fields.Boolean(required=True)
    disabled_reason = fields.String(required=True, allow_none=True,
                                    metadata={"description": "why it was disabled (e.g. it answered 410 Gone)"})
    created_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)


class WebhookCreatedSchema(WebhookSchema):
    secret = fields.String(required=True, metadata={
        "description": "`whsec_...` signing secret (Standard Webhooks); shown only in this response"})


class WebhookListSchema(Schema):
    data = fields.List(fields.Nested(WebhookSchema), required=True)


class WebhookCreateSchema(RequestSchema):
    url = fields.String(required=True, validate=[validate.Length(1, 2048), Pattern(WEBHOOK_URL, _WEBHOOK_URL_ERROR)],
                        metadata=pattern_meta(WEBHOOK_URL,
                                              description="absolute http(s) URL whose host is a public address"))
    events = fields.List(fields.String(validate=validate.OneOf(WEBHOOK_EVENT_KINDS)), allow_none=True,
                         validate=validate.Length(max=len(WEBHOOK_EVENT_KINDS) * 2),
                         metadata={"description": _EVENTS_DESCRIPTION})
    description = fields.String(allow_none=True, validate=validate.Length(max=500))


class WebhookPatchSchema(RequestSchema):
    url = fields.String(validate=[validate.Length(1, 2048), Pattern(WEBHOOK_URL, _WEBHOOK_URL_ERROR)],
                        metadata=pattern_meta(WEBHOOK_URL))
    events = fields.List(fields.String(validate=validate.OneOf(WEBHOOK_EVENT_KINDS)), allow_none=True,
                         validate=validate.Length(max=len(WEBHOOK_EVENT_KINDS) * 2),
                         metadata={"description": _EVENTS_DESCRIPTION})
    description = fields.String(allow_none=True, validate=validate.Length(max=500))
    enabled = fields.Boolean()

    @validates_schema
    def changes_something(self, data: dict[str, Any], **_: Any) -> None:
        _changes_something(data, "url, events, description or enabled")


class WebhookDeliverySchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    event_id = fields.String(required=True, metadata={"description": "`evt_...`, also the `webhook-id` header"})
    event_type = fields.String(required=True)
    attempt = fields.Integer(required=True, metadata={"description": "1 for the first try of the event"})
    state = fields.String(required=True, validate=validate.OneOf(("pending", "succeeded", "failed", "gave_up")))
    status_code = fields.Integer(required=True, allow_none=True)
    latency_ms = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True)
    created_at = fields.DateTime(required=True)
    next_attempt_at = fields.DateTime(required=True, allow_none=True, metadata={
        "description": "pending: when it will be tried; failed: when the next attempt is due"})


class WebhookDeliveryListSchema(Schema):
    data = fields.List(fields.Nested(WebhookDeliverySchema), required=True)
