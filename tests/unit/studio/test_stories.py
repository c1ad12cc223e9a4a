"""Built-in stories: registry, field schemas, validation, and the VideoDocs they build."""
from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reelfarm.studio.errors import InvalidBuildRequestError, InvalidFieldsError, UnknownStoryError
from reelfarm.studio.stories import NEUTRAL_BRAND, STORIES, get_story, list_stories, resolve_fields, validate_fields
from reelfarm.studio.stories.fields import VIDEO_PATTERN

ROOT = Path(__file__).resolve().parents[3]
DOC_SCHEMA = json.loads((ROOT / "renderer" / "videodoc.schema.json").read_text())
DOC_VALIDATOR = Draft202012Validator(DOC_SCHEMA)
FORMATS = ("16:9", "9:16", "1:1", "4:5")
ALL = list_stories()
IDS = [s.id for s in ALL]

OTHER_BRAND = {
    "colors": {"primary": "#7C3AED", "secondary": "#1E1B4B", "accent": "#22D3EE", "background": "#0B0A1A",
               "text": "#F5F5F7"},
    "palette": ["#7C3AED", "#22D3EE"],
    "fonts": {"heading": {"family": "Poppins", "weight": 700}, "body": {"family": "DM Sans", "weight": 400}},
    "logo": {"url": "https://cdn.example.com/logo.png", "width": 600, "height": 200, "dominant_color": "#7C3AED"},
    "radius": 0.04,
    "tagline": "Make it move",
}


def layers_of(doc: dict) -> Iterator[dict]:
    """Every layer of every scene, group children included."""
    def walk(layers: list[dict]) -> Iterator[dict]:
        for layer in layers:
            yield layer
            yield from walk(layer.get("children", []))

    for scene in doc["scenes"]:
        yield from walk(scene["layers"])


def variants(layer: dict) -> Iterator[dict]:
    """The layer as each format sees it: base properties with that format's overrides."""
    yield layer
    for override in layer.get("formats", {}).values():
        yield {**layer, **override}


def longest_values(story) -> dict[str, Any]:
    """Field values at their maximum lengths and item counts."""
    words = ["brown", "foxes", "jump", "over", "seven", "lazy", "dogs", "while", "quiet", "wizards", "pack", "juice",
             "boxes"]

    def text(n: int) -> str:
        out = ""
        while len(out) < n:
            out = (out + " " + words[len(out) % len(words)]).strip()
        return out[:n].strip().ljust(n, "x")

    def value(prop: dict) -> Any:
        if "enum" in prop:
            return prop["enum"][-1]
        if prop["type"] == "array":
            item = prop["items"]
            if item["type"] == "object":
                return [{k: value(p) for k, p in item["properties"].items()} for _ in range(prop["maxItems"])]
            return [text(item["maxLength"]) for _ in range(prop["maxItems"])]
        if prop.get("format") == "uri":
            return "https://cdn.example.com/picture.jpg"
        if prop.get("format") == "color":
            return "#F2C94C"
        if prop.get("pattern") == VIDEO_PATTERN:
            return None  # a clip is an upload of a library (tests/integration/api/test_api_story_clips.py)
        return text(prop["maxLength"])

    return {name: value(prop) for name, prop in story.fields["properties"].items()}


# --- registry -----------------------------------------------------------------------------


def test_there_are_at_least_twelve_stories_in_six_categories():
    assert len(ALL) >= 12
    assert len({s.category for s in ALL}) >= 6


def test_ids_are_unique_slugs_and_index_the_registry():
    assert len(set(IDS)) == len(IDS)
    for story in ALL:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", story.id)
        assert STORIES[story.id] is story
        assert get_story(story.id) is story
        assert story.name and story.description and story.category


def test_list_order_is_stable_by_category_then_name():
    assert [s.id for s in list_stories()] == IDS
    assert IDS == [s.id for s in sorted(ALL, key=lambda s: (s.category, s.name, s.id))]


def test_unknown_story_is_a_key_error():
    with pytest.raises(KeyError):
        get_story("no_such_story")
    with pytest.raises(UnknownStoryError):
        get_story("no_such_story")


def test_default_durations_suit_short_videos():
    for story in ALL:
        assert 8 <= story.default_duration_sec <= 20


