"""Video clips on the farm: segment reuse counts a clip's content and trim as part of what a
segment shows (an edit elsewhere reuses the clip's segments; a new trim, or other bytes, does not),
and a clip damaged partway fails the render with a message naming the asset and the second into
the clip, leaving no video.

The clips are ``tests/unit/renderer/test_footage``'s: frame ``i`` shows ``i`` as bars, read back
from each output frame. ``make_doc(6)`` at 24 fps with scene one showing the clip: scene one is
chunks 0 and 1 (frames 0 to 71), the crossfade into scene two chunk 2, the rest of scene two
chunk 3 (frames 84 to 143).
"""
from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from reelfarm.shared import storage_keys
from tests.integration.farm.conftest import Farm, make_doc, owned_prefix
from tests.integration.farm.test_render_embedded import local_file, wait_for
from tests.integration.farm.test_segment_reuse import frames_of
from tests.unit.renderer.test_footage import expected, make_clip, read_bars, steady
from tests.unit.renderer.test_footage_damaged import damage_frame

FPS, SIZE = 24, 64
SCENE_ONE, SCENE_TWO_REST = 72, 60
CLIP = steady(25, 4)
OTHER_CLIP = steady(12, 4)  # other bytes: at 12 frames a second, other frames at each instant


def store_clip(farm: Farm, workspace: str, tmp_path: Path, name: str, times: list[Fraction]) -> str:
    key = f"{owned_prefix(farm, workspace)}/{name}"
    farm.storage.put_file(key, make_clip(tmp_path / name, times, gop=10), "video/mp4")
    return key


def clip_doc(key: str, trim_start: float = 0.3) -> dict[str, Any]:
    doc = make_doc(6, format="1:1")
    doc["assets"] = {"clip": {"type": "video", "key": key}}
    doc["scenes"][0]["layers"] = [{"id": "v", "type": "video", "asset": "clip", "x": 0.5, "y": 0.5, "w": 1, "h": 1,
                                   "fit": "fill", "trim_start": trim_start}]
    return doc


def scene_one_shows(farm: Farm, render: dict[str, Any], times: list[Fraction], trim_start: float) -> None:
    shown = [read_bars(rgb) for rgb in frames_of(local_file(farm.storage, render["url"]))[:SCENE_ONE]]
    trim = Fraction(trim_start).limit_denominator(100)
    assert shown == [expected(times, Fraction(n, FPS), trim_start=trim) for n in range(SCENE_ONE)]


def _finish(farm: Farm, workspace: str, render_id: str, status: str = "succeeded") -> dict[str, Any]:
    done = wait_for(lambda: (r := farm.renders.get(workspace, render_id))["status"] in ("succeeded", "failed") and r)
    assert done["status"] == status, done["error"]
    return done


def _render(farm: Farm, workspace: str, video: str, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """A render of the video (of a new version `doc`), drawn to the end; its ``reused_frames`` as requested."""
    farm.queue.stop(30)  # type: ignore[attr-defined]
    if doc is not None:
        farm.new_version(workspace, video, doc)
    requested = farm.renders.request(workspace, video, "1:1", SIZE, FPS)
    farm.queue.start()  # type: ignore[attr-defined]
    return {**_finish(farm, workspace, requested["id"]), "reused_frames": requested["reused_frames"]}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_edit_elsewhere_reuses_the_clips_segments_and_a_new_trim_or_clip_does_not(
        embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace(credits=10)
    key = store_clip(embedded, workspace, tmp_path, "clip.mp4", CLIP)
    doc = clip_doc(key)
    video = embedded.video(workspace, doc)
    first = _render(embedded, workspace, video)
    assert first["reused_frames"] == 0
    scene_one_shows(embedded, first, CLIP, 0.3)

    # (a) a text of scene two: scene one, and the clip in it, is copied from the first render
    doc = copy.deepcopy(doc)
    doc["scenes"][1]["layers"][0]["text"] = "Now 50% off"
    edited = _render(embedded, workspace, video, doc)
    assert edited["reused_frames"] == SCENE_ONE
    scene_one_shows(embedded, edited, CLIP, 0.3)

    # (b) a new trim: scene one is drawn again, from the new point of the clip
    doc = copy.deepcopy(doc)
    doc["scenes"][0]["layers"][0]["trim_start"] = 0.6
    trimmed = _render(embedded, workspace, video, doc)
    assert trimmed["reused_frames"] == SCENE_TWO_REST
    scene_one_shows(embedded, trimmed, CLIP, 0.6)

    # (c) other bytes for the clip: under another key, then in place of those under the same key
    doc = copy.deepcopy(doc)
    doc["assets"]["clip"]["key"] = store_clip(embedded, workspace, tmp_path, "other.mp4", OTHER_CLIP)
    other = _render(embedded, workspace, video, doc)
    assert other["reused_frames"] == SCENE_TWO_REST
    scene_one_shows(embedded, other, OTHER_CLIP, 0.6)

    embedded.storage.put_file(doc["assets"]["clip"]["key"], make_clip(tmp_path / "again.mp4", CLIP, gop=10),
                              "video/mp4")
    # an identical document would be given the earlier render (renders are deduplicated by document);
    # a new title changes no segment's pixels
    doc = {**copy.deepcopy(doc), "title": "The clip, replaced"}
    replaced = _render(embedded, workspace, video, doc)
    assert replaced["reused_frames"] == SCENE_TWO_REST, "the key's bytes changed: its segments are not reused"
    scene_one_shows(embedded, replaced, CLIP, 0.6)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_clip_damaged_partway_fails_the_render_naming_the_asset(embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace(credits=5)
    key = f"{owned_prefix(embedded, workspace)}/clip.mp4"
    damaged = damage_frame(make_clip(tmp_path / "clip.mp4", CLIP, gop=10), 30)  # 1.20 s into the clip
    embedded.storage.put_file(key, damaged, "video/mp4")
    video = embedded.video(workspace, clip_doc(key, trim_start=0))
    embedded.queue.start()  # type: ignore[attr-defined]
    render = embedded.renders.request(workspace, video, "1:1", SIZE, FPS)
    failed = _finish(embedded, workspace, render["id"], "failed")
    assert failed["error"].startswith(
        "video asset 'clip' could not be decoded at 1.20 s into the clip (frame 31 of 100): the file is damaged there")
    assert "fix or replace the asset, then render again" in failed["error"]
    assert "Traceback" not in failed["error"]
    assert failed["url"] is None
    assert not embedded.storage.exists(storage_keys.video_key(render["id"])), "no video is left as its output"
    assert not embedded.storage.exists(storage_keys.segment_key(render["id"], 1)), "nor the chunk that met the damage"
    assert embedded.balance(workspace) == 5, "refunded"
