"""The Story type, field validation and defaults, and the wrapper that makes a story's builder.

A builder is ``build(fields, brand_tokens, format, duration_sec) -> VideoDoc dict``. It checks
its inputs, fills defaults, maps the brand tokens to a VideoDoc brand block and lets the story
lay its scenes out (see ``compose``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from reelfarm.studio.errors import InvalidBuildRequestError, InvalidFieldsError
from reelfarm.studio.stories.brand import NEUTRAL_BRAND, Kit, brand_block, is_hex
from reelfarm.studio.stories.compose import AssetBook, SceneDraft, compose_doc
from reelfarm.studio.stories.fields import (
    CAPTIONS,
    COLOR_PATTERN,
    COMMON_FIELDS,
    SOUNDTRACK,
    URI_PATTERN,
    VIDEO_PATTERN,
    is_asset_id,
    upload_kind,
    with_common_fields,
)
from reelfarm.studio.stories.layout import FORMATS

__all__ = [
    "MAX_DURATION_SEC",
    "MIN_DURATION_SEC",
    "NEUTRAL_BRAND",
    "Story",
    "StoryContext",
    "define_story",
    "request_problems",
    "resolve_fields",
    "validate_fields",
]

MIN_DURATION_SEC = 6.0
MAX_DURATION_SEC = 60.0

Builder = Callable[..., dict]
"""``build(values, brand_tokens, format, duration_sec=None, uploads=None, cues=None)``: ``uploads``
maps the workspace's library ids that the values name to ``(kind, storage key)``, ``cues`` its
captions files' ids among them to their cues (``{"start", "end", "text"}`` dicts)."""


@dataclass(frozen=True)
class Story:
    """A built-in video template.

    ``fields`` is the JSON Schema (2020-12) of its editable values; ``build`` turns values,
    brand tokens, a format and an optional duration into a VideoDoc dict.
    """

    id: str
    name: str
    category: str
    description: str
    default_duration_sec: float
    fields: dict[str, Any]
    build: Builder = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The API's ``Story`` resource: its fields with the ``soundtrack`` and ``captions`` every story accepts."""
        return {
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "description": self.description,
            "default_duration_sec": self.default_duration_sec,
            "fields": copy.deepcopy(with_common_fields(self.fields)),
        }


# --- validation ---------------------------------------------------------------------------

_FORMATS = FormatChecker(formats=())


@_FORMATS.checks("color")
def _is_color(value: object) -> bool:
    return not isinstance(value, str) or bool(re.fullmatch(COLOR_PATTERN[1:-1], value))


@_FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    """An absolute URI (RFC 3986) in printable ASCII: a scheme and something after it, or (an image
    field's other form) the id of an upload. Fetch policy and whose upload it is live elsewhere."""
    return not isinstance(value, str) or bool(re.fullmatch(URI_PATTERN[1:-1], value)) or is_asset_id(value)


_CODES = {
    "type": "invalid_type",
    "maxLength": "too_long",
    "minLength": "too_short",
    "enum": "invalid_choice",
    "const": "invalid_choice",
    "maxItems": "too_many_items",
    "minItems": "too_few_items",
    "format": "invalid_format",
    "pattern": "invalid_format",
    "minimum": "out_of_range",
    "maximum": "out_of_range",
    "required": "required",
}


def _pointer(parts: Iterable[Any]) -> str:
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "/fields" + "".join("/" + p for p in escaped)


def _details(error: ValidationError, fields: Any) -> list[dict]:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        return [
            {"field": _pointer(path + [key]), "code": "unknown_field", "message": f"unknown field {key!r}"}
            for key in error.instance
            if key not in known
        ]
    if error.validator == "required":
        missing = [k for k in error.validator_value if isinstance(error.instance, dict) and k not in error.instance]
        return [{"field": _pointer(path + [k]), "code": "required", "message": f"{k!r} is required"} for k in missing]
    if error.validator == "pattern" and "format" in error.schema:
        return []  # the format's own error says it better (the pattern only publishes the format)
    if error.validator == "pattern" and error.schema.get("pattern") == VIDEO_PATTERN:
        return [{"field": _pointer(path), "code": "invalid_format",
                 "message": f"{error.instance!r} is not the id of a video of the media library (a clip is "
                            "uploaded first, POST /api/v1/assets; an address is not taken)"}]
    code = _CODES.get(str(error.validator), "invalid")
    return [{"field": _pointer(path), "code": code, "message": error.message}]


def validate_fields(story: Story, fields: Any) -> list[dict]:
    """Every problem with ``fields`` for ``story``, as ``{"field", "code", "message"}`` dicts.

    ``field`` is a JSON pointer into the request body (``/fields/headline``); each unknown key
    is its own entry (code ``unknown_field``). An empty list means the values are valid.
    """
    if not isinstance(fields, dict):
        return [{"field": "/fields", "code": "invalid_type", "message": "fields must be an object"}]
    validator = Draft202012Validator(with_common_fields(story.fields), format_checker=_FORMATS)
    errors = sorted(validator.iter_errors(fields), key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)))
    details: list[dict] = []
    for error in errors:
        details += _details(error, fields)
    return details


def resolve_fields(story: Story, fields: dict | None) -> dict[str, Any]:
    """``fields`` with every missing property set to its default; unknown keys are left out."""
    fields = fields or {}
    props = story.fields["properties"]
    values = {name: copy.deepcopy(fields[name] if name in fields else prop.get("default")) for name, prop in props.items()}
    for name in COMMON_FIELDS:
        if fields.get(name) is not None:
            values[name] = copy.deepcopy(fields[name])
    return values


