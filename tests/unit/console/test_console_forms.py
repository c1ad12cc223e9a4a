"""The story-field form generator: every field type of the built-in stories, and the round trip."""
from __future__ import annotations

import pytest

from reelfarm.console import forms
from reelfarm.studio.stories import list_stories
from reelfarm.studio.stories.base import resolve_fields, validate_fields

STORIES = list_stories()


def _prop(story_id: str, name: str) -> dict:
    return next(s for s in STORIES if s.id == story_id).fields["properties"][name]


def _one(schema_props: dict, values: dict | None = None) -> forms.Control:
    (control,) = forms.controls({"type": "object", "properties": schema_props}, values)
    return control


def test_every_field_of_every_builtin_story_gets_a_control_of_a_known_kind():
    kinds = set()
    for story in STORIES:
        made = forms.controls(story.fields)
        assert [c.name for c in made] == [forms.PREFIX + n for n in story.fields["properties"]]
        for control in made:
            assert control.label and control.kind in {"text", "textarea", "url", "color", "number", "integer",
                                                      "select", "checkbox", "list", "rows", "video"}
            kinds.add(control.kind)
    # What the built-in stories use today: text, long text, image URLs, colours, choices, lists, rows, clips.
    assert {"text", "textarea", "url", "color", "select", "list", "rows", "video"} <= kinds


@pytest.mark.parametrize("story", STORIES, ids=[s.id for s in STORIES])
def test_defaults_round_trip_through_the_form_and_validate(story):
    defaults = resolve_fields(story, {})
    posted = forms.submitted(forms.controls(story.fields, defaults))
    parsed = forms.parse(story.fields, posted)
    assert parsed == defaults
    assert validate_fields(story, parsed) == []


def test_short_string_is_a_text_input_with_its_length_limits():
    control = _one({"headline": _prop("announcement", "headline")})
    assert (control.kind, control.label, control.value) == ("text", "Headline", "We're opening our second studio")
    assert control.attrs == {"data-maxlength": 60, "minlength": 1}  # not maxlength: a browser would cut
    assert control.id == "fld-headline" and control.name == "f.headline"


def test_long_string_is_a_textarea():
    control = _one({"body": _prop("announcement", "body")})
    assert control.kind == "textarea" and control.attrs["data-maxlength"] == 160


def test_image_url_is_a_nullable_url_input_and_empty_means_null():
    prop = _prop("announcement", "image")
    control = _one({"image": prop})
    assert (control.kind, control.nullable, control.value, control.required) == ("url", True, "", False)
    assert control.attrs["data-maxlength"] == 2048
    schema = {"properties": {"image": prop}}
    assert forms.parse(schema, {"f.image": ""}) == {"image": None}
    assert forms.parse(schema, {"f.image": " https://example.com/a.png "}) == {"image": "https://example.com/a.png"}


def test_colour_is_a_hex_input_and_empty_means_the_brand_colour():
    prop = _prop("flash_sale", "badge_color")
    control = _one({"badge_color": prop}, {"badge_color": "#FF0044"})
    assert (control.kind, control.value, control.nullable) == ("color", "#FF0044", True)
    assert control.attrs["pattern"] == "#[0-9A-Fa-f]{6}"
    schema = {"properties": {"badge_color": prop}}
    assert forms.parse(schema, {"f.badge_color": ""}) == {"badge_color": None}
    assert forms.parse(schema, {"f.badge_color": "#00aa00"}) == {"badge_color": "#00aa00"}


def test_string_enum_is_a_select_with_its_options():
    prop = _prop("announcement", "theme")
    control = _one({"theme": prop})
    assert control.kind == "select" and control.options == (("light", "light"), ("dark", "dark"))
    assert control.value == "light" and control.help.startswith("light:")
    assert forms.parse({"properties": {"theme": prop}}, {"f.theme": "dark"}) == {"theme": "dark"}
    with pytest.raises(forms.FormProblem) as refused:
        forms.parse({"properties": {"theme": prop}}, {"f.theme": "neon"})
    assert refused.value.problems == {"f.theme": "Theme: choose one of light, dark"}


