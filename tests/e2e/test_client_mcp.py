"""``reelfarm mcp`` driven by the official MCP client: over stdio (spawned, key from the environment)
and over streamable HTTP (each request's bearer key). Tools listed with schemas from the API's
OpenAPI document; a video created and rendered with progress notifications received; a still
returned as an image; an image added to the media library by URL and listed, in small results;
API errors as tool errors; a revoked key refused; another workspace's key blind to the first
workspace's videos."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.test_client_sdk import ROOT, Served, image_site, png_bytes
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_SEC

TOOLS = {"whoami", "list_videos", "list_stories", "get_story", "list_locales", "list_brand_kits", "extract_brand", "create_video",
         "get_video", "update_video", "list_versions", "restore_version", "render_video", "estimate_render", "list_renders",
         "render_variants", "render_stills", "get_render", "cancel_render", "add_asset_from_url", "list_assets",
         "get_job"}
LOCAL_TOOLS = {"upload_asset"}  # reading the machine's files: over stdio alone


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    made = Served(tmp_path_factory.mktemp("mcp"), REELFARM_FETCH_ALLOW_PRIVATE="1")
    yield made
    made.close()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(extra)
    return env


@asynccontextmanager
async def over_stdio(served: Served) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "reelfarm", "mcp"], cwd=str(ROOT),
                                   env=_env(REELFARM_API_KEY=served.key, REELFARM_API_URL=served.base))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def over_http(url: str, key: str) -> AsyncIterator[ClientSession]:
    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield session


async def create_and_render(session: ClientSession, transcript: list[dict[str, Any]],
                            local: bool = True) -> dict[str, Any]:
    """The agent's path: list tools and stories, create a story video, render it waiting with progress."""
    tools = (await session.list_tools()).tools
    assert {t.name for t in tools} == TOOLS | (LOCAL_TOOLS if local else set())
    schemas = {t.name: t.input_schema for t in tools}
    assert "storyId" in schemas["create_video"]["properties"] and "$defs" not in schemas["update_video"]
    assert schemas["update_video"]["properties"]["doc"]["type"] == "object"  # summed up: the schema is elsewhere
    assert schemas["render_video"]["required"] == ["video_id", "format"]
    transcript.append({"tools/list": [{"name": t.name, "inputs": sorted(t.input_schema.get("properties", {}))}
                                      for t in tools]})
    stories = await session.call_tool("list_stories", {})
    assert "quote" in [s["id"] for s in stories.structured_content["data"]]
    args = {"storyId": "quote", "fields": {"quote": "Agents ship videos"}, "format": "1:1", "durationSec": 6}
    created = await session.call_tool("create_video", args)
    assert not created.is_error, created.content
    video = created.structured_content
    transcript.append({"tools/call": "create_video", "arguments": args,
                       "result": {k: video[k] for k in ("id", "status", "default_format", "duration_sec")}})
    progress: list[dict[str, Any]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": done, "total": total, "message": message})

    args = {"video_id": video["id"], "format": "1:1", "resolution": 720, "wait": True}
    rendered = await session.call_tool("render_video", args, progress_callback=on_progress)
    assert not rendered.is_error, rendered.content
    render = rendered.structured_content
    assert render["status"] == "succeeded" and render["url"].startswith("http")
    assert progress and progress[-1] == {"progress": 1.0, "total": 1.0, "message": "render succeeded"}
    assert [p["progress"] for p in progress] == sorted(p["progress"] for p in progress)
    transcript.append({"tools/call": "render_video", "arguments": args, "notifications/progress": progress,
                       "result": {k: render[k] for k in ("id", "status", "format", "resolution", "url")}})
    return video


def test_stdio_session_lists_tools_creates_renders_and_shows_a_still(served: Served) -> None:
    transcript: list[dict[str, Any]] = []

    async def session_run() -> None:
        async with over_stdio(served) as session:
            video = await create_and_render(session, transcript)
            still = await session.call_tool("render_stills", {"video_id": video["id"], "times": [2.0]})
            assert not still.is_error and [c.type for c in still.content] == ["text", "image"]
            assert still.content[1].mime_type == "image/png"
            missing = await session.call_tool("get_video", {"video_id": "00000000-0000-0000-0000-000000000000"})
            assert missing.is_error and missing.structured_content["error"]["code"] == "not_found"
            bad = await session.call_tool("create_video", {"storyId": "quote", "fields": {"nope": 1}})
            assert bad.is_error and bad.structured_content["error"]["code"] == "validation_failed"
            assert bad.structured_content["error"]["details"][0]["field"] == "/fields/nope"
            no_id = await session.call_tool("get_render", {})
            assert no_id.is_error and no_id.structured_content["error"]["code"] == "invalid_arguments"
            assert no_id.structured_content["error"]["details"] == [{"field": "/render_id", "message": "is required"}]
            assert "render_id" in no_id.structured_content["error"]["message"]
            stringly = await session.call_tool("render_video", {"video_id": video["id"], "format": "1:1",
                                                                "wait": "yes"})
            assert stringly.is_error and stringly.structured_content["error"]["details"][0]["field"] == "/wait"
            me = await session.call_tool("whoami", {})
            assert not me.is_error and me.structured_content["workspace"]["name"] == "dev"
            assert "credits" in me.structured_content["workspace"]
            listed = await session.call_tool("list_videos", {"limit": 1})
            assert not listed.is_error, listed.content
            assert [v["id"] for v in listed.structured_content["data"]] == [video["id"]]

    anyio.run(session_run)
    print("MCP transcript (stdio):\n" + json.dumps(transcript, indent=1))


def size(value: Any) -> int:
    """Bytes of ``value`` as JSON, as an agent's context receives it."""
    return len(json.dumps(value, ensure_ascii=False).encode())


# The bounds the slim tools keep (before them: schemas 52 KB in all, create_video alone 22 KB;
# create_video and get_video answered 9.7 KB, list_videos with 2 items 22 KB). README states the figures.
SCHEMAS_MOST, ONE_SCHEMA_MOST, VIDEO_MOST, TWO_VIDEOS_MOST = 20_000, 3_000, 600, 1_200
ASSET_MOST = 600  # an asset's summary: its signed URL is most of it


def test_tool_schemas_and_results_are_small_with_the_whole_answer_on_request(served: Served) -> None:
    figures: dict[str, int] = {}

    async def session_run() -> None:
        async with over_stdio(served) as session:
            tools = (await session.list_tools()).tools
            listing = {t.name: size(t.model_dump(mode="json", by_alias=True, exclude_none=True)) for t in tools}
            figures.update(schemas_total=sum(listing.values()), create_video_schema=listing["create_video"],
                           largest_schema=max(listing.values()))
            first = await session.call_tool("create_video", {"storyId": "quote", "fields": {"quote": "Small"},
                                                             "durationSec": 6})
            second = await session.call_tool("create_video", {"storyId": "quote", "fields": {"quote": "Two"}})
            video = first.structured_content
            assert not first.is_error and not second.is_error
            assert {"id", "title", "status", "default_format", "duration_sec", "story_id", "version"} <= set(video)
            assert set(video) <= {"id", "title", "status", "default_format", "duration_sec", "story_id", "version",
                                  "locale"}
            assert (video["status"], video["version"]) == ("ready", 1)
            got = await session.call_tool("get_video", {"video_id": video["id"]})
            full = await session.call_tool("get_video", {"video_id": video["id"], "full": True})
            assert got.structured_content == video
            assert full.structured_content["current_version"]["doc"]["scenes"], "the whole answer on request"
            listed = await session.call_tool("list_videos", {"limit": 2})
            assert [v["id"] for v in listed.structured_content["data"]] == [second.structured_content["id"],
                                                                             video["id"]]
            figures.update(create_video_result=size(first.structured_content), get_video_result=size(video),
                           get_video_full=size(full.structured_content),
                           list_videos_2_result=size(listed.structured_content))
            for result in (first, got, listed):  # the text content is the same JSON
                assert json.loads(result.content[0].text) == result.structured_content

    anyio.run(session_run)
    print("MCP sizes (bytes):", json.dumps(figures))
    assert figures["schemas_total"] <= SCHEMAS_MOST and figures["largest_schema"] <= ONE_SCHEMA_MOST
    assert figures["create_video_result"] <= VIDEO_MOST and figures["get_video_result"] <= VIDEO_MOST
    assert figures["list_videos_2_result"] <= TWO_VIDEOS_MOST
    assert figures["get_video_full"] > 10 * figures["get_video_result"]


def test_versions_restore_renders_cancel_locales_and_a_translated_copy_waited_for(served: Served) -> None:
    async def session_run() -> None:
        async with over_stdio(served) as session:
            async def call(name: str, **args: Any) -> Any:
                answer = await session.call_tool(name, args)
                assert not answer.is_error, (name, answer.content)
                return answer.structured_content

            video = await call("create_video", storyId="quote", fields={"quote": "First words"}, durationSec=30)
            edited = await call("update_video", video_id=video["id"], fields={"quote": "Second words"})
            assert edited["version"] == 2
            versions = (await call("list_versions", video_id=video["id"]))["data"]
            assert [(v["number"], v["source"]) for v in versions] == [(1, "story"), (2, "fields")]
            assert "doc" not in versions[0]
            restored = await call("restore_version", video_id=video["id"], number=1)
            assert restored["version"] == 3
            full = (await call("list_versions", video_id=video["id"], full=True))["data"]
            assert full[-1]["source"] == "restore" and full[-1]["doc"] == full[0]["doc"] != full[1]["doc"]
            started = await call("render_video", video_id=video["id"], format="16:9", resolution=2160)
            canceled = await call("cancel_render", render_id=started["id"])
            assert canceled["status"] == "canceled" and canceled["id"] == started["id"]
            renders = (await call("list_renders", video_id=video["id"]))["data"]
            assert [(r["id"], r["status"]) for r in renders] == [(started["id"], "canceled")]
            locales = await call("list_locales")
            assert locales["source"] == "en" and "es" in json.dumps(locales["data"])
            variants = await call("render_variants", video_id=video["id"], formats=["1:1"], locales=["es"],
                                  resolution=720)
            [copy] = variants["translations"]
            assert (copy["status"], copy["locale"], copy["version"]) == ("draft", "es", None)
            ready = await call("get_video", video_id=copy["id"], wait=True, timeout=WORK_CEILING_SEC)
            assert (ready["status"], ready["version"], ready["source_video_id"]) == ("ready", 1, video["id"])

    anyio.run(session_run)


def test_an_image_is_added_by_url_and_listed_in_small_results(served: Served) -> None:
    async def session_run() -> None:
        async with over_stdio(served) as session:
            with image_site(png_bytes((80, 60), (5, 6, 7))) as site:
                added = await session.call_tool("add_asset_from_url", {"url": f"{site}/photo.png"})
                missing = await session.call_tool("add_asset_from_url", {"url": f"{site}/none.png"})
            assert not added.is_error, added.content
            asset = added.structured_content
            assert set(asset) == {"id", "name", "kind", "key", "url", "width", "height"}
            assert (asset["name"], asset["kind"], asset["width"], asset["height"]) == ("photo.png", "image", 80, 60)
            assert size(asset) <= ASSET_MOST
            assert missing.is_error and missing.structured_content["error"]["code"] == "validation_failed"
            assert [(d["field"], d["code"]) for d in missing.structured_content["error"]["details"]] == [
                ("/url", "unreachable")]
            listed = await session.call_tool("list_assets", {"kind": "image", "limit": 5})
            assert not listed.is_error
            unsigned = [{k: v for k, v in a.items() if k != "url"} for a in listed.structured_content["data"]]
            assert unsigned == [{k: v for k, v in asset.items() if k != "url"}]  # each answer signs its URL afresh
            sounds = await session.call_tool("list_assets", {"kind": "audio"})
            assert sounds.structured_content["data"] == []
            found = await session.call_tool("list_assets", {"q": "PHOTO"})  # by name, any case
            assert [a["id"] for a in found.structured_content["data"]] == [asset["id"]]
            assert (await session.call_tool("list_assets", {"q": "logo"})).structured_content["data"] == []
            full = await session.call_tool("list_assets", {"full": True})
            assert full.structured_content["data"][0]["content_type"] == "image/png"
            clips = await session.call_tool("list_assets", {"kind": "video"})
            assert not clips.is_error and clips.structured_content["data"] == []
            wrong = await session.call_tool("list_assets", {"kind": "font"})
            assert wrong.is_error

    anyio.run(session_run)


@contextlib.contextmanager
def mcp_over_http(api_url: str) -> Iterator[str]:
    """``reelfarm mcp --http`` for ``api_url``; yields its /mcp URL once it listens."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "reelfarm", "mcp", "--http", "--port", str(port)], cwd=ROOT,
                               env=_env(REELFARM_API_URL=api_url), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WORK_CEILING_SEC
        while time.monotonic() < deadline:
            assert process.poll() is None, "the MCP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)


@pytest.fixture(scope="module")
def mcp_http(served: Served) -> Iterator[str]:
    with mcp_over_http(served.base) as url:
        yield url


def test_http_serves_each_request_with_its_own_key(served: Served, mcp_http: str) -> None:
    assert httpx.post(mcp_http, json={}).status_code == 401
    _, _, other_key = served.workspace_key("other")
    transcript: list[dict[str, Any]] = []

    async def session_run() -> None:
        async with over_http(mcp_http, served.key) as session:
            video = await create_and_render(session, transcript, local=False)
        async with over_http(mcp_http, other_key) as session:
            blind = await session.call_tool("get_video", {"video_id": video["id"]})
            assert blind.is_error and blind.structured_content["error"]["code"] == "not_found"
            assert (await session.call_tool("list_stories", {})).is_error is False

    anyio.run(session_run)


def test_a_revoked_key_is_refused(served: Served, mcp_http: str) -> None:
    _, key_id, key = served.workspace_key("soon-revoked")

    async def call(session: ClientSession) -> Any:
        return await session.call_tool("list_brand_kits", {})

    async def session_run() -> None:
        async with over_http(mcp_http, key) as session:
            assert not (await call(session)).is_error
            served.admin("revoke-key", key_id)
            refused = await call(session)
            assert refused.is_error and refused.structured_content["error"]["code"] == "unauthorized"
            assert refused.structured_content["error"]["status"] == 401

    anyio.run(session_run)


def test_mcp_with_the_api_unreachable_says_so_in_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run([sys.executable, "-m", "reelfarm", "mcp"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=_env(REELFARM_API_KEY="rf_live_" + "x" * 38, REELFARM_API_URL=url),
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert f"error: the reelfarm API is unreachable: cannot read {url}/api/v1/openapi.json" in done.stderr



def test_over_http_a_server_started_before_the_api_answers_until_it_is_up(tmp_path: Path) -> None:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with mcp_over_http(api) as url:

        async def down() -> None:
            async with over_http(url, "rf_live_" + "x" * 38) as session:
                with pytest.raises(MCPError, match=f"unreachable: cannot read {api}/api/v1/openapi.json"):
                    await session.list_tools()
                answer = await session.call_tool("whoami", {})
                assert answer.is_error and answer.structured_content["error"]["code"] == "unavailable"
                assert answer.structured_content["error"]["url"] == f"{api}/api/v1/openapi.json"

        anyio.run(down)
        process, lines = start_server(tmp_path / "data", port)
        try:
            key, _ = wait_for_key(lines)
            wait_for_health(api)

            async def up() -> None:
                async with over_http(url, key) as session:
                    assert {t.name for t in (await session.list_tools()).tools} == TOOLS
                    me = await session.call_tool("whoami", {})
                    assert not me.is_error and me.structured_content["workspace"]["name"] == "dev"

            anyio.run(up)
        finally:
            stop(process)


def test_the_tool_texts_lead_an_agent_from_an_added_image_to_a_story_video(served: Served) -> None:
    """What the tools say is what works: an asset's `id` (not its `key`) fills a story's image field;
    get_story has one story's fields, list_stories sums each up unless `full` is asked; the whole
    listing stays within its bound with get_story in it."""
    async def session_run() -> None:
        async with over_stdio(served) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            listing = sum(size(t.model_dump(mode="json", by_alias=True, exclude_none=True)) for t in tools.values())
            assert listing <= SCHEMAS_MOST, listing
            said = tools["add_asset_from_url"].description or ""
            assert "`id`" in said and "story's image or video field" in said
            fields_text = tools["create_video"].input_schema["properties"]["fields"]["description"]
            assert "asset's `id`" in fields_text and "get_story" in fields_text
            listed = (await session.call_tool("list_stories", {})).structured_content["data"]
            launch = next(s for s in listed if s["id"] == "product_launch")
            assert "fields" not in launch and "image" in launch["field_names"]
            assert size(listed) * 4 < size((await session.call_tool("list_stories", {"full": True})).structured_content)
            story = await session.call_tool("get_story", {"story_id": "product_launch"})
            assert not story.is_error and "image" in story.structured_content["fields"]["properties"]
            missing = await session.call_tool("get_story", {"story_id": "nope"})
            assert missing.is_error and missing.structured_content["error"]["code"] == "not_found"
            with image_site(png_bytes((64, 64), (9, 8, 7))) as site:
                asset = (await session.call_tool("add_asset_from_url", {"url": f"{site}/photo.png"})).structured_content
            by_key = await session.call_tool("create_video", {"storyId": "product_launch",
                                                              "fields": {"image": asset["key"]}})
            by_id = await session.call_tool("create_video", {"storyId": "product_launch",
                                                             "fields": {"image": asset["id"]}})
            assert by_key.is_error  # what the texts steer away from
            assert not by_id.is_error, by_id.content

    anyio.run(session_run)
