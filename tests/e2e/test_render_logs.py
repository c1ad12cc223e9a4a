"""The log lines a node writes for a render carry the id of the request that asked for it and the
workspace's, as fields, on the embedded queue (`reelfarm serve`) and on RQ (`reelfarm worker`), so
one render can be followed from its request to its stitch."""
from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_node_drain import Farm, farm, wait_for  # noqa: F401 - farm is a fixture
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_SEC, wait_until

REQUEST_ID = "req-follow-this-render-1"


def _json_lines(text: str) -> list[dict[str, Any]]:
    found = []
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            found.append(json.loads(line[start:]))
        except ValueError:
            continue
    return found


def _read(lines: queue.Queue[str | None], printed: list[str]) -> bool:
    """Move what the server has printed so far into ``printed``; True once its output has ended."""
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return False
        if line is None:
            lines.put(None)  # for the reader after it
            return True
        printed.append(line)


def _ask(http: httpx.Client) -> tuple[str, str]:
    """A video and its render, the render asked for with ``REQUEST_ID``; (render id, workspace id)."""
    workspace = http.get("/me").json()["workspace"]["id"]
    story = http.get("/stories").json()["data"][0]
    video = http.post("/videos", json={"storyId": story["id"], "format": "1:1", "durationSec": 6})
    assert video.status_code == 201, video.text
    render = http.post(f"/videos/{video.json()['id']}/renders", json={"format": "1:1", "resolution": 720, "fps": 24},
                       headers={"X-Request-Id": REQUEST_ID})
    assert render.status_code == 202 and render.headers["X-Request-Id"] == REQUEST_ID, render.text
    return str(render.json()["id"]), str(workspace)


def _assert_followed(lines: list[dict[str, Any]], render_id: str, workspace: str) -> None:
    """The render's task lines (its chunks and its stitch) all carry the request and the workspace."""
    tasks = [line for line in lines if line.get("logger") == "reelfarm.farm" and render_id in line.get("message", "")]
    assert any("chunk 0 stored" in line["message"] for line in tasks), tasks
    assert any("stitched" in line["message"] for line in tasks), tasks
    for line in tasks:
        assert (line.get("request_id"), line.get("workspace_id"), line.get("render_id")) == (
            REQUEST_ID, workspace, render_id), line


def test_an_embedded_render_is_followed_from_its_request_to_its_stitch(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port)
    printed: list[str] = []
    try:
        key, printed = wait_for_key(lines)
        wait_for_health(base)
        with httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            render_id, workspace = _ask(http)
            status = wait_until(lambda: (s := http.get(f"/renders/{render_id}").json()["status"])
                                in ("succeeded", "failed") and s, "the render ending", every=0.25)
            assert status == "succeeded"
        # the stitch's line is written just after the render is marked succeeded
        wait_until(lambda: _read(lines, printed) or any("stitched" in line for line in printed), "the stitch's log line")
    finally:
        stop(process)
        while (line := lines.get(timeout=WORK_CEILING_SEC)) is not None:
            printed.append(line)
    _assert_followed(_json_lines("".join(printed)), render_id, workspace)


def test_a_render_on_rq_nodes_is_followed_from_its_request_to_its_stitch(farm: Farm) -> None:  # noqa: F811
    farm.start_node("node-a", frame_sec="0.001")
    render_id, workspace = _ask(farm.http)
    farm.wait_succeeded(render_id)
    wait_for(lambda: "stitched" in farm.log("node-a"), WORK_CEILING_SEC, "the stitch's log line")
    lines = _json_lines(farm.log("node-a"))
    _assert_followed(lines, render_id, workspace)
    # RQ's own lines about the render's jobs (started, done) too
    about = [line for line in lines if line.get("render_id") == render_id]
    assert any(line.get("logger", "").startswith("rq.") for line in about), about
    assert all((line.get("request_id"), line.get("workspace_id")) == (REQUEST_ID, workspace) for line in about), about
