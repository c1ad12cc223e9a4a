"""A story video's clips and the second each starts from, read from and written into its document.

Pure: no Flask, no services. A story's video field names a clip of the media library, and the
story plays it from its first second: its layers and scene backgrounds of type ``video`` have
``trim_start`` 0, and no story field carries a start. The renderer, the linter and ``PATCH
/api/v1/videos/{id}`` take a document's ``trim_start`` as it is, so the video page sets a start by
saving the current version's document with the start written into every layer and background
that plays the clip (``with_start``), found by the clip's storage key: a document edit, a new
version linted against the clip's stored length like any other.

A save of the story's fields builds the document from the story again, clips from 0 s; the page
writes the starts the version before it had (``starts``) into the new document, for each clip it
still plays, as one more document edit (``kept``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def places(doc: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """Every layer (nested ones too) and scene background of ``doc`` that plays the video asset
    stored under ``key``: the very dicts of ``doc``, to read or change. (A story's format overrides
    move and size a clip's layer, never trim it.)"""
    names = {name for name, asset in (doc.get("assets") or {}).items()
             if isinstance(asset, Mapping) and asset.get("type") == "video" and asset.get("key") == key}
    return [p for p in _players(doc) if p.get("asset") in names] if names else []


def _players(doc: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for scene in doc.get("scenes") or []:
        background = scene.get("background")
        if isinstance(background, dict) and background.get("type") == "video":
            yield background
        yield from _layers(scene.get("layers") or [])


def _layers(layers: list[Any]) -> Iterator[dict[str, Any]]:
    for layer in layers:
        if not isinstance(layer, dict):
            continue
        if layer.get("type") == "video":
            yield layer
        yield from _layers(layer.get("children") or [])


def start(doc: Mapping[str, Any], key: str) -> float | None:
    """The second the clip under ``key`` starts from where ``doc`` first plays it; None when ``doc``
    does not play it."""
    found = places(doc, key)
    return float(found[0].get("trim_start", 0.0)) if found else None


def starts(doc: Mapping[str, Any]) -> dict[str, float]:
    """The start of every library clip ``doc`` plays from past its first second, by storage key."""
    keys = {a["key"] for a in (doc.get("assets") or {}).values()
            if isinstance(a, Mapping) and a.get("type") == "video" and isinstance(a.get("key"), str)}
    return {k: s for k in sorted(keys) if (s := start(doc, k))}


def with_start(doc: Mapping[str, Any], key: str, seconds: float) -> dict[str, Any]:
    """A copy of ``doc`` whose every place playing the clip under ``key`` starts at ``seconds``
    (0 leaves ``trim_start`` out, as a story writes it)."""
    copy = _copy(doc)
    for place in places(copy, key):
        if seconds:
            place["trim_start"] = round(float(seconds), 3)
        else:
            place.pop("trim_start", None)
    return copy


def kept(doc: Mapping[str, Any], before: Mapping[str, float]) -> dict[str, Any]:
    """``doc`` with the starts ``before`` had, for the clips it still plays."""
    out = dict(doc)
    for key, seconds in before.items():
        if places(out, key):
            out = with_start(out, key, seconds)
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
