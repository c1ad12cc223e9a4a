"""Helpers that write a story's ``fields`` JSON Schema (2020-12) one property at a time.

Every property carries ``type``, ``title`` and ``default``; strings carry ``maxLength``, choices
``enum``, lists ``items`` and ``maxItems``, links ``format: uri`` and colours ``format: color``.
"""

from __future__ import annotations

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


def image_url(title: str, *, description: str | None = None) -> dict:
    """An optional image address; ``null`` draws a typographic design instead."""
    prop: dict[str, Any] = {"type": ["string", "null"], "title": title, "default": None, "format": "uri",
                            "pattern": URI_PATTERN, "maxLength": 2048}
    if description:
        prop["description"] = description
    return prop


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
