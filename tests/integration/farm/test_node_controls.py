"""An operator takes a real node out of work and back (``reelfarm node disable`` / ``enable``, issue
#48): disabled, it takes no chunk while another node renders the whole video, says so in its
state, and keeps it across a restart; enabled, it takes chunks of the next render."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reelfarm.farm.runtime.cli import farm_group, node_group
from reelfarm.farm.runtime.nodes import NodeRegistry
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_cli_and_nodes import env_for
from tests.integration.farm.test_node_health import chunks_taken, render_to_end
from tests.integration.farm.test_render_embedded import wait_for
from tests.integration.farm.test_worker_faults import Workers, workers  # noqa: F401 - the fixture


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_disabled_node_takes_nothing_until_enabled(rq_farm: Farm, workers: Workers, redis: Any,  # noqa: F811
                                                     redis_url: str, namespace: str, tmp_path: Path) -> None:
    registry, quiet = NodeRegistry(redis, namespace), f"{namespace}quiet"
    env = env_for(rq_farm, tmp_path, redis_url)
    workers.start("busy")
    first = workers.start("quiet")
    wait_for(lambda: sum(n["alive"] for n in registry.nodes()) == 2, timeout=WORK_CEILING_SEC, interval=0.2)

    unknown = CliRunner().invoke(node_group, ["disable", "nobody", "--namespace", namespace], env=env)
    assert unknown.exit_code != 0 and "knows no node 'nobody'" in unknown.output
    done = CliRunner().invoke(node_group, ["disable", quiet, "--reason", "new disk", "--namespace", namespace],
                              env=env)
    assert done.exit_code == 0 and "takes no new work" in done.output and "new disk" in done.output
    shown = json.loads(CliRunner().invoke(farm_group, ["status", "--json", "--namespace", namespace], env=env).output)
    assert next(n for n in shown["nodes"] if n["name"] == quiet)["disabled"]["reason"] == "new disk"
    workers.kill(first)  # restarted: still disabled
    workers.start("quiet")
    wait_for(lambda: "takes no job: disabled by" in workers.log("quiet"), timeout=WORK_CEILING_SEC, interval=0.2)
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=360)
    assert render_to_end(rq_farm, workspace, render["id"])["status"] == "succeeded"
    assert chunks_taken(workers.log("quiet")) == 0 and chunks_taken(workers.log("busy")) > 0

    enabled = CliRunner().invoke(node_group, ["enable", quiet, "--namespace", namespace], env=env)
    assert enabled.exit_code == 0 and "takes work again" in enabled.output
    later = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(30)), "16:9", resolution=360)
    assert render_to_end(rq_farm, workspace, later["id"])["status"] == "succeeded"
    assert chunks_taken(workers.log("quiet")) > 0, "back at work: it took chunks of the next render"
    again = CliRunner().invoke(node_group, ["enable", quiet, "--namespace", namespace], env=env)
    assert "was not disabled" in again.output
