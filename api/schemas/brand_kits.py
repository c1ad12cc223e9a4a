"""Brand kits and brand extraction: the design tokens a kit holds, the kit, its list and PATCH,
and the website to extract one from."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate, validates_schema

from reelfarm.api.contract import SITE_URL, Pattern, pattern_meta
from reelfarm.api.schemas.common import SITE_URL_ERROR, RequestSchema, require_change
from reelfarm.studio.stories.fields import ASSET_ID_PATTERN


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
    logo_asset_id = fields.String(
        validate=Pattern(ASSET_ID_PATTERN[1:-1], "must be the id of an image of the media library"),
        metadata={**pattern_meta(ASSET_ID_PATTERN[1:-1]),
                  "description": "make an uploaded image (`POST /api/v1/assets`) of this workspace the kit's logo: "
                                 "it is checked and stored with the kit as an uploaded logo is (replacing "
                                 "`tokens.logo`); another workspace's id gives 400",
                  "example": "2173fd3a-796b-4ec7-b249-6ceab0569e02"})

    @validates_schema
    def changes_something(self, data: dict[str, Any], **_: Any) -> None:
        require_change(data, "name, tokens, logo_asset_id or is_default")


class BrandExtractSchema(RequestSchema):
    url = fields.String(required=True, validate=[validate.Length(1, 2048), Pattern(SITE_URL, SITE_URL_ERROR)],
                        metadata=pattern_meta(SITE_URL, description="website address; https is added when missing",
                                              example="https://example.com"))