def test_to_dict_is_the_api_story_resource():
    resource = get_story("announcement").to_dict()
    assert set(resource) == {"id", "name", "category", "description", "default_duration_sec", "fields"}
    assert set(resource["fields"]["properties"]) == set(get_story("announcement").fields["properties"]) | {
        "soundtrack", "captions"}
    json.dumps(resource)


# --- field schemas ------------------------------------------------------------------------


@pytest.mark.parametrize("story_id", IDS)
def test_fields_is_a_valid_closed_2020_12_object_schema(story_id):
    fields = get_story(story_id).fields
    Draft202012Validator.check_schema(fields)
    assert fields["type"] == "object"
    assert fields["additionalProperties"] is False
    assert isinstance(fields["required"], list)
    assert fields["properties"]
    for name, prop in fields["properties"].items():
        assert {"type", "title", "default"} <= set(prop), name
        if prop["type"] == "string" and "enum" not in prop:
            assert "maxLength" in prop, name
        if prop["type"] == "array":
            assert "items" in prop and "maxItems" in prop, name
        if "format" in prop:
            assert prop["format"] in ("uri", "color")


@pytest.mark.parametrize("story_id", IDS)
def test_defaults_are_valid_values(story_id):
    story = get_story(story_id)
    defaults = resolve_fields(story, {})
    assert validate_fields(story, defaults) == []
    assert validate_fields(story, {}) == []


def test_resolve_fields_fills_defaults_and_keeps_given_values():
    story = get_story("tips_list")
    resolved = resolve_fields(story, {"title": "Three things"})
    assert resolved["title"] == "Three things"
    assert resolved["tips"] == story.fields["properties"]["tips"]["default"]
    assert set(resolved) == set(story.fields["properties"])
    resolved["tips"].append("mutating the result leaves the schema alone")
    assert resolve_fields(story, {})["tips"] == story.fields["properties"]["tips"]["default"]


def test_resolve_fields_leaves_out_unknown_keys():
    story = get_story("quote")
    assert "bogus" not in resolve_fields(story, {"bogus": 1})


# --- validation ---------------------------------------------------------------------------


def test_unknown_keys_give_one_detail_each():
    story = get_story("announcement")
    details = validate_fields(story, {"headline": "Hi", "colour": "red", "subtitle": "x"})
    unknown = [d for d in details if d["code"] == "unknown_field"]
    assert sorted(d["field"] for d in unknown) == ["/fields/colour", "/fields/subtitle"]
    assert len(details) == 2


def test_every_problem_is_reported_at_once():
    story = get_story("flash_sale")
    details = validate_fields(story, {
        "headline": 42,                      # wrong type
        "discount": "X" * 13,                # too long
        "theme": "neon",                     # not in enum
        "badge_color": "red",                # not a #RRGGBB colour
        "extra": True,                       # unknown
    })
    found = {(d["field"], d["code"]) for d in details}
    assert found == {
        ("/fields/headline", "invalid_type"),
        ("/fields/discount", "too_long"),
        ("/fields/theme", "invalid_choice"),
        ("/fields/badge_color", "invalid_format"),
        ("/fields/extra", "unknown_field"),
    }
    for detail in details:
        assert set(detail) == {"field", "code", "message"}
        assert detail["message"]


def test_list_items_and_records_are_checked_with_pointers():
    details = validate_fields(get_story("stats_highlight"), {
        "stats": [{"value": "1", "label": "ok"}, {"value": "X" * 11, "label": "ok", "extra": 1}],
    })
    found = {(d["field"], d["code"]) for d in details}
    assert found == {("/fields/stats/1/value", "too_long"), ("/fields/stats/1/extra", "unknown_field")}
    details = validate_fields(get_story("tips_list"), {"tips": ["a"] * 6 + [7]})
    found = {(d["field"], d["code"]) for d in details}
    assert found == {("/fields/tips", "too_many_items"), ("/fields/tips/6", "invalid_type")}


def test_integer_enums_and_empty_required_text():
    details = validate_fields(get_story("testimonial"), {"rating": 7, "quote": "", "name": "Ann"})
    found = {(d["field"], d["code"]) for d in details}
    assert found == {("/fields/rating", "invalid_choice"), ("/fields/quote", "too_short")}


def test_image_fields_take_absolute_uris_or_null():
    story = get_story("product_launch")
    assert validate_fields(story, {"image": "https://example.com/a.png"}) == []
    assert validate_fields(story, {"image": None}) == []
    details = validate_fields(story, {"image": "not a uri"})
    assert [(d["field"], d["code"]) for d in details] == [("/fields/image", "invalid_format")]


