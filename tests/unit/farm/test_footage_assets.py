"""A render task reads a video asset by its key from the workspace's objects in storage, as it
reads images: another workspace's key is refused, and a video given by URL is not fetched."""
from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest

from reelfarm.farm.services.assets import import_remote_assets
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.render import render_segment
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.storage import LocalStorage
from reelfarm.studio.assets import StorageAssets
from tests.unit.renderer.test_footage import FPS, SIZE, decoded, doc, expected, make_clip, read_bars, steady

OURS, THEIRS = "assets/ws-a/clip.mp4", "assets/ws-b/clip.mp4"


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "files", "http://127.0.0.1:8000", "k" * 48,
                        FixedClock(datetime(2026, 11, 29, tzinfo=UTC)))


class KeySet:
    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)

    def owns(self, key: str) -> bool:
        return key in self.keys


def test_a_chunk_draws_the_workspace_clip_from_storage_and_refuses_another_workspaces(
        storage: LocalStorage, tmp_path: Path) -> None:
    times = steady(25, 7)
    clip = make_clip(tmp_path / "made.mp4", times)
    storage.put_file(OURS, str(clip), "video/mp4")
    storage.put_file(THEIRS, str(clip), "video/mp4")
    assets = StorageAssets(storage, KeySet(OURS))
    data = doc({"trim_start": 0.4})
    data["assets"]["clip"]["key"] = OURS
    spec = RenderSpec("1:1", SIZE, FPS)
    frames = []
    for n, (a, b) in enumerate([(0, 31), (31, 75)]):
        render_segment(parse_doc(data), str(tmp_path / f"seg{n}.mp4"), spec, range(a, b), assets)
        frames += decoded(tmp_path / f"seg{n}.mp4")
    assert [read_bars(f) for f in frames] == [expected(times, Fraction(n, FPS), trim_start=Fraction(2, 5))
                                             for n in range(75)]
    data["assets"]["clip"]["key"] = THEIRS
    with pytest.raises(AssetError, match="no object of this workspace is stored under key 'assets/ws-b/clip.mp4'"):
        render_segment(parse_doc(data), str(tmp_path / "theirs.mp4"), spec, range(5), assets)


def test_a_video_given_by_url_is_not_fetched(storage: LocalStorage) -> None:
    class NoFetcher:
        def fetch(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("fetched")

    data = doc({})
    data["assets"]["clip"] = {"type": "video", "url": "https://cdn.example/clip.mp4"}
    with pytest.raises(AssetError, match="media library"):
        import_remote_assets(data, NoFetcher(), storage, "renders/r1")  # type: ignore[arg-type]
