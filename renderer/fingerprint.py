"""What a segment's pixels and bytes depend on, as one SHA-256: equal fingerprints make equal
segments, so a new version's render may reuse a segment an earlier render already made.

A segment (frames ``[a, b)`` of a document) depends on: the scenes shown in those frames, and the
one before the first of them when a transition blends from its last frame; where those scenes
start (the timing before them); the document-wide parts they use (brand, fonts, safe area,
duration, schema version); the assets they draw, by the *content* digest the caller gives for each
(a key's bytes may change behind the same key), video clips included, whose trim, speed and loop
are part of the scene that plays them; the frame range; the ``RenderSpec``; the encoder family and
its settings; the captions' style and the cues shown from the first of those scenes' start to the
range's end; and the renderer's version. Audio is mixed at the stitch and is not part of a
segment. ``None`` when an asset's content is not known (a URL not fetched yet): such a segment is
always drawn.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from reelfarm.renderer import RENDERER_VERSION
from reelfarm.renderer.model import Doc
from reelfarm.renderer.spec import RenderSpec

AssetDigest = Callable[[str], "str | None"]  # asset id -> content digest, or None when unknown


def scenes_drawn(doc: Doc, frames: tuple[int, int], fps: int) -> list[int]:
    """Indexes of the scenes whose pixels frames ``[a, b)`` show, the scene a transition blends
    from included."""
    starts = doc.scene_starts()
    a, b = frames
    t0, t1 = a / fps, (b - 1) / fps
    drawn = [i for i, start in enumerate(starts)
             if start <= t1 + 1e-9 and (i + 1 == len(starts) or starts[i + 1] > t0 + 1e-9)]
    if not drawn:
        return []
    blends = {i - 1 for i in drawn if i > 0 and doc.scenes[i].transition.type != "cut"
              and doc.scenes[i].transition.duration > 0 and t0 < starts[i] + doc.scenes[i].transition.duration}
    return sorted(set(drawn) | blends)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def segment_fingerprint(doc: Doc, spec: RenderSpec, frames: tuple[int, int], encoder: str,
                        asset_digest: AssetDigest, encoder_settings: Any = None,
                        renderer_version: str = RENDERER_VERSION) -> str | None:
    """The fingerprint of frames ``[a, b)`` of ``doc`` rendered at ``spec`` and encoded by
    ``encoder`` (a family, with its ``encoder_settings``); None when an asset's content is unknown."""
    source = doc.source
    raw_scenes = source.get("scenes", [])
    starts = doc.scene_starts()
    drawn = scenes_drawn(doc, frames, spec.fps)
    raw_assets = source.get("assets") or {}
    # a document without assets (a story's, mostly) has nothing to look for in its scenes
    used = sorted({s for i in drawn for s in _strings(raw_scenes[i]) if s in raw_assets}) if raw_assets else []
    assets = {}
    for asset_id in used:
        digest = asset_digest(asset_id)
        if digest is None:
            return None
        assets[asset_id] = [raw_assets[asset_id], digest]
    payload = {
        "renderer": renderer_version,
        "spec": [spec.format, spec.resolution, spec.fps],
        "encoder": [encoder, encoder_settings],
        "frames": list(frames),
        "doc": {key: source.get(key) for key in ("version", "duration", "brand", "fonts", "safe_area", "format")},
        "scenes": [[i, round(starts[i], 9), raw_scenes[i]] for i in drawn],
        "assets": assets,
    }
    if source.get("captions"):  # the cues shown from the first drawn scene's start to the span's end
        t0, t1 = (starts[drawn[0]] if drawn else frames[0] / spec.fps), frames[1] / spec.fps
        captions = dict(source["captions"])
        captions["cues"] = [c for c in captions.get("cues", ()) if c["start"] < t1 and c["end"] > t0]
        payload["captions"] = captions
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