def test_fields_must_be_an_object():
    assert validate_fields(get_story("quote"), ["a"]) == [
        {"field": "/fields", "code": "invalid_type", "message": "fields must be an object"}]


# --- building -----------------------------------------------------------------------------


@pytest.mark.parametrize("story_id", IDS)
def test_every_format_and_duration_builds_a_valid_doc(story_id):
    story = get_story(story_id)
    for fmt in FORMATS:
        for duration in (None, 6, 30, 7.3):
            doc = story.build({}, NEUTRAL_BRAND, fmt, duration)
            errors = [e.message for e in DOC_VALIDATOR.iter_errors(doc)]
            assert errors == [], (fmt, duration, errors[:3])
            expected = story.default_duration_sec if duration is None else duration
            lengths = [scene["duration"] for scene in doc["scenes"]]
            assert doc["duration"] == expected
            assert sum(lengths) == doc["duration"]
            assert math.fsum(lengths) == doc["duration"]
            assert sum(reversed(lengths)) == doc["duration"]
            assert (doc["version"], doc["fps"], doc["format"]) == (1, 30, fmt)


@pytest.mark.parametrize("story_id", IDS)
def test_longest_values_build_with_readable_text_everywhere(story_id):
    story = get_story(story_id)
    values = longest_values(story)
    assert validate_fields(story, values) == []
    for fmt in ("16:9", "9:16"):
        doc = story.build(values, OTHER_BRAND, fmt, 6)
        assert list(DOC_VALIDATOR.iter_errors(doc)) == []
        for layer in layers_of(doc):
            for seen in variants(layer):
                if seen["type"] == "text":
                    assert seen["size"] >= 0.03, seen["id"]
                    assert seen.get("min_size", 1) >= 0.03, seen["id"]


@pytest.mark.parametrize("story_id", IDS)
def test_timing_stays_inside_each_scene(story_id):
    doc = get_story(story_id).build({}, NEUTRAL_BRAND, "9:16", 6)
    for scene in doc["scenes"]:
        d = scene["duration"]
        assert scene.get("transition", {}).get("duration", 0) <= d
        for layer in layers_of({"scenes": [scene]}):
            enter = layer.get("enter")
            if enter:
                assert layer.get("start", 0) + enter.get("delay", 0) + enter.get("duration", 0.6) <= d
            for keys in layer.get("keyframes", {}).values():
                assert all(0 <= k["t"] <= d for k in keys)
            assert layer.get("end", d) <= d


@pytest.mark.parametrize("story_id", IDS)
def test_colours_come_from_brand_tokens(story_id):
    doc = get_story(story_id).build({}, NEUTRAL_BRAND, "16:9")
    for layer in layers_of(doc):
        for seen in variants(layer):
            colours = [seen.get("color"), seen.get("fill"), (seen.get("pill") or {}).get("color"),
                       (seen.get("stroke") or {}).get("color")]
            for colour in filter(None, colours):
                assert colour.startswith("$brand."), (seen["id"], colour)
    for scene in doc["scenes"]:
        assert scene["background"]["color"].startswith("$brand.colors.")


def test_the_brand_block_follows_the_tokens_given():
    story = get_story("announcement")
    neutral = story.build({}, NEUTRAL_BRAND, "16:9")
    other = story.build({}, OTHER_BRAND, "16:9")
    assert neutral["brand"]["colors"] == NEUTRAL_BRAND["colors"]
    assert other["brand"]["colors"] == OTHER_BRAND["colors"]
    assert other["brand"]["fonts"] == OTHER_BRAND["fonts"]
    assert other["brand"]["logo"]["url"] == OTHER_BRAND["logo"]["url"]
    # the layers name tokens, so the same layers restyle with the brand
    assert neutral["scenes"][0]["layers"][-1]["color"].startswith("$brand.colors.")


def test_a_logo_becomes_an_image_asset_shown_as_a_layer():
    doc = get_story("hiring").build({}, OTHER_BRAND, "4:5")
    assert doc["assets"]["logo"] == {"type": "image", "url": OTHER_BRAND["logo"]["url"]}
    assert any(layer.get("asset") == "logo" and layer["type"] == "image" for layer in layers_of(doc))


