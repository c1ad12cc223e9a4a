"""Translated copies of real story documents: translated, mirrored for RTL, re-fonted, re-fitted, drawn.

Spanish comes from the real Apertium engine; German, Arabic and Japanese from `FakeDeepL`, the
loopback stand-in for DeepL's paid API, which answers only from hand translations.
"""
from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from reelfarm.renderer.linter import lint
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import poster_time, render_still
from reelfarm.studio.errors import UnsupportedLocale
from reelfarm.studio.localize import localize
from reelfarm.studio.stories import NEUTRAL_BRAND, get_story, resolve_fields
from reelfarm.studio.translate import ApertiumTranslator, DeepLTranslator, Translators
from tests.integration.studio.test_translate_http import CANNED, INSTALL_HINT, FakeDeepL

UNTRANSLATABLE = {"SPRING40", "example.com/sale", "example.com/careers"}
FAMILY = {"ar": "Noto Sans Arabic", "ja": "Noto Sans CJK"}


class Recording:
    """Passes every call to a real engine and keeps the batches it was given."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.name, self.batches = engine, engine.name, []  # type: list[list[str]]

    def targets(self, source: str) -> set[str]:
        return self.engine.targets(source)  # type: ignore[no-any-return]

    def translate(self, texts: list[str], source: str, target: str) -> list[str]:
        self.batches.append(list(texts))
        return self.engine.translate(texts, source, target)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def translators() -> Iterator[Translators]:
    apertium = ApertiumTranslator()
    if not ApertiumTranslator.available() or "es" not in apertium.targets("en"):
        pytest.fail(f"Apertium English-Spanish is not installed: {INSTALL_HINT}")
    with FakeDeepL() as deepl:
        yield Translators([apertium, DeepLTranslator("fake-key:fx", base_url=deepl.url)])


def story_doc(story_id: str, fmt: str = "16:9") -> dict[str, Any]:
    story = get_story(story_id)
    return story.build(resolve_fields(story, {}), NEUTRAL_BRAND, fmt, None)


def layers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    def walk(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for layer in items:
            yield layer
            yield from walk(layer.get("children", []))
    for scene in doc["scenes"]:
        yield from walk(scene["layers"])


def texts(doc: dict[str, Any]) -> list[str]:
    return [layer["text"] for layer in layers(doc) if layer["type"] == "text"]


def text_only(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with only its text layers, on a plain background, so every inked pixel is text."""
    out = copy.deepcopy(doc)
    for scene in out["scenes"]:
        scene["layers"] = [l for l in scene["layers"] if l["type"] == "text"]
        scene["background"] = {"type": "solid", "color": "#FFFFFF"}
        for layer in scene["layers"]:
            layer["color"] = "#000000"
    return out


def ink(doc: dict[str, Any], t: float, fmt: str = "16:9") -> np.ndarray:
    """Columns and rows of the pixels text inks at `t`."""
    pixels = render_still(text_only(doc), t, RenderSpec(fmt, 360))
    return np.argwhere(pixels[:, :, :3].min(axis=2) < 128)


def settled(doc: dict[str, Any]) -> float:
    return poster_time(parse_doc(doc))


@pytest.mark.parametrize("story_id", ["flash_sale", "hiring"])
@pytest.mark.parametrize("target", ["de", "ar", "ja", "es"])
def test_localized_copy_is_translated_fits_and_draws(translators: Translators, story_id: str, target: str) -> None:
    doc = story_doc(story_id)
    before = copy.deepcopy(doc)
    stages: list[tuple[str, float]] = []

    out = localize(doc, source="en", target=target, translators=translators,
                   progress=lambda stage, fraction: stages.append((stage, fraction)))

    assert doc == before
    assert out["locale"] == target
    for original, translated in zip(texts(doc), texts(out), strict=True):
        if original in UNTRANSLATABLE:
            assert translated == original
        else:
            assert translated != original
            assert target == "es" or translated == CANNED[target.upper()][original]
    report = lint(out)
    assert report.errors == [] and report.warnings == []
    names = [name for name, _ in stages]
    assert names == ["translate"] * names.count("translate") + ["fit"] * names.count("fit")
    for name in ("translate", "fit"):
        fractions = [f for n, f in stages if n == name]
        assert fractions[0] == 0.0 and fractions[-1] == 1.0 and fractions == sorted(fractions)
    inked = ink(out, settled(out))
    assert len(inked) > 500
    assert not np.array_equal(inked, ink(doc, settled(doc)))


