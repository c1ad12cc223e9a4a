"""Segment fingerprints, both ways: an edit in one scene leaves the fingerprints of the chunks that
do not draw it equal; a change to anything a chunk draws (a text, a colour, an asset's bytes behind
the same key, a font, the brand, an easing, the renderer's version, the encoder, the size) changes
that chunk's fingerprint. And the farm's chunks follow scene boundaries, from the timing alone."""
from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reelfarm.renderer.chunks import scene_chunks
from reelfarm.renderer.fingerprint import scenes_drawn, segment_fingerprint
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.spec import RenderSpec
from tests.conftest import BASE_DOC

FPS = 24
SPEC = RenderSpec("16:9", 144, FPS)


def six_scenes() -> dict[str, Any]:
    """Six scenes: 3 s (its first second a chunk of its own), 3 s, 7 s (split in two chunks), 3 s (a
    crossfade in), 3 s, 3 s; a picture in scene 5."""
    doc = copy.deepcopy(BASE_DOC)
    one, two = doc["scenes"]
    scenes = []
    for i, duration in enumerate([3, 3, 7, 3, 3, 3]):
        scene = copy.deepcopy(two if i % 2 else one)
        scene["id"], scene["duration"] = f"s{i}", duration
        scene.pop("transition", None)
        scenes.append(scene)
    scenes[3]["transition"] = {"type": "crossfade", "duration": 0.5}
    scenes[4]["layers"].append({"id": "pic", "type": "image", "asset": "photo", "x": 0.8, "y": 0.3, "w": 0.2,
                                "h": 0.3, "fit": "cover"})
    doc.update(duration=22, fps=FPS, scenes=scenes, assets={"photo": {"type": "image", "key": "media/photo.png"}})
    return doc


def prints(raw: dict[str, Any], digests: dict[str, str] | None = None, **options: Any) -> list[str | None]:
    doc = parse_doc(raw)
    known = {"photo": "sha-1"} if digests is None else digests
    return [segment_fingerprint(doc, options.get("spec", SPEC), chunk, options.get("encoder", "x264"),
                                known.get, renderer_version=options.get("version", "1.0.0"))
            for chunk in scene_chunks(doc, FPS)]


def test_chunks_start_at_every_scene_and_split_long_scenes() -> None:
    doc = parse_doc(six_scenes())
    assert scene_chunks(doc, FPS) == [(0, 24), (24, 72), (72, 144), (144, 228), (228, 312), (312, 324), (324, 384),
                                      (384, 456), (456, 528)], "scene 4's crossfade (12 frames) is a chunk of its own"
    assert scene_chunks(doc, FPS, lead_sec=0)[0] == (0, 72), "the leading second is cut from the first chunk"
    assert scene_chunks(doc, FPS, lead_sec=2)[0] == (0, 72), "only from a chunk longer than twice the lead"
    assert scene_chunks(doc, FPS) == scene_chunks(parse_doc(six_scenes()), FPS), "the timing alone decides"
    assert scenes_drawn(doc, (312, 324), FPS) == [2, 3], "a crossfade blends from the scene before"
    assert scenes_drawn(doc, (324, 384), FPS) == [3], "after it, the scene alone"
    assert scenes_drawn(doc, (384, 456), FPS) == [4]


def test_an_edit_in_one_scene_leaves_the_other_chunks_alone() -> None:
    before = prints(six_scenes())
    edited = six_scenes()
    edited["scenes"][2]["layers"][0]["text"] = "Changed in scene 3"
    after = prints(edited)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert changed == [3, 4, 5], "scene 3's two chunks, and scene 4's crossfade, which blends from it"
    assert len(set(before)) == len(before), "no two chunks share a fingerprint"


def test_an_asset_whose_content_is_unknown_makes_its_chunks_always_drawn() -> None:
    unknown = prints(six_scenes(), digests={})
    assert unknown[7] is None and all(f is not None for i, f in enumerate(unknown) if i != 7)


CHANGES = {
    "text": lambda d: d["scenes"][4]["layers"][0].__setitem__("text", "Another text"),
    "colour": lambda d: d["scenes"][4]["background"].__setitem__("color", "#FF0000"),
    "font": lambda d: d["scenes"][4]["layers"][0].__setitem__("font", {"family": "Inter", "weight": 400}),
    "brand": lambda d: d["brand"]["colors"].__setitem__("primary", "#000000"),
    "easing": lambda d: d["scenes"][4]["layers"][0].__setitem__("enter", {"preset": "pop", "easing": "linear"}),
}
OPTIONS = {
    "asset bytes": {"digests": {"photo": "sha-2"}},
    "renderer version": {"version": "1.0.1"},
    "encoder": {"encoder": "nvenc"},
    "size": {"spec": RenderSpec("16:9", 216, FPS)},
}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(CHANGES)), st.sampled_from(sorted(OPTIONS)), st.booleans())
def test_anything_a_chunk_draws_changes_its_fingerprint(change: str, option: str, use_option: bool) -> None:
    base = prints(six_scenes())
    if use_option:
        assert prints(six_scenes(), **OPTIONS[option])[7] != base[7], option
        return
    edited = six_scenes()
    CHANGES[change](edited)
    if edited == six_scenes():
        return  # the change was no change (the document already said so)
    assert prints(edited)[7] != base[7], change
