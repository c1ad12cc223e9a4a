"""The VideoDoc linter: errors that stop a render, warnings that a designer should see.

Errors: schema violations, unknown asset / font / brand-token references, timing outside the
scene, duplicate ids, total duration outside 6 s to 10 min, a video trimmed to nothing, and (when
clips can be measured: an asset source or a ``clip_duration`` is given) a clip that cannot be read
or a trim past its end. A clip shorter than the time it must fill (and not looping) is a warning:
its last frame is held; so is a sound played ``once`` that ends before the video does
(``sound_ends_early``, ``reelfarm.renderer.soundtrack``), measured the same way. Warnings are checked in all four
formats by laying the document out for real: text under 24 px at 1080p, WCAG contrast under
4.5:1 against the pixels actually drawn behind the text, text overflowing its box, and text or
images leaving the safe area. Children of groups are checked at any depth, placed in the frame
as the rasterizer draws them, and their warnings point at the child
(``/scenes/0/layers/2/children/1/text``). Captions are checked as they are drawn
(``reelfarm.renderer.caption_layout``): a cue ending before it starts is an error; a cue too long
for its lines, one after the video's end and text in low contrast against its box are warnings.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.caption_lint import caption_errors, caption_problems
from reelfarm.renderer.draw import Rect
from reelfarm.renderer.errors import AssetError, Problem
from reelfarm.renderer.fonts import available_families
from reelfarm.renderer.model import Doc, FontRef, Footage, Layer, Scene, build_doc, iter_layers, schema_problems
from reelfarm.renderer.soundtrack import doc_sound_problems
from reelfarm.renderer.spec import FORMATS, LINT_RESOLUTION, frame_size
from reelfarm.renderer.tokens import Brand, contrast_ratio, parse_hex

MIN_DURATION, MAX_DURATION = 6.0, 600.0
MIN_TEXT_PX_AT_1080 = 24.0
MIN_CONTRAST = 4.5
ClipDuration = Callable[[str], float]  # a video asset id -> its clip's length in seconds


@dataclass
class LintReport:
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    doc: Doc | None = field(default=None, compare=False, repr=False)  # built when the schema holds

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, list[dict[str, str]]]:
        return {"errors": [p.as_dict() for p in self.errors], "warnings": [p.as_dict() for p in self.warnings]}


def lint(data: Mapping[str, Any], assets: Any = None, check_layout: bool = True,
         clip_duration: ClipDuration | None = None) -> LintReport:
    """Lint a VideoDoc given as JSON data.

    Args:
        data: the document.
        assets: an AssetSource, needed to measure contrast over image backgrounds and, without
            `clip_duration`, to measure video clips (their files are read).
        check_layout: also lay out every format for the warnings (slower).
        clip_duration: a video or audio asset id -> its clip's or sound's length in seconds (a media
            library knows it); it raises ``AssetError`` for one that cannot be had.
    """
    report = LintReport(errors=schema_problems(data))
    if report.errors:
        return report
    doc = report.doc = build_doc(data)  # valid: checked just above
    report.errors.extend(_reference_errors(doc))
    report.errors.extend(_timing_errors(doc))
    report.errors.extend(caption_errors(doc))
    report.errors.extend(_duplicate_ids(doc))
    measure = clip_duration or (_clip_prober(doc, assets) if assets is not None else None)
    for problem in _footage_problems(doc, measure):
        (report.warnings if problem.code == "clip_too_short" else report.errors).append(problem)
    report.warnings.extend(doc_sound_problems(doc, clip_duration or _sound_reader(doc, assets)))
    if check_layout and not report.errors:
        report.warnings.extend(_layout_warnings(doc, assets))
        report.warnings.extend(caption_problems(doc))
    return report


# -- errors -----------------------------------------------------------------------------------

def _reference_errors(doc: Doc) -> Iterator[Problem]:
    brand = Brand(doc.brand)
    families = set(available_families())
    for ptr, value in _brand_refs(doc.source, ()):
        if not brand.check(value):
            yield Problem(ptr, "unknown_token", f"{value} is not a brand token")
    for i, family in enumerate(doc.fonts):
        if family not in families:
            yield Problem(f"/fonts/{i}", "unknown_font", f"font family {family!r} is not available")
    for key, ref in (doc.brand.get("fonts") or {}).items():
        if ref.get("family") not in families:
            yield Problem(f"/brand/fonts/{key}/family", "unknown_font", f"font family {ref.get('family')!r} is not available")
    for s, scene in enumerate(doc.scenes):
        bg = scene.background
        if bg.type in ("image", "video"):
            if not bg.asset:
                yield Problem(f"/scenes/{s}/background", "missing_asset", f"{'an' if bg.type == 'image' else 'a'} {bg.type} background needs an asset")
            else:
                yield from _asset_ref(doc, brand, bg.asset, f"/scenes/{s}/background/asset", bg.type)
        for ptr, layer in _all_layers(scene, f"/scenes/{s}/layers"):
            if isinstance(layer.font, FontRef) and layer.font.family not in families:
                yield Problem(ptr + "/font/family", "unknown_font", f"font family {layer.font.family!r} is not available")
            if layer.type in ("image", "video") and layer.asset:
                yield from _asset_ref(doc, brand, layer.asset, ptr + "/asset", layer.type)
    for i, track in enumerate(doc.audio):
        yield from _asset_ref(doc, brand, track.asset, f"/audio/{i}/asset", "audio")


def _asset_ref(doc: Doc, brand: Brand, asset_id: str, ptr: str, kind: str) -> Iterator[Problem]:
    if asset_id == "$brand.logo" and kind == "image":
        if not (brand.logo and brand.logo.get("url")):
            yield Problem(ptr, "unknown_asset", "the brand has no logo")
        return
    asset = doc.asset(asset_id)
    if asset is None:
        yield Problem(ptr, "unknown_asset", f"asset {asset_id!r} is not in the asset table")
    elif asset.type != kind:
        yield Problem(ptr, "wrong_asset_type", f"asset {asset_id!r} is {asset.type}, not {kind}")


def _clip_prober(doc: Doc, assets: Any) -> ClipDuration:
    """Clip lengths read from the files `assets` gives (each clip's packets read once)."""
    from reelfarm.renderer.footage import ClipStore

    store = ClipStore(doc, assets)
    return lambda asset_id: store.index(asset_id).duration


def _sound_reader(doc: Doc, assets: Any) -> ClipDuration | None:
    if assets is None:
        return None
    from reelfarm.renderer.audio import sound_lengths  # the decoder, loaded only where files are read
    return sound_lengths(doc, assets)


def _footage_uses(doc: Doc) -> Iterator[tuple[str, str, Footage, float]]:
    """(pointer, asset id, footage, seconds shown) of every video layer and background."""
    for s, scene in enumerate(doc.scenes):
        bg = scene.background
        if bg.type == "video" and bg.asset:
            yield f"/scenes/{s}/background", bg.asset, bg.footage, scene.duration
        for ptr, layer in _all_layers(scene, f"/scenes/{s}/layers"):
            if layer.type == "video" and layer.asset:
                end = scene.duration if layer.end is None else min(layer.end, scene.duration)
                yield ptr, layer.asset, layer.footage, max(0.0, end - layer.start)


def _footage_problems(doc: Doc, clip_duration: ClipDuration | None) -> Iterator[Problem]:
    lengths: dict[str, float | AssetError] = {}
    for ptr, asset_id, footage, shown in _footage_uses(doc):
        if footage.trim_end is not None and footage.trim_end <= footage.trim_start:
            yield Problem(ptr + "/trim_end", "bad_trim", f"trim_end {footage.trim_end:g} s is not after "
                          f"trim_start {footage.trim_start:g} s")
            continue
        asset = doc.asset(asset_id)
        if clip_duration is None or asset is None or asset.type != "video":
            continue
        if asset_id not in lengths:
            try:
                lengths[asset_id] = clip_duration(asset_id)
            except AssetError as exc:
                lengths[asset_id] = exc
        length = lengths[asset_id]
        if isinstance(length, AssetError):
            yield Problem(ptr + "/asset", "missing_asset", f"clip {asset_id!r} cannot be read: {length}")
            continue
        yield from _trim_problems(ptr, asset_id, footage, shown, length, doc.fps)


def _trim_problems(ptr: str, asset_id: str, footage: Footage, shown: float, length: float,
                   fps: int) -> Iterator[Problem]:
    if footage.trim_start >= length:
        yield Problem(ptr + "/trim_start", "bad_trim",
                      f"trim_start {footage.trim_start:g} s is past the end of clip {asset_id!r} ({length:g} s)")
        return
    if footage.trim_end is not None and footage.trim_end > length + 1e-3:
        yield Problem(ptr + "/trim_end", "bad_trim",
                      f"trim_end {footage.trim_end:g} s is past the end of clip {asset_id!r} ({length:g} s)")
        return
    available = (length if footage.trim_end is None else footage.trim_end) - footage.trim_start
    needed = shown * footage.speed
    if not footage.loop and available < needed - footage.speed / fps + 1e-6:
        yield Problem(ptr + "/asset", "clip_too_short",
                      f"clip {asset_id!r} has {available:.2f} s to play from {footage.trim_start:g} s but must fill "
                      f"{shown:.2f} s at speed {footage.speed:g} ({needed:.2f} s of clip); its last frame is held. "
                      "Set loop, trim earlier, slow it down or shorten the layer")


def _timing_errors(doc: Doc) -> Iterator[Problem]:
    total = sum(s.duration for s in doc.scenes)
    if abs(total - doc.duration) > 1e-3:
        yield Problem("/duration", "duration_mismatch",
                      f"duration {doc.duration:g} s differs from the scenes' total {total:g} s")
    if doc.duration < MIN_DURATION:
        yield Problem("/duration", "too_short", f"a video lasts at least {MIN_DURATION:g} s")
    if doc.duration > MAX_DURATION:
        yield Problem("/duration", "too_long", f"a video lasts at most {MAX_DURATION / 60:g} min")
    for s, scene in enumerate(doc.scenes):
        d = scene.duration
        if scene.transition.type != "cut" and scene.transition.duration > d:
            yield Problem(f"/scenes/{s}/transition/duration", "timing_outside_scene",
                          "the transition is longer than its scene")
        for ptr, layer in _all_layers(scene, f"/scenes/{s}/layers"):
            yield from _layer_timing(layer, ptr, d)


def _layer_timing(layer: Layer, ptr: str, d: float) -> Iterator[Problem]:
    if layer.start >= d:
        yield Problem(ptr + "/start", "timing_outside_scene", f"starts at {layer.start:g} s, after its scene ends ({d:g} s)")
    if layer.end is not None and layer.end <= layer.start:
        yield Problem(ptr + "/end", "timing_outside_scene", "ends before it starts")
    if layer.end is not None and layer.end > d + 1e-6:
        yield Problem(ptr + "/end", "timing_outside_scene", f"ends at {layer.end:g} s, after its scene ({d:g} s)")
    for prop, keys in layer.keyframes:
        for k, key in enumerate(keys):
            if key.t > d + 1e-6:
                yield Problem(f"{ptr}/keyframes/{prop}/{k}/t", "keyframe_outside_scene",
                              f"keyframe at {key.t:g} s is after its scene ends ({d:g} s)")
    if layer.enter and layer.start + layer.enter.delay + layer.enter.duration > d + 1e-6:
        yield Problem(ptr + "/enter", "timing_outside_scene", "the enter animation runs past the scene's end")


def _duplicate_ids(doc: Doc) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for s, scene in enumerate(doc.scenes):
        if scene.id in seen:
            yield Problem(f"/scenes/{s}/id", "duplicate_id", f"scene id {scene.id!r} is also used at {seen[scene.id]}")
        seen.setdefault(scene.id, f"/scenes/{s}")
    layer_seen: dict[str, str] = {}
    for s, scene in enumerate(doc.scenes):
        for ptr, layer in _all_layers(scene, f"/scenes/{s}/layers"):
            if layer.id in layer_seen:
                yield Problem(ptr + "/id", "duplicate_id", f"layer id {layer.id!r} is also used at {layer_seen[layer.id]}")
            layer_seen.setdefault(layer.id, ptr)


def _all_layers(scene: Scene, prefix: str) -> list[tuple[str, Layer]]:
    return iter_layers(scene.layers, prefix)


def _brand_refs(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str, str]]:
    """(JSON pointer, string) of every ``$brand...`` string outside the brand itself; the pointer
    is spelled only for those (a document has thousands of other values)."""
    if isinstance(value, str):
        if value.startswith("$brand"):
            yield "".join(f"/{part}" for part in path), value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != "brand" and isinstance(v, (str, Mapping, list)):
                yield from _brand_refs(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, (str, Mapping, list)):
                yield from _brand_refs(v, (*path, i))


