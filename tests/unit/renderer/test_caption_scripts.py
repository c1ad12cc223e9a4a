"""Caption cues in other scripts draw real glyphs: every character of an Arabic, Hebrew, Devanagari,
Chinese, Japanese, Korean, Cyrillic or Greek cue has a glyph in the fonts its caption layer is set
in (the captions' own family, or the brand's body font and the renderer's fallbacks), and the drawn
cue is not the boxes a font draws for characters it lacks. Captions given a family of their own (a
translated copy's, ``studio.localize``) are drawn in it."""
from __future__ import annotations

import copy
import unicodedata
from typing import Any

import numpy as np
import pytest

from reelfarm.renderer.caption_layout import caption_layers
from reelfarm.renderer.fonts import font_book
from reelfarm.renderer.model import FontRef, parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.tokens import Brand

SCRIPTS = {
    "arabic": "مرحبا بالعالم، أهلا وسهلا",
    "hebrew": "שלום עולם, ברוכים הבאים",
    "devanagari": "नमस्ते दुनिया, स्वागत है",
    "chinese": "你好世界，欢迎光临",
    "japanese": "こんにちは世界、ようこそ",
    "korean": "안녕하세요 세계, 환영합니다",
    "cyrillic": "Привет мир, добро пожаловать",
    "greek": "Γειά σου κόσμε, καλώς ήρθατε",
}
PRIVATE = "\ue000"  # a character no packaged font has: drawn as the missing-glyph box


def _doc(text: str, **captions: Any) -> dict[str, Any]:
    return {"version": 1, "fps": 30, "duration": 6,
            "brand": {"colors": {"background": "#FFFFFF", "text": "#000000"},
                      "fonts": {"body": {"family": "Playfair Display", "weight": 400}}},
            "scenes": [{"id": "s", "duration": 6, "background": {"type": "solid", "color": "#FFFFFF"}, "layers": []}],
            "captions": {"cues": [{"start": 0.5, "end": 3.5, "text": text}], "style": "inverse", **captions}}


def _families(doc: dict[str, Any]) -> list[str]:
    """The registered font names the caption layer's words are looked up in, in order."""
    parsed = parse_doc(doc)
    layer = caption_layers(parsed, 0, "16:9")[0]
    font = Brand(parsed.brand).font(layer.font)
    return font_book().families_for(font.family, font.weight)


def _missing(text: str, names: list[str]) -> list[str]:
    """The characters of ``text`` (not spaces) that none of the fonts ``names`` has a glyph for."""
    book = font_book()
    faces = [book.typeface(name.split("#")[0], int(name.split("#")[1])) for name in names]
    return [c for c in text if not c.isspace() and unicodedata.category(c) != "Cf"
            and not any(face.unicharToGlyph(ord(c)) for face in faces)]


def _ink(doc: dict[str, Any]) -> np.ndarray:
    frame = SkiaRasterizer(parse_doc(doc), "16:9", 640, 360, reuse=False).render(1.0)
    return frame[..., :3].min(axis=-1) < 128  # dark words on the white box


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_character_of_a_cue_has_a_glyph_in_its_fonts(script: str) -> None:
    text = SCRIPTS[script]
    assert _missing(text, _families(_doc(text))) == []
    assert _missing(PRIVATE, _families(_doc(text))) == [PRIVATE], "the check finds a character no font has"


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_cue_is_drawn_in_glyphs_not_missing_glyph_boxes(script: str) -> None:
    text = SCRIPTS[script]
    words, boxes = _ink(_doc(text)), _ink(_doc(PRIVATE * len(text)))
    assert words.sum() > 300, "the cue is drawn"
    assert not np.array_equal(words, boxes), "drawn as the boxes of missing glyphs"
    ys = np.nonzero(words)[0]
    assert ys.min() > 360 * 0.6, "at the foot of the frame"


@pytest.mark.parametrize(("family", "text"), [("Noto Sans Arabic", SCRIPTS["arabic"]),
                                               ("Noto Sans CJK", SCRIPTS["chinese"])])
def test_captions_with_a_family_of_their_own_are_set_in_it(family: str, text: str) -> None:
    own = _doc(text, font={"family": family, "weight": 400})
    layer = caption_layers(parse_doc(own), 0, "16:9")[0]
    assert layer.font == FontRef(family, 400)
    names = _families(own)
    assert names[0] == f"{family}#400"
    assert _missing(text, names[:1]) == [], f"{family} alone has every glyph of the cue"
    assert _ink(own).sum() > 300
    bare = copy.deepcopy(own)
    del bare["captions"]["font"]
    assert _families(bare)[0] == "Playfair Display#400", "without one, the brand's body font comes first"