def test_integer_enum_reads_back_as_an_integer():
    prop = _prop("countdown", "count_from")
    control = _one({"count_from": prop})
    assert control.kind == "select" and control.options == (("3", "3"), ("5", "5")) and control.value == "3"
    assert forms.parse({"properties": {"count_from": prop}}, {"f.count_from": "5"}) == {"count_from": 5}


def test_list_of_strings_offers_max_items_slots_and_drops_empty_ones():
    prop = _prop("tips_list", "tips")
    control = _one({"tips": prop}, {"tips": ["one", "two"]})
    assert control.kind == "list" and len(control.items) == prop["maxItems"] == 5
    assert [slot[0].name for slot in control.items] == [f"f.tips.{i}" for i in range(5)]
    assert [slot[0].value for slot in control.items] == ["one", "two", "", "", ""]
    assert control.items[0][0].label == "Tip 1"
    posted = {"f.tips.0": "one", "f.tips.1": "", "f.tips.2": "three", "f.tips.3": " ", "f.tips.4": ""}
    assert forms.parse({"properties": {"tips": prop}}, posted) == {"tips": ["one", "three"]}


def test_list_of_objects_is_rows_of_controls():
    prop = _prop("stats_highlight", "stats")
    control = _one({"stats": prop}, {"stats": [{"value": "2.4M", "label": "orders"}]})
    assert control.kind == "rows" and len(control.items) == 3
    first = control.items[0]
    assert [(c.name, c.value, c.label) for c in first] == [
        ("f.stats.0.value", "2.4M", "Value 1"), ("f.stats.0.label", "orders", "Label 1")]
    assert all(c.value == "" for c in control.items[2])
    posted = {"f.stats.0.value": "2.4M", "f.stats.0.label": "orders", "f.stats.1.value": "",
              "f.stats.1.label": "", "f.stats.2.value": "98%", "f.stats.2.label": "on time"}
    assert forms.parse({"properties": {"stats": prop}}, posted) == {
        "stats": [{"value": "2.4M", "label": "orders"}, {"value": "98%", "label": "on time"}]}


def test_numbers_and_booleans_for_schemas_beyond_the_builtin_stories():
    schema = {"properties": {"speed": {"type": "number", "title": "Speed", "minimum": 0.5, "maximum": 2},
                             "count": {"type": "integer", "title": "Count", "default": 2},
                             "loop": {"type": "boolean", "title": "Loop", "default": True}}}
    speed, count, loop = forms.controls(schema)
    assert (speed.kind, speed.attrs) == ("number", {"min": 0.5, "max": 2, "step": "any"})
    assert (count.kind, count.value, count.attrs["step"]) == ("integer", 2, 1)
    assert (loop.kind, loop.value) == ("checkbox", True)
    assert forms.parse(schema, {"f.speed": "1.25", "f.count": "4"}) == {"speed": 1.25, "count": 4, "loop": False}
    with pytest.raises(forms.FormProblem) as refused:
        forms.parse(schema, {"f.speed": "fast", "f.count": "2.5", "f.loop": "on"})
    assert refused.value.problems == {"f.speed": "Speed: 'fast' is not a number",
                                      "f.count": "Count: '2.5' is not a whole number"}
    values, problems = forms.read(schema, {"f.speed": "fast", "f.count": "3"})  # the rest is still read
    assert values == {"count": 3, "loop": False} and list(problems) == ["f.speed"]


def test_story_validation_details_map_to_form_names():
    details = [{"field": "/fields/headline", "code": "too_long", "message": "too long"},
               {"field": "/fields/stats/1/value", "code": "required", "message": "missing"},
               {"field": "/fields", "code": "x", "message": "bad"}]
    assert forms.problem_names(details) == {"f.headline": "too long", "f.stats.1.value": "missing", "form": "bad"}