# -- warnings ---------------------------------------------------------------------------------

def _layout_warnings(doc: Doc, assets: Any) -> Iterator[Problem]:
    from reelfarm.renderer.raster import SkiaRasterizer

    for fmt in FORMATS:
        width, height = frame_size(fmt, LINT_RESOLUTION)
        raster = SkiaRasterizer(doc, fmt, width, height, assets)
        for s, scene in enumerate(doc.scenes):
            layers = tuple(l.for_format(fmt) for l in scene.layers)
            for placed in _placements(layers, fmt, f"/scenes/{s}/layers"):
                if placed.layer.type in ("text", "image"):
                    yield from _layer_warnings(doc, raster, fmt, scene, layers, placed)


@dataclass(frozen=True)
class _Placed:
    """A layer at any depth: its pointer, its index path and the groups around it, outermost first."""

    ptr: str
    path: tuple[int, ...]
    groups: tuple[Layer, ...]
    layer: Layer


@dataclass(frozen=True)
class _Pivot:
    """One `save; translate; rotate; scale; translate back` of the rasterizer, about (cx, cy)."""

    cx: float
    cy: float
    scale: float
    rotation: float


def _placements(layers: tuple[Layer, ...], fmt: str, prefix: str, path: tuple[int, ...] = (),
                groups: tuple[Layer, ...] = ()) -> Iterator[_Placed]:
    """Every layer of `layers` and, depth first, every child of its groups, as drawn in `fmt`."""
    for i, layer in enumerate(layers):
        ptr = f"{prefix}/{i}"
        yield _Placed(ptr, path + (i,), groups, layer)
        if layer.type == "group":
            children = tuple(c.for_format(fmt) for c in layer.children)
            yield from _placements(children, fmt, ptr + "/children", path + (i,), groups + (layer,))


