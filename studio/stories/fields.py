"""Helpers that write a story's ``fields`` JSON Schema (2020-12) one property at a time.

Every property carries ``type``, ``title`` and ``default``; strings carry ``maxLength``, choices
``enum``, lists ``items`` and ``maxItems``, links ``format: uri`` and colours ``format: color``.
"""

from __future__ import annotations

import re
from typing import Any


def fields_schema(**properties: dict[str, Any]) -> dict[str, Any]:
    """The ``fields`` object schema: the given properties, none required, nothing else allowed.

    Every property has a default, so a story builds from ``{}``; order is kept for forms.
    """
    return {
        "type": "object",
        "properties": properties,
        "required": [],
        "additionalProperties": False,
    }


def text(title: str, default: str, max_length: int, *, optional: bool = False, description: str | None = None) -> dict:
    """A string field; ``optional`` ones may be empty, which leaves their element out."""
    prop: dict[str, Any] = {"type": "string", "title": title, "default": default, "maxLength": max_length}
    if not optional:
        prop["minLength"] = 1
    if description:
        prop["description"] = description
    return prop


def choice(title: str, options: list, default: Any, *, description: str | None = None) -> dict:
    """A field restricted to ``options`` (strings or integers)."""
    kind = "integer" if all(isinstance(o, int) for o in options) else "string"
    prop: dict[str, Any] = {"type": kind, "title": title, "default": default, "enum": list(options)}
    if description:
        prop["description"] = description
    return prop


def text_list(title: str, default: list[str], *, max_items: int, item_max_length: int, min_items: int = 1) -> dict:
    """A list of short strings, such as bullet points."""
    return {
        "type": "array",
        "title": title,
        "default": list(default),
        "items": {"type": "string", "minLength": 1, "maxLength": item_max_length},
        "minItems": min_items,
        "maxItems": max_items,
    }


URI_PATTERN = "^[A-Za-z][A-Za-z0-9+.-]*:[!-~]+$"
"""An absolute URI in printable ASCII: a scheme and something after it (what ``format: uri`` checks)."""
COLOR_PATTERN = "^#[0-9A-Fa-f]{6}$"
ASSET_ID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""The id of an upload in the workspace's media library (``POST /api/v1/assets``)."""
IMAGE_PATTERN = f"^(?:{URI_PATTERN[1:-1]}|{ASSET_ID_PATTERN[1:-1]})$"
"""What an image field holds: an absolute URI or the id of an uploaded image."""


def is_asset_id(value: object) -> bool:
    """Whether ``value`` names an upload of the media library rather than an address."""
    return isinstance(value, str) and re.fullmatch(ASSET_ID_PATTERN[1:-1], value) is not None


def image_url(title: str, *, description: str | None = None) -> dict:
    """An optional image: an https address or the id of an image uploaded to the workspace's media
    library; ``null`` draws a typographic design instead."""
    prop: dict[str, Any] = {"type": ["string", "null"], "title": title, "default": None, "format": "uri",
                            "pattern": IMAGE_PATTERN, "maxLength": 2048}
    prop["description"] = description or "an https address, or the id of an image uploaded to the media library"
    return prop


SOUNDTRACK = "soundtrack"
"""The field every story accepts beside its own: a sound of the media library played under the video."""
SOUNDTRACK_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "title": "Soundtrack",
    "default": None,
    "description": "an uploaded sound (its asset id) played from the start, at `volume`, faded in and out; "
                   "null for none",
    "properties": {
        "asset_id": {"type": "string", "pattern": ASSET_ID_PATTERN, "description": "a sound asset's id"},
        "volume": {"type": "number", "minimum": 0, "maximum": 1, "default": 1},
        "fade_in_sec": {"type": "number", "minimum": 0, "maximum": 30, "default": 0},
        "fade_out_sec": {"type": "number", "minimum": 0, "maximum": 30, "default": 0},
    },
    "required": ["asset_id"],
    "additionalProperties": False,
    "examples": [{"asset_id": "2173fd3a-796b-4ec7-b249-6ceab0569e02", "volume": 0.6, "fade_in_sec": 1,
                  "fade_out_sec": 2}],
}


def with_soundtrack(schema: dict[str, Any]) -> dict[str, Any]:
    """A story's ``fields`` schema with the ``soundtrack`` field every story accepts (the request's
    schema; forms draw the story's own fields)."""
    return {**schema, "properties": {**schema["properties"], SOUNDTRACK: SOUNDTRACK_SCHEMA}}


def color(title: str, *, description: str | None = None) -> dict:
    """An optional ``#RRGGBB`` colour; ``null`` keeps the brand's."""
    prop: dict[str, Any] = {"type": ["string", "null"], "title": title, "default": None, "format": "color",
                            "pattern": COLOR_PATTERN}
    if description:
        prop["description"] = description
    return prop


THEME = choice(
    "Theme",
    ["light", "dark"],
    "light",
    description="light: brand background; dark: brand primary colour as the background.",
)


def max_len(schema: dict, name: str) -> int:
    """The ``maxLength`` of a string field, or of a list field's items."""
    prop = schema["properties"][name]
    return prop["items"]["maxLength"] if prop.get("type") == "array" else prop["maxLength"]


def record_list(title: str, default: list[dict], *, max_items: int, properties: dict[str, dict],
                min_items: int = 1) -> dict:
    """A list of small records (all properties required), such as value/label pairs."""
    return {
        "type": "array",
        "title": title,
        "default": [dict(d) for d in default],
        "items": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        "minItems": min_items,
        "maxItems": max_items,
    }


def item_max_len(schema: dict, name: str, key: str) -> int:
    """The ``maxLength`` of property ``key`` of a record list's items."""
    return schema["properties"][name]["items"]["properties"][key]["maxLength"]