def test_spanish_comes_from_apertium(translators: Translators) -> None:
    out = localize(story_doc("flash_sale"), source="en", target="es", translators=translators)

    by_id = {l["id"]: l for l in layers(out)}
    assert by_id["details.code_label"]["text"] == "Código de uso"
    assert by_id["details.code"]["text"] == "SPRING40"
    assert out["title"] == by_id["details.headline"]["text"]


def test_arabic_copy_is_mirrored_and_right_to_left(translators: Translators) -> None:
    doc = story_doc("hiring")

    out = localize(doc, source="en", target="ar", translators=translators)

    flipped = {"top-left": "top-right", "left": "right", "center": "center"}
    for a, b in zip(layers(doc), layers(out), strict=True):
        if "x" in a:
            assert b["x"] == pytest.approx(1 - a["x"])
        for key, keys in a.get("keyframes", {}).items():
            if key == "x":
                assert [k["v"] for k in b["keyframes"]["x"]] == pytest.approx([1 - k["v"] for k in keys])
        assert b.get("anchor", "center") == flipped[a.get("anchor", "center")]
        if a["type"] != "text":
            continue
        assert b["direction"] == "rtl"
        assert b["align"] == {"left": "right", "center": "center"}[a["align"]]
        if b["text"] in UNTRANSLATABLE:
            assert b["font"] == a["font"]
        else:
            weight = NEUTRAL_BRAND["fonts"][a["font"].rsplit(".", 1)[-1]]["weight"]
            assert b["font"] == {"family": "Noto Sans Arabic", "weight": weight}
            assert not b.get("letter_spacing")
    # The left-aligned English role scene reads from the right edge in Arabic.
    t = settled(doc)
    english, arabic = ink(doc, t)[:, 1], ink(out, t)[:, 1]
    width = 640
    assert english.mean() < 0.4 * width < 0.6 * width < arabic.mean()
    assert arabic.max() == pytest.approx(width - 1 - english.min(), abs=0.02 * width)


def test_japanese_copy_switches_to_the_cjk_family(translators: Translators) -> None:
    doc = story_doc("flash_sale", "9:16")

    out = localize(doc, source="en", target="ja", translators=translators)

    for a, b in zip(layers(doc), layers(out), strict=True):
        if a["type"] == "text" and b["text"] not in UNTRANSLATABLE:
            weight = NEUTRAL_BRAND["fonts"][a["font"].rsplit(".", 1)[-1]]["weight"]
            assert b["font"] == {"family": "Noto Sans CJK", "weight": weight}
            assert b.get("direction", "auto") == "auto"
    inked = ink(out, settled(out), "9:16")
    assert len(inked) > 500


def test_text_that_overflows_after_translation_shrinks_until_it_fits(translators: Translators) -> None:
    doc = small_doc([{"id": "claim", "type": "text", "text": "Unbelievable opportunities", "size": 0.08,
                      "w": 0.7, "font": {"family": "Montserrat", "weight": 800}}])
    unfitted = copy.deepcopy(doc)
    unfitted["scenes"][0]["layers"][0]["text"] = CANNED["DE"]["Unbelievable opportunities"]
    assert lint(doc).warnings == []
    assert {p.message for p in lint(unfitted).warnings} == {
        f"text overflows its box in {fmt}" for fmt in ("9:16", "1:1", "4:5")}

    out = localize(doc, source="en", target="de", translators=translators)

    claim = out["scenes"][0]["layers"][0]
    assert claim["text"] == "Unglaubliche Entwicklungsmöglichkeiten"
    assert claim["auto_shrink"] is True and 0.0223 < claim["min_size"] < 0.08
    assert lint(out).warnings == []


@pytest.mark.parametrize("depth", [1, 2])
def test_text_inside_groups_that_overflows_after_translation_shrinks(translators: Translators, depth: int) -> None:
    claim = {"id": "claim", "type": "text", "text": "Unbelievable opportunities", "size": 0.08, "w": 0.875,
             "font": {"family": "Montserrat", "weight": 800}, "color": "#111111"}
    layer: dict[str, Any] = claim
    # The innermost group is 0.8 of the frame wide and an outer one all of it: the text box is 0.7 wide.
    for level in range(depth):
        layer = {"id": f"card{level}", "type": "group", "x": 0.5, "y": 0.5, "w": 1.0 if level else 0.8, "h": 0.6,
                 "children": [{"id": f"card{level}.bar", "type": "shape", "shape": "rect", "y": 0.95, "w": 0.5,
                               "h": 0.05, "fill": "#111111"}, layer]}
    doc = small_doc([layer])
    pointer = "/scenes/0/layers/0" + "/children/1" * depth + "/text"
    unfitted = copy.deepcopy(doc)
    holder = unfitted["scenes"][0]["layers"][0]
    for _ in range(depth):
        holder = holder["children"][1]
    holder["text"] = CANNED["DE"]["Unbelievable opportunities"]
    assert lint(doc).warnings == []
    assert {(p.pointer, p.code) for p in lint(unfitted).warnings} == {(pointer, "text_overflow")}

    out = localize(doc, source="en", target="de", translators=translators)

    fitted = out["scenes"][0]["layers"][0]
    for _ in range(depth):
        fitted = fitted["children"][1]
    assert fitted["text"] == "Unglaubliche Entwicklungsmöglichkeiten"
    assert fitted["auto_shrink"] is True and 0.0223 < fitted["min_size"] < 0.08
    assert lint(out).warnings == []


