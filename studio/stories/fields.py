"""Helpers that write a story's ``fields`` JSON Schema (2020-12) one property at a time.

Every property carries ``type``, ``title`` and ``default``; strings carry ``maxLength``, choices
``enum``, lists ``items`` and ``maxItems``, links ``format: uri``, colours ``format: color`` and
clips the asset-id ``pattern`` alone (``VIDEO_PATTERN``: a clip is an upload, never an address).
"""

from __future__ import annotations

import re
from typing import Any

from reelfarm.renderer.captions import CAPTION_POSITIONS, CAPTION_SIZES, CAPTION_STYLES


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


VIDEO_PATTERN = ASSET_ID_PATTERN
"""What a video field holds: the id of an uploaded video (a field with this pattern is a video field)."""


def video(title: str, *, description: str | None = None) -> dict:
    """An optional clip: the id of a video uploaded to the workspace's media library; ``null`` leaves
    it out and the story draws its picture or colour there instead.

    Only an upload, never an address: a clip is measured when it is uploaded (its length, rate and
    size), and the linter checks what the story asks of it against that length.
    """
    return {"type": ["string", "null"], "title": title, "default": None, "pattern": VIDEO_PATTERN,
            "maxLength": 36,
            "description": description or "the id of a video uploaded to the media library (POST /api/v1/assets)"}


def upload_kind(prop: dict[str, Any]) -> str:
    """The kind of library upload a field's asset id must name: ``video`` for video fields, else ``image``."""
    return "video" if prop.get("pattern") == VIDEO_PATTERN else "image"


SOUNDTRACK = "soundtrack"
"""The field every story accepts beside its own: a sound of the media library played under the video."""
SOUNDTRACK_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "title": "Soundtrack",
    "default": None,
    "description": "an uploaded sound (its asset id) played from the start, at `volume`, faded in and out, "
                   "looped or played once to fit the video (`fit`); null for none",
    "properties": {
        "asset_id": {"type": "string", "pattern": ASSET_ID_PATTERN, "description": "a sound asset's id"},
        "volume": {"type": "number", "minimum": 0, "maximum": 1, "default": 1},
        "fade_in_sec": {"type": "number", "minimum": 0, "maximum": 30, "default": 0},
        "fade_out_sec": {"type": "number", "minimum": 0, "maximum": 30, "default": 0},
        "fit": {"enum": ["loop", "once"], "default": "loop",
                "description": "a sound shorter than the video: `loop` (the default) repeats it to the end; "
                               "`once` plays it once and leaves the rest silent (the version's lint warns). "
                               "A sound longer than the video fades out over its last second either way"},
    },
    "required": ["asset_id"],
    "additionalProperties": False,
    "examples": [{"asset_id": "2173fd3a-796b-4ec7-b249-6ceab0569e02", "volume": 0.6, "fade_in_sec": 1,
                  "fade_out_sec": 2}],
}


CAPTIONS = "captions"
"""The other field every story accepts: a captions file of the media library drawn over the video."""
CAPTIONS_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "title": "Captions",
    "default": None,
    "description": "an uploaded captions file (its asset id: SRT or WebVTT), its cues drawn over the video at their "
                   "times in the brand's body font and colours, inside the safe area, in every format and in "
                   "translated copies (the cues translated with the rest); a render publishes them as WebVTT "
                   "(`captions_url`) and in its stream; null for none",
    "properties": {
        "asset_id": {"type": "string", "pattern": ASSET_ID_PATTERN, "description": "a captions file's asset id"},
        "style": {"enum": list(CAPTION_STYLES), "default": "box",
                  "description": "`box` (the default): the brand's background colour on a box of its text colour; "
                                 "`inverse`: the text colour on a box of the background colour; `primary`: the "
                                 "background colour on a box of the primary colour"},
        "position": {"enum": list(CAPTION_POSITIONS), "default": "bottom"},
        "size": {"enum": list(CAPTION_SIZES), "default": "medium"},
    },
    "required": ["asset_id"],
    "additionalProperties": False,
    "examples": [{"asset_id": "5b0c3f5e-0f7a-4c52-9d0e-6f1d2c3b4a59", "style": "box"}],
}
COMMON_FIELDS = {SOUNDTRACK: SOUNDTRACK_SCHEMA, CAPTIONS: CAPTIONS_SCHEMA}
"""The fields every story accepts beside its own, by name."""


def with_common_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """A story's ``fields`` schema with the fields every story accepts (``soundtrack``, ``captions``):
    the request's schema; forms draw the story's own fields."""
    return {**schema, "properties": {**schema["properties"], **COMMON_FIELDS}}


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
