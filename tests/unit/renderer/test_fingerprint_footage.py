"""Segment fingerprints of video clips: a clip's bytes (its content digest), its key, and how its
layer or background plays it (trim, speed, loop) belong to exactly the chunks that show it; a
change anywhere else leaves those chunks' fingerprints as they were."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reelfarm.renderer.chunks import scene_chunks
from reelfarm.renderer.fingerprint import segment_fingerprint
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.spec import RenderSpec
from tests.conftest import BASE_DOC

FPS = 24
SPEC = RenderSpec("1:1", 64, FPS)
DIGESTS = {"clip": "a" * 64, "back": "b" * 64}


def with_clips() -> dict[str, Any]:
    """The 6 s test document: scene one shows clip "clip" as a layer; scene two plays "back" as its
    background."""
    doc = {**copy.deepcopy(BASE_DOC), "format": "1:1"}
    doc["assets"] = {"clip": {"type": "video", "key": "media/clip.mp4"},
                     "back": {"type": "video", "key": "media/back.mp4"}}
    doc["scenes"][0]["layers"].append({"id": "v", "type": "video", "asset": "clip", "x": 0.5, "y": 0.5,
                                       "w": 1, "h": 1, "trim_start": 0.3})
    doc["scenes"][1]["background"] = {"type": "video", "asset": "back", "trim_start": 1.0}
    return doc


def prints(doc: dict[str, Any], digests: dict[str, str] = DIGESTS) -> list[str | None]:
    parsed = parse_doc(doc)
    return [segment_fingerprint(parsed, SPEC, frames, "x264", digests.get)
            for frames in scene_chunks(parsed, FPS)]


def changed(edit: Callable[[dict[str, Any]], None]) -> list[bool]:
    """Which chunks' fingerprints differ from the unedited document's after ``edit``."""
    doc = with_clips()
    edit(doc)
    return [a != b for a, b in zip(prints(with_clips()), prints(doc), strict=True)]


SCENE_ONE = [True, True, True, False]  # scene one's two chunks, and the crossfade that blends from it
SCENE_TWO = [False, False, True, True]


def test_the_chunks_are_scene_ones_the_crossfade_and_scene_twos() -> None:
    assert scene_chunks(parse_doc(with_clips()), FPS) == [(0, 24), (24, 72), (72, 84), (84, 144)]


@pytest.mark.parametrize(("field", "value"), [("trim_start", 0.6), ("trim_end", 2.0), ("speed", 2), ("loop", True)])
def test_how_a_layer_plays_its_clip_belongs_to_the_chunks_that_show_it(field: str, value: Any) -> None:
    assert changed(lambda doc: doc["scenes"][0]["layers"][-1].update({field: value})) == SCENE_ONE


def test_how_a_background_plays_its_clip_belongs_to_its_scene() -> None:
    assert changed(lambda doc: doc["scenes"][1]["background"].update(trim_start=1.5)) == SCENE_TWO


def test_an_edit_elsewhere_leaves_a_clips_chunks_alone() -> None:
    assert changed(lambda doc: doc["scenes"][1]["layers"][0].update(text="Now 50% off")) == SCENE_TWO
    assert changed(lambda doc: doc["scenes"][0]["layers"][0].update(text="Hello again")) == SCENE_ONE


def test_a_clips_bytes_and_key_belong_to_the_chunks_that_show_it() -> None:
    doc = with_clips()
    before, other_bytes = prints(doc), prints(doc, {**DIGESTS, "clip": "c" * 64})
    assert [a != b for a, b in zip(before, other_bytes, strict=True)] == SCENE_ONE
    assert changed(lambda doc: doc["assets"]["clip"].update(key="media/other.mp4")) == SCENE_ONE
    assert changed(lambda doc: doc["assets"]["back"].update(key="media/other.mp4")) == SCENE_TWO


def test_a_clip_of_unknown_content_is_always_drawn() -> None:
    doc = with_clips()
    assert prints(doc, {"back": "b" * 64}) == [None, None, None, prints(doc)[3]]

