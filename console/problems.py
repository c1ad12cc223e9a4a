"""The story's validation problems in the words a person uses, each beside its field.

Pure: no Flask. The studio checks a draft once and reports every problem as a JSON pointer and a
code (``reelfarm.studio.stories.base.request_problems``: ``/fields/badge_color`` ``invalid_format``;
``/duration_sec`` ``out_of_range``); ``explain`` turns each into a sentence that starts with the
label the form shows and says what to write instead, keyed by the form name of the control it
belongs to::

    f.badge_color   "Badge colour: 'red-ish' is not a colour; use #RRGGBB"
    f.stats.1.value "Value 2: fill this in"
    video.duration_sec "Duration: use 6 to 60 seconds"

A code this module does not know keeps the studio's own message after the label, so nothing is
ever dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reelfarm.console.forms import PREFIX, label_at
from reelfarm.studio.stories.base import MAX_DURATION_SEC, MIN_DURATION_SEC

SETTINGS = {"format": ("video.format", "Format"), "duration_sec": ("video.duration_sec", "Duration"),
            "brand_kit_id": ("video.brand_kit_id", "Brand kit")}


def explain(schema: Mapping[str, Any], values: Mapping[str, Any], details: Sequence[Mapping[str, Any]],
            given: Mapping[str, Any] | None = None, unreadable: Mapping[str, str] | None = None) -> dict[str, str]:
    """A message for each problem, by form name; the first problem of a control wins.

    ``values``: the field values that were checked; ``given``: what was typed for the video's
    settings (``duration_typed``: the duration as text), to quote it back; ``unreadable``: the
    messages of fields that could not be read as their type (``forms.read``), which come first
    and stand for their field (it was left out of ``values``, not missing).
    """
    out: dict[str, str] = dict(unreadable or {})
    for detail in details:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in str(detail.get("field", "")).split("/") if p]
        if parts and parts[0] == "fields" and len(parts) > 1:
            name = PREFIX + ".".join(parts[1:])
            message = _field_message(schema, parts[1:], values, detail)
        elif len(parts) == 1 and parts[0] in SETTINGS:
            name, label = SETTINGS[parts[0]]
            message = _setting_message(parts[0], label, detail, given or {})
        else:
            name, message = "form", str(detail.get("message", "this cannot be used"))
        out.setdefault(name, message)
    return out


def _value_at(values: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if isinstance(values, Mapping):
            values = values.get(part)
        elif isinstance(values, list) and part.isdigit() and int(part) < len(values):
            values = values[int(part)]
        else:
            return None
    return values


def _prop_at(schema: Mapping[str, Any], parts: Sequence[str]) -> Mapping[str, Any]:
    prop: Mapping[str, Any] = {"properties": schema.get("properties", {}), "type": "object"}
    for part in parts:
        if part.isdigit() and "items" in prop:
            prop = prop["items"]
        else:
            prop = prop.get("properties", {}).get(part, {})
    return prop


def _quoted(value: Any, limit: int = 40) -> str:
    text = str(value)
    return "'" + (text if len(text) <= limit else text[:limit - 1] + "…") + "'"


def _field_message(schema: Mapping[str, Any], parts: Sequence[str], values: Mapping[str, Any],
                   detail: Mapping[str, Any]) -> str:
    label = label_at(schema, parts)
    prop = _prop_at(schema, parts)
    value = _value_at(values, parts)
    code = detail.get("code")
    if code == "invalid_format" and prop.get("format") == "color":
        return f"{label}: {_quoted(value)} is not a colour; use #RRGGBB, or leave it empty for the brand colour"
    if code == "invalid_format" and prop.get("format") == "uri":
        return f"{label}: {_quoted(value)} is not a web address; use one that starts with https://"
    if code == "too_long" and isinstance(value, str):
        return f"{label}: at most {prop.get('maxLength')} characters (this has {len(value)})"
    if code == "too_short" and isinstance(value, str):
        minimum = prop.get("minLength", 1)
        return f"{label}: fill this in" if minimum <= 1 or not value else f"{label}: at least {minimum} characters"
    if code == "required":
        return f"{label}: fill this in"
    if code in ("too_many_items", "too_few_items"):
        count = len(value) if isinstance(value, list) else 0
        if code == "too_many_items":
            return f"{label}: at most {prop.get('maxItems')} (this has {count})"
        return f"{label}: at least {prop.get('minItems')} (this has {count})"
    if code == "out_of_range":
        return f"{label}: use a number from {prop.get('minimum', '…')} to {prop.get('maximum', '…')}"
    if code == "invalid_choice" and "enum" in prop:
        return f"{label}: choose one of {', '.join(str(o) for o in prop['enum'] if o is not None)}"
    if code == "invalid_type":
        return f"{label}: {_quoted(value)} cannot be used here"
    if code == "unknown_field":
        return f"{label}: this story has no such field"
    return f"{label}: {detail.get('message', 'this cannot be used')}"


def _setting_message(name: str, label: str, detail: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    if name == "duration_sec":
        typed = str(given.get("duration_typed", "")).strip()
        range_ = f"use {MIN_DURATION_SEC:g} to {MAX_DURATION_SEC:g} seconds"
        if detail.get("code") == "invalid_type" or (typed and not _is_number(typed)):
            return f"{label}: {_quoted(typed)} is not a number; {range_}"
        return f"{label}: {range_}"
    if name == "brand_kit_id":
        return f"{label}: that kit is not one of this workspace's; choose one from the list"
    return f"{label}: choose one of the listed formats"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
