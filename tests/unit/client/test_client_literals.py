"""Values the SDK returns type-check when passed back: results carry the same ``Literal`` types as
the parameters that take them (a video's format, a render's format, resolution and fps, an asset's
kind), checked by mypy on a user's script, and at run time by the annotations themselves."""
from __future__ import annotations

import typing
from pathlib import Path

from reelfarm.client import Asset, Render, Video
from reelfarm.client.literals import AssetKind, Fps, Resolution, VideoFormat
from tests.unit.client.test_client_types import ROOT, strict_errors

PASSED_BACK = '''\
from reelfarm.client import Client


def again(rf: Client, video_id: str, render_id: str) -> None:
    video = rf.videos.get(video_id)
    render = rf.renders.get(render_id)
    rf.videos.render(video.id, format=video.default_format, resolution=render.resolution, fps=render.fps)
    rf.videos.variants(video.id, [render.format, video.default_format], resolution=render.resolution)
    rf.videos.stills(video.id, [1.0], format=render.format)
    for asset in rf.assets.list(kind=rf.assets.get("a1").kind):
        print(asset.key)
    wrong: int = video.default_format
'''


def test_returned_values_type_check_when_passed_back(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    errors, output = strict_errors(tmp_path / "passed_back.py", PASSED_BACK)
    # only the planted mistake, which names the Literal: the types are real, not str or Any
    assert len(errors) == 1 and "passed_back.py:12:" in errors[0], output
    assert "Literal['16:9', '9:16', '1:1', '4:5']" in errors[0]


def test_the_annotations_are_the_parameters_literals() -> None:
    video = typing.get_type_hints(Video)
    render = typing.get_type_hints(Render)
    assert video["default_format"] == render["format"] == VideoFormat
    assert (render["resolution"], render["fps"]) == (Resolution, Fps)
    assert typing.get_type_hints(Asset)["kind"] == AssetKind
