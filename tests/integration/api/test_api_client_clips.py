"""Clips through the clients, against the real API served on loopback with its files on the S3
emulator: the SDK uploads a video by a presigned URL (declaring ``video/mp4``) and reads back its
kind, length, rate and sound; the command line uploads one, prints what it is, and fills a story's
video field with an asset id or with ``@FILE`` (uploaded first); the MCP tools upload a file of the
machine (over stdio alone), list videos and make a story video with the clip. SQLite and PostgreSQL."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from reelfarm.client import AsyncClient, Client, uploads
from reelfarm.client.cli.main import main
from tests.integration.api.test_api_asset_uploads import ON_S3, staged
from tests.integration.api.test_api_assets import s3_endpoint, settings  # noqa: F401  (fixtures)
from tests.integration.api.test_api_idempotency import served  # noqa: F401  (fixture: the app on loopback)
from tests.unit.farm.test_media_video import clip

pytestmark = ON_S3
CLIP = clip(size=(64, 36), frames=15, fps=10, audio_sec=1.5)  # 16:9, 1.5 s, with sound


@pytest.fixture
def clip_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.mp4"
    path.write_bytes(CLIP)
    return path


@pytest.fixture
def presigned(services, monkeypatch) -> list[str]:
    """Every file is large enough for a presigned upload; the content types they declared."""
    monkeypatch.setattr(uploads, "PRESIGNED_OVER", 10)
    declared: list[str] = []
    real = services.assets.create_upload

    def noted(workspace_id: str, size: int, content_type: str, *rest: Any, **more: Any) -> Any:
        declared.append(content_type)
        return real(workspace_id, size, content_type, *rest, **more)

    monkeypatch.setattr(services.assets, "create_upload", noted)
    return declared


def test_the_sdk_uploads_a_clip_by_a_presigned_url_and_reads_what_it_is(served, services, tenant,  # noqa: F811
                                                                         clip_file, presigned):
    with Client(api_key=tenant.key, base_url=served) as rf:
        asset = rf.assets.upload(clip_file)
        assert (asset.kind, asset.content_type, asset.bytes) == ("video", "video/mp4", len(CLIP))
        assert (asset.width, asset.height, asset.duration_sec, asset.fps, asset.has_audio) == (64, 36, 1.5, 10.0, True)
        assert asset.thumbnail_url is not None  # the poster
        assert [a.id for a in rf.assets.list(kind="video")] == [asset.id]
    assert presigned == ["video/mp4"] and staged(services, tenant) == []


def _cli(url: str, tenant, *args: str):
    return CliRunner().invoke(main, [*args, "--api-url", url, "--api-key", tenant.key],
                              env={"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None})


def test_the_command_line_uploads_a_clip_and_fills_a_story_field_with_it(served, tenant, clip_file,  # noqa: F811
                                                                          presigned, tmp_path):
    sent = _cli(served, tenant, "assets", "upload", str(clip_file), "--json")
    assert sent.exit_code == 0, sent.output
    asset = json.loads(sent.output)
    shown = _cli(served, tenant, "assets", "get", asset["id"])
    assert f"asset {asset['id']} video video/mp4 {len(CLIP)} bytes 64x36 1.5 s 10 fps with sound" in shown.output

    made = _cli(served, tenant, "videos", "create", "--story", "product_launch", "--field", f"clip=@{clip_file}",
                "--field", "product=@handle", "--format", "9:16", "--duration", "8", "--json")
    assert made.exit_code == 0, made.output
    video = json.loads(made.output)
    doc = video["current_version"]["doc"]
    assert doc["assets"]["clip"] == {"type": "video", "key": asset["key"]}  # the same bytes: the one asset
    assert doc["title"] == "@handle"  # a text field keeps its @
    assert presigned == ["video/mp4", "video/mp4"]

    by_id = _cli(served, tenant, "videos", "create", "--story", "testimonial", "--field", f"clip={asset['id']}",
                 "--duration", "8", "--json")
    assert by_id.exit_code == 0, by_id.output
    version = json.loads(by_id.output)["current_version"]
    assert version["doc"]["scenes"][0]["background"]["asset"] == "clip"
    # 1.5 s played once in a longer scene (the story's other fields hold their samples)
    assert [w["code"] for w in version["lint"] if w["code"] != "sample_value"] == ["clip_too_short"]

    missing = _cli(served, tenant, "videos", "patch", video["id"], "--field", f"clip=@{tmp_path / 'none.mp4'}")
    assert missing.exit_code == 2 and "no file" in missing.output


def test_an_agent_uploads_a_clip_lists_it_and_makes_a_story_video_with_it(served, client, tenant,  # noqa: F811
                                                                          clip_file, presigned, tmp_path):
    pytest.importorskip("mcp_types")
    from reelfarm.client.mcp_server.tools import Toolbox

    document = client.get("/api/v1/openapi.json").get_json()
    toolbox = Toolbox.from_openapi(document, local_files=True)
    offered = {t.name: t for t in toolbox.listing()}
    assert offered["upload_asset"].input_schema["required"] == ["path"]
    assert "upload_asset" not in {t.name for t in Toolbox.from_openapi(document).listing()}  # not over HTTP

    async def report(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def go() -> dict[str, Any]:
        async with AsyncClient(api_key=tenant.key, base_url=served) as rf:
            async def call(name: str, **arguments: Any) -> Any:
                return await toolbox.call(name, arguments, rf, report)
            uploaded = await call("upload_asset", path=str(clip_file))
            return {"uploaded": uploaded, "listed": await call("list_assets", kind="video"),
                    "made": await call("create_video", storyId="announcement", durationSec=8,
                                       fields={"background_video": uploaded.structured_content["id"]}),
                    "missing": await call("upload_asset", path=str(tmp_path / "none.mp4"))}

    answers = anyio.run(go)
    asset = answers["uploaded"].structured_content
    assert not answers["uploaded"].is_error, asset
    assert {k: asset[k] for k in ("kind", "width", "height", "duration_sec", "fps", "has_audio")} == {
        "kind": "video", "width": 64, "height": 36, "duration_sec": 1.5, "fps": 10.0, "has_audio": True}
    assert presigned == ["video/mp4"]
    # the same asset; its download URL is signed anew at each answer (on S3, with the second it was signed at)
    def unsigned(a: dict) -> dict:
        return {**a, "url": a["url"].split("?", 1)[0]}

    assert [unsigned(a) for a in answers["listed"].structured_content["data"]] == [unsigned(asset)]
    made = answers["made"]
    assert not made.is_error, made.content
    doc = client.get(f"/api/v1/videos/{made.structured_content['id']}",
                     headers=tenant.headers).get_json()["current_version"]["doc"]
    assert doc["assets"]["background"] == {"type": "video", "key": asset["key"]}
    missing = answers["missing"]
    assert missing.is_error and missing.structured_content["error"]["code"] == "unreadable_file"
