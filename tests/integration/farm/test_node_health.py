"""Bad nodes set aside and stuck chunks stopped (``reelfarm.farm.runtime.nodehealth``), with real
``reelfarm worker`` processes on real Redis and PostgreSQL.

A node with a full disk: its ``TMPDIR``, where chunks draw and encode, is a 1 MiB tmpfs filled to
its last two pages, mounted in a mount namespace of the node's own (``unshare``, as root: CI is).
It draws every chunk and fails each when the encoder writes the MP4 (``[Errno 28] No space left
on device``); removing the filler from inside its namespace (``nsenter``) is the operator freeing
the disk. A stuck chunk: its work horse stopped with SIGSTOP (a process that no longer runs, as in
a frozen cgroup or a driver call that never returns) while the node's main process heartbeats.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner

from reelfarm.farm.runtime.cli import farm_group, node_group
from reelfarm.farm.runtime.nodecheck import NodeReport, check_farm
from reelfarm.farm.runtime.nodehealth import NodeHealth
from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities
from reelfarm.farm.services.nodehealth import Standing
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_cli_and_nodes import env_for
from tests.integration.farm.test_render_embedded import wait_for
from tests.integration.farm.test_worker_faults import Workers, workers  # noqa: F401 - the fixture

PAGE = 4096
FULL_DISK = f'mount -t tmpfs -o size=1m tmpfs "$0" && head -c {254 * PAGE} /dev/zero > "$0/fill" && exec "$@"'


def full_disk(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The environment and command prefix of a node whose temporary folder ``folder`` is full."""
    folder.mkdir()
    return {"TMPDIR": str(folder)}, ["unshare", "--mount", "sh", "-c", FULL_DISK, str(folder)]


def moving_doc(duration: float) -> dict[str, Any]:
    """The test document with a shape turning all through it: every chunk's MP4 is over the 8 KB a
    full disk leaves (a chunk of the test document's still frames could fit, and succeed there)."""
    doc = make_doc(duration)
    for scene in doc["scenes"]:
        length = scene["duration"]
        scene["layers"].append({"id": "turning", "type": "shape", "shape": "rounded_rect", "x": 0.2, "y": 0.25,
                                "w": 0.15, "h": 0.15, "radius": 0.02, "fill": "#F59E0B",
                                "keyframes": {"rotation": [{"t": 0, "v": 0}, {"t": length, "v": 90 * length}]}})
    return doc


