from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from reelfarm.renderer.easing import EASINGS, ease
from reelfarm.renderer.errors import DocInvalid
from reelfarm.renderer.model import doc_schema, parse_doc
from reelfarm.renderer.spec import frame_size
from reelfarm.renderer.timeline import Timeline, layer_state, value_at


def test_schema_is_valid_2020_12():
    jsonschema.Draft202012Validator.check_schema(doc_schema())
    assert doc_schema()["$schema"].endswith("2020-12/schema")


def test_parse_builds_immutable_objects(doc):
    parsed = parse_doc(doc)
    assert parsed.fps == 30 and len(parsed.scenes) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.fps = 60  # type: ignore[misc]
    assert parsed.scenes[0].layers[1].track("x")[1].v == 0.7


def test_parse_lists_every_schema_problem(doc):
    doc["fps"] = 25
    doc["scenes"][0]["layers"][0]["bogus"] = 1
    doc["scenes"][1]["layers"][0]["formats"] = {"9:16": {"nope": 1}}
    with pytest.raises(DocInvalid) as info:
        parse_doc(doc)
    pointers = {p.pointer for p in info.value.problems}
    assert pointers == {"/fps", "/scenes/0/layers/0", "/scenes/1/layers/0/formats/9:16"}


def test_format_overrides_apply_only_to_their_format(doc):
    doc["scenes"][0]["layers"][0]["formats"] = {"9:16": {"y": 0.3, "size": 0.07}}
    layer = parse_doc(doc).scenes[0].layers[0]
    assert (layer.for_format("9:16").y, layer.for_format("9:16").size) == (0.3, 0.07)
    assert (layer.for_format("16:9").y, layer.for_format("1:1").size) == (0.4, 0.09)


@pytest.mark.parametrize("fmt,res,size", [
    ("16:9", 1080, (1920, 1080)), ("9:16", 1080, (1080, 1920)), ("1:1", 1080, (1080, 1080)),
    ("4:5", 1080, (1080, 1350)), ("16:9", 2160, (3840, 2160)), ("16:9", 720, (1280, 720)),
    ("4:5", 720, (720, 900)), ("9:16", 2160, (2160, 3840)),
])
def test_frame_sizes(fmt, res, size):
    assert frame_size(fmt, res) == size


@pytest.mark.parametrize("name", sorted(EASINGS))
def test_easings_start_at_zero_and_end_at_one(name):
    assert ease(name, 0.0) == pytest.approx(0.0, abs=1e-6)
    assert ease(name, 1.0) == pytest.approx(1.0, abs=1e-6)


def test_back_and_spring_overshoot():
    assert max(ease("out-back", p / 100) for p in range(101)) > 1.0
    assert max(ease("spring", p / 100) for p in range(101)) > 1.0


def test_keyframes_hold_outside_and_ease_between(doc):
    keys = parse_doc(doc).scenes[0].layers[1].track("x")
    assert value_at(keys, -1, 0) == 0.3 and value_at(keys, 9, 0) == 0.7
    mid = value_at(keys, 1.25, 0)
    assert mid == pytest.approx(0.5, abs=1e-9)  # in-out-cubic is symmetric


def test_timeline_locates_scenes_by_time(doc):
    tl = Timeline(parse_doc(doc))
    assert tl.locate(0.0) == (0, 0.0)
    assert tl.locate(2.999)[0] == 0
    index, local = tl.locate(3.0)
    assert index == 1 and local == pytest.approx(0.0)
    assert tl.transition_progress(1, 0.25) is not None
    assert tl.transition_progress(1, 0.6) is None


def test_enter_slide_moves_into_place(doc):
    layer = parse_doc(doc).scenes[0].layers[0]
    early, settled = layer_state(layer, 0.1, 3.0), layer_state(layer, 1.0, 3.0)
    assert early.dy > 0 and early.opacity < 1
    assert settled.dy == 0 and settled.opacity == 1


def test_layer_invisible_outside_its_life(doc):
    doc["scenes"][0]["layers"][0].update(start=1.0, end=2.0)
    layer = parse_doc(doc).scenes[0].layers[0]
    assert layer_state(layer, 0.5, 3.0) is None
    assert layer_state(layer, 2.0, 3.0) is None
    assert layer_state(layer, 1.9, 3.0) is not None


def test_doc_round_trips_as_json(doc):
    assert parse_doc(json.loads(json.dumps(doc))) == parse_doc(doc)