def _settled_time(chain: tuple[Layer, ...], duration: float) -> float:
    """A time when every layer of `chain` has entered and stopped moving, before any leaves."""
    ends = [duration if l.end is None else min(l.end, duration) for l in chain]
    start = max(l.start for l in chain)
    t = start
    for layer in chain:
        t = max(t, layer.start + (layer.enter.delay + layer.enter.duration if layer.enter else 0.0))
        t = max([t] + [keys[-1].t for _, keys in layer.keyframes])
    exit_start = min(end - (l.exit.duration if l.exit else 0.0) for l, end in zip(chain, ends))
    return max(start, min(t, exit_start - 1e-3, min(ends) - 1e-3))


def _settled_state(layer: Layer, t: float, duration: float) -> Any:
    from reelfarm.renderer.timeline import layer_state

    return layer_state(dataclasses.replace(layer, enter=None, exit=None), t, duration)


def _group_frame(raster: Any, groups: tuple[Layer, ...], t: float,
                 duration: float) -> tuple[Rect, tuple[_Pivot, ...]] | None:
    """The innermost group's box in its own coordinates and the groups' transforms, or None when hidden.

    The rasterizer draws a group's children into the group's box, after turning the canvas about
    the box centre by the group's scale and rotation; nested groups compose those turns.
    """
    parent: Rect = raster._frame_box()
    pivots: list[_Pivot] = []
    for group in groups:
        state = _settled_state(group, t, duration)
        if state is None:
            return None
        box, _ = raster._box(group, state, parent)
        x, y, w, h = box
        pivots.append(_Pivot(x + w / 2.0, y + h / 2.0, state.scale, state.rotation))
        parent = box
    return parent, tuple(pivots)


