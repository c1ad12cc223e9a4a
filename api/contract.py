"""The rules of request bodies that marshmallow fields cannot state, stated in the OpenAPI
document too, so that what the document calls valid is exactly what the server accepts.

Two kinds live here:

* Patterns (URLs, locales, cursors, a brief's first word) used by both the marshmallow field
  (``Pattern`` validates with ``re.fullmatch``, as JSON Schema's anchored ``^...$`` means) and
  the document (the field's ``pattern``).
* Whole-body rules added to components after the document is built (``refine``): which
  combinations of ``storyId``, ``fields``, ``brief`` and ``url`` create a video, the field schema
  of each story, that a PATCH changes something, and the locales the configured engines have.
  The request schemas check the same combinations (``@validates_schema``), each problem a
  ``Problem`` with its own code.

What depends on an object's state (a still time past this video's end, a locale no engine
translates from this video's language) cannot be in the document; it is answered with 409
``conflict``, since the same request is valid for another video.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from marshmallow import ValidationError, validate

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"{_LABEL}(?:\.{_LABEL})*\.?"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
_REST = r"(?:[/?#][!-~]*)?"
SITE_URL = rf"(?:https?://)?{_HOST}(?::{_PORT})?{_REST}"
"""A website: http(s), or no scheme (https is added); a host name or IPv4 address; printable ASCII."""
WEBHOOK_URL = rf"https?://{_HOST}(?::{_PORT})?{_REST}"
"""An absolute http(s) URL with a host name or IPv4 address."""
LOCALE = r"[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|[0-9]{3}))?"
"""A BCP 47 tag in its canonical case: language, optional script, optional region (``pt-BR``)."""
CURSOR = r"[0-9]{1,16}\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
"""A page position: microseconds since the epoch and a row id."""
HAS_TEXT = r"^\s*\S"


class Pattern(validate.Validator):
    """The whole value matches ``pattern`` (JSON Schema's ``^(?:pattern)$``, without Python's
    ``$`` accepting a trailing newline)."""

    def __init__(self, pattern: str, error: str) -> None:
        self.regex = re.compile(pattern)
        self.error = error

    def __call__(self, value: str) -> str:
        if not isinstance(value, str) or not self.regex.fullmatch(value):
            raise ValidationError(self.error)
        return value


class Problem(str):
    """A validation message that carries its own error ``code`` (``api.errors`` lists it under that
    code in ``details``; other messages get theirs from their wording)."""

    code: str

    def __new__(cls, code: str, message: str) -> Problem:
        problem = super().__new__(cls, message)
        problem.code = code
        return problem


def pattern_meta(pattern: str, **more: Any) -> dict[str, Any]:
    """The ``metadata`` of a field validated by ``Pattern(pattern)``: the document's ``pattern``."""
    return {"pattern": f"^(?:{pattern})$", **more}


def _as_checked(node: Any) -> Any:
    """A story's field schema as the server checks it: ``format: uri`` means the field's
    ``pattern`` here (an absolute URI in printable ASCII), not RFC 3987, so the keyword is left
    out of the request schema; the pattern states the rule."""
    if isinstance(node, dict):
        return {k: _as_checked(v) for k, v in node.items() if not (k == "format" and v == "uri")}
    if isinstance(node, list):
        return [_as_checked(v) for v in node]
    return node


def refine(schemas: dict[str, dict[str, Any]], stories: Iterable[Any], locales: list[str]) -> None:
    """Add the whole-body rules to the built component schemas (in place)."""
    stories = list(stories)
    create = schemas["VideoCreate"]
    create["properties"]["storyId"]["enum"] = [s.id for s in stories]
    no_generation = {"anyOf": [{"required": ["brief"]}, {"required": ["url"]}]}
    no_story = {"anyOf": [{"required": ["storyId"]}, {"required": ["fields"]}]}
    create["anyOf"] = [
        {"required": ["storyId"], "properties": {"storyId": {"const": s.id}, "fields": _as_checked(s.fields)},
         "not": no_generation} for s in stories
    ] + [{"required": ["brief"], "not": no_story}, {"required": ["url"], "not": no_story}]
    create["description"] = ("Either `storyId` (with `fields` valid for that story, defaults filling the rest), "
                             "or a `brief` and/or a site `url` to generate from; not both.")
    patch = schemas["VideoPatch"]
    patch["anyOf"] = [{"required": ["doc"]}, {"required": ["fields"]}, {"required": ["title"]}]
    patch["not"] = {"required": ["doc", "fields"]}
    # the values to change, of the video's own story: some story's fields, none required
    patch["properties"]["fields"] = {
        "description": "values to change, valid for the video's story (see GET /api/v1/stories)",
        "anyOf": [{k: v for k, v in _as_checked(s.fields).items() if k != "required"} for s in stories]}
    patch["description"] = "A complete `doc` or a `fields` patch (not both), and/or a new `title`."
    schemas["BrandKitPatch"]["minProperties"] = 1
    schemas["WebhookPatch"]["minProperties"] = 1
    items = schemas["VariantsCreate"]["properties"]["locales"]
    items["uniqueItems"] = True
    if locales:
        items["items"] = {"type": "string", "enum": sorted(locales)}
    else:
        items["maxItems"] = 0
        items["description"] = "no translation engine is configured"
