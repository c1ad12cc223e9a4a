"""The Versions table's account of what each version changed (``reelfarm.console.history``)."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from reelfarm.console.history import Change, changes
from reelfarm.studio.stories import get_story

STORY = get_story("announcement")


@dataclass(frozen=True)
class V:
    number: int
    source: str
    doc: dict[str, Any]
    fields: dict[str, Any] | None


def _doc(**values: Any) -> dict[str, Any]:
    return STORY.build(dict(values), {}, "9:16", 6)


def test_a_fields_edit_names_each_changed_field_with_its_old_and_new_value_clipped():
    long = "A headline long enough that the table would be wider than a phone if it were shown whole"
    one = V(1, "story", _doc(), {"headline": "Hello", "theme": "light"})
    two = V(2, "fields", _doc(), {"headline": long, "theme": "dark", "cta": "Come by"})
    found = changes(STORY.fields, [two, one])
    assert found[1] == [Change("Made from the story")]
    headline, cta, theme = found[2]
    assert (headline.label, headline.before) == ("Headline", "Hello")
    assert headline.after is not None and len(headline.after) == 40 and headline.after.endswith("…")
    assert cta.before == "—" and cta.after == "Come by"
    assert (theme.label, theme.before, theme.after) == ("Theme", "light", "dark")


def test_a_document_edit_says_which_scenes_and_layers_changed():
    one = V(1, "story", _doc(), {})
    doc = copy.deepcopy(one.doc)
    doc["scenes"][1]["layers"][-1]["text"] = "Brand new words"
    doc["scenes"][0]["layers"][0]["x"] = 0.1
    doc["scenes"][2]["layers"].pop()
    doc["duration"] = 7.0
    two = V(2, "doc", doc, None)
    three = V(3, "restore", one.doc, {})
    found = changes(STORY.fields, [one, two, three])
    labels = [c.label for c in found[2]]
    assert labels[0] == "Duration" and (found[2][0].before, found[2][0].after) == ("6", "7")
    assert "Scene 1: orb a changed" in labels
    assert Change("Scene 2 text", "Same team, same coffee, now in the hear…", "Brand new words") in found[2]
    assert "Scene 3: url (removed) changed" in labels
    assert [c.label for c in found[3]][:1] == ["Duration"]  # after a document edit: document to document


def test_a_version_that_changed_nothing_says_so_and_a_long_list_is_cut():
    one = V(1, "story", _doc(), {"headline": "a"})
    same = V(2, "fields", _doc(), {"headline": "a"})
    many = {name: f"value {name}" for name in "abcdefghij"}
    three = V(3, "fields", _doc(), many)
    found = changes(None, [one, same, three])
    assert found[2] == [Change("Nothing changed")]
    assert len(found[3]) == 6 and found[3][-1].label == "and 6 more changes"
