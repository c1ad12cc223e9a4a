"""The SDK's usage and render estimates, blocking and awaited, and `renders show`'s cost line, against
the app served on 127.0.0.1 (no farm started: nothing renders)."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client, Render, RenderCost
from reelfarm.client.cli.account import render_details
from reelfarm.client.cli.main import main
from tests.integration.api.conftest import START
from tests.integration.api.test_api_client_edits import served  # noqa: F401 - the fixture

DAY = START.date().isoformat()


def test_the_sdk_reads_usage_and_estimates_a_render(served, tenant, create_video):  # noqa: F811
    video = create_video(tenant)
    video_id, frames = video["id"], round(video["current_version"]["doc"]["duration"] * 30)
    with Client(api_key=tenant.key, base_url=served.url) as rf:
        usage = rf.usage(start=DAY, end=DAY, group_by="video")
        estimate = rf.videos.estimate_render(video_id, format="9:16", resolution=720)
    assert (usage.start, usage.end, usage.group_by, usage.renders, usage.cpu_sec, usage.groups) == (
        DAY, DAY, "video", 0, 0.0, [])
    assert estimate.existing_render_id is None and estimate.frames_to_render == frames and estimate.frames_reused == 0
    assert estimate.cpu_sec > 0 and estimate.wall_sec > 0 and estimate.credits == 1 and estimate.format == "9:16"

    async def awaited():
        async with AsyncClient(api_key=tenant.key, base_url=served.url) as rf:
            return (await rf.usage(start=DAY, end=DAY), await rf.videos.estimate_render(video_id, format="1:1"),
                    await rf.videos.estimate_variants(video_id, ["9:16", "1:1"], resolution=720))
    usage_a, estimate_a, variants = anyio.run(awaited)
    assert usage_a.groups is None and usage_a.credits == 0 and estimate_a.frames_to_render == frames
    assert [r.format for r in variants.renders] == ["9:16", "1:1"] and variants.frames_to_render == 2 * frames
    assert variants.credits == 1 and variants.renders[0].cpu_sec == estimate.cpu_sec


def test_renders_show_prints_what_a_render_cost():
    cost = RenderCost.from_dict({"cpu_sec": 12.44, "gpu_sec": None, "wall_sec": 13.0, "frames_rendered": 150,
                                 "frames_reused": 30, "storage_bytes": 2_100_000, "peak_memory_bytes": 310_000_000})
    render = SimpleNamespace(id="r1", format="9:16", resolution=720, fps=30, status="succeeded", progress=1.0,
                             priority="normal", queue=None, url="https://x/r1.mp4", poster_url=None, stream_url=None,
                             error=None, done=True, cost=cost)
    assert render_details(render).splitlines()[-1] == (
        "cost: 12.4 CPU s, 13.0 s wall, 150 frames rendered, 30 reused, 2.1 MB stored, 310 MB peak memory")
    assert Render.__dataclass_fields__["cost"].default is None  # a server without the field


def test_the_command_line_estimates_a_render_and_renders_nothing(served, tenant, create_video):  # noqa: F811
    video = create_video(tenant)
    frames = round(video["current_version"]["doc"]["duration"] * 30)
    said = _cli(served, tenant, "videos", "render", video["id"], "--format", "9:16", "--resolution", "720",
                "--estimate")
    assert said.exit_code == 0, said.output
    assert re.fullmatch(rf"estimate: \d+\.\d CPU s \(\d+\.\d s of tasks\), {frames} frames to render, 0 reused, "
                        r"1 credit\n", said.stdout), said.stdout
    as_json = json.loads(_cli(served, tenant, "videos", "render", video["id"], "--format", "1:1", "--estimate",
                              "--json").stdout)
    assert (as_json["existing_render_id"], as_json["frames_to_render"], as_json["format"]) == (None, frames, "1:1")
    with Client(api_key=tenant.key, base_url=served.url) as rf:
        assert rf.videos.renders(video["id"]) == []  # nothing was asked for


def test_the_mcp_tool_estimates_a_render(served, client, tenant, create_video):  # noqa: F811
    pytest.importorskip("mcp_types")
    from reelfarm.client.mcp_server.tools import Toolbox

    video = create_video(tenant)
    toolbox = Toolbox.from_openapi(client.get("/api/v1/openapi.json").get_json())
    tool = next(t for t in toolbox.listing() if t.name == "estimate_render")
    assert {"video_id", "format", "resolution"} <= set(tool.input_schema["properties"])

    async def report(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def go() -> Any:
        async with AsyncClient(api_key=tenant.key, base_url=served.url) as rf:
            return await toolbox.call("estimate_render", {"video_id": video["id"], "format": "9:16",
                                                          "resolution": 720}, rf, report)
    answer = anyio.run(go)
    assert not answer.is_error, answer
    estimate = answer.structured_content
    assert estimate["existing_render_id"] is None and estimate["credits"] == 1 and estimate["cpu_sec"] > 0
    with Client(api_key=tenant.key, base_url=served.url) as rf:
        assert rf.videos.renders(video["id"]) == []


def _cli(server: Any, tenant: Any, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--api-url", server.url, "--api-key", tenant.key],
                              env={"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None})
