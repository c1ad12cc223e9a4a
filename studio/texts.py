"""The texts of a VideoDoc, each distinct string once, and a document with some of them replaced.

What a person corrects in a video that has no story fields (a translated copy, a document edit):
``doc_texts(doc)`` lists every distinct text the video shows (the title, text layers at any
depth, their per-format overrides, caption cues), in order of first appearance, each with a label naming where
it first appears and how many places use it; ``with_texts(doc, {index: new})`` gives a new
document in which every place that showed text ``index`` shows ``new``. A string repeated across
scenes (a headline in the opening and the outro) is one text, changed everywhere at once.

``text_slots`` is the one walk over a document's texts; ``reelfarm.studio.localize`` translates
the same slots.
"""
from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reelfarm.renderer.model import doc_schema

JSON = dict[str, Any]


@dataclass(frozen=True)
class DocText:
    """One distinct text of a document: where it first appears, and how many places show it."""

    index: int
    text: str
    label: str
    places: int
    max_length: int  # the least the VideoDoc schema allows in the places that show it

    @property
    def multiline(self) -> bool:
        return "\n" in self.text or len(self.text) > 60


def text_slots(doc: JSON) -> Iterator[tuple[str, JSON, str]]:
    """``(label, holder, key)`` for each text of ``doc``: ``holder[key]`` is the string."""
    if isinstance(doc.get("title"), str):
        yield "Title", doc, "title"
    for number, scene in enumerate(doc.get("scenes", []), start=1):
        for layer in _all_layers(scene.get("layers", [])):
            if layer.get("type") != "text" or not isinstance(layer.get("text"), str):
                continue
            label = f"Scene {number} · {_layer_name(layer, scene)}"
            yield label, layer, "text"
            for fmt, override in layer.get("formats", {}).items():
                if isinstance(override, dict) and isinstance(override.get("text"), str):
                    yield f"{label} ({fmt})", override, "text"
    captions = doc.get("captions")
    for number, cue in enumerate(captions.get("cues", []) if isinstance(captions, dict) else [], start=1):
        if isinstance(cue, dict) and isinstance(cue.get("text"), str):
            yield f"Captions · cue {number}", cue, "text"


def _all_layers(layers: list[JSON]) -> Iterator[JSON]:
    for layer in layers:
        yield layer
        yield from _all_layers(layer.get("children", []))


def _layer_name(layer: JSON, scene: JSON) -> str:
    name = str(layer.get("id") or "text")
    prefix = f"{scene.get('id')}."
    if scene.get("id") and name.startswith(prefix):
        name = name[len(prefix):]
    return name.replace("_", " ").replace(".", " ")


def _max_length(doc: JSON, holder: JSON) -> int:
    """The VideoDoc schema's maxLength of the string at ``holder``: the title's, a caption cue's, or a
    text layer's."""
    schema = doc_schema()
    if holder is doc:
        return int(schema["properties"]["title"]["maxLength"])
    if "type" not in holder and "start" in holder and "end" in holder:
        return int(schema["$defs"]["cue"]["properties"]["text"]["maxLength"])
    return int(schema["$defs"]["layer_props"]["properties"]["text"]["maxLength"])


def doc_texts(doc: JSON) -> list[DocText]:
    """Every distinct text of ``doc``, in order of first appearance."""
    first: dict[str, str] = {}
    count: dict[str, int] = {}
    limit: dict[str, int] = {}
    for label, holder, key in text_slots(doc):
        text = holder[key]
        first.setdefault(text, label)
        count[text] = count.get(text, 0) + 1
        limit[text] = min(limit.get(text, _max_length(doc, holder)), _max_length(doc, holder))
    return [DocText(i, text, first[text], count[text], limit[text]) for i, text in enumerate(first)]


def text_problems(doc: JSON, changes: Mapping[int, str]) -> dict[int, str]:
    """Why each change cannot be made (by index): an unknown text, an empty one, one too long."""
    known = doc_texts(doc)
    problems = {}
    for index, new in changes.items():
        if not 0 <= index < len(known):
            problems[index] = "this text is no longer in the video; reload the page"
        elif not new.strip():
            problems[index] = f"{known[index].label}: write a text; it cannot be empty"
        elif len(new) > known[index].max_length:
            problems[index] = (f"{known[index].label}: at most {known[index].max_length} characters "
                               f"(this has {len(new)})")
    return problems


def with_texts(doc: JSON, changes: Mapping[int, str]) -> JSON:
    """A copy of ``doc`` in which every place showing text ``i`` shows ``changes[i]``.

    Raises:
        ValueError: a change that ``text_problems`` refuses.
    """
    problems = text_problems(doc, changes)
    if problems:
        raise ValueError("; ".join(problems.values()))
    known = doc_texts(doc)
    replace = {known[i].text: new for i, new in changes.items() if new != known[i].text}
    out = copy.deepcopy(doc)
    for _, holder, key in text_slots(out):
        holder[key] = replace.get(holder[key], holder[key])
    return out
