"""VideoDoc v1 as immutable Python objects.

`parse_doc` validates a JSON document against the published schema and turns it into frozen
dataclasses. Per-format overrides are applied once, at parse time, into `Layer.variants`, so
drawing code asks `layer.for_format(fmt)` and never merges dictionaries per frame.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from reelfarm.renderer.captions import Captions
from reelfarm.renderer.errors import DocInvalid, Problem
from reelfarm.renderer.spec import DEFAULT_FORMAT, FORMATS

if TYPE_CHECKING:  # imported when a document is invalid: its messages; valid ones never need it
    import jsonschema

ANIMATABLE = ("x", "y", "opacity", "scale", "rotation")
DEFAULT_SAFE_AREA = (0.05, 0.05)


@dataclass(frozen=True)
class FontRef:
    family: str
    weight: int = 400


@dataclass(frozen=True)
class Gradient:
    type: str
    colors: tuple[str, ...]
    stops: tuple[float, ...] | None = None
    angle: float = 90.0
    center: tuple[float, float] = (0.5, 0.5)
    radius: float = 0.75


@dataclass(frozen=True)
class View:
    scale: float = 1.0
    x: float = 0.5
    y: float = 0.5


@dataclass(frozen=True)
class KenBurns:
    start: View = View(1.0)
    end: View = View(1.15)
    easing: str = "in-out-quad"


@dataclass(frozen=True)
class Footage:
    """Which part of a video clip plays, and how: the clip second shown at `elapsed` seconds of
    the layer (or scene) is `trim_start + elapsed * speed`, wrapped at `trim_end` when `loop`."""

    trim_start: float = 0.0
    trim_end: float | None = None
    speed: float = 1.0
    loop: bool = False
    volume: float = 1.0


@dataclass(frozen=True)
class Background:
    type: str = "solid"
    color: str = "$brand.colors.background"
    gradient: Gradient | None = None
    asset: str | None = None
    fit: str = "cover"
    overlay: str | None = None
    ken_burns: KenBurns | None = None
    footage: Footage = Footage()


@dataclass(frozen=True)
class Transition:
    type: str = "cut"
    duration: float = 0.5
    direction: str = "left"
    easing: str = "in-out-cubic"


@dataclass(frozen=True)
class Keyframe:
    t: float
    v: float
    easing: str = "in-out-cubic"


@dataclass(frozen=True)
class Motion:
    preset: str
    duration: float = 0.6
    delay: float = 0.0
    direction: str = "up"
    distance: float = 0.08
    easing: str = "out-cubic"


@dataclass(frozen=True)
class Shadow:
    color: str = "#00000080"
    blur: float = 0.01
    dx: float = 0.0
    dy: float = 0.004


@dataclass(frozen=True)
class Pill:
    color: str = "$brand.colors.primary"
    padding: float = 0.02
    radius: float | str = 0.02


@dataclass(frozen=True)
class Stroke:
    color: str
    width: float


@dataclass(frozen=True)
class Layer:
    id: str
    type: str
    x: float = 0.5
    y: float = 0.5
    w: float = 0.0
    h: float = 0.0
    anchor: str = "center"
    opacity: float = 1.0
    scale: float = 1.0
    rotation: float = 0.0
    start: float = 0.0
    end: float | None = None
    enter: Motion | None = None
    exit: Motion | None = None
    keyframes: tuple[tuple[str, tuple[Keyframe, ...]], ...] = ()
    hidden: bool = False
    # text
    text: str = ""
    font: FontRef | str = "$brand.fonts.body"
    size: float = 0.05
    min_size: float | None = None
    color: str = "$brand.colors.text"
    align: str = "center"
    valign: str = "middle"
    direction: str = "auto"
    line_height: float = 1.2
    letter_spacing: float = 0.0
    uppercase: bool = False
    auto_shrink: bool = False
    pill: Pill | None = None
    shadow: Shadow | None = None
    # image
    asset: str | None = None
    fit: str = "cover"
    crop_max: float | None = None
    radius: float | str = 0.0
    ken_burns: KenBurns | None = None
    # video
    trim_start: float = 0.0
    trim_end: float | None = None
    speed: float = 1.0
    loop: bool = False
    volume: float = 1.0
    # shape
    shape: str = "rect"
    fill: str | Gradient | None = None
    stroke: Stroke | None = None
    # group
    children: tuple[Layer, ...] = ()
    variants: tuple[tuple[str, Layer], ...] = field(default=(), compare=False, repr=False)

    def for_format(self, fmt: str) -> Layer:
        """This layer with the overrides of `fmt` applied."""
        for name, variant in self.variants:
            if name == fmt:
                return variant
        return self

    def track(self, prop: str) -> tuple[Keyframe, ...]:
        for name, keys in self.keyframes:
            if name == prop:
                return keys
        return ()

    @property
    def footage(self) -> Footage:
        return Footage(self.trim_start, self.trim_end, self.speed, self.loop, self.volume)

    @property
    def is_animated(self) -> bool:
        """True when the layer changes within its scene's lifetime (apart from visibility)."""
        return bool(self.enter or self.exit or self.keyframes or self.ken_burns or self.type == "video"
                    or any(c.is_animated for c in self.children))


