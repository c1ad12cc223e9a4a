"""``reelfarm worker`` / ``reelfarm farm status`` as a user runs them, and the node registry."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reelfarm.farm.runtime.cli import COMMANDS, farm_group, worker_command
from reelfarm.farm.runtime.nodes import Capabilities, NodeRegistry, detect_capabilities
from tests.helpers import WORK_CEILING_SEC, hung
from tests.integration.farm.conftest import SECRET, Farm, make_doc


def env_for(farm: Farm, tmp_path: Path, redis_url: str | None = None) -> dict[str, str]:
    env = {"REELFARM_DATABASE_URL": farm.engine.url.render_as_string(hide_password=False),
           "REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_SECRET_KEY": SECRET}
    if redis_url:
        env["REELFARM_REDIS_URL"] = redis_url
    return env


def test_commands_are_exported() -> None:
    assert [c.name for c in COMMANDS] == ["worker", "farm", "node"]


def test_a_node_asked_for_nvenc_where_it_cannot_be_had_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    env = {"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_REDIS_URL": "redis://127.0.0.1:9/0"}
    result = CliRunner().invoke(worker_command, ["--encoder", "nvenc"], env=env)
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: NVENC cannot be used: ") and "Traceback" not in result.output
    via_env = CliRunner().invoke(worker_command, [], env={**env, "REELFARM_ENCODER": "nvenc"})
    assert via_env.exit_code == 1 and "NVENC cannot be used" in via_env.output


def test_worker_explains_that_embedded_mode_needs_none(tmp_path: Path) -> None:
    result = CliRunner().invoke(worker_command, [], env={"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_REDIS_URL": ""})
    assert result.exit_code == 1
    assert "embedded mode" in result.output and "REELFARM_REDIS_URL" in result.output


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_status_of_the_embedded_mode(embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace()
    render = embedded.renders.request(workspace, embedded.video(workspace, make_doc(6)), "1:1", 180)

    result = CliRunner().invoke(farm_group, ["status", "--json"], env=env_for(embedded, tmp_path))

    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["mode"] == "embedded" and status["nodes"] == []
    # two scenes; scene one's leading second and the crossfade chunks of their own
    assert status["queues"] == {"render": {"queued": 4, "deferred": 1}}
    [busy] = status["workspaces"]
    assert (busy["id"], busy["name"], busy["running"], busy["waiting"], busy["waiting_frames"]) == \
        (workspace, "acme", 0, 4, 180)
    assert (busy["weight"], busy["cap"], busy["share"]) == (2.0, 16, 1.0)
    [shown] = status["renders"]
    assert (shown["id"], shown["status"], shown["frames_done"], shown["frames_total"], shown["chunks"]) == \
        (render["id"], "queued", 0, 180, 4)
    table = CliRunner().invoke(farm_group, ["status"], env={**env_for(embedded, tmp_path), "COLUMNS": "80"})
    assert table.exit_code == 0 and "renders in flight (1)" in table.output and "mode: embedded" in table.output
    assert f"  {render['id']} queued\n    1:1 180p30, x264/cpu; 0/180 frames; 0.0 frames/s; 0.0 s\n" in table.output
    assert max(len(line) for line in table.output.splitlines()) <= 80, table.output


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_status_watch_shows_each_round_until_interrupted(embedded: Farm, tmp_path: Path) -> None:
    """``--watch --json``: one JSON line per round, a change seen in the next round, one Ctrl-C ends it cleanly."""
    workspace = embedded.workspace()
    first = embedded.renders.request(workspace, embedded.video(workspace, make_doc(6)), "1:1", 180)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(env_for(embedded, tmp_path))
    watching = subprocess.Popen([sys.executable, "-m", "reelfarm", "farm", "status", "--watch", "--json",
                                 "--interval", "0.5"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    try:
        lines = _lines_of(watching)
        rounds = [_next_round(lines)]
        second = embedded.renders.request(workspace, embedded.video(workspace, make_doc(6)), "16:9", 180)
        while len(rounds[-1]["renders"]) < 2:
            rounds.append(_next_round(lines))
        assert [r["id"] for r in rounds[0]["renders"]] == [first["id"]]
        assert sorted(r["id"] for r in rounds[-1]["renders"]) == sorted([first["id"], second["id"]])
        assert rounds[-1]["queues"]["render"]["queued"] == 2 * rounds[0]["queues"]["render"]["queued"] > 0
        assert isinstance(rounds[-1]["renders"][0]["fps"], int)
        watching.send_signal(signal.SIGINT)
        # one Ctrl-C ends it cleanly; how soon is the interpreter's exit, slow on a loaded machine
        try:
            watching.wait(timeout=WORK_CEILING_SEC)
        except subprocess.TimeoutExpired:
            raise AssertionError(hung("farm status --watch ending on Ctrl-C")) from None
        assert watching.stderr is not None
        err = watching.stderr.read()
    finally:
        watching.kill()
    assert watching.returncode == 0 and "Traceback" not in err, err


def _lines_of(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """The lines ``process`` prints, as they come (None once its output ends)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next_round(lines: queue.Queue[str | None]) -> dict[str, Any]:
    try:
        line = lines.get(timeout=WORK_CEILING_SEC)
    except queue.Empty:
        raise AssertionError(hung("the next round of farm status --watch")) from None
    assert line is not None, "farm status --watch ended before it was interrupted"
    return json.loads(line)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_status_of_a_farm_shows_nodes_queues_and_renders(rq_farm: Farm, redis: Any, redis_url: str,
                                                         namespace: str, tmp_path: Path) -> None:
    workspace = rq_farm.workspace()
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", 180)
    NodeRegistry(redis, namespace).beat(f"{namespace}node-a", detect_capabilities(), queues=["render"],
                                        state="busy", current_job="render-x-chunk-0")

    result = CliRunner().invoke(farm_group, ["status", "--json", "--namespace", namespace],
                                env=env_for(rq_farm, tmp_path, redis_url))

    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["mode"] == "farm"
    [node] = status["nodes"]
    assert (node["name"], node["alive"], node["state"], node["current_job"]) == \
        (f"{namespace}node-a", True, "busy", "render-x-chunk-0")
    assert (node["hostname"], node["pid"], node["cores"]) == (socket.gethostname(), os.getpid(), os.cpu_count())
    assert node["gpu"] is None and node["nvenc"] is False  # no GPU on this machine
    assert node["queues"] == ["render"] and isinstance(node["last_seen"], float)
    assert node["encoder"] == "x264"
    # no worker is idle: the chunks wait for their turn (reelfarm.farm.runtime.dispatch), the stitch for them
    assert status["queues"]["render"] == {"queued": 0, "waiting": 4, "started": 0, "deferred": 1, "scheduled": 0,
                                          "failed": 0}
    other = rq_farm.workspace()
    rq_farm.renders.request(other, rq_farm.video(other, make_doc(6)), "16:9", 180)
    status = json.loads(CliRunner().invoke(farm_group, ["status", "--json", "--namespace", namespace],
                                           env=env_for(rq_farm, tmp_path, redis_url)).output)
    assert sorted((w["id"], w["waiting"], w["share"]) for w in status["workspaces"]) == \
        sorted([(workspace, 4, 0.5), (other, 4, 0.5)])
    assert any(r["status"] == "queued" for r in status["renders"])
    table = CliRunner().invoke(farm_group, ["status", "--namespace", namespace],
                               env={**env_for(rq_farm, tmp_path, redis_url), "COLUMNS": "80"})
    assert table.exit_code == 0 and f"{namespace}node-a: busy, job render-x-chunk-0" in table.output
    # the session's PostgreSQL database holds other tests' renders too: this one is among those in flight
    assert "workspaces (fair dispatch)" in table.output and re.search(r"renders in flight \(\d+\)", table.output)
    assert f"  {render['id']} queued\n" in table.output, table.output
    assert max(len(line) for line in table.output.splitlines()) <= 80, table.output


