"""A render's stream on a farm of real nodes (RQ, PostgreSQL, Redis; ``test_node_drain``'s farm):
read again and again while its node is killed mid-chunk and another takes over, the playlist only
grows (each read lists the earlier one's segments first, unchanged), ends with
``#EXT-X-ENDLIST`` once the render succeeded, and FFmpeg's HLS demuxer decodes it to the MP4's
frame count."""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import av
import httpx
import m3u8
import pytest

from tests.e2e.test_node_drain import DURATION_SEC, FPS, Farm, end_tree, wait_for
from tests.helpers import WORK_CEILING_SEC


@pytest.fixture
def farm(tmp_path: Path, farm_database: str, farm_redis: str) -> Iterator[Farm]:
    made = Farm(tmp_path, farm_database, farm_redis)
    yield made
    made.close()  # its nodes too


def test_the_playlist_only_grows_through_a_killed_node(farm: Farm) -> None:
    first = farm.start_node("first", frame_sec="0.06")
    render = farm.request_render()
    url = wait_for(lambda: farm.render(render)["stream_url"], WORK_CEILING_SEC, "the first chunk's segment")
    reads: list[m3u8.M3U8] = []

    def read() -> m3u8.M3U8:
        answer = httpx.get(url, timeout=30)
        assert answer.status_code == 200, answer.text
        reads.append(m3u8.loads(answer.text))
        return reads[-1]

    read()
    # Mid-chunk, as the docstring says: a job taken and not yet started when its node dies is another
    # path (tests/e2e/test_taken_not_started.py).
    wait_for(lambda: farm.drawing(render), WORK_CEILING_SEC, "a chunk to draw", interval=0.05)
    end_tree(first)  # its chunk is handed back once it is seen dead
    killed = time.monotonic()
    farm.start_node("second", frame_sec="0.01")
    while not read().is_endlist:
        assert time.monotonic() - killed < 180, "the render did not finish"
        time.sleep(0.5)

    assert not reads[0].is_endlist and len(reads[0].segments) < len(reads[-1].segments)
    for earlier, later in itertools.pairwise(reads):
        names = [urlpath(s.uri) for s in earlier.segments]
        assert [urlpath(s.uri) for s in later.segments][:len(names)] == names
        assert later.target_duration == earlier.target_duration
    assert farm.render(render)["status"] == "succeeded"
    with av.open(url) as container:
        assert sum(1 for _ in container.decode(video=0)) == DURATION_SEC * FPS


def urlpath(uri: str) -> str:
    return uri.split("?", 1)[0]
