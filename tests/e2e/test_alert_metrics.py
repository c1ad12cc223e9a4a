"""Every metric and label the alert rules (deploy/prometheus/alerts.yml) use is there when a real farm
fails: a real ``reelfarm serve`` on PostgreSQL and Redis with its metrics token, a node that draws,
and a node whose disk is full (its chunks fail; it is set aside), scraped as Prometheus would (the
API's /metrics with the token, the failing node's metrics port). Then the node that drew is killed
and a render waits with no node to take it: the state the alerts are for."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.test_alert_rules import SCRAPE_LABELS, rule_usage
from tests.e2e.test_node_drain import Farm, end_tree, wait_for
from tests.e2e.test_serve import free_port
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.test_node_health import full_disk

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "m" * 40

Series = list[tuple[str, dict[str, str], float]]


def scrape(url: str, **headers: str) -> Series:
    answer = httpx.get(url, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return [(s.name, dict(s.labels), float(s.value)) for family in text_string_to_metric_families(answer.text)
            for s in family.samples]


def value(series: Series, name: str, **labels: str) -> float | None:
    found = [v for n, have, v in series if n == name and labels.items() <= have.items()]
    return found[0] if found else None


@pytest.fixture
def farm(tmp_path: Path, farm_database: str, farm_redis: str) -> Iterator[Farm]:
    made = Farm(tmp_path, farm_database, farm_redis, REELFARM_METRICS_TOKEN=TOKEN)
    yield made
    made.close()


def start_node(farm: Farm, name: str, *extra: str, env: dict[str, str] | None = None,
               prefix: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    environ.update(farm.env, REELFARM_DATA_DIR=str(farm.root / name), REELFARM_PUBLIC_URL=farm.base,
                   PYTHONUNBUFFERED="1", PACED_FRAME_SEC="0.02", **(env or {}))
    environ.setdefault("TMPDIR", str(farm.root))
    log = open(farm.root / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    node = subprocess.Popen([*prefix, sys.executable, "-m", "tests.paced", "worker", "--queues", "render,jobs",
                             "--name", name, *extra], cwd=ROOT, env=environ, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    farm.nodes.append(node)
    return node


def test_the_series_the_alert_rules_use_are_exported_by_a_failing_farm(farm: Farm, tmp_path: Path) -> None:
    from reelfarm.farm.runtime.nodes import NodeRegistry

    registry, port = NodeRegistry(farm.redis), free_port()
    good = start_node(farm, "good")
    env, prefix = full_disk(tmp_path / "bad-tmp")
    start_node(farm, "bad", "--metrics-port", str(port), env={**env, "REELFARM_NODE_SETASIDE_AFTER": "1"},
               prefix=tuple(prefix))
    wait_for(lambda: {"good", "bad"} <= set(registry.live()), WORK_CEILING_SEC, "both nodes alive")

    # renders until one of the full disk's node's chunks has failed there and set it aside
    deadline = time.monotonic() + WORK_CEILING_SEC
    while not registry.standing("bad").set_aside(time.time()):
        assert time.monotonic() < deadline, farm.log("bad")
        farm.wait_succeeded(farm.request_render())
    end_tree(good)
    wait_for(lambda: "good" not in registry.live(), WORK_CEILING_SEC, "the killed node gone")
    waiting = farm.request_render()  # no node takes it

    def scraped() -> tuple[Series, Series] | None:
        api = scrape(f"{farm.base}/metrics", Authorization=f"Bearer {TOKEN}")
        node = scrape(f"http://127.0.0.1:{port}/metrics")
        loaded = value(api, "reelfarm_workspace_chunks_waiting") is not None
        return (api, node) if loaded and value(api, "reelfarm_workspace_oldest_queued_seconds") else None

    api, node = wait_for(scraped, WORK_CEILING_SEC, "the waiting render on /metrics", interval=1)
    assert httpx.get(f"{farm.base}/metrics", timeout=30).status_code == 401  # the token is needed
    series = api + node
    for name, labels in rule_usage().items():
        having = [have for n, have, _ in series if n == name]
        assert having, f"{name} is used by the alert rules and exported by no scraped process"
        for label, values in labels.items():
            assert label in SCRAPE_LABELS or any(label in have for have in having), (name, label)
            for wanted in values:
                assert any(have.get(label) == wanted for have in having), (name, label, wanted)

    # what those series say of this failing farm
    assert value(node, "reelfarm_jobs_total", node="bad", kind="render_chunk", outcome="failed") == 1
    assert value(node, "reelfarm_node_set_aside", node="bad") == 1
    assert value(node, "reelfarm_node_heartbeat_age_seconds", node="bad") < 15
    assert value(api, "reelfarm_nodes", state="working") == 0 and value(api, "reelfarm_nodes", state="set_aside") == 1
    assert value(api, "reelfarm_dependency_up", dependency="database") == 1
    assert value(api, "reelfarm_dependency_up", dependency="redis") == 1
    assert value(api, "reelfarm_dispatch_paused") == 0
    assert value(api, "reelfarm_workspace_oldest_queued_seconds", workspace="dev") > 0
    waiting_chunks = sum(v for n, _, v in api if n in ("reelfarm_workspace_chunks_waiting", "reelfarm_queue_depth"))
    assert waiting_chunks > 0  # in its turn's line, or dispatched to an RQ queue no node takes from
    assert farm.render(waiting)["status"] == "queued"
