from __future__ import annotations

import pytest

from renderer import lint


def codes(items):
    return {(p.pointer, p.code) for p in items}


def test_clean_doc_has_no_errors(doc):
    report = lint(doc)
    assert report.ok, report.errors


def test_schema_violations_are_errors_with_pointers(doc):
    doc["scenes"][0]["layers"][0]["size"] = "big"
    report = lint(doc)
    assert ("/scenes/0/layers/0/size", "schema") in codes(report.errors)


def test_unknown_references_are_errors(doc):
    doc["scenes"][0]["layers"][0]["color"] = "$brand.colors.nope"
    doc["scenes"][0]["layers"][0]["font"] = {"family": "Comic Sans MS", "weight": 400}
    doc["scenes"][1]["layers"].append({"id": "pic", "type": "image", "asset": "missing", "w": 0.2, "h": 0.2})
    doc["audio"] = [{"asset": "song"}]
    found = codes(lint(doc).errors)
    assert ("/scenes/0/layers/0/color", "unknown_token") in found
    assert ("/scenes/0/layers/0/font/family", "unknown_font") in found
    assert ("/scenes/1/layers/1/asset", "unknown_asset") in found
    assert ("/audio/0/asset", "unknown_asset") in found


def test_logo_token_needs_a_brand_logo(doc):
    doc["scenes"][1]["layers"].append({"id": "logo", "type": "image", "asset": "$brand.logo", "w": 0.2, "h": 0.2})
    assert ("/scenes/1/layers/1/asset", "unknown_asset") in codes(lint(doc).errors)
    doc["brand"]["logo"] = {"url": "file:///logo.png"}
    assert lint(doc, check_layout=False).ok


def test_timing_outside_the_scene(doc):
    doc["scenes"][0]["layers"][1]["keyframes"]["x"].append({"t": 3.5, "v": 0.1})
    doc["scenes"][0]["layers"][0]["start"] = 4
    found = codes(lint(doc).errors)
    assert ("/scenes/0/layers/1/keyframes/x/2/t", "keyframe_outside_scene") in found
    assert ("/scenes/0/layers/0/start", "timing_outside_scene") in found


def test_duplicate_ids(doc):
    doc["scenes"][1]["id"] = "one"
    doc["scenes"][1]["layers"][0]["id"] = "title"
    found = codes(lint(doc).errors)
    assert ("/scenes/1/id", "duplicate_id") in found
    assert ("/scenes/1/layers/0/id", "duplicate_id") in found


@pytest.mark.parametrize("total", [5, 601])
def test_duration_bounds_are_in_the_schema(doc, total):
    doc["duration"] = total
    doc["scenes"][0]["duration"] = total - 3
    assert ("/duration", "schema") in codes(lint(doc).errors)


def test_duration_must_match_scenes(doc):
    doc["duration"] = 7
    assert ("/duration", "duration_mismatch") in codes(lint(doc).errors)


def test_small_text_warns(doc):
    doc["scenes"][0]["layers"][0]["size"] = 0.015  # 16 px at 1080p
    assert ("/scenes/0/layers/0/size", "text_too_small") in codes(lint(doc).warnings)


def test_low_contrast_against_what_is_behind(doc):
    # Dark blue text on the dark gradient: hard to read, though the colours differ.
    doc["scenes"][0]["layers"][0]["color"] = "#1E3A8A"
    assert ("/scenes/0/layers/0/color", "low_contrast") in codes(lint(doc).warnings)
    # The same colour on a white pill is fine.
    doc["scenes"][0]["layers"][0]["pill"] = {"color": "#FFFFFF"}
    assert ("/scenes/0/layers/0/color", "low_contrast") not in codes(lint(doc).warnings)


def test_contrast_sees_shapes_under_the_text(doc):
    # White text over a white panel drawn beneath it, on a dark background.
    doc["scenes"][1]["background"] = {"type": "solid", "color": "#000000"}
    doc["scenes"][1]["layers"].insert(0, {"id": "panel", "type": "shape", "shape": "rect", "x": 0.5, "y": 0.5,
                                          "w": 1, "h": 0.4, "fill": "#FAFAFA"})
    doc["scenes"][1]["layers"][1]["color"] = "#FFFFFF"
    assert ("/scenes/1/layers/1/color", "low_contrast") in codes(lint(doc).warnings)


def test_overflow_is_checked_in_every_format(doc):
    layer = doc["scenes"][0]["layers"][0]
    layer.update(text="Supercalifragilisticexpialidocious", w=0.5, h=0.2)
    warnings = [p for p in lint(doc).warnings if p.code == "text_overflow"]
    assert {w.message.rsplit(" ", 1)[-1] for w in warnings} >= {"9:16", "4:5"}


def test_outside_safe_area_warns(doc):
    doc["scenes"][0]["layers"][0].update(x=0.0, anchor="left", align="left")
    assert ("/scenes/0/layers/0", "outside_safe_area") in codes(lint(doc).warnings)