def _layer_warnings(doc: Doc, raster: Any, fmt: str, scene: Scene, layers: tuple[Layer, ...],
                    placed: _Placed) -> Iterator[Problem]:
    layer, ptr = placed.layer, placed.ptr
    t = _settled_time(placed.groups + (layer,), scene.duration)
    frame = _group_frame(raster, placed.groups, t, scene.duration)
    state = _settled_state(layer, t, scene.duration)
    if frame is None or state is None:
        return
    parent, pivots = frame
    box, block = raster._box(layer, state, parent)
    extent = box
    if block is not None:
        x, y, w, h = box
        top = y + ((h - block.height) / 2.0 if h > block.height and layer.valign == "middle" else
                   (h - block.height) if h > block.height and layer.valign == "bottom" else 0.0)
        extent = (block.line_left(x), top, block.width, block.height)
        group_scale = float(np.prod([p.scale for p in pivots]))
        px_at_1080 = block.size_px * group_scale / raster.unit * 1080.0
        if px_at_1080 < MIN_TEXT_PX_AT_1080 - 0.01:
            yield Problem(ptr + "/size", "text_too_small",
                          f"text is {px_at_1080:.0f} px at 1080p in {fmt} (under {MIN_TEXT_PX_AT_1080:g} px)")
        if block.overflows:
            yield Problem(ptr + "/text", "text_overflow", f"text overflows its box in {fmt}")
        below = _layers_below(layers, placed.path, fmt)
        ratio = _contrast(doc, raster, fmt, scene, below, layer, t, _map_rect(extent, pivots))
        if ratio is not None and ratio < MIN_CONTRAST:
            yield Problem(ptr + "/color", "low_contrast",
                          f"contrast {ratio:.1f}:1 against what is behind the text in {fmt} (under {MIN_CONTRAST:g}:1)")
    # Groups turn their children exactly as drawn; the layer's own scale is taken about its extent's
    # centre and its rotation left out, as for layers outside groups.
    x, y, w, h = extent
    own = _Pivot(x + w / 2.0, y + h / 2.0, state.scale, 0.0)
    if not _inside_safe(_map_rect(extent, pivots + (own,)), doc.safe_area, raster.width, raster.height):
        yield Problem(ptr, "outside_safe_area", f"{layer.type} layer leaves the safe area in {fmt}")


