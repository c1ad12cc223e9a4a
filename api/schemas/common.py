"""What every resource's schemas share: the request base that refuses unstorable and loosely typed
JSON, the empty-PATCH rule, the VideoDoc field, the error envelope and the website-address message."""
from __future__ import annotations

import math
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load

from reelfarm.api.contract import Problem

SITE_URL_ERROR = "must be a website address: http(s)://host[:port][/path], or host[/path]"


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


def require_change(data: dict[str, Any], what: str) -> None:
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
    current_version = fields.Integer(metadata={
        "description": "On 412 `version_conflict` only: the number of the video's current version."})
    allowance_cpu_sec = fields.Float(metadata={
        "description": "On 402 `allowance_exceeded` only: the workspace's monthly compute allowance, CPU seconds."})
    used_cpu_sec = fields.Float(metadata={
        "description": "On 402 `allowance_exceeded` only: the CPU seconds its renders used this month (UTC), "
                       "with what its renders in flight are still estimated to use."})
    estimate_cpu_sec = fields.Float(metadata={
        "description": "On 402 `allowance_exceeded` only: the CPU seconds the refused request was estimated at."})


class ErrorBodySchema(Schema):
    code = fields.String(required=True, metadata={"example": "validation_failed"})
    message = fields.String(required=True)
    details = fields.List(fields.Nested(ErrorDetailSchema), required=True, allow_none=True)
    request_id = fields.String(required=True, metadata={"example": "req_3f2a9c1e0b7d4e55"})


class ErrorEnvelopeSchema(Schema):
    error = fields.Nested(ErrorBodySchema, required=True)
