"""The clients' edits of a video they read: the SDK (blocking and awaited) sends the version a
``Video`` was read at as ``If-Match`` and raises ``VersionConflictError`` naming the current version
when someone saved another since; the command line and the MCP tools take the version an edit was
made from. Against the real API, served on loopback."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from reelfarm.client import AsyncClient, Client, VersionConflictError
from reelfarm.client.cli.main import main


class Served:
    """The app on 127.0.0.1, noting the ``If-Match`` of every PATCH and POST it is sent."""

    def __init__(self, app: Any) -> None:
        self.if_match: list[tuple[str, str | None]] = []

        def noted(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["REQUEST_METHOD"] in ("PATCH", "POST"):
                self.if_match.append((environ["REQUEST_METHOD"], environ.get("HTTP_IF_MATCH")))
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, noted, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def served(app) -> Iterator[Served]:
    found = Served(app)
    found.thread.start()
    yield found
    found.server.shutdown()
    found.thread.join()


def _conflict(raised: pytest.ExceptionInfo[VersionConflictError], now: int) -> None:
    assert (raised.value.status, raised.value.code, raised.value.current_version) == (412, "version_conflict", now)


def test_the_sdk_edits_a_video_it_read_only_at_the_version_it_read(served, tenant, create_video):
    video_id = create_video(tenant, fields={"headline": "One"})["id"]
    with Client(api_key=tenant.key, base_url=served.url) as rf:
        tab_a, tab_b = rf.videos.get(video_id), rf.videos.get(video_id)
        assert tab_a.etag == '"v1"'
        saved = rf.videos.update(tab_a, fields={"headline": "Tagline from A"})
        assert saved.current_version is not None and saved.current_version.number == 2 and saved.etag == '"v2"'
        with pytest.raises(VersionConflictError) as stale:
            rf.videos.update(tab_b, fields={"cta": "Price from B"})
        _conflict(stale, 2)
        with pytest.raises(VersionConflictError) as stale_restore:
            rf.videos.restore(tab_b, 1)
        _conflict(stale_restore, 2)
        with pytest.raises(VersionConflictError):
            rf.videos.update(video_id, title="x", expected_version=1)
        assert [v.number for v in rf.videos.versions(video_id)] == [1, 2]

        merged = rf.videos.update(rf.videos.get(video_id), fields={"cta": "Price from B"})
        restored = rf.videos.restore(merged, 1)
        anyhow = rf.videos.update(video_id, title="Renamed")  # an id alone: whatever is current
        forced = rf.videos.update(tab_b, title="Forced", if_match="*")
    assert [merged.etag, restored.etag, anyhow.etag, forced.title] == ['"v3"', '"v4"', '"v4"', "Forced"]
    assert served.if_match == [("PATCH", '"v1"'), ("PATCH", '"v1"'), ("POST", '"v1"'), ("PATCH", '"v1"'),
                               ("PATCH", '"v2"'), ("POST", '"v3"'), ("PATCH", None), ("PATCH", "*")]


def test_the_awaited_sdk_does_the_same(served, tenant, create_video):
    video_id = create_video(tenant, fields={"headline": "One"})["id"]

    async def go() -> tuple[Any, Any, Any]:
        async with AsyncClient(api_key=tenant.key, base_url=served.url) as rf:
            tab_a, tab_b = await rf.videos.get(video_id), await rf.videos.get(video_id)
            saved = await rf.videos.update(tab_a, fields={"headline": "Tagline from A"})
            with pytest.raises(VersionConflictError) as stale:
                await rf.videos.update(tab_b, fields={"cta": "Price from B"})
            with pytest.raises(VersionConflictError) as stale_restore:
                await rf.videos.restore(tab_b, 1)
            return saved, stale, stale_restore

    saved, stale, stale_restore = anyio.run(go)
    assert saved.etag == '"v2"'
    _conflict(stale, 2)
    _conflict(stale_restore, 2)
    assert served.if_match == [("PATCH", '"v1"'), ("PATCH", '"v1"'), ("POST", '"v1"')]


def _cli(served: Served, tenant: Any, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--api-url", served.url, "--api-key", tenant.key],
                              env={"COLUMNS": "200", "REELFARM_API_KEY": None, "REELFARM_API_URL": None})


def test_the_command_line_edits_at_the_version_it_read_or_was_told(served, tenant, create_video):
    video_id = create_video(tenant, fields={"headline": "One"})["id"]
    patched = _cli(served, tenant, "videos", "patch", video_id, "--field", "headline=Two")
    assert patched.exit_code == 0, patched.output
    assert "version 2 (fields)" in patched.stdout
    for args in (["videos", "patch", video_id, "--title", "x", "--expected-version", "1"],
                 ["videos", "restore", video_id, "1", "--expected-version", "1"]):
        refused = _cli(served, tenant, *args, "--json")
        assert refused.exit_code == 3, refused.output
        error = json.loads(refused.stdout)["error"]
        assert (error["status"], error["code"], error["details"][0]["current_version"]) == (412, "version_conflict", 2)
    restored = _cli(served, tenant, "videos", "restore", video_id, "1", "--expected-version", "2")
    assert restored.exit_code == 0 and "version 3 (restore)" in restored.stdout
    # --field reads the video for its story: the change is sent with the version read
    assert served.if_match == [("PATCH", '"v1"'), ("PATCH", '"v1"'), ("POST", '"v1"'), ("POST", '"v2"')]


def test_the_mcp_tools_take_the_version_an_edit_was_made_from(served, client, tenant, create_video):
    pytest.importorskip("mcp_types")
    from reelfarm.client.mcp_server.tools import Toolbox

    video_id = create_video(tenant, fields={"headline": "One"})["id"]
    toolbox = Toolbox.from_openapi(client.get("/api/v1/openapi.json").get_json())
    offered = {t.name: t.input_schema["properties"] for t in toolbox.listing()}
    assert offered["update_video"]["expected_version"]["type"] == "integer"
    assert "expected_version" in offered["restore_version"]

    async def report(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def go() -> list[Any]:
        async with AsyncClient(api_key=tenant.key, base_url=served.url) as rf:
            return [await toolbox.call("update_video", {"video_id": video_id, "fields": {"headline": "Two"},
                                                        "expected_version": 1}, rf, report),
                    await toolbox.call("update_video", {"video_id": video_id, "fields": {"cta": "Stale"},
                                                        "expected_version": 1}, rf, report),
                    await toolbox.call("restore_version", {"video_id": video_id, "number": 1,
                                                           "expected_version": 1}, rf, report),
                    await toolbox.call("update_video", {"video_id": video_id, "title": "Any"}, rf, report)]

    saved, stale, stale_restore, anyhow = anyio.run(go)
    assert not saved.is_error and saved.structured_content["version"] == 2
    for refused in (stale, stale_restore):
        assert refused.is_error
        error = refused.structured_content["error"]
        assert (error["status"], error["code"], error["details"][0]["current_version"]) == (412, "version_conflict", 2)
    assert not anyhow.is_error
    assert served.if_match == [("PATCH", '"v1"'), ("PATCH", '"v1"'), ("POST", '"v1"'), ("PATCH", None)]