def _layers_below(layers: tuple[Layer, ...], path: tuple[int, ...], fmt: str) -> tuple[Layer, ...]:
    """What is drawn before the layer at `path`: earlier layers, and its groups with earlier children."""
    i, rest = path[0], path[1:]
    if not rest:
        return layers[:i]
    # Without its variants, the cut group is what the rasterizer draws in `fmt`, not the whole one.
    group = layers[i].for_format(fmt)
    cut = dataclasses.replace(group, children=_layers_below(group.children, rest, fmt), variants=())
    return layers[:i] + (cut,)


def _map_rect(rect: Rect, pivots: tuple[_Pivot, ...]) -> Rect:
    """The frame-space bounding box of `rect` drawn under `pivots` (outermost first)."""
    x, y, w, h = rect
    points = [(x, y), (x + w, y), (x, y + h), (x + w, y + h)]
    for p in reversed(pivots):
        cos, sin = math.cos(math.radians(p.rotation)), math.sin(math.radians(p.rotation))
        points = [(p.cx + p.scale * ((px - p.cx) * cos - (py - p.cy) * sin),
                   p.cy + p.scale * ((px - p.cx) * sin + (py - p.cy) * cos)) for px, py in points]
    xs, ys = [px for px, _ in points], [py for _, py in points]
    return (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))


def _inside_safe(rect: Rect, safe: tuple[float, float], width: int, height: int) -> bool:
    x, y, w, h = rect
    left, top = safe[0] * width, safe[1] * height
    tol = 1.0
    return (x >= left - tol and y >= top - tol
            and x + w <= width - left + tol and y + h <= height - top + tol)


