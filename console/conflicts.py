"""Two saves of one video's fields: what each changed, side by side, and the merge of them.

A person's fields form carries the version it was opened at. When another save has made a newer
version meanwhile, the console does not save over it: it shows, field by field, the value the
form was opened with, the person's and the current one, marking which of the two saves changed
it, and offers to merge (only the fields this person changed, onto the current version) or to
overwrite (the person's values as they are). A field both saves changed differs on the two sides;
a merge takes the person's value for it, and the page says so.

Pure: no Flask, no database. The values are story field values (``Story.fields``' properties).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reelfarm.console.forms import label_at

SHOWN_CHARS = 160


@dataclass(frozen=True)
class FieldChange:
    """One field that this person's save, the other save or both changed."""

    name: str
    label: str
    opened: Any  # the value when the form was opened
    yours: Any  # the value this person saved
    now: Any  # the value of the current version

    @property
    def mine(self) -> bool:
        return self.yours != self.opened

    @property
    def other(self) -> bool:
        return self.now != self.opened

    @property
    def clash(self) -> bool:
        """Both saves changed it, to different values (a merge keeps this person's)."""
        return self.mine and self.other and self.yours != self.now


def compare(schema: Mapping[str, Any], opened: Mapping[str, Any], yours: Mapping[str, Any],
            now: Mapping[str, Any]) -> list[FieldChange]:
    """The fields either save changed, in the story's order (then any others, by name)."""
    names = [*schema.get("properties", {}), *sorted(set(yours) - set(schema.get("properties", {})))]
    found = [FieldChange(name, label_at(schema, [name]), opened.get(name), yours.get(name), now.get(name))
             for name in names]
    return [f for f in found if f.mine or f.other]


def merged(opened: Mapping[str, Any], yours: Mapping[str, Any]) -> dict[str, Any]:
    """The fields this person changed, to be applied onto the current version's values."""
    return {name: value for name, value in yours.items() if opened.get(name) != value}


def shown(value: Any) -> str:
    """A field's value in words for the comparison (lists one item after another, nothing as a dash)."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        text = "; ".join(shown(item) for item in value)
    elif isinstance(value, Mapping):
        text = ", ".join(f"{key}: {shown(item)}" for key, item in value.items() if item not in (None, ""))
    else:
        text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def encode(values: Mapping[str, Any]) -> str:
    """The person's values as the conflict page's forms carry them."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def decode(text: str) -> dict[str, Any] | None:
    """Values carried by ``encode``; None for anything that is not a JSON object."""
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
