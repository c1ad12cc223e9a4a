"""``reelfarm farm status`` while a source is down: what each source can still say is shown and the
one that cannot be read is named; ``--watch`` keeps watching through a Redis outage and sees it end;
a database without the farm's tables is one sentence, not a SQL error (issue #48)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from redis import Redis

from reelfarm.farm.runtime.cli import farm_group
from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_cli_and_nodes import env_for
from tests.servers import RedisProcess, free_port

DOWN_DATABASE = "postgresql+psycopg2://reelfarm@127.0.0.1:1/gone"
DOWN_REDIS = "redis://127.0.0.1:1/0"


def status(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(farm_group, ["status", "--json", *args], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_with_the_database_down_nodes_queues_and_loads_are_still_shown(
        rq_farm: Farm, redis: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    workspace = rq_farm.workspace()
    rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", 180)
    NodeRegistry(redis, namespace).beat(f"{namespace}node-a", detect_capabilities(), queues=["render"], state="idle",
                                        current_job="")
    env = {**env_for(rq_farm, tmp_path, redis_url), "REELFARM_DATABASE_URL": DOWN_DATABASE}

    shown = status(env, "--namespace", namespace)

    assert [n["name"] for n in shown["nodes"]] == [f"{namespace}node-a"]
    assert shown["queues"]["render"]["waiting"] > 0  # chunks waiting for their turn, from Redis
    [busy] = shown["workspaces"]
    assert (busy["id"], busy["name"], busy["weight"], busy["waiting"]) == (workspace, None, None, 4)
    assert shown["renders"] == []
    assert set(shown["unavailable"]) == {"database"} and "cannot be read" in shown["unavailable"]["database"]
    text = CliRunner().invoke(farm_group, ["status", "--namespace", namespace], env=env)
    assert text.exit_code == 0 and "unavailable: the database cannot be read" in text.output
    assert "node-a" in text.output and "Traceback" not in text.output


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_with_redis_down_the_renders_in_flight_are_still_shown(rq_farm: Farm, redis_url: str, namespace: str,
                                                                tmp_path: Path) -> None:
    workspace = rq_farm.workspace()
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(6)), "16:9", 180)
    env = {**env_for(rq_farm, tmp_path, redis_url), "REELFARM_REDIS_URL": DOWN_REDIS}

    shown = status(env, "--namespace", namespace)

    [mine] = [r for r in shown["renders"] if r["id"] == render["id"]]  # the database is the session's
    assert (mine["status"], mine["frames_total"]) == ("queued", 180)  # progress: what the store falls back to
    assert shown["nodes"] == [] and shown["queues"] == {}
    assert set(shown["unavailable"]) == {"redis"} and "Redis cannot be read" in shown["unavailable"]["redis"]


def test_a_database_without_the_farms_tables_is_one_sentence(tmp_path: Path) -> None:
    env = {"REELFARM_DATA_DIR": str(tmp_path / "fresh"), "REELFARM_SECRET_KEY": "s" * 48}
    result = CliRunner().invoke(farm_group, ["status"], env=env)
    assert result.exit_code == 0, result.output
    assert "has none of the farm's tables: set REELFARM_DATABASE_URL" in result.output
    assert "no such table" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_watch_keeps_watching_through_a_redis_outage(rq_farm: Farm, namespace: str, tmp_path: Path) -> None:
    port = free_port()
    server = RedisProcess(port=port).start()
    url = f"redis://127.0.0.1:{port}/0"
    NodeRegistry(Redis.from_url(url), namespace).beat(f"{namespace}node-a", detect_capabilities(),
                                                      queues=["render"], state="idle", current_job="")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(env_for(rq_farm, tmp_path, url))
    watching = subprocess.Popen([sys.executable, "-m", "reelfarm", "farm", "status", "--watch", "--json",
                                 "--interval", "0.3", "--namespace", namespace], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def until(seen: Any, limit: float = 30.0) -> dict[str, Any]:
            deadline = time.monotonic() + limit
            while time.monotonic() < deadline:
                line = watching.stdout.readline()  # type: ignore[union-attr]
                if not line:
                    raise AssertionError(f"--watch ended: {watching.stderr.read()}")  # type: ignore[union-attr]
                round_ = json.loads(line)
                if seen(round_):
                    return round_
            raise AssertionError("no such round in time")

        until(lambda r: r["nodes"] and not r["unavailable"])
        server.stop()
        down = until(lambda r: "redis" in r["unavailable"])
        assert down["nodes"] == []
        server = RedisProcess(port=port).start()  # back, empty: the node beats again
        NodeRegistry(Redis.from_url(url), namespace).beat(f"{namespace}node-a", detect_capabilities(),
                                                          queues=["render"], state="idle", current_job="")
        until(lambda r: r["nodes"] and not r["unavailable"])
        assert watching.poll() is None
    finally:
        watching.send_signal(signal.SIGINT)
        watching.wait(10)
        server.stop()
