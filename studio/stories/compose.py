"""Assembling a VideoDoc from scene drafts: timing, per-format merging, assets.

A story describes each scene as a ``SceneDraft`` whose ``layout`` function returns the scene's
layers for one ``Frame``. ``compose_doc`` runs it for all four formats and keeps the requested
format's layers as the base, with the others as ``formats`` overrides, so every format reflows
rather than letterboxes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reelfarm.studio.errors import LayoutError
from reelfarm.studio.stories.brand import Kit
from reelfarm.studio.stories.layout import FORMATS, Beat, Frame, scene_durations
from reelfarm.studio.stories.measure import make_typesetter

FPS = 30
MIN_SCENE_SEC = 1.5  # optional scenes are dropped before any scene gets shorter than this

# What an override must restore when a format leaves a property out.
_NEUTRAL = {"hidden": False, "opacity": 1.0, "scale": 1.0, "rotation": 0.0, "uppercase": False}
_STRUCTURAL = ("id", "type", "children", "formats")


@dataclass(frozen=True)
class SceneDraft:
    """One scene before timing: relative length, layout per frame, and how it enters."""

    id: str
    weight: float
    layout: Callable[[Frame, Beat], list[dict]]
    transition: tuple[str, str | None] | None = None
    background: dict | None = None
    optional: bool = False
    kit: Kit | None = None  # the scene's own colour roles (an inverted scene), else the story's


class AssetBook:
    """The document's ``assets`` map, filled as a story asks for images."""

    def __init__(self, kit: Kit, uploads: Mapping[str, str] | None = None) -> None:
        self.assets: dict[str, dict] = {}
        self.audio: list[dict] = []
        self.captions_block: dict | None = None
        self.uploads = dict(uploads or {})  # asset id -> storage key, the workspace's own uploads
        logo = kit.brand.get("logo")
        if logo:
            where = {"key": logo["key"]} if logo.get("key") else {"url": logo["url"]}
            self.assets["logo"] = {"type": "image", **where}

    def image(self, asset_id: str, url: str | None) -> str | None:
        """Register ``url`` as image ``asset_id``; ``None`` (no image) when ``url`` is empty."""
        if not url:
            return None
        key = self.uploads.get(url)
        self.assets[asset_id] = {"type": "image", "key": key} if key else {"type": "image", "url": url}
        return asset_id

    def video(self, asset_id: str, upload_id: str | None) -> str | None:
        """Register the uploaded clip ``upload_id`` as video ``asset_id``; ``None`` (no clip) when unset.

        The document names the clip by its storage key, as it names uploaded images and sounds.
        """
        if not upload_id:
            return None
        self.assets[asset_id] = {"type": "video", "key": self.uploads[upload_id]}
        return asset_id

    def soundtrack(self, value: Mapping[str, Any] | None) -> None:
        """Play the uploaded sound ``value["asset_id"]`` from the start, as the ``soundtrack`` audio asset,
        looped or played once to fit the video as ``value["fit"]`` says."""
        if not value:
            return
        self.assets["soundtrack"] = {"type": "audio", "key": self.uploads[value["asset_id"]]}
        self.audio.append({"asset": "soundtrack", "start": 0, "volume": float(value.get("volume", 1)),
                           "fade_in": float(value.get("fade_in_sec", 0)),
                           "fade_out": float(value.get("fade_out_sec", 0)), "fit": value.get("fit", "loop")})


    def captions(self, value: Mapping[str, Any] | None, cues: Mapping[str, list[dict]]) -> None:
        """Draw the cues of the uploaded captions file ``value["asset_id"]`` (``cues`` by asset id) over
        the video, in ``value``'s style, position and size. The document carries the cues themselves,
        so a render, its chunks and a translated copy have them without the file."""
        if not value:
            return
        block: dict[str, Any] = {"cues": [dict(c) for c in cues.get(value["asset_id"], [])]}
        for key in ("style", "position", "size"):
            if key in value:
                block[key] = value[key]
        self.captions_block = block


def compose_doc(*, title: str, drafts: list[SceneDraft], kit: Kit, fmt: str, duration: float,
                assets: AssetBook) -> dict[str, Any]:
    """The VideoDoc for ``drafts`` lasting exactly ``duration`` seconds, designed for ``fmt``."""
    drafts = _fit_drafts(drafts, duration)
    lengths = scene_durations([d.weight for d in drafts], duration)
    scenes = [_scene(d, length, kit, fmt, first=i == 0) for i, (d, length) in enumerate(zip(drafts, lengths))]
    doc: dict[str, Any] = {
        "version": 1,
        "fps": FPS,
        "duration": duration,
        "format": fmt,
        "title": title[:200],
        "brand": kit.brand,
    }
    if assets.assets:
        doc["assets"] = assets.assets
    doc["scenes"] = scenes
    if assets.audio:
        doc["audio"] = assets.audio
    if assets.captions_block is not None:
        doc["captions"] = assets.captions_block
    return doc


