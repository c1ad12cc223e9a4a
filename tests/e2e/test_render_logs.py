"""The log lines a node writes for a render carry the id of the request that asked for it and the
workspace's, as fields, on the embedded queue (`reelfarm serve`) and on RQ (`reelfarm worker`), so
one render can be followed from its request to its stitch."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

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


OPERATOR_KEY = "op-key-" + "z" * 32


@pytest.fixture
def operated_farm(tmp_path: Path, farm_database: str, farm_redis: str) -> Iterator[Farm]:
    made = Farm(tmp_path, farm_database, farm_redis, REELFARM_OPERATOR_KEYS=f"oncall:{OPERATOR_KEY}")
    yield made
    made.close()


def _cli(on: Farm, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(on.env, REELFARM_DATA_DIR=str(on.root / "cli"))
    return subprocess.run([sys.executable, "-m", "reelfarm", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_one_renders_lines_from_every_node_are_read_in_one_place(operated_farm: Farm) -> None:
    """Two nodes share a render's chunks; `reelfarm farm render logs` and the operator API give its
    lines from both, in order, and only its own (another render's stay apart)."""
    ops = operated_farm
    ops.start_node("node-a", frame_sec="0.01")
    ops.start_node("node-b", frame_sec="0.01")
    render_id, workspace = _ask(ops.http)
    other_id, _ = _ask(ops.http)
    ops.wait_succeeded(render_id)
    ops.wait_succeeded(other_id)
    wait_for(lambda: "stitched" in _cli(ops, "farm", "render", "logs", render_id).stdout, WORK_CEILING_SEC,
             "the stitch's line among the render's")

    done = _cli(ops, "farm", "render", "logs", render_id, "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {line["render_id"] for line in lines} == {render_id}  # the other render's lines are apart
    assert {line["workspace_id"] for line in lines} == {workspace}
    assert {line["node"] for line in lines} <= {"node-a", "node-b"}
    _assert_followed(lines, render_id, workspace)
    times = [line["time"] for line in lines]
    assert times == sorted(times)
    printed = _cli(ops, "farm", "render", "logs", render_id).stdout
    assert "[stitch]" in printed and "[chunk-0]" in printed, printed

    answer = httpx.get(f"{ops.base}/api/v1/operator/renders/{render_id}/logs",
                       headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert [line["message"] for line in answer.json()["data"]][:len(lines)] == [line["message"] for line in lines]
    refused = httpx.get(f"{ops.base}/api/v1/operator/renders/{render_id}/logs",
                        headers={"Authorization": f"Bearer {ops.key}"}, timeout=30)
    assert refused.status_code == 401  # a workspace's API key does not read the farm's logs
    # the history: both renders, newest first, with the nodes their attempts ran on
    history = _cli(ops, "farm", "render", "history", "--json")
    assert history.returncode == 0, history.stderr
    entries = json.loads(history.stdout)
    assert [e["id"] for e in entries[:2]] == [other_id, render_id]
    first = entries[1]
    assert first["status"] == "succeeded" and first["waited_sec"] is not None and first["drew_sec"] > 0
    assert set(first["nodes"]) <= {"node-a", "node-b"} and first["nodes"]
    assert first["attempts"] >= first["chunks"] + 1 and first["failed_attempts"] == 0  # the chunks and the stitch
    assert {line["node"] for line in lines} <= set(first["nodes"])
    assert render_id in _cli(ops, "farm", "render", "history", "--workspace", workspace).stdout
    assert _cli(ops, "farm", "render", "history", "--workspace",
                "7d3c2a14-0000-4000-8000-000000000008").stdout.strip() == "no renders"
    listed = httpx.get(f"{ops.base}/api/v1/operator/renders?limit=2",
                       headers={"Authorization": f"Bearer {OPERATOR_KEY}"}, timeout=30)
    assert [e["id"] for e in listed.json()["data"]] == [other_id, render_id]
    unknown = _cli(ops, "farm", "render", "logs", "7d3c2a14-0000-4000-8000-000000000009")
    assert unknown.returncode != 0 and "no lines of render" in unknown.stderr
