"""The translation locales: one language as listed, the list for a source language, and its query."""
from __future__ import annotations

from marshmallow import Schema, fields, validate


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