def uploads_named(story: Story, values: dict[str, Any]) -> dict[str, str]:
    """``{field: asset id}`` for every image or video field (and the soundtrack and captions) of
    ``values`` naming an upload."""
    named = {name: value for name, value in values.items()
             if name in story.fields["properties"] and is_asset_id(value)}
    for name in COMMON_FIELDS:
        value = values.get(name)
        if isinstance(value, dict) and is_asset_id(value.get("asset_id")):
            named[name] = value["asset_id"]
    return named


_KIND_WORDS = {"audio": "sound", "image": "image", "video": "video", "captions": "captions file"}
_COMMON_KINDS = {SOUNDTRACK: "audio", CAPTIONS: "captions"}


def _check_uploads(story: Story, values: dict[str, Any], uploads: Mapping[str, tuple[str, str]]) -> None:
    problems = []
    props = story.fields["properties"]
    for name, asset_id in uploads_named(story, values).items():
        kind = _COMMON_KINDS.get(name) or upload_kind(props[name])
        found = uploads.get(asset_id)
        if found is None or found[0] != kind:
            # a clip or captions file is only ever an upload (the library read it); sounds and images may be addresses
            elsewhere = "" if kind in ("video", "captions") else " or give an https address"
            problems.append({"field": f"/fields/{name}" + ("/asset_id" if name in COMMON_FIELDS else ""),
                             "code": "unknown_asset",
                             "message": f"no {_KIND_WORDS[kind]} of this workspace's media library has the id "
                                        f"{asset_id!r}; upload it (POST /api/v1/assets){elsewhere}"})
    if problems:
        raise InvalidFieldsError(problems)


# --- building -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StoryContext:
    """What a story's scene function gets: resolved values, colour roles and the asset book."""

    values: dict[str, Any]
    kit: Kit
    assets: AssetBook
    duration: float

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def inverted(self) -> StoryContext:
        """This context with the other theme, for a scene that flips light and dark."""
        return StoryContext(values=self.values, kit=self.kit.inverted(), assets=self.assets, duration=self.duration)


ScenesFn = Callable[[StoryContext], list[SceneDraft]]


def define_story(*, id: str, name: str, category: str, description: str, default_duration_sec: float,
                 fields: dict[str, Any], scenes: ScenesFn, title_field: str = "headline") -> Story:
    """A ``Story`` whose builder validates, fills defaults and composes ``scenes``' drafts."""
    holder: list[Story] = []

    def build(values: dict, brand_tokens: dict, format: str, duration_sec: float | None = None,
              uploads: Mapping[str, tuple[str, str]] | None = None,
              cues: Mapping[str, list[dict]] | None = None) -> dict:
        story = holder[0]
        problems = validate_fields(story, values)
        if problems:
            raise InvalidFieldsError(problems)
        duration = _check_request(story, format, duration_sec)
        resolved = resolve_fields(story, values)
        _check_uploads(story, resolved, uploads or {})
        kit = _kit(brand_tokens, resolved)
        book = AssetBook(kit, {asset_id: key for asset_id, (_, key) in (uploads or {}).items()})
        book.soundtrack(resolved.pop(SOUNDTRACK, None))
        book.captions(resolved.pop(CAPTIONS, None), cues or {})
        ctx = StoryContext(values=resolved, kit=kit, assets=book, duration=duration)
        title = str(resolved.get(title_field) or name)
        return compose_doc(title=title, drafts=scenes(ctx), kit=kit, fmt=format, duration=duration, assets=ctx.assets)

    story = Story(id=id, name=name, category=category, description=description,
                  default_duration_sec=default_duration_sec, fields=fields, build=build)
    holder.append(story)
    return story


def request_problems(story: Story, fields: Any, fmt: str, duration_sec: float | None) -> list[dict]:
    """Every problem with a request to build ``story``, at once: its fields (as ``validate_fields``
    gives them), then the format (``/format``) and the duration (``/duration_sec``)."""
    return validate_fields(story, fields) + [
        {"field": f"/{name}", "code": code, "message": message}
        for name, code, message in _setting_problems(fmt, duration_sec)]


def _setting_problems(fmt: str, duration_sec: float | None) -> list[tuple[str, str, str]]:
    found = []
    if fmt not in FORMATS:
        found.append(("format", "invalid_choice", f"format must be one of {', '.join(FORMATS)}"))
    if duration_sec is None:
        return found
    if isinstance(duration_sec, bool) or not isinstance(duration_sec, (int, float)):
        found.append(("duration_sec", "invalid_type", "duration_sec must be a number"))
    elif not MIN_DURATION_SEC <= duration_sec <= MAX_DURATION_SEC:
        found.append(("duration_sec", "out_of_range",
                      f"duration_sec must be between {MIN_DURATION_SEC:g} and {MAX_DURATION_SEC:g}"))
    return found


def _check_request(story: Story, fmt: str, duration_sec: float | None) -> float:
    for name, _, message in _setting_problems(fmt, duration_sec)[:1]:
        raise InvalidBuildRequestError(name, message)
    return float(story.default_duration_sec if duration_sec is None else duration_sec)


def _kit(brand_tokens: dict | None, values: dict[str, Any]) -> Kit:
    theme = "dark" if values.get("theme") == "dark" else "light"
    return Kit(brand=brand_block(brand_tokens), theme=theme)


def custom_color(value: Any) -> str | None:
    """A field's ``#RRGGBB`` colour, or ``None`` when unset or malformed."""
    return value if is_hex(value) else None
