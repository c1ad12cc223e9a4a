"""A render's stream in the client surfaces, against the loopback stand-in for the API of
``test_client_priority``: ``reelfarm renders watch`` prints the stream URL once the render has one
(waiting for it while the render is queued), fails when a render ends with nothing to watch, and
the SDK and the MCP render tool carry it."""
from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from reelfarm.client import AsyncClient, Render
from reelfarm.client.mcp_server.tools import render_message
from tests.unit.client.test_client_priority import DONE, KEY, QUEUED, RENDER, RUNNING, FakeAPI, cli

STREAM = "http://127.0.0.1:9/streams/r1.m3u8?expires=1&sig=s"
WATCHABLE = {**RUNNING, "stream_url": STREAM}


def test_watch_waits_for_the_first_chunk_then_prints_the_stream() -> None:
    api = FakeAPI([QUEUED, QUEUED, WATCHABLE])
    try:
        watched = cli(api, "renders", "watch", "r1", "--timeout", "30")
        assert watched.exit_code == 0, watched.output
        assert watched.stdout == f"{STREAM}\n"
        assert api.polls == 2  # queued at the first look (the stand-in answers its states from the second)
        as_json = cli(api, "renders", "watch", "r1", "--json")
        assert json.loads(as_json.stdout)["stream_url"] == STREAM
        shown = cli(api, "renders", "show", "r1")
        assert f"\nstream: {STREAM}" in shown.stdout
    finally:
        api.close()


def test_watch_fails_for_a_render_that_ended_with_nothing_to_watch_and_times_out_otherwise() -> None:
    failed = FakeAPI([{**RENDER, "status": "failed", "error": "boom", "finished_at": "2026-11-25T10:01:00Z"}])
    queued = FakeAPI([QUEUED])
    try:
        ended = cli(failed, "renders", "watch", "r1")
        assert ended.exit_code == 5 and "render r1 failed with nothing to watch" in ended.output
        waited = cli(queued, "renders", "watch", "r1", "--timeout", "1.5")
        assert waited.exit_code == 4 and "stored no chunk within 1.5 s" in waited.output
    finally:
        failed.close()
        queued.close()


def test_the_sdk_reads_the_stream_and_the_render_tool_offers_it_while_it_renders() -> None:
    assert Render.from_dict(WATCHABLE).stream_url == STREAM
    assert Render.from_dict(RENDER).stream_url is None  # a server from before streams
    message = render_message(Render.from_dict(WATCHABLE))
    assert message.endswith(f"; watch it as it renders: {STREAM}")
    assert "watch" not in render_message(Render.from_dict({**DONE, "stream_url": STREAM}))


@pytest.mark.parametrize("states", [[QUEUED, WATCHABLE, {**DONE, "stream_url": STREAM}]])
def test_the_awaited_sdk_follows_a_render_with_its_stream(states: list[dict[str, Any]]) -> None:
    api = FakeAPI(states)
    seen: list[str | None] = []

    async def go() -> Render:
        async with AsyncClient(api_key=KEY, base_url=api.base) as rf:
            return await rf.renders.wait("r1", timeout=30, on_progress=lambda r: seen.append(r.stream_url))

    try:
        done = anyio.run(go)
    finally:
        api.close()
    assert done.status == "succeeded" and done.stream_url == STREAM
    assert STREAM in seen