def test_groups_overrides_and_repeats_are_translated_in_one_batch(translators: Translators) -> None:
    apertium = Recording(translators.engines[0])
    doc = small_doc([
        {"id": "card", "type": "group", "x": 0.3, "y": 0.5, "w": 0.4, "h": 0.5,
         "children": [{"id": "card.title", "type": "text", "text": "Join our team in Berlin", "x": 0.25, "w": 0.4,
                       "align": "left", "anchor": "left", "enter": {"preset": "slide", "direction": "left"}}]},
        {"id": "cta", "type": "text", "text": "Apply today", "y": 0.8, "w": 0.6,
         "formats": {"9:16": {"text": "Join our team in Berlin", "x": 0.4}}},
    ])
    doc["title"] = "Apply today"

    out = localize(doc, source="en", target="es", translators=Translators([apertium]))

    assert apertium.batches == [["Apply today", "Join our team in Berlin"]]
    child = out["scenes"][0]["layers"][0]["children"][0]
    cta = out["scenes"][0]["layers"][1]
    assert "Berlín" in child["text"] and cta["formats"]["9:16"]["text"] == child["text"]
    assert out["title"] == cta["text"] != "Apply today"
    assert lint(out).warnings == []


def test_arabic_mirrors_inside_groups_and_transitions(translators: Translators) -> None:
    doc = small_doc([
        {"id": "card", "type": "group", "x": 0.3, "y": 0.5, "w": 0.4, "h": 0.5, "anchor": "left",
         "children": [{"id": "card.title", "type": "text", "text": "Join our team in Berlin", "x": 0.25, "w": 0.4,
                       "align": "left", "anchor": "left", "enter": {"preset": "slide", "direction": "left"}},
                      {"id": "card.bar", "type": "shape", "shape": "rect", "x": 0.1, "y": 0.9, "w": 0.2, "h": 0.02,
                       "fill": {"type": "linear", "colors": ["#000000", "#FFFFFF"], "angle": 30}}]},
        {"id": "cta", "type": "text", "text": "Apply today", "y": 0.8, "w": 0.6, "align": "start",
         "formats": {"9:16": {"x": 0.4, "align": "right"}}},
    ])
    doc["scenes"][0]["transition"] = {"type": "slide", "direction": "left"}

    out = localize(doc, source="en", target="ar", translators=translators)

    scene = out["scenes"][0]
    card, cta = scene["layers"]
    title, bar = card["children"]
    assert (card["x"], card["anchor"]) == (0.7, "right")
    assert (title["x"], title["anchor"], title["align"], title["enter"]["direction"]) == (0.75, "right", "right", "right")
    assert title["text"] == CANNED["AR"]["Join our team in Berlin"] and title["direction"] == "rtl"
    assert bar["x"] == 0.9 and bar["fill"]["angle"] == 150
    assert cta["align"] == "start" and cta["formats"]["9:16"] == {"x": 0.6, "align": "left"}
    assert scene["transition"]["direction"] == "right"
    assert lint(out).errors == []


def test_a_locale_no_engine_has_is_refused(translators: Translators) -> None:
    doc = story_doc("flash_sale")
    before = copy.deepcopy(doc)

    with pytest.raises(UnsupportedLocale):
        localize(doc, source="en", target="ko", translators=translators)
    assert doc == before


def small_doc(layer_list: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "fps": 30, "duration": 6, "format": "16:9",
            "brand": copy.deepcopy(NEUTRAL_BRAND),
            "scenes": [{"id": "one", "duration": 6, "background": {"type": "solid", "color": "#FFFFFF"},
                        "layers": [{**l, "color": "#111111"} if l["type"] == "text" else l for l in layer_list]}]}
