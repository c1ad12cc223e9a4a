"""A render's HLS stream (``reelfarm.farm.services.stream``), through the API: its chunks are run here
one by one, out of order, so the playlist is read at known moments of a real render.

- ``stream_url`` is null until the first chunk is stored; the playlist (parsed by ``m3u8``) is an
  ``EVENT`` playlist that starts at the beginning, lists only the unbroken run of stored chunks from
  the first, with a target duration fixed by the plan and never exceeded, and gets
  ``#EXT-X-ENDLIST`` once the render succeeded;
- FFmpeg's HLS demuxer (PyAV), opening the final playlist over HTTP from a real server, decodes
  exactly the render's frames, each equal to the MP4's;
- a canceled render's playlist lists what was finished and ends there;
- the link opens only its own render, only while it lasts, and not once tampered with; a
  segment's link likewise; another workspace cannot read the render to get a link.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import av
import httpx
import m3u8
import numpy as np
import pytest
from flask import Flask
from sqlalchemy import select
from werkzeug.serving import make_server

from reelfarm.farm.runtime import tasks
from reelfarm.shared.tables import renders as renders_table

BODY = {"storyId": "flash_sale", "format": "16:9", "durationSec": 6}


@pytest.fixture
def served(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


def request_render(client: Any, tenant: Any) -> dict[str, Any]:
    video = client.post("/api/v1/videos", json=BODY, headers=tenant.headers)
    assert video.status_code == 201, video.get_json()
    render = client.post(f"/api/v1/videos/{video.get_json()['id']}/renders",
                         json={"format": "16:9", "resolution": 720, "fps": 24}, headers=tenant.headers)
    assert render.status_code == 202, render.get_json()
    return dict(render.get_json())


def plan(services: Any, render_id: str) -> list[int]:
    with services.engine.connect() as conn:
        return list(conn.execute(select(renders_table.c.chunk_starts).where(renders_table.c.id == render_id)).scalar_one())


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def playlist(client: Any, stream_url: str) -> m3u8.M3U8:
    answer = client.get(path_of(stream_url))
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.mimetype == "application/vnd.apple.mpegurl"
    return m3u8.loads(answer.get_data(as_text=True))


def fetched(client: Any, tenant: Any, render_id: str) -> dict[str, Any]:
    return dict(client.get(f"/api/v1/renders/{render_id}", headers=tenant.headers).get_json())


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | changes
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_the_stream_grows_from_the_start_and_plays_frame_for_frame(client, services, make_tenant, clock, served,
                                                                    tmp_path: Path) -> None:
    tenant = make_tenant(credits=5)
    render = request_render(client, tenant)
    starts = plan(services, render["id"])
    assert len(starts) >= 3, starts
    assert render["stream_url"] is None

    tasks.render_chunk(render["id"], 1)  # finished out of order: it waits for the first
    assert fetched(client, tenant, render["id"])["stream_url"] is None
    tasks.render_chunk(render["id"], 0)
    stream_url = fetched(client, tenant, render["id"])["stream_url"]
    assert stream_url and "/streams/" in stream_url

    early = playlist(client, stream_url)
    assert early.playlist_type == "event" and not early.is_endlist
    assert early.start is not None and early.start.time_offset == 0
    assert len(early.segments) == 2  # chunks 0 and 1: the unbroken run
    target = early.target_duration
    assert all(s.duration <= target for s in early.segments)
    assert [round(s.duration * 24) for s in early.segments] == [starts[1] - starts[0], starts[2] - starts[1]]

    for index in range(2, len(starts)):
        tasks.render_chunk(render["id"], index)
    middle = playlist(client, stream_url)
    assert [s.uri for s in middle.segments[:2]] != [] and len(middle.segments) == len(starts)
    assert not middle.is_endlist, "not ended before the render succeeded"
    tasks.stitch(render["id"])
    done = fetched(client, tenant, render["id"])
    assert done["status"] == "succeeded" and done["stream_url"]
    final = playlist(client, done["stream_url"])
    assert final.is_endlist and final.target_duration == target and len(final.segments) == len(starts)
    assert sum(round(s.duration * 24) for s in final.segments) == 144

    # FFmpeg's HLS demuxer over HTTP, from a real server: the MP4's frames, one for one
    hls = served + path_of(done["stream_url"])
    with av.open(hls) as container:
        streamed = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    mp4 = tmp_path / "video.mp4"
    mp4.write_bytes(httpx.get(served + path_of(done["url"]), timeout=30).content)
    with av.open(str(mp4)) as container:
        whole = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(streamed) == len(whole) == 144
    assert all(np.array_equal(a, b) for a, b in zip(streamed, whole, strict=True))

    # the segment links are signed: tampered, they open nothing
    segment = urlsplit(final.segments[0].uri)
    assert segment.path.endswith("/stream/seg0.ts")
    assert client.get(path_of(final.segments[0].uri)).mimetype == "video/mp2t"
    assert client.get(path_of(with_query(final.segments[0].uri, sig="x" * 43))).status_code == 403


def test_a_stream_link_opens_its_own_render_only_and_only_while_it_lasts(client, services, make_tenant,
                                                                          clock) -> None:
    owner, other = make_tenant(credits=5), make_tenant(credits=5, name="other")
    mine, theirs = request_render(client, owner), request_render(client, other)
    tasks.render_chunk(mine["id"], 0)
    tasks.render_chunk(theirs["id"], 0)
    url = fetched(client, owner, mine["id"])["stream_url"]
    assert playlist(client, url).segments

    assert client.get(f"/api/v1/renders/{mine['id']}", headers=other.headers).status_code == 404
    theirs_with_my_signature = path_of(url).replace(mine["id"], theirs["id"])
    answer = client.get(theirs_with_my_signature)
    assert answer.status_code == 403 and answer.get_json()["error"]["code"] == "forbidden"
    assert client.get(path_of(with_query(url, sig="A" * 43))).status_code == 403
    assert client.get(path_of(with_query(url, expires=str(int(with_query(url).split("expires=")[1].split("&")[0]) + 60)))).status_code == 403
    assert client.get("/streams/not-a-render.m3u8").status_code == 404
    as_text = client.get(path_of(url), headers={"Accept": "text/plain"})
    assert as_text.mimetype == "text/plain" and as_text.get_data(as_text=True).startswith("#EXTM3U")
    clock.advance(8 * 24 * 3600)
    assert client.get(path_of(url)).status_code == 403, "expired"


def test_a_canceled_renders_stream_ends_where_it_stopped(client, services, make_tenant) -> None:
    tenant = make_tenant(credits=5)
    render = request_render(client, tenant)
    tasks.render_chunk(render["id"], 0)
    canceled = client.post(f"/api/v1/renders/{render['id']}/cancel", headers=tenant.headers)
    assert canceled.status_code == 200, canceled.get_json()
    url = canceled.get_json()["stream_url"]
    ended = playlist(client, url)
    assert ended.is_endlist and len(ended.segments) == 1


def test_reused_segments_are_in_the_stream_before_any_chunk_is_drawn(client, services, make_tenant) -> None:
    tenant = make_tenant(credits=5)
    first = request_render(client, tenant)
    for index in range(len(plan(services, first["id"]))):
        tasks.render_chunk(first["id"], index)
    tasks.stitch(first["id"])
    video = client.get(f"/api/v1/videos/{first['video_id']}", headers=tenant.headers).get_json()
    doc = video["current_version"]["doc"]
    last = doc["scenes"][-1]
    texts = [layer for layer in last["layers"] if layer.get("type") == "text"]
    texts[0]["text"] = texts[0]["text"] + " now"
    edited = client.patch(f"/api/v1/videos/{first['video_id']}", json={"doc": doc}, headers=tenant.headers)
    assert edited.status_code == 200, edited.get_json()
    second = client.post(f"/api/v1/videos/{first['video_id']}/renders",
                         json={"format": "16:9", "resolution": 720, "fps": 24}, headers=tenant.headers).get_json()
    assert second["reused_frames"] > 0 and second["stream_url"], second
    reused = playlist(client, second["stream_url"])
    assert not reused.is_endlist
    assert round(sum(s.duration for s in reused.segments) * 24) == second["reused_frames"]
