"""A story's samples: the text fields whose defaults are example content, and which of them a set of
values leaves unchanged (the version's ``sample_value`` warnings); the console's form marks them and
reads the soundtrack's fit."""
from __future__ import annotations

from reelfarm.console import forms
from reelfarm.studio.stories import get_story, list_stories
from reelfarm.studio.stories.samples import sample_warnings, samples, unchanged_samples


def test_text_defaults_are_samples_and_settings_are_not() -> None:
    webinar = get_story("webinar").fields
    found = samples(webinar)
    assert found["speaker"] == "Maya Okafor" and found["url"] == "example.com/webinar"
    assert "theme" not in found and "photo" not in found  # a choice, an image: settings
    product = samples(get_story("product_launch").fields)
    assert product["product"] == "Aurora Lamp" and product["price"] == "$129"
    assert isinstance(product["features"], list) and "clip" not in product
    assert "url" not in samples(get_story("milestone").fields)  # an empty default is no sample
    for story in list_stories():  # every story has some, and none is a choice
        assert samples(story.fields) and all("enum" not in story.fields["properties"][n] for n in samples(story.fields))


def test_unchanged_samples_are_warned_about_in_order() -> None:
    schema = get_story("webinar").fields
    values = {**{n: p["default"] for n, p in schema["properties"].items()}, "speaker": "Ada Moreau"}
    left = unchanged_samples(schema, values)
    assert "speaker" not in left and left[:2] == ["kicker", "title"]
    warnings = sample_warnings(schema, values)
    assert [w["field"] for w in warnings] == [f"/fields/{n}" for n in left]
    assert {w["code"] for w in warnings} == {"sample_value"}
    assert unchanged_samples(schema, {}) == list(samples(schema))  # left out: built from the sample
    stats = get_story("stats_highlight").fields
    [row_warning] = [w for w in sample_warnings(stats, {}) if w["field"] == "/fields/stats"]
    assert row_warning["message"] == ('Stats still holds the story\'s sample (3 items, the first "2.4M"); '
                                      "change it, or clear it if it may be empty")


def test_the_form_marks_fields_still_holding_samples() -> None:
    schema = get_story("webinar").fields
    controls = {c.name: c for c in forms.controls(schema, {"speaker": "Ada Moreau"})}
    assert controls["f.speaker"].sample == "Maya Okafor" and not controls["f.speaker"].unchanged
    assert controls["f.title"].unchanged and controls["f.theme"].sample is None
    assert [c.name for c in forms.unchanged(list(controls.values()))][:2] == ["f.kicker", "f.title"]
    tips = {c.name: c for c in forms.controls(get_story("tips_list").fields)}["f.tips"]
    assert tips.unchanged and tips.sample_texts == tips.sample


def test_the_form_reads_the_soundtracks_fit() -> None:
    values, typed = {"soundtrack": {"asset_id": "a"}}, {}
    assert forms.read_fit({"soundtrack.fit": "once"}, values, typed) == {}
    assert values["soundtrack"] == {"asset_id": "a", "fit": "once"} and typed["fit"] == "once"
    assert forms.read_fit({"soundtrack.fit": "twice"}, values, {}) == {
        "soundtrack.fit": "When the sound is shorter: choose loop or once"}
    plain: dict = {"soundtrack": {"asset_id": "a"}}
    assert forms.read_fit({}, plain, {}) == {} and plain == {"soundtrack": {"asset_id": "a"}}  # the default: loop
    assert forms.DEFAULT_FIT == "loop"