def test_brand_tokens_are_cleaned_for_the_schema():
    tokens = copy.deepcopy(OTHER_BRAND)
    tokens["logo"] = {"width": 10}               # no url: no logo
    tokens["shadow"] = "heavy"                   # not a brand key in the VideoDoc
    tokens["colors"]["primary"] = "blue"         # not a hex colour
    tokens["fonts"]["body"] = {"family": "Comic Sans MS", "weight": 400}  # not shipped
    doc = get_story("quote").build({}, tokens, "1:1")
    assert list(DOC_VALIDATOR.iter_errors(doc)) == []
    assert doc["brand"]["logo"] is None
    assert "logo" not in doc.get("assets", {})
    assert "shadow" not in doc["brand"]
    assert doc["brand"]["colors"]["primary"] == NEUTRAL_BRAND["colors"]["primary"]
    assert doc["brand"]["fonts"]["body"]["family"] == "Inter"


def test_images_become_assets():
    doc = get_story("product_launch").build({"image": "https://cdn.example.com/lamp.jpg"}, NEUTRAL_BRAND, "9:16")
    assert doc["assets"]["image"] == {"type": "image", "url": "https://cdn.example.com/lamp.jpg"}
    image_layers = [layer for layer in layers_of(doc) if layer.get("asset") == "image"]
    assert image_layers and all("ken_burns" in layer for layer in image_layers)


def test_format_overrides_reflow_the_layout():
    doc = get_story("announcement").build({}, NEUTRAL_BRAND, "16:9")
    headline = next(layer for layer in layers_of(doc) if layer["id"] == "intro.headline")
    assert set(headline["formats"]) == {"9:16", "1:1", "4:5"}
    assert headline["formats"]["9:16"]["w"] != headline["w"]


def test_build_rejects_bad_fields_format_and_duration():
    story = get_story("countdown")
    with pytest.raises(InvalidFieldsError) as caught:
        story.build({"count_from": 4, "nope": 1}, NEUTRAL_BRAND, "16:9")
    assert {d["code"] for d in caught.value.details} == {"invalid_choice", "unknown_field"}
    with pytest.raises(InvalidBuildRequestError):
        story.build({}, NEUTRAL_BRAND, "3:2")
    with pytest.raises(InvalidBuildRequestError):
        story.build({}, NEUTRAL_BRAND, "16:9", 5.9)
    with pytest.raises(InvalidBuildRequestError):
        story.build({}, NEUTRAL_BRAND, "16:9", 61)


def test_short_videos_collapse_tips_onto_list_scenes():
    story = get_story("tips_list")
    tips = [f"Tip number {i}" for i in range(5)]
    long_doc = story.build({"tips": tips}, NEUTRAL_BRAND, "9:16", 30)
    short_doc = story.build({"tips": tips}, NEUTRAL_BRAND, "9:16", 6)
    assert len(long_doc["scenes"]) == 7
    assert len(short_doc["scenes"]) < 5
    assert all(scene["duration"] >= 1.5 for scene in short_doc["scenes"])


def test_stories_still_build_from_estimates_without_the_text_engine(monkeypatch):
    from reelfarm.studio.stories import compose

    monkeypatch.setattr(compose, "make_typesetter", lambda fonts: None)
    for story in ALL:
        for fmt in FORMATS:
            doc = story.build(longest_values(story), OTHER_BRAND, fmt, 6)
            assert list(DOC_VALIDATOR.iter_errors(doc)) == []


# --- rendering checks (the renderer's own linter) -----------------------------------------

@pytest.fixture(scope="module")
def lint():
    from reelfarm.renderer.linter import lint

    return lint


@pytest.mark.parametrize("story_id", IDS)
def test_default_docs_lint_clean_in_all_formats(story_id, lint):
    doc = get_story(story_id).build({}, NEUTRAL_BRAND, "9:16")
    report = lint(doc)
    assert [(p.pointer, p.code, p.message) for p in report.errors + report.warnings] == []


@pytest.mark.parametrize("story_id", IDS)
def test_longest_values_lint_clean_in_all_formats(story_id, lint):
    story = get_story(story_id)
    values = longest_values(story)
    values = {k: None if story.fields["properties"][k].get("format") == "uri" else v for k, v in values.items()}
    for theme in ("light", "dark"):
        if "theme" in values:
            values["theme"] = theme
        report = lint(story.build(values, OTHER_BRAND, "16:9"))
        assert [(p.pointer, p.code, p.message) for p in report.errors + report.warnings] == []