def test_node_liveness(redis: Any, namespace: str) -> None:
    registry = NodeRegistry(redis, namespace)
    caps = detect_capabilities()
    registry.beat("alive", caps, queues=["render"], state="idle", current_job=None)
    gone = subprocess.Popen(["true"])
    gone.wait()
    registry.beat("killed", Capabilities(caps.hostname, gone.pid, 2, None, False, pid_ns=caps.pid_ns),
                  queues=["render"], state="busy", current_job="j")
    # a container on the host's network: this hostname, pids of its own PID namespace (its pid is no
    # process here, or another one): judged by its beats, as a node of another host
    registry.beat("contained", Capabilities(caps.hostname, gone.pid, 2, None, False, pid_ns="pid:[1]"),
                  queues=["render"], state="busy", current_job="j")
    registry.beat("older", Capabilities(caps.hostname, gone.pid, 2, None, False), queues=["render"],
                  state="busy", current_job="j")  # a release that did not say its namespace: the same
    registry.beat("quiet", Capabilities("elsewhere", 1, 2, None, False), queues=["render"], state="busy",
                  current_job="j")
    redis.zadd(registry.seen_key, {"quiet": time.time() - 30})  # silent for 30 s: gone, its record still kept
    registry.beat("stopped", caps, queues=["render"], state="idle", current_job=None)
    registry.mark_stopped("stopped")

    assert caps.pid_ns.startswith("pid:[")
    assert [registry.is_dead(n) for n in ("alive", "killed", "contained", "older", "quiet", "stopped",
                                          "never-seen")] == [False, True, False, False, True, True, False]
    assert {n["name"]: n["alive"] for n in registry.nodes()} == \
        {"alive": True, "killed": False, "contained": True, "older": True, "quiet": False, "stopped": False}
