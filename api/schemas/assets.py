"""The media library: the Asset a client reads, its list and page query, the upload body, the
import-by-address body, a rename, and a presigned upload's request and answer."""
from __future__ import annotations

from flask_smorest.fields import Upload
from marshmallow import Schema, fields, validate

from reelfarm.api.contract import CURSOR, WEBHOOK_URL, Pattern, pattern_meta
from reelfarm.api.schemas.common import RequestSchema
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES
from reelfarm.farm.services.media_names import MAX_NAME_CHARS
from reelfarm.shared.tables import ASSET_KINDS


class AssetSchema(Schema):
    id = fields.UUID(required=True)
    name = fields.String(required=True, allow_none=True, metadata={
        "description": "the file's name as the workspace knows it: the uploaded file's name, a presigned upload's "
                       "`filename` or the last part of the address it came from (URL-decoded), or as renamed; "
                       "null for a file sent without one. It says nothing of what the file is (`kind`, "
                       "`content_type` do)", "example": "launch-film-soundtrack.wav"})
    kind = fields.String(required=True, validate=validate.OneOf(ASSET_KINDS))
    content_type = fields.String(required=True, metadata={"description": "read from the bytes, not the name"})
    bytes = fields.Integer(required=True, metadata={
        "description": "the size stored: the file's own, or for an SVG its sanitised rewrite's"})
    key = fields.String(required=True, metadata={
        "description": "the storage key a VideoDoc names the asset by (`assets[].key`, `brand.logo.key`); "
                       "it resolves only in this workspace"})
    width = fields.Integer(required=True, allow_none=True, metadata={
        "description": "images and videos: pixels (a video's as displayed: its display matrix's turn applied)"})
    height = fields.Integer(required=True, allow_none=True, metadata={
        "description": "images and videos: pixels (a video's as displayed: its display matrix's turn applied)"})
    duration_sec = fields.Float(required=True, allow_none=True, metadata={
        "description": "sounds and videos: seconds (a video's pictures, first frame to the end of the last); "
                       "captions: the last cue's end"})
    cues = fields.Integer(required=True, allow_none=True, metadata={
        "description": "captions files: how many cues it has (a story's `captions` field shows them); null for "
                       "other kinds"})
    fps = fields.Float(required=True, allow_none=True, metadata={
        "description": "videos: frames a second, on average (frames over duration, so variable-rate footage has one)"})
    has_audio = fields.Boolean(required=True, allow_none=True, metadata={
        "description": "videos: whether the clip has sound; null for images and sounds"})
    url = fields.String(required=True, metadata={"description": "signed download URL, valid for a day"})
    thumbnail_url = fields.String(required=True, allow_none=True, metadata={
        "description": "images: a signed URL of a thumbnail at most 320 pixels on a side (an SVG is its own; a JPEG, "
                       "or a WebP keeping the transparency of an image that has some); "
                       "videos: of a poster, a JPEG of the frame a second in (or a tenth of the way), upright, "
                       "at most 320 pixels on a side"})
    created_at = fields.DateTime(required=True)


class AssetListSchema(Schema):
    data = fields.List(fields.Nested(AssetSchema), required=True)
    next_cursor = fields.String(required=True, allow_none=True)


class AssetListQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(1, 100))
    cursor = fields.String(validate=[validate.Length(1, 200), Pattern(CURSOR, "not a cursor from this API")],
                           metadata=pattern_meta(CURSOR, description="`next_cursor` of the previous page"))
    kind = fields.String(validate=validate.OneOf(ASSET_KINDS), metadata={"description": "only images, sounds, videos or captions files"})
    q = fields.String(validate=validate.Length(max=MAX_NAME_CHARS), metadata={
        "description": "only assets whose `name` holds this text, in any case (`%` and `_` are themselves); "
                       "a nameless asset never matches; empty (or only spaces): every asset", "example": "logo"})


class AssetRenameSchema(RequestSchema):
    name = fields.String(required=True, metadata={
        "description": f"the new name: 1 to {MAX_NAME_CHARS} characters once trimmed, no control characters, "
                       "no `/` or `\\`; it changes only the label (not `key`, not the file)",
        "example": "Launch film soundtrack (final).wav"})


class AssetUploadSchema(Schema):
    file = Upload(required=True, metadata={"description": "the image, sound, video or captions (SRT, WebVTT) file"})


class AssetFromUrlSchema(RequestSchema):
    url = fields.String(required=True, validate=[validate.Length(1, 2048), Pattern(WEBHOOK_URL, "not an http(s) URL")],
                        metadata=pattern_meta(WEBHOOK_URL, description="where the image, sound or video is; a public "
                                              "http(s) address", example="https://example.com/images/team.png"))


MEDIA_TYPE = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}"
"""A media type without parameters (``image/png``)."""


class PresignedUploadRequestSchema(RequestSchema):
    bytes = fields.Integer(required=True, strict=True, validate=validate.Range(min=1), metadata={
        "description": f"the file's size; exactly this many bytes must be sent. More than {MAX_UPLOAD_BYTES} "
                       "(the upload limit) is 413 `payload_too_large`, as an upload's file"})
    content_type = fields.String(required=True, validate=[validate.Length(1, 127), Pattern(MEDIA_TYPE, "not a media type")],
                                 metadata=pattern_meta(MEDIA_TYPE, description="the `Content-Type` the PUT will send "
                                                       "(signed into the URL); what the file is still comes from its "
                                                       "bytes", example="image/png"))
    filename = fields.String(validate=validate.Length(1, 255), metadata={"description": "the file's name: the "
                                                                         "asset's `name` once completed"})


class PresignedUploadSchema(Schema):
    id = fields.UUID(required=True, metadata={"description": "complete it at `POST /assets/uploads/{id}/complete`"})
    method = fields.String(required=True, validate=validate.OneOf(["PUT"]))
    url = fields.String(required=True, metadata={"description": "where to send the file's bytes, until `expires_at`"})
    headers = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "headers the PUT must carry, as given"})
    bytes = fields.Integer(required=True)
    expires_at = fields.DateTime(required=True)
