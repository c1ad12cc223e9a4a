"""The story's validation problems in a person's words, each keyed by the form control it belongs to."""
from __future__ import annotations

from reelfarm.console import forms, problems
from reelfarm.studio.stories import get_story
from reelfarm.studio.stories.base import request_problems


def _explain(story_id: str, fields: dict, fmt: str = "9:16", duration: float | None = None, typed: str = "") -> dict:
    story = get_story(story_id)
    details = request_problems(story, fields, fmt, duration)
    return problems.explain(story.fields, fields, details, {"duration_typed": typed})


def test_every_problem_at_once_each_beside_its_field():
    found = _explain("flash_sale", {"badge_color": "red-ish", "headline": "x" * 200, "discount": ""}, duration=99)
    assert found == {
        "f.badge_color": "Badge colour: 'red-ish' is not a colour; use #RRGGBB, or leave it empty for the brand colour",
        "f.discount": "Discount: fill this in",
        "f.headline": f"Headline: at most {get_story('flash_sale').fields['properties']['headline']['maxLength']} "
                      "characters (this has 200)",
        "video.duration_sec": "Duration: use 6 to 60 seconds",
    }
    assert not any("'color'" in m or "is not a" == m[:8] for m in found.values())


def test_list_items_are_named_as_the_form_labels_them():
    story = get_story("stats_highlight")
    fields = {"stats": [{"value": "1", "label": "a"}, {"value": "", "label": "b"}]}
    found = problems.explain(story.fields, fields, request_problems(story, fields, "9:16", None))
    assert found["f.stats.1.value"] == "Value 2: fill this in"
    assert forms.label_at(story.fields, ["stats", "1", "value"]) == "Value 2"
    assert forms.label_at(get_story("tips_list").fields, ["tips", "0"]) == "Tip 1"


def test_a_duration_that_is_not_a_number_is_quoted_back():
    assert _explain("quote", {}, duration=-1.0, typed="abc") == {
        "video.duration_sec": "Duration: 'abc' is not a number; use 6 to 60 seconds"}


def test_unreadable_fields_come_first_and_are_not_reported_again_as_missing():
    story = get_story("countdown")
    values, unreadable = forms.read(story.fields, {"f.count_from": "seven", "f.theme": "dark", "f.headline": ""})
    details = request_problems(story, values, "9:16", None)
    assert "count_from" not in values
    found = problems.explain(story.fields, values, details, unreadable=unreadable)
    assert found["f.count_from"] == "Count from: choose one of 3, 5"


def test_an_unknown_code_keeps_the_studios_message():
    story = get_story("quote")
    assert problems.explain(story.fields, {}, [{"field": "/fields/quote", "code": "odd", "message": "is odd"}]) == {
        "f.quote": f"{story.fields['properties']['quote']['title']}: is odd"}