def free_disk(node: subprocess.Popen[bytes], folder: Path) -> None:
    subprocess.run(["nsenter", "--target", str(node.pid), "--mount", "rm", str(folder / "fill")], check=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sample(metrics: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` whose labels include ``labels`` in a Prometheus text page."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(metrics):
        for each in family.samples:
            if each.name == name and labels.items() <= each.labels.items():
                return float(each.value)
    return None


def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def render_to_end(farm: Farm, workspace: str, render_id: str, timeout: float = WORK_CEILING_SEC) -> dict[str, Any]:
    wait_for(lambda: farm.renders.get(workspace, render_id)["status"] in ("succeeded", "failed"), timeout, 0.2)
    return farm.renders.get(workspace, render_id)


def chunks_taken(log: str) -> int:
    return log.count("render_chunk('")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_node_with_a_full_disk_is_set_aside_the_render_finishes_elsewhere_and_a_clear_takes_it_back(
        rq_farm: Farm, workers: Workers, redis: Any, redis_url: str, namespace: str,  # noqa: F811
        tmp_path: Path) -> None:
    registry, bad_name, port = NodeRegistry(redis, namespace), f"{namespace}bad", free_port()
    disk = tmp_path / "bad-tmp"
    env, prefix = full_disk(disk)
    good = workers.start("good")
    bad = workers.start("bad", "--metrics-port", str(port), env=env, prefix=prefix)
    wait_for(lambda: sum(n["alive"] for n in registry.nodes()) == 2, timeout=WORK_CEILING_SEC, interval=0.2)

    workspace = rq_farm.workspace(credits=3)
    # a chunk takes the bad node as long to fail as the good one to draw: with 13 chunks it fails three
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, moving_doc(60)), "16:9", resolution=360)
    done = render_to_end(rq_farm, workspace, render["id"])

    # as text, not a tuple: a tuple's repr is cut in the report, and the bad node's log says why it failed
    assert done["status"] == "succeeded", f"{done['error']}\n--- the bad node's log ---\n{workers.log('bad')}"
    assert rq_farm.balance(workspace) == 2, "charged once"
    standing = registry.standing(bad_name)
    assert standing.failures == 3 and standing.set_aside(time.time()), workers.log("bad")
    assert "No space left on device" in standing.failure and standing.failure.startswith("EncodeError: ")
    log = workers.log("bad")
    assert chunks_taken(log) == 3, "three chunks, then nothing"
    assert log.count("handed back to") == 1 and f"node {bad_name} was set aside" in log
    wait_for(lambda: registry.nodes() and next(n for n in registry.nodes() if n["name"] == bad_name)["state"]
             .startswith("set aside: EncodeError"), timeout=10, interval=0.2)

    # what operators see: farm status (JSON and table), the node's metrics, node check on its host
    status_env = env_for(rq_farm, tmp_path, redis_url)
    shown = json.loads(CliRunner().invoke(farm_group, ["status", "--json", "--namespace", namespace],
                                          env=status_env).output)
    [node] = [n for n in shown["nodes"] if n["name"] == bad_name]
    assert node["set_aside"] is True and node["failures"] == 3 and node["failure"] == standing.failure
    assert node["state"] == f"set aside: {standing.failure}"
    assert not next(n for n in shown["nodes"] if n["name"] == f"{namespace}good")["set_aside"]
    table = CliRunner().invoke(farm_group, ["status", "--namespace", namespace], env={**status_env, "COLUMNS": "400"})
    assert "set aside until" in table.output
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert sample(metrics, "reelfarm_node_set_aside", node=bad_name) == 1
    assert sample(metrics, "reelfarm_node_chunk_failures", node=bad_name) == 3
    assert sample(metrics, "reelfarm_node_disabled", node=bad_name) == 0
    # each chunk that failed on it counts as failed: two RQ retried, the third set it aside (handed back)
    assert sample(metrics, "reelfarm_jobs_total", node=bad_name, kind="render_chunk", outcome="failed") == 3
    assert sample(metrics, "reelfarm_job_retries_total", node=bad_name, kind="render_chunk") == 2
    assert 'outcome="queued"' not in metrics and 'outcome="scheduled"' not in metrics
    assert probe(port, "/livez") == (200, {"status": "ok"})
    code, said = probe(port, "/readyz")
    assert code == 503 and any(r.startswith("set aside after 3 chunk failures") for r in said["reasons"]), said
    report = NodeReport(host={"hostname": socket.gethostname(), "cores": 1}, config={})
    check_farm(report, redis_url, namespace)
    assert any(p.startswith(f"node {bad_name} is set aside by the farm until ") and "No space left" in p
               for p in report.problems)

    # the operator frees the disk and clears the node: it takes work again, and draws it now
    free_disk(bad, disk)
    cleared = CliRunner().invoke(node_group, ["clear", bad_name, "--namespace", namespace], env=status_env)
    assert cleared.exit_code == 0 and f"node {bad_name} takes work again" in cleared.output, cleared.output
    wait_for(lambda: "cleared by an operator" in workers.log("bad"), timeout=10, interval=0.2)
    assert probe(port, "/readyz") == (200, {"status": "ok"})
    workers.kill(good)
    again = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", resolution=360)
    assert render_to_end(rq_farm, workspace, again["id"])["status"] == "succeeded", workers.log("bad")
    assert chunks_taken(workers.log("bad")) > 3 and registry.standing(bad_name).failures == 0
    unknown = CliRunner().invoke(node_group, ["clear", "no-such-node", "--namespace", namespace], env=status_env)
    assert unknown.exit_code == 1 and "the farm knows no node 'no-such-node'" in unknown.output


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_node_set_aside_takes_work_again_after_its_cool_down(rq_farm: Farm, workers: Workers,  # noqa: F811
                                                               redis: Any, namespace: str, tmp_path: Path) -> None:
    registry, bad_name = NodeRegistry(redis, namespace), f"{namespace}bad"
    disk = tmp_path / "bad-tmp"
    env, prefix = full_disk(disk)
    workers.start("good")
    bad = workers.start("bad", env={**env, "REELFARM_NODE_SETASIDE_AFTER": "1", "REELFARM_NODE_COOLDOWN_SEC": "8"},
                        prefix=prefix)
    wait_for(lambda: sum(n["alive"] for n in registry.nodes()) == 2, timeout=WORK_CEILING_SEC, interval=0.2)
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, moving_doc(30)), "16:9", resolution=360)

    standing = wait_for(lambda: (s := registry.standing(bad_name)).set_aside(time.time()) and s)  # once a chunk failed
    free_disk(bad, disk)
    assert render_to_end(rq_farm, workspace, render["id"])["status"] == "succeeded", workers.log("bad")

    wait_for(lambda: "its cool-down is over" in workers.log("bad"), timeout=30, interval=0.2)
    assert time.time() >= standing.until
    assert not next(n for n in registry.nodes() if n["name"] == bad_name)["set_aside"]
    taken = chunks_taken(workers.log("bad"))
    later = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(18)), "16:9", resolution=360)
    assert render_to_end(rq_farm, workspace, later["id"])["status"] == "succeeded"
    assert chunks_taken(workers.log("bad")) > taken, "back at work: it took chunks of the next render"
    assert registry.standing(bad_name) == Standing(), "a chunk that succeeded starts it afresh"


def test_the_last_node_taking_work_is_not_set_aside(redis: Any, namespace: str) -> None:
    registry = NodeRegistry(redis, namespace)
    health = NodeHealth(registry)
    registry.beat("a", detect_capabilities(), queues=["render"], state="idle", current_job=None)
    registry.beat("jobs-only", detect_capabilities(), queues=["jobs"], state="idle", current_job=None)
    for _ in range(3):
        alone = health.failed("a", "EncodeError: no space left on device")
    assert alone.failures == 3 and not alone.set_aside(time.time()), "no other node works a render queue"
    registry.beat("b", detect_capabilities(), queues=["render-gpu", "render"], state="idle", current_job=None)
    assert health.failed("a", "EncodeError: no space left on device").set_aside(time.time())
    assert next(n for n in registry.nodes() if n["name"] == "a")["set_aside"]
    for _ in range(3):
        assert not health.failed("b", "RasterError: the GL context was lost").set_aside(time.time()), \
            "a node set aside does not count as taking work"
    assert health.clear("a") is not None and not registry.standing("a").set_aside(time.time())
    assert health.clear("never-seen") is None


def horse_of(node: subprocess.Popen[bytes]) -> psutil.Process | None:
    """The node's work horse: RQ puts it in a process group of its own (its scheduler is not)."""
    for child in psutil.Process(node.pid).children():
        try:
            if os.getpgid(child.pid) == child.pid:
                return child
        except ProcessLookupError:
            continue
    return None


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_chunk_that_draws_nothing_shows_as_held_up_before_its_node_stops_it(
        rq_farm: Farm, workers: Workers, redis: Any, namespace: str) -> None:  # noqa: F811
    """Its work process frozen, the node still beats: the render says which chunk waits and why
    (``no_frames``) from a quarter of the stall time, not ``running`` with nothing held up until
    the node stops the chunk."""
    stall = 24.0
    node = workers.start("node", env={"REELFARM_CHUNK_STALL_SEC": str(stall)})
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=1080)
    wait_for(lambda: rq_farm.progress.frames(render["id"]) > 0, timeout=WORK_CEILING_SEC, interval=0.01)
    assert rq_farm.renders.get(workspace, render["id"])["held_up"] is None  # drawing
    horse = wait_for(lambda: horse_of(node), timeout=10, interval=0.01)
    horse.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    held = wait_for(lambda: rq_farm.renders.get(workspace, render["id"])["held_up"], timeout=stall, interval=0.2)
    seen_after = time.monotonic() - stopped_at
    assert held["reason"] == "no_frames", held
    assert "has drawn no frame of it for" in held["message"] and f"chunk {held['chunk']}" in held["message"]
    assert seen_after < stall, "said before the node stops the chunk"
    done = render_to_end(rq_farm, workspace, render["id"])
    assert done["status"] == "succeeded", (done["error"], workers.log("node"))
    assert done["held_up"] is None


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_chunk_that_stops_drawing_is_stopped_and_the_render_succeeds_on_its_retry(
        rq_farm: Farm, workers: Workers, redis: Any, namespace: str) -> None:  # noqa: F811
    stall, name = 3.0, f"{namespace}node"
    node = workers.start("node", env={"REELFARM_CHUNK_STALL_SEC": str(stall)})
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=1080)
    wait_for(lambda: rq_farm.progress.frames(render["id"]) > 0, timeout=WORK_CEILING_SEC, interval=0.01)
    horse = wait_for(lambda: horse_of(node), timeout=10, interval=0.01)
    horse.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    running = redis.hget(f"rq:worker:{name}", "current_job") or b""
    assert b"-chunk-" in running, f"the horse stopped runs {running!r}, not a chunk"

    wait_for(lambda: not horse.is_running(), timeout=30, interval=0.1)
    assert time.monotonic() - stopped_at < stall + 1 + 5, "stopped within the stall time and one look more"
    done = render_to_end(rq_farm, workspace, render["id"])
    assert done["status"] == "succeeded", (done["error"], workers.log("node"))
    assert rq_farm.balance(workspace) == 2, "charged once"
    log = workers.log("node")
    assert log.count(f"is stuck (no frame drawn for {stall:g} s): stopping it") == 1
    assert "enqueued for retry" in log
    assert NodeRegistry(redis, namespace).standing(name).failures == 0, "its next chunk succeeded"
