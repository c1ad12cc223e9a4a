"""Pools of render nodes end to end: real ``reelfarm worker`` processes (one tagged ``region=eu``, one
with no tag), a real ``reelfarm serve``, PostgreSQL and Redis of the test's own. The operator limits one
workspace to the pool ``region=eu`` with ``reelfarm farm pool set``. While only the untagged node runs,
that workspace's renders read ``held_up`` ``no_node_in_pool`` and none of their chunks is taken, while
another workspace's renders are drawn there; once a node tagged ``region=eu`` starts, it alone draws
them. A render asked in a pool no live node serves (``region=ap``) waits throughout, saying so."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import httpx

from tests.e2e.test_node_drain import Farm, farm, wait_for  # noqa: F401 - farm is a fixture
from tests.helpers import WORK_CEILING_SEC


def _cli(on: Farm, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(on.env, REELFARM_DATA_DIR=str(on.root / "cli"))
    done = subprocess.run([sys.executable, "-m", "reelfarm", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _render(http: httpx.Client, **body: Any) -> dict[str, Any]:
    story = http.get("/stories").json()["data"][0]
    video = http.post("/videos", json={"storyId": story["id"], "format": "1:1", "durationSec": 6})
    assert video.status_code == 201, video.text
    made = http.post(f"/videos/{video.json()['id']}/renders", json={"format": "1:1", "resolution": 720, "fps": 24,
                                                                    **body})
    assert made.status_code == 202, made.text
    return dict(made.json())


def _drawn_by(on: Farm, render_id: str) -> set[str]:
    """The nodes that ran the render's chunk jobs (RQ's record of each finished job)."""
    chunks = on.chunks(render_id)
    assert chunks and {c["status"] for c in chunks.values()} == {"finished"}, chunks
    return {c["worker_name"] for c in chunks.values()}


def _status(http: httpx.Client, render_id: str) -> dict[str, Any]:
    return dict(http.get(f"/renders/{render_id}").json())


def _ended(http: httpx.Client, render_id: str, what: str) -> dict[str, Any]:
    done = wait_for(lambda: (s := _status(http, render_id))["status"] in ("succeeded", "failed") and s,
                    WORK_CEILING_SEC, what, interval=0.25)
    assert done["status"] == "succeeded", done
    return dict(done)


def _held_up(http: httpx.Client, render_id: str) -> dict[str, Any]:
    return dict(wait_for(lambda: (h := _status(http, render_id)["held_up"]) and h, 60, "held_up to say why"))


def test_a_pools_chunks_go_only_to_its_nodes_and_a_pool_without_one_waits_for_one(farm: Farm) -> None:  # noqa: F811
    farm.start_node("node-any", frame_sec="0.005")
    ours = farm.http.get("/me").json()["workspace"]["id"]
    other = _cli(farm, "admin", "create-workspace", "other", "--plan", "pro", "--credits", "20", "--json")["id"]
    key = _cli(farm, "admin", "create-key", other, "--name", "t", "--json")["key"]
    theirs = httpx.Client(base_url=f"{farm.base}/api/v1", timeout=30, headers={"Authorization": f"Bearer {key}"})
    try:
        wait_for(lambda: {n["name"] for n in _nodes(farm)} == {"node-any"}, WORK_CEILING_SEC, "the node to beat")
        shown = _cli(farm, "farm", "pool", "set", "--workspace", ours, "--pool", "region=eu", "--operator", "ops",
                     "--json")
        assert shown == {"workspace_id": ours, "pools": ["region=eu"], "nodes": {"region=eu": []}}

        limited = [_render(farm.http) for _ in range(2)]
        anywhere = [_render(theirs) for _ in range(2)]
        nowhere = _render(theirs, pool="region=ap")
        assert {r["pool"] for r in limited} == {"region=eu"} and {r["pool"] for r in anywhere} == {""}
        for render, http in [(limited[0], farm.http), (nowhere, theirs)]:
            held = _held_up(http, render["id"])
            assert held["reason"] == "no_node_in_pool" and f"{render['pool']!r}" in held["message"], held

        # the untagged node draws the other workspace's renders and never a chunk of a pool's
        for render in anywhere:
            _ended(theirs, render["id"], "the other workspace's render")
            assert _drawn_by(farm, render["id"]) == {"node-any"}
        for render, http in [(limited[0], farm.http), (limited[1], farm.http), (nowhere, theirs)]:
            waiting = _status(http, render["id"])
            assert (waiting["status"], waiting["progress"], waiting["held_up"]["reason"]) == (
                "queued", 0.0, "no_node_in_pool"), waiting
            assert not [c for c in farm.chunks(render["id"]).values() if c.get("worker_name")]  # none taken

        farm.start_node("node-eu", frame_sec="0.005", REELFARM_NODE_TAGS="region=eu")
        for render in limited:
            assert _ended(farm.http, render["id"], "the pool's render once a node serves it")["held_up"] is None
            assert _drawn_by(farm, render["id"]) == {"node-eu"}
        assert _cli(farm, "farm", "pool", "show", "--workspace", ours, "--json")["nodes"] == {"region=eu": ["node-eu"]}
        waiting = _status(theirs, nowhere["id"])  # region=ap: still no node
        assert (waiting["status"], waiting["held_up"]["reason"]) == ("queued", "no_node_in_pool"), waiting
        assert not [c for c in farm.chunks(nowhere["id"]).values() if c.get("worker_name")]
    finally:
        theirs.close()


def _nodes(on: Farm) -> list[dict[str, Any]]:
    from reelfarm.farm.runtime.nodes import NodeRegistry

    return NodeRegistry(on.redis).live_nodes()