def _contrast(doc: Doc, raster: Any, fmt: str, scene: Scene, below: tuple[Layer, ...], layer: Layer, t: float,
              extent: Rect) -> float | None:
    color = parse_hex(raster.brand.color(layer.color))[:3]
    if layer.pill is not None:
        pill = parse_hex(raster.brand.color(layer.pill.color))
        if pill[3] == 255:
            return contrast_ratio(color, pill[:3])
    x, y, w, h = (round(v) for v in extent)
    x0, y0 = min(max(0, x), raster.width), min(max(0, y), raster.height)
    x1, y1 = min(max(0, x + w), raster.width), min(max(0, y + h), raster.height)
    if x1 <= x0 or y1 <= y0:
        return None
    region = (x0, y0, x1 - x0, y1 - y0)
    below = _meeting(raster, scene, below, t, region)
    backdrop = dataclasses.replace(scene, layers=below, transition=dataclasses.replace(scene.transition, type="cut"))
    solo = dataclasses.replace(doc, scenes=(backdrop,), duration=scene.duration, captions=None)
    key = _backdrop_key(solo, fmt, raster.width, raster.height, t)
    known = None if key is None else _ratios.get((key, region, color))
    if known is not None:  # the same text over the same backdrop: every video of a story has some
        return float(known)
    try:
        lum = _backdrop_luminance(solo, raster, fmt, t, region, key)
    except Exception:  # noqa: BLE001 - an unreadable asset is reported elsewhere; contrast is then unknown
        return None
    ratios = _contrasts(_luminance(np.asarray(color, np.uint8)), lum)
    ratio = float(np.percentile(ratios, 10))
    if key is not None:
        _ratios.put((key, region, color), ratio)
    return ratio


def _meeting(raster: Any, scene: Scene, below: tuple[Layer, ...], t: float,
             region: tuple[int, int, int, int]) -> tuple[Layer, ...]:
    """`below` (layers of `scene`) without those drawing a text that leave `region`'s pixels as
    they are at `t`.

    A text over another text (a story's button or address over its headline) would otherwise give
    every video its own backdrop: drawn again each time, never found in the caches. A layer only
    touches the pixels inside the bounds of what it records (the rasterizer redraws by those same
    bounds, ``reelfarm.renderer.damage``), so one whose bounds miss the region changes nothing in
    it. Only layers that draw a text are asked (the others are the same in every video of a story).
    """
    from reelfarm.renderer import damage

    x, y, w, h = region
    kept = []
    for layer in below:
        if _draws_asset_or_text(layer) and not _draws_asset(layer):
            def draw(canvas: Any, layer: Layer = layer) -> None:
                raster._draw_layer(canvas, layer, t, scene.duration, raster._frame_box())

            _, box = damage.recorded(draw, raster.width, raster.height)
            if box is None or not damage.meets(box, (x, y, x + w, y + h)):
                continue
        kept.append(layer)
    return tuple(kept)


BACKDROP_CACHE_SIZE = 64  # whole frames' luminance at LINT_RESOLUTION, float32: under 1 MB each
BACKDROP_CACHE_BYTES = 24 * 1024 * 1024  # so at most 24 MB in each process that lints, not 64
_backdrops: BoundedCache[Hashable, np.ndarray] = BoundedCache(
    BACKDROP_CACHE_SIZE, BACKDROP_CACHE_BYTES, sizeof=lambda key, lum: lum.nbytes)


# Contrast ratios by (backdrop key, region, text colour): numbers, but keys hold their scenes.
_ratios: BoundedCache[Hashable, float] = BoundedCache(1024, 8 * 1024 * 1024, sizeof=lambda key, ratio: 8192)


def _backdrop_luminance(solo: Doc, raster: Any, fmt: str, t: float, region: tuple[int, int, int, int],
                        key: Hashable | None) -> np.ndarray:
    """The WCAG luminance of the pixels drawn behind a text, inside `region` of the frame.

    Videos made from one story share their backdrops (a scene's background and the shapes under
    its texts); only the texts differ. So a backdrop of that kind is drawn whole, once, and its
    pixels kept, keyed by everything that decides them; later texts over it, of any length, only
    slice its luminance (`key`: `_backdrop_key`'s). A backdrop with an image (the asset behind a key or URL is not part of the
    document) is drawn just in the text's region each time; one with another text too, until it
    is seen a second time (`_worth_keeping`).
    """
    x, y, w, h = region
    lum = None if key is None else _backdrops.get(key)
    if lum is None and (key is None or not _worth_keeping(solo, key)):
        drawn = _region_rasterizer()(solo, fmt, raster.width, raster.height, raster.images.assets, region=region)
        return _luminance(_rgb(drawn, drawn.render(t)))
    if lum is None:
        from reelfarm.renderer.raster import SkiaRasterizer

        drawn = SkiaRasterizer(solo, fmt, raster.width, raster.height, raster.images.assets, book=raster.book)
        lum = _luminance(_rgb(drawn, drawn.render(t)))
        _backdrops.put(key, lum)
    return lum[y:y + h, x:x + w]


