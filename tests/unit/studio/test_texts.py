"""A document's texts, each distinct string once, corrected everywhere it appears."""
from __future__ import annotations

import pytest

from reelfarm.studio.stories import NEUTRAL_BRAND, get_story
from reelfarm.studio.texts import doc_texts, text_problems, with_texts
from reelfarm.studio.translate.locales import LANGUAGE_NAMES, LANGUAGES, locale_label, locale_name


def _doc() -> dict:
    return get_story("flash_sale").build({"kicker": "Centellea venta"}, NEUTRAL_BRAND, "9:16", None)


def test_each_distinct_text_is_listed_once_with_where_it_first_appears():
    texts = doc_texts(_doc())
    assert texts[0].label == "Title"
    kicker = next(t for t in texts if t.text == "Centellea venta")
    assert kicker.label == "Scene 1 · kicker" and kicker.places == 1
    discount = next(t for t in texts if t.text == "40% OFF")
    assert discount.places == 2  # the badge and the outro
    assert len({t.text for t in texts}) == len(texts)


def test_a_corrected_text_changes_every_place_and_nothing_else():
    doc = _doc()
    texts = doc_texts(doc)
    discount = next(t for t in texts if t.text == "40% OFF")
    kicker = next(t for t in texts if t.text == "Centellea venta")
    out = with_texts(doc, {discount.index: "50% MENOS", kicker.index: "Venta relámpago"})
    shown = [t.text for t in doc_texts(out)]
    assert "40% OFF" not in shown and "Centellea venta" not in shown
    assert next(t for t in doc_texts(out) if t.text == "50% MENOS").places == 2
    assert doc == _doc()  # the input is not changed
    assert with_texts(doc, {}) == doc


def test_empty_unknown_and_too_long_texts_are_refused_all_at_once():
    doc = _doc()
    problems = text_problems(doc, {0: " ", 1: "y" * 2001, 999: "x"})
    assert problems == {0: "Title: write a text; it cannot be empty",
                        1: f"{doc_texts(doc)[1].label}: at most 2000 characters (this has 2001)",
                        999: "this text is no longer in the video; reload the page"}
    with pytest.raises(ValueError):
        with_texts(doc, {0: ""})


def test_the_title_is_held_to_the_schemas_shorter_limit():
    doc = _doc()
    assert doc_texts(doc)[0].max_length == 200
    assert text_problems(doc, {0: "t" * 201}) == {0: "Title: at most 200 characters (this has 201)"}
    assert text_problems(doc, {0: "t" * 200}) == {}


def test_languages_have_their_own_names_beside_their_tags_from_one_table():
    assert locale_label("es") == "Español (es)" and locale_label("pt-br") == "Português (pt-BR)"
    assert locale_label("xx") == "xx" and locale_label("not a tag") == "not a tag"
    assert locale_name("es") == "Spanish" and set(LANGUAGE_NAMES) == set(LANGUAGES)
