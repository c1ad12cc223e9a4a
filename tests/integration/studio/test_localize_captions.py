"""A translated copy translates its captions' cues with the rest (real Apertium, English to Spanish),
keeps their times and style, and draws the translated words; a copy in Arabic or Japanese (the
loopback stand-in for DeepL) sets its cues in the family its text layers take for that script,
which has every glyph of them, and a Spanish one keeps the brand's body font."""
from __future__ import annotations

import numpy as np
import pytest

from reelfarm.renderer.fonts import font_book
from reelfarm.renderer.linter import lint
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still
from reelfarm.studio.localize import localize
from reelfarm.studio.texts import doc_texts
from reelfarm.studio.translate import Translators
from tests.integration.studio.test_localize import layers, story_doc, translators  # noqa: F401 - a fixture
from tests.integration.studio.test_translate_http import CANNED

CUES = [{"start": 1.0, "end": 2.5, "text": "Good morning"}, {"start": 3.0, "end": 4.0, "text": "SPRING40"}]


def test_cues_are_translated_with_the_rest_and_keep_their_times(translators: Translators) -> None:  # noqa: F811
    doc = story_doc("flash_sale")
    doc["captions"] = {"cues": [dict(c) for c in CUES], "style": "inverse"}
    out = localize(doc, source="en", target="es", translators=translators)
    assert out["captions"]["style"] == "inverse"
    assert [(c["start"], c["end"]) for c in out["captions"]["cues"]] == [(1.0, 2.5), (3.0, 4.0)]
    assert out["captions"]["cues"][0]["text"] == "Buenos días"
    assert out["captions"]["cues"][1]["text"] == "SPRING40", "a code is left as it is"
    assert doc["captions"]["cues"][0]["text"] == "Good morning", "the source is never changed"
    labels = {t.text: t.label for t in doc_texts(out)}
    assert labels["Buenos días"] == "Captions · cue 1"


@pytest.mark.parametrize(("target", "family"), [("ar", "Noto Sans Arabic"), ("ja", "Noto Sans CJK")])
def test_cues_in_another_script_take_the_family_text_layers_take(translators: Translators, target: str,  # noqa: F811
                                                                 family: str) -> None:
    doc = story_doc("flash_sale")
    doc["captions"] = {"cues": [{"start": 1.0, "end": 2.5, "text": "Apply today"},
                                {"start": 3.0, "end": 4.0, "text": "SPRING40"}]}
    out = localize(doc, source="en", target=target, translators=translators)
    switched = {(layer["font"]["family"], layer["font"]["weight"]) for layer in layers(out)
                if layer["type"] == "text" and isinstance(layer.get("font"), dict)}
    assert (family, 400) in switched, "the text layers' family for the script, at the body's weight"
    assert out["captions"]["font"] == {"family": family, "weight": 400}
    assert "font" not in doc["captions"], "the source is never changed"
    face = font_book().typeface(family, 400)
    cue = out["captions"]["cues"][0]["text"]
    assert cue == CANNED[target.upper()]["Apply today"]
    assert [c for c in cue if not c.isspace() and not face.unicharToGlyph(ord(c))] == [], "every glyph in the family"
    assert lint(out).errors == []
    inked = render_still(out, 1.5, RenderSpec("16:9", 360))
    bare = render_still({**out, "captions": {**out["captions"], "cues": out["captions"]["cues"][1:]}}, 1.5,
                        RenderSpec("16:9", 360))
    assert (np.abs(inked.astype(int) - bare.astype(int)).max(axis=-1) > 48).sum() > 300, "the cue is drawn"


def test_latin_cues_keep_the_brands_body_font(translators: Translators) -> None:  # noqa: F811
    doc = story_doc("flash_sale")
    doc["captions"] = {"cues": [dict(c) for c in CUES]}
    assert "font" not in localize(doc, source="en", target="es", translators=translators)["captions"]