@dataclass(frozen=True)
class Scene:
    id: str
    duration: float
    layers: tuple[Layer, ...]
    background: Background = Background()
    transition: Transition = Transition()


@dataclass(frozen=True)
class Asset:
    type: str
    url: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class AudioTrack:
    asset: str
    start: float = 0.0
    volume: float = 1.0
    fade_in: float = 0.0
    fade_out: float = 0.0
    fit: str = "loop"  # "loop" | "once" (``reelfarm.renderer.soundtrack``)


@dataclass(frozen=True)
class Doc:
    fps: int
    duration: float
    scenes: tuple[Scene, ...]
    format: str = DEFAULT_FORMAT
    title: str = ""
    locale: str | None = None
    brand: Mapping[str, Any] = field(default_factory=dict, compare=False)
    assets: tuple[tuple[str, Asset], ...] = ()
    fonts: tuple[str, ...] = ()
    safe_area: tuple[float, float] = DEFAULT_SAFE_AREA
    audio: tuple[AudioTrack, ...] = ()
    captions: Captions | None = None
    source: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def asset(self, asset_id: str) -> Asset | None:
        for name, asset in self.assets:
            if name == asset_id:
                return asset
        return None

    @property
    def frame_count(self) -> int:
        return frame_count(self.duration, self.fps)

    def scene_starts(self) -> tuple[float, ...]:
        starts, t = [], 0.0
        for scene in self.scenes:
            starts.append(t)
            t += scene.duration
        return tuple(starts)


def frame_count(duration: float, fps: int) -> int:
    """Frames in `duration` seconds at `fps`, tolerant of float noise (10.0 s at 30 fps = 300)."""
    return max(1, round(duration * fps))


@functools.lru_cache(maxsize=1)
def doc_schema() -> dict[str, Any]:
    """The published JSON Schema (2020-12) of VideoDoc v1."""
    text = resources.files("reelfarm.renderer").joinpath("videodoc.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(doc_schema())


def pointer(path: Sequence[Any]) -> str:
    """A JSON pointer (RFC 6901) for a path of keys and indexes."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else ""


@functools.lru_cache(maxsize=1)
def _fast_validator() -> Any:
    """A compiled validator (jsonschema-rs) that only says yes or no, about 100x faster."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(doc_schema())


def schema_problems(data: Any) -> list[Problem]:
    """Every schema violation of `data`, deepest first, one per location and message.

    A valid document (nearly every one) is confirmed by the compiled validator alone; only an
    invalid one is walked by ``jsonschema`` for its messages, which are the published ones.
    """
    if _fast_validator().is_valid(data):
        return []
    problems = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        leaves = _leaf_errors(error)
        for leaf in leaves:
            problems.append(Problem(pointer(leaf.absolute_path), "schema", leaf.message))
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in problems:
        if (p.pointer, p.message) not in seen:
            seen.add((p.pointer, p.message))
            unique.append(p)
    return unique


def _leaf_errors(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    # For oneOf/anyOf, the most specific sub-error explains more than "is not valid under any".
    if error.context:
        from jsonschema.exceptions import best_match

        best = best_match(error.context)
        return [best] if best is not None else [error]
    return [error]


def parse_doc(data: Mapping[str, Any]) -> Doc:
    """Validate `data` against the schema and build a `Doc`.

    Raises:
        DocInvalid: with every schema problem listed in `.problems`.
    """
    problems = schema_problems(data)
    if problems:
        raise DocInvalid(f"the document has {len(problems)} schema problem(s): {problems[0].pointer or '/'}: {problems[0].message}", problems)
    return build_doc(data)


def build_doc(data: Mapping[str, Any]) -> Doc:
    """A `Doc` from data already known to satisfy the schema (``schema_problems(data) == []``)."""
    return Doc(
        fps=int(data["fps"]),
        duration=float(data["duration"]),
        scenes=tuple(_scene(s) for s in data["scenes"]),
        format=data.get("format", DEFAULT_FORMAT),
        title=data.get("title", ""),
        locale=data.get("locale"),
        brand=data.get("brand", {}),
        assets=tuple((k, Asset(**v)) for k, v in data.get("assets", {}).items()),
        fonts=tuple(data.get("fonts", ())),
        safe_area=_safe_area(data.get("safe_area")),
        audio=tuple(AudioTrack(**a) for a in data.get("audio", ())),
        captions=Captions.from_json(data["captions"]) if data.get("captions") else None,
        source=data,
    )


def _safe_area(raw: Mapping[str, float] | None) -> tuple[float, float]:
    raw = raw or {}
    return (float(raw.get("x", DEFAULT_SAFE_AREA[0])), float(raw.get("y", DEFAULT_SAFE_AREA[1])))


def _scene(raw: Mapping[str, Any]) -> Scene:
    return Scene(
        id=raw["id"],
        duration=float(raw["duration"]),
        layers=tuple(_layer(l) for l in raw["layers"]),
        background=_background(raw.get("background")),
        transition=Transition(**raw["transition"]) if "transition" in raw else Transition(),
    )


def _background(raw: Mapping[str, Any] | None) -> Background:
    if not raw:
        return Background()
    kind = raw["type"]
    gradient = None
    if kind in ("linear", "radial"):
        gradient = _gradient({**raw, "type": kind})
    return Background(
        type=kind,
        color=raw.get("color", "$brand.colors.background"),
        gradient=gradient,
        asset=raw.get("asset"),
        fit=raw.get("fit", "cover"),
        overlay=raw.get("overlay"),
        ken_burns=_ken_burns(raw.get("ken_burns")),
        footage=Footage(**{k: raw[k] for k in _FOOTAGE_FIELDS if k in raw}),
    )


_FOOTAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Footage))


