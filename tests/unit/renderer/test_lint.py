from __future__ import annotations

import pytest

from reelfarm.renderer.linter import lint


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


def test_contrast_sees_a_text_under_the_text_and_only_where_it_is_drawn(doc):
    # White text over another text's white pill, on black; then the pill's text moved to the top.
    doc["scenes"][1]["background"] = {"type": "solid", "color": "#000000"}
    doc["scenes"][1]["layers"].insert(0, {"id": "under", "type": "text", "text": "Behind the call to act",
                                          "size": 0.08, "x": 0.5, "y": 0.5, "w": 0.8,
                                          "pill": {"color": "#FFFFFF", "padding": 0.06}})
    doc["scenes"][1]["layers"][1]["color"] = "#FFFFFF"
    assert ("/scenes/1/layers/1/color", "low_contrast") in codes(lint(doc).warnings)
    doc["scenes"][1]["layers"][0].update(y=0.12, size=0.04)
    assert ("/scenes/1/layers/1/color", "low_contrast") not in codes(lint(doc).warnings)


def test_overflow_is_checked_in_every_format(doc):
    layer = doc["scenes"][0]["layers"][0]
    layer.update(text="Supercalifragilisticexpialidocious", w=0.5, h=0.2)
    warnings = [p for p in lint(doc).warnings if p.code == "text_overflow"]
    assert {w.message.rsplit(" ", 1)[-1] for w in warnings} >= {"9:16", "4:5"}


def test_outside_safe_area_warns(doc):
    doc["scenes"][0]["layers"][0].update(x=0.0, anchor="left", align="left")
    assert ("/scenes/0/layers/0", "outside_safe_area") in codes(lint(doc).warnings)


# -- groups: children are checked where the rasterizer draws them -----------------------------

def card(children, **props):
    """A group layer named `card` around `children`, centred by default."""
    return {"id": "card", "type": "group", "x": 0.5, "y": 0.5, "w": 0.6, "h": 0.4, **props, "children": children}


def caption(text="Hello", **props):
    return {"id": "caption", "type": "text", "text": text, "size": 0.06, "w": 0.8, **props}


def test_a_group_whose_children_are_fine_gives_no_warning(doc):
    doc["scenes"][1]["layers"].append(card([caption(), {"id": "image.bar", "type": "shape", "shape": "rect",
                                                       "y": 0.9, "w": 0.5, "h": 0.05, "fill": "#FFFFFF"}]))
    assert lint(doc).warnings == []


def test_overflow_inside_a_group_points_at_the_child(doc):
    doc["scenes"][1]["layers"].append(card([{"id": "dot", "type": "shape", "shape": "ellipse", "w": 0.1, "h": 0.1},
                                            caption("Supercalifragilisticexpialidocious", w=0.5, h=0.3)]))
    overflows = [p for p in lint(doc).warnings if p.code == "text_overflow"]
    assert {p.pointer for p in overflows} == {"/scenes/1/layers/1/children/1/text"}
    assert {p.message.rsplit(" ", 1)[-1] for p in overflows} == {"16:9", "9:16", "1:1", "4:5"}


def test_a_child_leaves_the_safe_area_through_its_groups_offset(doc):
    # x = 0.08 would be inside the 0.05 margin in frame terms; in the group's box it lands at 0.04.
    child = caption("Hi", x=0.08, anchor="left", align="left", w=0.5)
    doc["scenes"][1]["layers"].append(card([child], x=0.0, y=0.0, w=0.5, h=0.5, anchor="top-left"))
    found = codes(lint(doc).warnings)
    assert found == {("/scenes/1/layers/1/children/0", "outside_safe_area")}
    doc["scenes"][1]["layers"][1]["children"][0]["x"] = 0.2
    assert lint(doc).warnings == []


def test_a_groups_scale_pushes_its_children_out(doc):
    # The text ends at 0.2 + 0.9 * 0.6 = 0.74 of the frame; twice that far from the centre is 0.98.
    child = caption("Hi", x=0.9, anchor="right", align="right", w=0.4)
    doc["scenes"][1]["layers"].append(card([child]))
    assert lint(doc).warnings == []
    doc["scenes"][1]["layers"][1]["scale"] = 2.0
    assert ("/scenes/1/layers/1/children/0", "outside_safe_area") in codes(lint(doc).warnings)


def test_nested_groups_compose_their_boxes_and_pointers(doc):
    inner = {"id": "inner", "type": "group", "x": 0.1, "y": 0.5, "w": 0.5, "h": 1.0, "anchor": "left",
             "children": [{"id": "pad", "type": "shape", "shape": "rect", "w": 1, "h": 1, "fill": "#000000"},
                          caption("Hi", x=0.1, anchor="left", align="left", w=0.6)]}
    doc["scenes"][1]["layers"].append(card([inner], x=0.0, w=0.5, anchor="left"))
    # Frame x of the text's left edge: 0.5 * (0.1 + 0.5 * 0.1) = 0.075, inside the margin.
    assert lint(doc).warnings == []
    inner["x"] = 0.0  # now 0.5 * (0.0 + 0.5 * 0.1) = 0.025
    assert codes(lint(doc).warnings) == {("/scenes/1/layers/1/children/0/children/1", "outside_safe_area")}
    inner["children"][1].update(text="Supercalifragilisticexpialidocious", w=0.3, h=0.1)
    assert ("/scenes/1/layers/1/children/0/children/1/text", "text_overflow") in codes(lint(doc).warnings)


