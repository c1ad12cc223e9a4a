"""A clip's start written into and read from a document (``reelfarm.console.clips``), and the top
of the start control (``reelfarm.console.pages.clips.latest_top``)."""
from __future__ import annotations

import copy

import pytest

from reelfarm.console import clips
from reelfarm.console.pages.clips import latest_top

KEY = "assets/ws/aaaa.mp4"
OTHER = "assets/ws/bbbb.mp4"


def _doc() -> dict:
    """Two scenes with the clip as background, one with it in a group too, and another clip."""
    return {
        "assets": {"background": {"type": "video", "key": KEY}, "b-roll": {"type": "video", "key": OTHER},
                   "logo": {"type": "image", "key": "brand/logo.png"}},
        "scenes": [
            {"id": "open", "background": {"type": "video", "asset": "background", "fit": "cover"},
             "layers": [{"id": "open.t", "type": "text", "text": "Hi"}]},
            {"id": "mid", "background": {"type": "solid", "color": "#fff"},
             "layers": [{"id": "mid.g", "type": "group", "children": [
                 {"id": "mid.v", "type": "video", "asset": "background", "trim_start": 0.4},
                 {"id": "mid.b", "type": "video", "asset": "b-roll"}]}]},
            {"id": "close", "background": {"type": "video", "asset": "background"}, "layers": []},
        ],
    }


def test_a_start_is_written_wherever_the_clip_plays_and_nowhere_else():
    doc = _doc()
    before = copy.deepcopy(doc)
    started = clips.with_start(doc, KEY, 1.25)
    assert doc == before  # a copy is changed, not the document given
    assert [p["trim_start"] for p in clips.places(started, KEY)] == [1.25, 1.25, 1.25]
    assert [p.get("trim_start") for p in clips.places(started, OTHER)] == [None]
    assert clips.start(started, KEY) == 1.25 and clips.start(started, OTHER) == 0.0
    assert clips.start(started, "assets/ws/cccc.mp4") is None  # not played by this document
    assert clips.starts(started) == {KEY: 1.25}
    back = clips.with_start(started, KEY, 0)  # 0: left out, as a story writes it
    assert all("trim_start" not in p for p in clips.places(back, KEY))


def test_starts_are_kept_for_the_clips_a_rebuilt_document_still_plays():
    rebuilt = _doc()
    kept = clips.kept(rebuilt, {KEY: 2.0, "assets/ws/gone.mp4": 1.0})
    assert [p["trim_start"] for p in clips.places(kept, KEY)] == [2.0, 2.0, 2.0]
    assert clips.kept(rebuilt, {}) == rebuilt


@pytest.mark.parametrize(("length", "top"), [(3.0, 2.9), (3.04, 3.0), (10.0, 9.9), (0.1, 0.0), (None, 0.0)])
def test_the_start_control_ends_one_step_before_the_clip_does(length, top):
    assert latest_top(length) == top
