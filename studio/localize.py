"""Translated copies of a VideoDoc: translate every text, then make the layout fit the language.

`localize` runs two stages, reported through ``progress(stage, fraction)``:

- ``translate``: every text string (text layers at any depth, their per-format text overrides,
  caption cues and the title) goes to the engines in one deduplicated batch.
- ``fit``: right-to-left languages get ``direction: rtl`` and a horizontally mirrored layout;
  scripts the chosen family lacks (Arabic, Hebrew, Devanagari, CJK) get the renderer's family for
  that script at the same weight, in text layers and caption cues alike; then text (inside groups too) that overflows its box in any of
  the four formats is allowed to shrink further, one lint pass at a time, for a bounded number
  of passes.

The input document is never changed; the result is a new document.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

from reelfarm.renderer.linter import LintReport, lint
from reelfarm.renderer.spec import FORMATS
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.studio.texts import text_slots
from reelfarm.studio.translate import Translators
from reelfarm.studio.translate.locales import direction_of, normalize_tag, script_of
from reelfarm.studio.translate.placeholders import protect

__all__ = ["SCRIPT_FAMILIES", "localize"]

Progress = Callable[[str, float], None]
JSON = dict[str, Any]

SCRIPT_FAMILIES = {
    "arabic": "Noto Sans Arabic", "hebrew": "Heebo", "devanagari": "Noto Sans Devanagari", "cjk": "Noto Sans CJK",
}
_SCRIPT_CHARS = {
    "arabic": re.compile("[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]"),
    "hebrew": re.compile("[\u0590-\u05ff\ufb1d-\ufb4f]"),
    "devanagari": re.compile("[\u0900-\u097f\ua8e0-\ua8ff]"),
    "cjk": re.compile("[\u1100-\u11ff\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]"),
}
_JOINED_SCRIPTS = ("arabic", "devanagari")
_LETTER = re.compile(r"[^\W\d_]")
_SIDES = {"left": "right", "right": "left"}
_ANCHOR_FLIP = {"top-left": "top-right", "top-right": "top-left", "left": "right", "right": "left",
                "bottom-left": "bottom-right", "bottom-right": "bottom-left"}
_OVERFLOW_FMT = re.compile(rf"in ({'|'.join(map(re.escape, FORMATS))})$")
# A text layer at any depth: /scenes/0/layers/2/text or /scenes/0/layers/2/children/1/text.
_LAYER_PTR = re.compile(r"^/scenes/(\d+)/layers/(\d+(?:/children/\d+)*)/text$")

MAX_FIT_PASSES = 8
SHRINK_STEP = 0.88
# The linter calls text under 24 px at 1080p too small; shrinking stops just above that.
MIN_TEXT_SIZE = 24.2 / 1080.0


def localize(doc: JSON, *, source: str, target: str, translators: Translators,
             progress: Progress | None = None) -> JSON:
    """A copy of `doc` in `target`, laid out for its script and direction.

    Raises:
        UnsupportedLocale: no configured engine translates `source` into `target`.
        TranslationError: the engines failed.
    """
    report = progress or (lambda stage, fraction: None)
    out = copy.deepcopy(doc)
    report("translate", 0.0)
    _translate_texts(out, source, target, translators)
    out["locale"] = normalize_tag(target)
    report("translate", 1.0)
    report("fit", 0.0)
    if direction_of(target) == "rtl":
        _mirror_doc(out)
    script = script_of(target)
    if script is not None:
        _switch_fonts(out, script)
    _fit_text(out, lambda fraction: report("fit", fraction))
    report("fit", 1.0)
    return out


# -- translate --------------------------------------------------------------------------------

def _translate_texts(doc: JSON, source: str, target: str, translators: Translators) -> None:
    slots = list(_text_slots(doc))
    wanted = list(dict.fromkeys(holder[key] for holder, key in slots if _needs_translation(holder[key])))
    done = dict(zip(wanted, translators.translate(wanted, source, target)))  # checks the pair even when empty
    for holder, key in slots:
        holder[key] = done.get(holder[key], holder[key])


def _needs_translation(text: str) -> bool:
    """False for text with no words outside URLs, numbers and codes (``SPRING40``, ``01``)."""
    return bool(_LETTER.search(protect(text)[0]))


def _text_slots(doc: JSON) -> Iterator[tuple[JSON, str]]:
    for _, holder, key in text_slots(doc):
        yield holder, key


def _all_layers(layers: list[JSON]) -> Iterator[JSON]:
    for layer in layers:
        yield layer
        yield from _all_layers(layer.get("children", []))


def _text_layers(doc: JSON) -> Iterator[JSON]:
    for scene in doc.get("scenes", []):
        for layer in _all_layers(scene.get("layers", [])):
            if layer.get("type") == "text":
                yield layer


# -- right to left ----------------------------------------------------------------------------

def _mirror_doc(doc: JSON) -> None:
    """Set every text right-to-left and mirror the layout about the vertical centre line."""
    for scene in doc.get("scenes", []):
        transition = scene.get("transition")
        if transition and transition.get("direction") in _SIDES:
            transition["direction"] = _SIDES[transition["direction"]]
        if scene.get("background"):
            _mirror_gradient(scene["background"])
        for layer in scene.get("layers", []):
            _mirror_layer(layer)
    for layer in _text_layers(doc):
        layer["direction"] = "rtl"
        for override in layer.get("formats", {}).values():
            if "direction" in override:
                override["direction"] = "rtl"


def _mirror_layer(layer: JSON) -> None:
    # Children sit in fractions of their group's box, which is itself mirrored.
    _mirror_props(layer)
    for override in layer.get("formats", {}).values():
        _mirror_props(override)
    for child in layer.get("children", []):
        _mirror_layer(child)


def _mirror_props(props: JSON) -> None:
    if "x" in props:
        props["x"] = _flip(props["x"])
    if props.get("anchor") in _ANCHOR_FLIP:
        props["anchor"] = _ANCHOR_FLIP[props["anchor"]]
    if props.get("align") in _SIDES:
        props["align"] = _SIDES[props["align"]]
    if "rotation" in props:
        props["rotation"] = -props["rotation"]
    for key in ("x", "rotation"):
        for frame in props.get("keyframes", {}).get(key, []):
            frame["v"] = _flip(frame["v"]) if key == "x" else -frame["v"]
    for motion in (props.get("enter"), props.get("exit")):
        if motion and motion.get("direction") in _SIDES:
            motion["direction"] = _SIDES[motion["direction"]]
    if props.get("shadow") and "dx" in props["shadow"]:
        props["shadow"]["dx"] = -props["shadow"]["dx"]
    if isinstance(props.get("fill"), dict):
        _mirror_gradient(props["fill"])


def _mirror_gradient(gradient: JSON) -> None:
    if gradient.get("type") == "linear":
        gradient["angle"] = round((180.0 - gradient.get("angle", 90.0)) % 360.0, 6)
    elif gradient.get("type") == "radial" and "center" in gradient:
        cx, cy = gradient["center"]
        gradient["center"] = [_flip(cx), cy]


def _flip(x: float) -> float:
    return round(1.0 - x, 6)


# -- fonts ------------------------------------------------------------------------------------

def _switch_fonts(doc: JSON, script: str) -> None:
    """Give text written in `script` (text layers, and caption cues) the renderer's family for it,
    keeping the weight.

    Arabic and Devanagari letters join, so their letter spacing is dropped as well.
    """
    family = SCRIPT_FAMILIES[script]
    chars = _SCRIPT_CHARS[script]
    brand_fonts = {**NEUTRAL_BRAND["fonts"], **((doc.get("brand") or {}).get("fonts") or {})}
    for layer in _text_layers(doc):
        overrides = layer.get("formats", {}).values()
        texts = [layer.get("text", "")] + [o["text"] for o in overrides if "text" in o]
        if not any(chars.search(t) for t in texts):
            continue  # a URL or a code stays in the brand's family
        for props in [layer, *overrides]:
            if script in _JOINED_SCRIPTS and props.get("letter_spacing"):
                props["letter_spacing"] = 0  # tracking tears joined letters apart
            if props is not layer and "font" not in props:
                continue
            weight = _font_weight(props.get("font", "$brand.fonts.body"), brand_fonts)
            current = props.get("font")
            if not (isinstance(current, dict) and current.get("family") == family):
                props["font"] = {"family": family, "weight": weight}
    captions = doc.get("captions")
    if isinstance(captions, dict) and any(chars.search(str(c.get("text", ""))) for c in captions.get("cues", ())):
        # the cues take the family the text layers take, at the body's weight, not the brand's Latin family
        weight = _font_weight(captions.get("font", "$brand.fonts.body"), brand_fonts)
        captions["font"] = {"family": family, "weight": weight}


def _font_weight(font: Any, brand_fonts: JSON) -> int:
    if isinstance(font, dict):
        return int(font.get("weight", 400))
    ref = brand_fonts.get(str(font).rsplit(".", 1)[-1]) or {}
    return int(ref.get("weight", 400))


# -- fit --------------------------------------------------------------------------------------

def _fit_text(doc: JSON, report: Callable[[float], None]) -> None:
    """Let overflowing text shrink until lint finds no overflow in any format, or give up."""
    for n in range(MAX_FIT_PASSES):
        overflows = _overflows(lint(doc))
        if not overflows:
            return
        changed = False
        touched: set[int] = set()  # a floor shared by several formats drops once per pass
        for (s, path), formats in overflows.items():
            layer = _layer_at(doc["scenes"][s]["layers"], path)
            for fmt in sorted(formats, key=str):
                changed = _shrink(layer, fmt, touched) or changed
        report((n + 1) / (MAX_FIT_PASSES + 1))
        if not changed:
            return


def _overflows(report: LintReport) -> dict[tuple[int, tuple[int, ...]], set[str | None]]:
    """Overflowing text layers as (scene, index path through groups' children), with their formats."""
    found: dict[tuple[int, tuple[int, ...]], set[str | None]] = {}
    for problem in report.warnings:
        ptr = _LAYER_PTR.match(problem.pointer)
        if problem.code != "text_overflow" or ptr is None:
            continue
        fmt = _OVERFLOW_FMT.search(problem.message)
        path = tuple(int(i) for i in ptr.group(2).split("/children/"))
        found.setdefault((int(ptr.group(1)), path), set()).add(fmt.group(1) if fmt else None)
    return found


def _layer_at(layers: list[JSON], path: tuple[int, ...]) -> JSON:
    layer = layers[path[0]]
    for i in path[1:]:
        layer = layer["children"][i]
    return layer


def _shrink(layer: JSON, fmt: str | None, touched: set[int]) -> bool:
    """Lower the smallest size `layer` may shrink to in `fmt` by one step; False at the floor.

    Auto-shrink only goes as small as it must, so a lower floor leaves formats that already
    fit as they are; the floor is written where `fmt` reads it from (its override or the base).
    """
    override = layer.get("formats", {}).get(fmt, {}) if fmt else {}
    holder = override if "min_size" in override else layer
    if id(holder) in touched:
        return False  # already lowered (or found at the floor) in this pass
    touched.add(id(holder))
    seen = {**layer, **override}
    size = float(seen.get("size", 0.05))
    floor = seen.get("min_size")
    enabled = not seen.get("auto_shrink")
    if enabled:
        (override if "auto_shrink" in override else layer)["auto_shrink"] = True
        floor = None if floor is None else min(float(floor), size)
        current = size if floor is None else floor
    else:
        current = size * 0.5 if floor is None else float(floor)  # the renderer's floor without min_size
    lower = round(max(MIN_TEXT_SIZE, current * SHRINK_STEP), 5)
    if lower >= current:
        return enabled
    holder["min_size"] = lower
    return True