def _gradient(raw: Mapping[str, Any]) -> Gradient:
    return Gradient(
        type=raw["type"],
        colors=tuple(raw["colors"]),
        stops=tuple(raw["stops"]) if "stops" in raw else None,
        angle=float(raw.get("angle", 90.0)),
        center=tuple(raw.get("center", (0.5, 0.5))),
        radius=float(raw.get("radius", 0.75)),
    )


def _ken_burns(raw: Mapping[str, Any] | None) -> KenBurns | None:
    if raw is None:
        return None
    return KenBurns(
        start=View(**raw.get("from", {"scale": 1.0})),
        end=View(**raw.get("to", {"scale": 1.15})),
        easing=raw.get("easing", "in-out-quad"),
    )


# Each builder takes the document's JSON value for its key (already validated against the schema).
_NESTED: dict[str, Callable[[Any], Any]] = {
    "enter": lambda v: Motion(**v),
    "exit": lambda v: Motion(**v),
    "pill": lambda v: Pill(**v),
    "shadow": lambda v: Shadow(**v),
    "stroke": lambda v: Stroke(**v),
    "ken_burns": _ken_burns,
    "font": lambda v: v if isinstance(v, str) else FontRef(**v),
    "fill": lambda v: v if isinstance(v, str) else _gradient(v),
    "keyframes": lambda v: tuple((k, tuple(Keyframe(**kf) for kf in sorted(keys, key=lambda kf: kf["t"])))
                                 for k, keys in v.items()),
}
_LAYER_FIELDS = {f.name for f in dataclasses.fields(Layer)} - {"children", "variants"}


def _layer(raw: Mapping[str, Any]) -> Layer:
    base = _layer_from(raw)
    overrides = raw.get("formats", {})
    variants = tuple((fmt, _layer_from({**raw, **overrides[fmt]})) for fmt in FORMATS if fmt in overrides)
    return dataclasses.replace(base, variants=variants)


def _layer_from(raw: Mapping[str, Any]) -> Layer:
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _LAYER_FIELDS:
            continue
        kwargs[key] = _NESTED[key](value) if key in _NESTED else value
    children = tuple(_layer(c) for c in raw.get("children", ()))
    return Layer(children=children, **kwargs)


def iter_layers(layers: Sequence[Layer], prefix: str) -> list[tuple[str, Layer]]:
    """Every layer and nested child with its JSON pointer, depth first."""
    out: list[tuple[str, Layer]] = []
    for i, layer in enumerate(layers):
        ptr = f"{prefix}/{i}"
        out.append((ptr, layer))
        out.extend(iter_layers(layer.children, ptr + "/children"))
    return out
