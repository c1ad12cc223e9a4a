"""What each version of a video changed against the one before it, for the video page's Versions table.

A version made from story values (a fields edit, a restore of one, the first version of a story
video) is compared field by field with the values of the version before it: each field that differs,
by its label, with its old and new values in words (``conflicts.shown``) clipped to ``CLIP_CHARS``.
A version with no story values (a document edit such as a clip's start, a translation, a written
video) or one after such a version is compared document to document: the video's own settings
(duration, format, frame rate, title, language, soundtrack), then scene by scene: scenes added or
removed, and for a scene that changed, each text that changed (old and new) and the other layers
that changed by name. The first version says what it was made from.

Pure: no Flask, no database. The versions are the stored ones (``shared.repos.videos.Version``:
``number``, ``source``, ``doc`` and ``fields``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reelfarm.console.conflicts import shown
from reelfarm.console.forms import label_at

CLIP_CHARS = 40
MAX_LINES = 6  # a version that changed more says how many more
_SETTINGS = (("duration", "Duration"), ("format", "Format"), ("fps", "Frame rate"), ("title", "Title"),
             ("locale", "Language"))
_MADE_FROM = {"story": "Made from the story", "generate": "Written from the brief", "translate": "Translated",
              "doc": "Made from a document", "fields": "Made from the story values", "restore": "Restored"}


class StoredVersion(Protocol):
    @property
    def number(self) -> int: ...
    @property
    def source(self) -> str: ...
    @property
    def doc(self) -> dict[str, Any]: ...
    @property
    def fields(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Change:
    """One thing a version changed: ``label`` alone (a summary: "Scene 2 added"), or with the value
    before and after (clipped)."""

    label: str
    before: str | None = None
    after: str | None = None


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _value(value: Any) -> str:
    return clip(shown(value))


def changes(schema: Mapping[str, Any] | None, versions: Iterable[StoredVersion]) -> dict[int, list[Change]]:
    """By version number: what it changed against the version numbered just below it (the first
    version: what it was made from). ``schema``: the story's fields schema, for the labels (None: a
    video with no story)."""
    ordered = sorted(versions, key=lambda v: v.number)
    found: dict[int, list[Change]] = {}
    for before, after in zip([None, *ordered], ordered):
        if before is None:
            found[after.number] = [Change(_MADE_FROM.get(after.source, after.source))]
        elif before.fields is not None and after.fields is not None:
            found[after.number] = _cut(field_changes(schema or {}, before.fields, after.fields)
                                       or doc_changes(before.doc, after.doc))
        else:
            found[after.number] = _cut(doc_changes(before.doc, after.doc))
    return found


def _cut(found: list[Change]) -> list[Change]:
    if not found:
        return [Change("Nothing changed")]
    if len(found) <= MAX_LINES:
        return found
    return [*found[:MAX_LINES - 1], Change(f"and {len(found) - MAX_LINES + 1} more changes")]


def field_changes(schema: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """The story values that differ, in the story's order (then any others, by name)."""
    props = list(schema.get("properties", {}))
    names = [*props, *sorted((set(before) | set(after)) - set(props))]
    return [Change(label_at(schema, [name]), _value(before.get(name)), _value(after.get(name)))
            for name in names if before.get(name) != after.get(name)]


def doc_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """What differs between two documents: settings, soundtrack, then scene by scene."""
    found = [Change(label, _value(before.get(key)), _value(after.get(key)))
             for key, label in _SETTINGS if before.get(key) != after.get(key)]
    if before.get("audio") != after.get("audio"):
        found.append(Change("Soundtrack changed"))
    if before.get("brand") != after.get("brand"):
        found.append(Change("Brand kit changed"))
    if before.get("assets") != after.get("assets"):
        found.append(Change("Images and clips changed"))
    old = _scenes(before)
    new = _scenes(after)
    for number, (scene_id, scene) in enumerate(new.items(), 1):
        name = f"Scene {number}"
        if scene_id not in old:
            found.append(Change(f"{name} added"))
        elif old[scene_id] != scene:
            found.extend(_scene_changes(name, old[scene_id], scene))
    found.extend(Change(f"Scene “{clip(scene_id, 20)}” removed") for scene_id in old if scene_id not in new)
    return found


def _scenes(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    scenes = doc.get("scenes") or []
    return {str(s.get("id") or i): s for i, s in enumerate(scenes) if isinstance(s, Mapping)}


def _scene_changes(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    found = []
    if before.get("duration") != after.get("duration"):
        found.append(Change(f"{name} length", _value(before.get("duration")), _value(after.get("duration"))))
    old, new = _layers(before), _layers(after)
    others = []
    for layer_id, layer in new.items():
        was = old.get(layer_id)
        if was == layer:
            continue
        if was is not None and was.get("type") == "text" and was.get("text") != layer.get("text") and \
                {k: v for k, v in was.items() if k != "text"} == {k: v for k, v in layer.items() if k != "text"}:
            found.append(Change(f"{name} text", _value(was.get("text")), _value(layer.get("text"))))
        else:
            others.append(_layer_name(layer_id) + ("" if was is not None else " (added)"))
    others += [_layer_name(layer_id) + " (removed)" for layer_id in old if layer_id not in new]
    if others:
        found.append(Change(f"{name}: {_listed(others)} changed"))
    if not found:  # the background or the transition
        found.append(Change(f"{name} changed"))
    return found


def _layers(scene: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    layers = scene.get("layers") or []
    return {str(layer.get("id") or i): layer for i, layer in enumerate(layers) if isinstance(layer, Mapping)}


def _layer_name(layer_id: str) -> str:
    """``intro.headline`` -> ``headline``: the scene is named already."""
    return clip(layer_id.rsplit(".", 1)[-1].replace("_", " "), 24)


def _listed(names: Sequence[str]) -> str:
    if len(names) > 3:
        return ", ".join(names[:3]) + f" and {len(names) - 3} more layers"
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
