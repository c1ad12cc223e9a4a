"""A story's samples: the realistic values its text fields open with, and the ones left unchanged.

Every story builds from ``{}`` (the API's ``Story.fields`` gives each property a ``default``), and
its forms open filled, so a preview shows a finished design at once. Those defaults are samples
(a product called "Aurora Lamp", a speaker called "Maya Okafor"), not the user's content: a text
field (a string, or a list of strings or of rows) whose default is not empty holds a sample, and a
video made with one left as it is carries a ``sample_value`` warning per field on its version's
lint, which the API, the CLI and the console show. Choices (``enum``), numbers, colours, images
and clips have no sample: their defaults are settings.

The samples stay values rather than becoming placeholders (empty fields with a hint) because a
story built from ``{}`` must still make a whole video, and the API's defaults are part of its
contract: a warning reaches every face that reads a version, where a form's placeholder would
reach the console alone.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SAMPLE_VALUE", "sample_of", "sample_warnings", "samples", "unchanged_samples"]

SAMPLE_VALUE = "sample_value"


def sample_of(prop: Mapping[str, Any]) -> Any:
    """The sample a field's schema opens with, or None where its default is a setting or empty."""
    if "enum" in prop:
        return None
    default = prop.get("default")
    types = prop.get("type")
    kinds = set(types) if isinstance(types, list) else {types}
    if "string" in kinds and isinstance(default, str) and default.strip() and prop.get("format") is None:
        return default
    if "array" in kinds and isinstance(default, list) and default:
        return default
    return None


def samples(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{field: sample}`` of a story's ``fields`` schema."""
    found = {name: sample_of(prop) for name, prop in (schema.get("properties") or {}).items()}
    return {name: sample for name, sample in found.items() if sample is not None}


def unchanged_samples(schema: Mapping[str, Any], values: Mapping[str, Any]) -> list[str]:
    """The fields of ``values`` that still hold their sample, in the schema's order (a field left
    out of ``values`` is built from its sample, so it counts)."""
    return [name for name, sample in samples(schema).items() if values.get(name, sample) == sample]


def sample_warnings(schema: Mapping[str, Any], values: Mapping[str, Any]) -> list[dict[str, str]]:
    """A lint warning (``{"field", "code", "message"}``, as a version's ``lint`` holds them) for each
    field still holding its sample."""
    props = schema.get("properties") or {}
    return [{"field": f"/fields/{name}", "code": SAMPLE_VALUE,
             "message": f"{props[name].get('title') or name} still holds the story's sample "
                        f"({_shown(samples(schema)[name])}); change it, or clear it if it may be empty"}
            for name in unchanged_samples(schema, values)]


def _shown(sample: Any, limit: int = 40) -> str:
    if isinstance(sample, list):
        first = sample[0]
        text = str(next(iter(first.values()), "")) if isinstance(first, Mapping) else str(first)
        return f"{len(sample)} items, the first {_quoted(text, limit)}"
    return _quoted(str(sample), limit)


def _quoted(text: str, limit: int) -> str:
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'