def test_contrast_of_a_child_sees_its_earlier_siblings(doc):
    # White text on a white panel inside the group, the scene behind it being dark blue.
    panel = {"id": "panel", "type": "shape", "shape": "rect", "w": 1, "h": 1, "fill": "#FAFAFA"}
    doc["scenes"][1]["layers"].append(card([panel, caption(color="#FFFFFF")]))
    assert codes(lint(doc).warnings) == {("/scenes/1/layers/1/children/1/color", "low_contrast")}
    # The panel drawn above the text is not behind it.
    doc["scenes"][1]["layers"][1]["children"].reverse()
    assert ("/scenes/1/layers/1/children/0/color", "low_contrast") not in codes(lint(doc).warnings)


def test_a_groups_scale_makes_its_text_small(doc):
    doc["scenes"][1]["layers"].append(card([caption(size=0.04)]))  # 43 px at 1080p
    assert lint(doc).warnings == []
    doc["scenes"][1]["layers"][1]["scale"] = 0.5
    assert ("/scenes/1/layers/1/children/0/size", "text_too_small") in codes(lint(doc).warnings)


def test_contrast_inside_a_nested_group_with_format_overrides(doc):
    # The inner group is overridden in every format; its backdrop must still stop before the text.
    overrides = {fmt: {"y": 0.5} for fmt in ("16:9", "9:16", "1:1", "4:5")}
    inner = {"id": "inner", "type": "group", "w": 1, "h": 1, "formats": overrides, "children": [caption()]}
    doc["scenes"][1]["layers"].append(card([inner]))
    assert lint(doc).warnings == []
    inner["children"].insert(0, {"id": "panel", "type": "shape", "shape": "rect", "w": 1, "h": 1, "fill": "#FAFAFA"})
    assert {p.pointer for p in lint(doc).warnings} == {"/scenes/1/layers/1/children/0/children/1/color"}


@pytest.mark.parametrize("kind", ["linear", "radial"])
def test_a_gradient_background_without_colours_is_a_schema_error(doc, kind):
    doc["scenes"][0]["background"] = {"type": kind, "angle": 45}
    report = lint(doc)
    assert [(p.pointer, "colors" in p.message) for p in report.errors] == [("/scenes/0/background", True)]


# -- backdrops kept between lints (renderer.linter._backdrops) ------------------------------------

@pytest.fixture
def no_kept_backdrops():
    from reelfarm.renderer import linter

    kept = (linter._backdrops, linter._ratios, linter._SEEN_TEXT_BACKDROPS)
    for cache in kept:
        cache.clear()
    yield linter._backdrops
    for cache in kept:
        cache.clear()


def test_a_kept_backdrop_gives_the_warnings_a_fresh_one_does(doc, no_kept_backdrops):
    doc["scenes"][0]["layers"][0]["color"] = "#1E3A8A"  # low contrast over the dark gradient
    fresh = lint(doc).warnings
    assert len(no_kept_backdrops) > 0
    assert lint(doc).warnings == fresh
    doc["scenes"][0]["layers"][0]["text"] = "Another headline of another length"
    assert ("/scenes/0/layers/0/color", "low_contrast") in codes(lint(doc).warnings)


def test_a_kept_backdrop_is_not_used_for_another_brand(doc, no_kept_backdrops):
    doc["scenes"][1]["layers"][0]["color"] = "#FFFFFF"
    doc["brand"]["colors"]["primary"] = "#F8FAFC"  # scene 1's background: white text on near white
    assert ("/scenes/1/layers/0/color", "low_contrast") in codes(lint(doc).warnings)
    doc["brand"]["colors"]["primary"] = "#111827"
    assert ("/scenes/1/layers/0/color", "low_contrast") not in codes(lint(doc).warnings)


def test_a_kept_backdrop_is_not_used_when_only_a_group_childs_format_variant_differs(doc, no_kept_backdrops):
    # A panel inside a group, under the text drawn after the group: dark everywhere, except in 9:16
    # where the second document's panel is near white. Layers leave their variants out of `==`.
    doc["scenes"][1]["background"] = {"type": "solid", "color": "#000000"}
    panel = {"id": "panel", "type": "shape", "shape": "rect", "w": 1, "h": 1, "fill": "#0A0A0A"}
    doc["scenes"][1]["layers"].insert(0, card([panel], w=1, h=1))
    doc["scenes"][1]["layers"][1]["color"] = "#FFFFFF"
    assert ("/scenes/1/layers/1/color", "low_contrast") not in codes(lint(doc).warnings)
    panel["formats"] = {"9:16": {"fill": "#FAFAFA"}}
    warned = {p.message.split(" in ")[-1].split(" (")[0] for p in lint(doc).warnings
              if (p.pointer, p.code) == ("/scenes/1/layers/1/color", "low_contrast")}
    assert warned == {"9:16"}