def _fit_drafts(drafts: list[SceneDraft], duration: float) -> list[SceneDraft]:
    """Drop optional scenes, last first, while the shortest scene would run under the floor."""
    drafts = list(drafts)
    while True:
        total = sum(d.weight for d in drafts)
        shortest = min(d.weight for d in drafts) * duration / total
        optional = [i for i, d in enumerate(drafts) if d.optional]
        if shortest >= MIN_SCENE_SEC or not optional:
            return drafts
        del drafts[optional[-1]]


def _scene(draft: SceneDraft, length: float, kit: Kit, fmt: str, *, first: bool) -> dict[str, Any]:
    beat = Beat(length)
    setter = make_typesetter(kit.brand["fonts"])
    per_format = {f: _scoped(draft.id, draft.layout(Frame(f, setter), beat)) for f in FORMATS}
    scene: dict[str, Any] = {
        "id": draft.id,
        "duration": length,
        "background": draft.background or {"type": "solid", "color": (draft.kit or kit).tone((draft.kit or kit).surface)},
    }
    if draft.transition and not first:
        scene["transition"] = beat.transition(*draft.transition)
    scene["layers"] = merge_formats(per_format, fmt)
    return scene


def _scoped(scene_id: str, layers: list[dict]) -> list[dict]:
    """Layer ids are unique across the document: prefix them with the scene's id."""
    out = []
    for layer in layers:
        layer = dict(layer, id=f"{scene_id}.{layer['id']}")
        if "children" in layer:
            layer["children"] = _scoped(scene_id, layer["children"])
        out.append(layer)
    return out


def merge_formats(per_format: dict[str, list[dict]], base: str) -> list[dict]:
    """One layer list: ``base``'s layers, with what differs elsewhere in ``formats`` overrides.

    A layer missing from some formats is ``hidden`` there. Children of groups are merged the
    same way (their own ``formats``), since overrides cannot replace children.
    """
    order = _union_order([[layer["id"] for layer in per_format[f]] for f in _base_first(base)])
    by_id = {f: {layer["id"]: layer for layer in per_format[f]} for f in FORMATS}
    return [_merge_layer({f: by_id[f].get(layer_id) for f in FORMATS}, base) for layer_id in order]


def _base_first(base: str) -> list[str]:
    return [base] + [f for f in FORMATS if f != base]


def _union_order(lists: list[list[str]]) -> list[str]:
    order: list[str] = []
    for ids in lists:
        if len(set(ids)) != len(ids):
            raise LayoutError(f"duplicate layer ids in {ids}")
        for i, layer_id in enumerate(ids):
            if layer_id in order:
                continue
            prev = ids[i - 1] if i else None
            order.insert(order.index(prev) + 1 if prev in order else 0, layer_id)
    return order


def _merge_layer(versions: dict[str, dict | None], base: str) -> dict:
    owner = next(f for f in _base_first(base) if versions[f] is not None)
    first: dict = versions[owner] or {}
    merged = {k: v for k, v in first.items() if k not in ("children", "formats")}
    if owner != base:
        merged["hidden"] = True
    if "children" in first:
        kids = {f: (versions[f] or {}).get("children", []) for f in FORMATS}
        merged["children"] = merge_formats(kids, owner)
    overrides: dict[str, dict] = {}
    for f in FORMATS:
        if f == base:
            continue
        diff = _diff(merged, versions[f])
        if diff:
            overrides[f] = diff
    if overrides:
        merged["formats"] = overrides
    return merged


def _diff(base: dict, other: dict | None) -> dict:
    if other is None:
        return {} if base.get("hidden") else {"hidden": True}
    diff = {k: v for k, v in other.items() if k not in _STRUCTURAL and base.get(k) != v}
    for key, value in base.items():
        if key in _STRUCTURAL or key in other:
            continue
        if key not in _NEUTRAL:
            raise LayoutError(f"layer {base['id']!r}: property {key!r} missing in one format")
        if value != _NEUTRAL[key]:
            diff[key] = _NEUTRAL[key]
    return diff
