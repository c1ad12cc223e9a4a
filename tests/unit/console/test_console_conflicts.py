"""The comparison of two saves of one video's fields (``reelfarm.console.conflicts``): which save
changed each field, what a merge applies, and values in words."""
from __future__ import annotations

from reelfarm.console.conflicts import compare, decode, encode, merged, shown

SCHEMA = {"properties": {"headline": {"type": "string", "title": "Headline"},
                         "price": {"type": "string", "title": "Price"},
                         "stats": {"type": "array", "title": "Stats"},
                         "theme": {"type": "string", "title": "Theme"}}}
OPENED = {"headline": "Old", "price": "$10", "stats": ["a"], "theme": "light"}


def test_each_field_says_which_save_changed_it_and_a_merge_takes_only_this_persons():
    yours = {**OPENED, "price": "$12", "stats": ["a", "b"]}
    now = {**OPENED, "headline": "New", "stats": ["c"]}
    changes = {c.name: (c.label, c.mine, c.other, c.clash) for c in compare(SCHEMA, OPENED, yours, now)}
    assert changes == {"headline": ("Headline", False, True, False), "price": ("Price", True, False, False),
                       "stats": ("Stats", True, True, True)}
    assert merged(OPENED, yours) == {"price": "$12", "stats": ["a", "b"]}
    assert {**now, **merged(OPENED, yours)} == {"headline": "New", "price": "$12", "stats": ["a", "b"], "theme": "light"}


def test_the_same_change_on_both_sides_is_no_clash_and_nothing_changed_lists_nothing():
    same = {**OPENED, "price": "$12"}
    [change] = compare(SCHEMA, OPENED, same, same)
    assert (change.name, change.mine, change.other, change.clash) == ("price", True, True, False)
    assert compare(SCHEMA, OPENED, OPENED, OPENED) == [] and merged(OPENED, OPENED) == {}


def test_values_are_said_in_words_and_carried_whole():
    assert [shown(v) for v in (None, "", [], True, 2.5, ["a", "b"], {"asset_id": "x", "volume": None})] == \
        ["—", "—", "—", "yes", "2.5", "a; b", "asset_id: x"]
    assert shown("x" * 500).endswith("…") and len(shown("x" * 500)) == 160
    assert decode(encode({"headline": "Ünïcode", "stats": [1]})) == {"headline": "Ünïcode", "stats": [1]}
    assert decode("[1]") is None and decode("{") is None
