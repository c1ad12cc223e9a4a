"""An operator's render controls on a real farm: ``reelfarm worker`` nodes, real Redis and
PostgreSQL, the nodes' own dispatcher (its copy of the fair queues kept by events). A workspace
suspended takes no new chunk while another workspace's render runs to the end on the same node,
says so in its renders' ``held_up``, and finishes once resumed; a render lowered to ``low`` yields
to its workspace's normal render; every control, the farm's pause and a node's disable included,
is in the audit log with the operator who gave it."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reelfarm.api.cli import admin_group
from reelfarm.farm.runtime.cli import farm_group, node_group
from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.shared.repos.renders import find_render
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_cli_and_nodes import env_for
from tests.integration.farm.test_node_health import render_to_end
from tests.integration.farm.test_render_embedded import wait_for
from tests.integration.farm.test_worker_faults import Workers, workers  # noqa: F401 - the fixture


def taken(log: str, render_id: str) -> int:
    """Chunks of the render the node took (its log names each job it starts)."""
    return len(set(re.findall(rf"render_chunk\('{re.escape(render_id)}', (\d+)\) \(", log)))


def ask(farm: Farm, workspace: str, title: str, seconds: float = 24) -> dict[str, Any]:
    video = farm.video(workspace, make_doc(seconds, title=title))
    return farm.renders.request(workspace, video, "16:9", resolution=360)  # type: ignore[return-value]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_suspended_workspace_waits_while_another_renders_and_finishes_once_resumed(
        rq_farm: Farm, workers: Workers, redis: Any, redis_url: str, namespace: str,  # noqa: F811
        tmp_path: Path) -> None:
    env = {**env_for(rq_farm, tmp_path, redis_url), "REELFARM_OPERATOR": "ops-erin"}
    ns = ["--namespace", namespace]
    workers.start("node")
    wait_for(lambda: any(n["alive"] for n in NodeRegistry(redis, namespace).nodes()), WORK_CEILING_SEC, 0.2)
    held_ws, free_ws = rq_farm.workspace(credits=10), rq_farm.workspace(credits=10)
    held = ask(rq_farm, held_ws, "held")

    done = CliRunner().invoke(farm_group, ["render", "suspend", "--workspace", held_ws, "--reason", "audit", *ns],
                              env=env)
    assert done.exit_code == 0 and f"render {held['id']}: suspended" in done.output, done.output
    free = ask(rq_farm, free_ws, "free", seconds=12)
    assert render_to_end(rq_farm, free_ws, free["id"])["status"] == "succeeded"
    time.sleep(2)  # rounds have come and gone
    shown = rq_farm.renders.get(held_ws, held["id"])
    assert shown["status"] in ("queued", "running") and shown["held_up"]["reason"] == "suspended"
    before = taken(workers.log("node"), held["id"])
    assert before <= 2, "at most a chunk running and one handed to the node when it was suspended"
    # the earliest chunk waiting is the first the node did not take (none, when the suspension came
    # before the node took the first: seen on a loaded CI-like run)
    assert shown["held_up"]["chunk"] == before and shown["queue"] is None

    back = CliRunner().invoke(farm_group, ["render", "resume", "--workspace", held_ws, *ns], env=env)
    assert back.exit_code == 0 and "resumed" in back.output, back.output
    finished = render_to_end(rq_farm, held_ws, held["id"])
    assert finished["status"] == "succeeded" and finished["held_up"] is None
    with rq_farm.engine.connect() as conn:
        chunks = find_render(conn, held["id"]).chunks  # type: ignore[union-attr]
    assert before < taken(workers.log("node"), held["id"]) == chunks  # each drawn once

    entries = json.loads(CliRunner().invoke(admin_group, ["audit", "--json", "--workspace", held_ws], env=env).output)
    assert [(e["action"], e["actor"], e["target_id"]) for e in entries] == [
        ("render.resume", "ops-erin", held["id"]), ("render.suspend", "ops-erin", held["id"])]
    assert entries[1]["details"]["reason"] == "audit"
    assert json.loads(CliRunner().invoke(admin_group, ["audit", "--json", "--workspace", free_ws], env=env).output) == []


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_lowered_yields_to_its_workspaces_normal_render_and_operators_controls_are_audited(
        rq_farm: Farm, workers: Workers, redis: Any, redis_url: str, namespace: str,  # noqa: F811
        tmp_path: Path) -> None:
    env = {**env_for(rq_farm, tmp_path, redis_url), "REELFARM_OPERATOR": "ops-frank"}
    ns = ["--namespace", namespace]
    node = f"{namespace}node"
    paused = CliRunner().invoke(farm_group, ["pause", "--reason", "lining up", *ns], env=env)
    assert paused.exit_code == 0, paused.output
    workers.start("node")
    wait_for(lambda: any(n["alive"] for n in NodeRegistry(redis, namespace).nodes()), WORK_CEILING_SEC, 0.2)
    workspace = rq_farm.workspace(credits=10)
    first, second = ask(rq_farm, workspace, "first", 12), ask(rq_farm, workspace, "second", 12)

    lowered = CliRunner().invoke(farm_group, ["render", "priority", "low", first["id"], *ns], env=env)
    assert lowered.exit_code == 0 and "priority low" in lowered.output, lowered.output
    assert CliRunner().invoke(farm_group, ["resume", *ns], env=env).exit_code == 0
    assert render_to_end(rq_farm, workspace, first["id"])["status"] == "succeeded"
    ends = {r: rq_farm.renders.get(workspace, r)["finished_at"] for r in (first["id"], second["id"])}
    assert ends[second["id"]] is not None and ends[second["id"]] <= ends[first["id"]], \
        "asked for second, the normal render finished first"

    assert CliRunner().invoke(node_group, ["disable", node, *ns], env=env).exit_code == 0
    assert CliRunner().invoke(node_group, ["enable", node, *ns], env=env).exit_code == 0
    mine = [e for e in json.loads(CliRunner().invoke(admin_group, ["audit", "--json", "--actor", "ops-frank"],
                                                     env=env).output)]
    assert [e["action"] for e in mine][:5] == ["node.enable", "node.disable", "farm.resume", "render.priority",
                                              "farm.pause"]
    assert mine[1]["target_id"] == node and mine[3]["target_id"] == first["id"]
    assert mine[4]["details"] == {"reason": "lining up"}
