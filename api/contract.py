"""The rules of request bodies that marshmallow fields cannot state, stated in the OpenAPI
document too, so that what the document calls valid is exactly what the server accepts.

Two kinds live here:

* Patterns (URLs, locales, cursors, a brief's first word) used by both the marshmallow field
  (``Pattern`` validates with ``re.fullmatch``, as JSON Schema's anchored ``^...$`` means) and
  the document (the field's ``pattern``).
* Whole-body rules added to components after the document is built (``refine``): which
  combinations of ``storyId``, ``fields``, ``brief`` and ``url`` create a video, as named
  variants a client generator can use (``VideoCreate`` is a ``oneOf`` of ``VideoCreate.story``,
  itself one variant per story discriminated by ``storyId``, ``VideoCreate.brief`` and
  ``VideoCreate.url``), the field schema of each story (``StoryFields.<id>``), and that a PATCH
  changes something. The request schemas check the same combinations (``@validates_schema``),
  each problem a ``Problem`` with its own code.

The document has one shape whatever the deployment: what depends on configuration (the locales
the installed translation engines have) is served by ``GET /api/v1/locales``, not written into
the document; the server still refuses other tags with 400.

What depends on an object's state (a still time past this video's end, a locale no engine
translates from this video's language) cannot be in the document; it is answered with 409
``conflict``, since the same request is valid for another video.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Self

from marshmallow import ValidationError, validate

from reelfarm.studio.stories.fields import with_common_fields

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

    error: str  # always given here (the base class allows None)

    def __init__(self, pattern: str, error: str) -> None:
        self.regex = re.compile(pattern)
        self.error = error

    def __call__(self, value: str) -> str:
        if not isinstance(value, str) or not self.regex.fullmatch(value):
            raise ValidationError(self.error)
        return value


class Problem(str):
    """A validation message that carries its own error ``code`` (``reelfarm.api.errors`` lists it under that
    code in ``details``; other messages get theirs from their wording)."""

    code: str

    def __new__(cls, code: str, message: str) -> Self:
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


def refine(schemas: dict[str, dict[str, Any]], stories: Iterable[Any]) -> None:
    """Add the whole-body rules to the built component schemas (in place)."""
    stories = list(stories)
    for story in stories:
        schemas[f"StoryFields.{story.id}"] = _as_checked(with_common_fields(story.fields))
    schemas.update(create_variants(schemas["VideoCreate"], stories))
    schemas["VideoCreate"] = {
        "description": "Either `storyId` (with `fields` valid for that story, defaults filling the rest), or a "
                       "`brief` and/or a site `url` to generate from; not both.",
        "oneOf": [_ref("VideoCreate.story"), _ref("VideoCreate.brief"), _ref("VideoCreate.url")]}
    patch = schemas["VideoPatch"]
    # "something to change, not both doc and fields" as one `not`: a generator then still sees
    # a plain object with properties (a top-level anyOf would make the body a union of nothing)
    something = {"anyOf": [{"required": ["doc"]}, {"required": ["fields"]}, {"required": ["title"]}]}
    patch["not"] = {"anyOf": [{"required": ["doc", "fields"]}, {"not": something}]}
    patch["properties"]["fields"] = {
        "description": "values to change, valid for the video's story (see GET /api/v1/stories)",
        "anyOf": [_patch_fields(schemas, s) for s in stories]}
    patch["description"] = "A complete `doc` or a `fields` patch (not both), and/or a new `title`."
    schemas["BrandKitPatch"]["minProperties"] = 1
    schemas["WebhookPatch"]["minProperties"] = 1
    locales = schemas["VariantsCreate"]["properties"]["locales"]
    locales["uniqueItems"] = True
    locales["description"] = ("translated copies to make; each a tag of `GET /api/v1/locales` for the video's "
                              "language (what this deployment's engines translate), others give 400")


def create_variants(built: dict[str, Any], stories: list[Any]) -> dict[str, dict[str, Any]]:
    """The named bodies that create a video: one per story (``VideoCreate.story.<id>``, joined by a
    ``oneOf`` with a discriminator on ``storyId``), one from a brief and one from a URL alone.

    Each lists its own properties with ``additionalProperties: false``, so exactly one matches
    any body the server accepts (a brief with a URL is the brief variant)."""
    props = built["properties"]
    common = {k: v for k, v in props.items() if k not in ("storyId", "fields", "brief", "url")}
    fmt = common["format"]
    variants: dict[str, dict[str, Any]] = {
        "VideoFormat": {"type": "string", "enum": fmt["enum"], "description": "aspect ratio of the video"}}
    common["format"] = {"$ref": COMPONENTS + "VideoFormat", "default": fmt["default"]}
    for story in stories:
        variants[f"VideoCreate.story.{story.id}"] = _object(
            f"A video built from the `{story.id}` story: {story.description}", ["storyId"],
            storyId={"type": "string", "const": story.id}, fields=_ref(f"StoryFields.{story.id}"), **common)
    variants["VideoCreate.story"] = {
        "description": "A video built at once from a story (`GET /api/v1/stories`).",
        "oneOf": [_ref(f"VideoCreate.story.{s.id}") for s in stories],
        "discriminator": {"propertyName": "storyId",
                          "mapping": {s.id: f"{COMPONENTS}VideoCreate.story.{s.id}" for s in stories}}}
    variants["VideoCreate.brief"] = _object("A video generated from a brief, branded from `url` when given.",
                                            ["brief"], brief=props["brief"], url=props["url"], **common)
    variants["VideoCreate.url"] = _object("A video generated from a website alone.", ["url"], url=props["url"],
                                          **common)
    return variants


COMPONENTS = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": COMPONENTS + name}


def _object(description: str, required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "description": description, "properties": properties, "required": required,
            "additionalProperties": False}


def _patch_fields(schemas: dict[str, dict[str, Any]], story: Any) -> dict[str, Any]:
    """A story's fields as a patch (``StoryFieldsPatch.<id>``): the values to change, so nothing
    is required and nothing has a default (a generated client would otherwise send the defaults,
    overwriting the video's values)."""
    fields = schemas[f"StoryFields.{story.id}"]
    properties = {name: {k: v for k, v in prop.items() if k != "default"}
                  for name, prop in fields["properties"].items()}
    schemas[f"StoryFieldsPatch.{story.id}"] = {
        **{k: v for k, v in fields.items() if k != "required"}, "properties": properties}
    return _ref(f"StoryFieldsPatch.{story.id}")