_SEEN_TEXT_BACKDROPS: BoundedCache[int, bool] = BoundedCache(4096, 512 * 1024, sizeof=lambda key, value: 100)


def _worth_keeping(solo: Doc, key: Hashable) -> bool:
    """Whether a backdrop is drawn whole and kept: always when it draws no text; one with a text
    (texts are what differ between videos of one story, and drawing just the region costs less
    than a whole frame) only once it is seen a second time (a story's fixed texts, such as an
    eyebrow under its headline: every video from the story has them). Sightings are kept by the
    key's hash alone; a collision only draws a whole frame where a region would have done."""
    (scene,) = solo.scenes
    if not any(_draws_asset_or_text(l) for l in scene.layers):
        return True
    seen = hash(key)
    if _SEEN_TEXT_BACKDROPS.get(seen):
        return True
    _SEEN_TEXT_BACKDROPS.put(seen, True)
    return False


def _backdrop_key(solo: Doc, fmt: str, width: int, height: int, t: float) -> Hashable | None:
    """What decides a backdrop's pixels, or None when it draws an asset (the pixels behind a
    key or URL are not part of the document).

    The scene itself is part of the key (frozen dataclasses: hashed and compared by value), with
    the group children's format variants, which layers leave out of `==`, beside it.
    """
    (scene,) = solo.scenes
    if scene.background.asset is not None or any(_draws_asset(l) for l in scene.layers):
        return None
    return (fmt, width, height, round(t, 6), solo.locale, solo.fonts, scene, _variants(scene.layers),
            _brand_key(solo.brand))


def _draws_asset(layer: Layer) -> bool:
    variants = (v for _, v in layer.variants)
    return layer.asset is not None or any(_draws_asset(c) for c in (*layer.children, *variants))


def _draws_asset_or_text(layer: Layer) -> bool:
    variants = (v for _, v in layer.variants)
    return (layer.asset is not None or layer.type == "text"
            or any(_draws_asset_or_text(c) for c in (*layer.children, *variants)))


def _variants(layers: tuple[Layer, ...]) -> Hashable:
    """Every group child's format variants, nested as the groups are."""
    return tuple((c.variants, _variants(c.children)) for l in layers for c in l.children)


def _brand_key(brand: Mapping[str, Any]) -> str:
    """The brand tokens as text: a document's brand is a plain JSON mapping."""
    return json.dumps(brand, sort_keys=True, default=str)


def _rgb(raster: Any, pixels: np.ndarray) -> np.ndarray:
    return pixels[..., 2::-1] if raster.pixel_format == "bgra" else pixels[..., :3]


@functools.lru_cache(maxsize=1)
def _region_rasterizer() -> type:
    """The CPU rasterizer drawing one rectangle of the frame: every target is the rectangle's
    size with its canvas moved by the rectangle's offset, so the same drawing code lays out the
    whole frame and keeps only the pixels inside (integer offsets: the same pixels)."""
    from reelfarm.renderer.raster import SkiaRasterizer, _Target

    class RegionRasterizer(SkiaRasterizer):
        def __init__(self, *args: Any, region: tuple[int, int, int, int], **kwargs: Any) -> None:
            self.region = region
            super().__init__(*args, **kwargs)

        def _new_target(self) -> _Target:
            x, y, w, h = self.region
            target = _Target.make(w, h)
            target.surface.getCanvas().translate(-x, -y)
            return target

    return RegionRasterizer


def _channel_luminance() -> np.ndarray:
    """WCAG's linearised value of each 8-bit channel level, once for all 256."""
    c = np.arange(256, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)


_LINEAR = _channel_luminance()
_RED, _GREEN, _BLUE = (_LINEAR * weight for weight in (0.2126, 0.7152, 0.0722))


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of 8-bit RGB values (last axis)."""
    return _RED[rgb[..., 0]] + _GREEN[rgb[..., 1]] + _BLUE[rgb[..., 2]]


def _contrasts(lt: float | np.ndarray, lp: np.ndarray) -> np.ndarray:
    """The WCAG contrast ratio between luminance ``lt`` and each of ``lp``."""
    hi, lo = np.maximum(lt, lp), np.minimum(lt, lp)
    return (hi + 0.05) / (lo + 0.05)

