"""Pools of render nodes as a workspace and its operator see them: the operator limits a workspace's
renders to pools (``reelfarm farm pool set|clear|show`` and ``/api/v1/operator/workspaces/<id>/pools``,
each change in the audit log); a render or variants may name a pool, one of those (400 ``forbidden_pool``
else, ``unknown_pool`` for one that is not a pool, every problem in the one envelope); without one a render
runs in its workspace's default; the Render says its pool; an identical render asked in another pool is the
same render. One workspace's pools never reach another's renders. The farm is not started: renders wait
(the embedded queue, where pools decide nothing: its one host draws everything)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from reelfarm.cli import main
from reelfarm.farm.services.errors import InvalidRequest
from reelfarm.shared.config import Settings
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_renders import _video

ALICE = "a" * 40
OPERATOR = {"Authorization": f"Bearer {ALICE}"}


@pytest.fixture
def settings(tmp_path: Any, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_OPERATOR_KEYS": f"alice:{ALICE}"})


def _ask(client: Any, tenant: Any, video_id: str, **body: Any) -> Any:
    body.setdefault("format", "16:9")
    body.setdefault("resolution", 720)
    return client.post(f"/api/v1/videos/{video_id}/renders", json=body, headers=tenant.headers)


def _made(response: Any) -> dict[str, Any]:
    assert response.status_code == 202, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def test_a_workspaces_pools_decide_where_its_renders_run_and_never_another_workspaces(client, make_tenant) -> None:
    ours, theirs = make_tenant(credits=10), make_tenant(credits=10, name="other")
    limited = client.put(f"/api/v1/operator/workspaces/{ours.workspace_id}/pools",
                         json={"pools": ["region=eu", "region=EU, gpu"]}, headers=OPERATOR)
    assert limited.get_json() == {"workspace_id": ours.workspace_id, "pools": ["region=eu", "gpu,region=eu"]}
    video, copy = _video(client, ours), _video(client, theirs)

    default = _made(_ask(client, ours, video["id"]))
    assert default["pool"] == "region=eu"  # the workspace's first pool
    square = _made(_ask(client, ours, video["id"], format="1:1", pool="region=eu,gpu"))
    assert square["pool"] == "gpu,region=eu"
    again = _made(_ask(client, ours, video["id"], pool="gpu,region=eu"))  # identical: the same render
    assert (again["id"], again["pool"]) == (default["id"], "region=eu")
    refused = assert_error(_ask(client, ours, video["id"], format="9:16", pool="region=ap"), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in refused["details"]] == [("/pool", "forbidden_pool")]
    assert "'region=eu', 'gpu,region=eu'" in refused["details"][0]["message"]
    variants = client.post(f"/api/v1/videos/{video['id']}/variants", headers=ours.headers,
                           json={"formats": ["9:16", "4:5"], "resolution": 720, "pool": "region=ap"})
    assert [d["code"] for d in assert_error(variants, 400, "validation_failed")["details"]] == ["forbidden_pool"]
    variants = client.post(f"/api/v1/videos/{video['id']}/variants", headers=ours.headers,
                           json={"formats": ["9:16", "4:5"], "resolution": 720, "pool": "gpu,region=eu"})
    assert variants.status_code == 202, variants.get_json()
    assert [r["pool"] for r in variants.get_json()["renders"]] == ["gpu,region=eu", "gpu,region=eu"]

    # the other workspace is limited to nothing: any node by default, any pool it names
    assert _made(_ask(client, theirs, copy["id"]))["pool"] == ""
    assert _made(_ask(client, theirs, copy["id"], format="1:1", pool="region=ap"))["pool"] == "region=ap"
    read = client.get(f"/api/v1/renders/{default['id']}", headers=ours.headers).get_json()
    assert read["pool"] == "region=eu" and read["held_up"] is None  # the embedded queue: no pool decides anything

    client.delete(f"/api/v1/operator/workspaces/{ours.workspace_id}/pools", headers=OPERATOR)
    assert _made(_ask(client, ours, _video(client, ours)["id"]))["pool"] == ""
    assert client.get(f"/api/v1/renders/{square['id']}", headers=ours.headers).get_json()["pool"] == "gpu,region=eu"


def test_every_problem_of_a_render_request_is_in_the_one_envelope(client, services, make_tenant) -> None:
    ours = make_tenant(credits=10)
    video = _video(client, ours)
    error = assert_error(_ask(client, ours, video["id"], pool="Region=EU!", resolution=7), 400, "validation_failed")
    assert sorted((d["field"], d["code"]) for d in error["details"]) == [("/pool", "unknown_pool"),
                                                                         ("/resolution", "invalid_choice")]
    assert_error(_ask(client, ours, video["id"], pool=",".join(f"t{i}" for i in range(9))), 400, "validation_failed")

    services.workspace_controls.set_pools("ops", ours.workspace_id, ["region=eu"])
    with pytest.raises(InvalidRequest) as refused:  # the service itself, as the SDK's server reaches it
        services.renders.request(ours.workspace_id, video["id"], "16:9", resolution=7, priority="urgent",
                                 pool="region=ap")
    assert sorted((d["field"], d["code"]) for d in refused.value.details) == [
        ("/pool", "forbidden_pool"), ("/priority", "invalid"), ("/resolution", "out_of_range")]
    with pytest.raises(InvalidRequest) as refused:
        services.renders.request(ours.workspace_id, video["id"], "16:9", resolution=720, pool="no good, Bad!")
    assert [(d["field"], d["code"]) for d in refused.value.details] == [("/pool", "unknown_pool")] * 2  # each tag
    assert "'no good'" in refused.value.details[0]["message"] and "'bad!'" in refused.value.details[1]["message"]
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=ours.headers).get_json()["data"] == []


def test_the_operator_api_sets_shows_and_clears_pools_audited_under_the_keys_name(client, clock, make_tenant) -> None:
    ours, theirs = make_tenant(), make_tenant(name="other")
    path = f"/api/v1/operator/workspaces/{ours.workspace_id}/pools"
    assert client.get(path, headers=OPERATOR).get_json() == {"workspace_id": ours.workspace_id, "pools": []}
    assert_error(client.get(path, headers=ours.headers), 401, "unauthorized")
    bad = assert_error(client.put(path, json={"pools": ["gpu", "Bad!", "x=", ""]}, headers=OPERATOR), 400,
                       "validation_failed")
    assert [d["code"] for d in bad["details"]] == ["unknown_pool"] * 3 and "'Bad!'" in bad["details"][0]["message"]
    assert_error(client.put(path, json={"pools": "gpu"}, headers=OPERATOR), 400, "validation_failed")
    assert_error(client.put("/api/v1/operator/workspaces/no-such/pools", json={"pools": ["gpu"]}, headers=OPERATOR),
                 404, "not_found")

    assert client.put(path, json={"pools": ["gpu", "region=eu"]}, headers=OPERATOR).get_json()["pools"] == \
        ["gpu", "region=eu"]
    assert client.get(path, headers=OPERATOR).get_json()["pools"] == ["gpu", "region=eu"]
    assert client.get(f"/api/v1/operator/workspaces/{theirs.workspace_id}/pools",
                      headers=OPERATOR).get_json()["pools"] == []
    clock.advance(1)
    assert client.delete(path, headers=OPERATOR).get_json()["pools"] == []

    log = client.get(f"/api/v1/operator/audit?action=workspace.set_pools&workspace={ours.workspace_id}", headers=OPERATOR).get_json()["data"]
    assert [(e["actor"], e["workspace_id"], e["details"]) for e in log] == [
        ("key:alice", ours.workspace_id, {"pools": None, "was": ["gpu", "region=eu"]}),
        ("key:alice", ours.workspace_id, {"pools": ["gpu", "region=eu"], "was": None})]


def test_the_pool_command_sets_shows_and_clears_pools_audited(services, make_tenant, db_url, tmp_path) -> None:
    ours, theirs = make_tenant(), make_tenant(name="other")
    env = {"REELFARM_DATA_DIR": str(tmp_path / "cli"), "REELFARM_DATABASE_URL": db_url, "REELFARM_REDIS_URL": ""}

    def farm(*args: str) -> Any:
        return CliRunner().invoke(main, ["farm", "pool", *args], env=env, catch_exceptions=False)

    done = farm("set", "--workspace", ours.workspace_id, "--pool", "region=eu", "--pool", "gpu, region=eu",
                "--operator", "maya", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"workspace_id": ours.workspace_id, "pools": ["region=eu", "gpu,region=eu"],
                                       "nodes": None}  # the embedded mode: no nodes to list
    shown = farm("show", "--workspace", ours.workspace_id)
    assert shown.output.splitlines() == [f"workspace {ours.workspace_id}: region=eu (default)",
                                         f"workspace {ours.workspace_id}: gpu,region=eu"]
    assert farm("show", "--workspace", theirs.workspace_id).output.strip() == \
        f"workspace {theirs.workspace_id}: any node"
    refused = farm("set", "--workspace", ours.workspace_id, "--pool", "Bad!")
    assert refused.exit_code == 2 and "'Bad!'" in refused.output
    assert farm("set", "--workspace", "no-such", "--pool", "gpu").exit_code == 1
    assert farm("clear", "--workspace", ours.workspace_id, "--operator", "maya").output.strip() == \
        f"workspace {ours.workspace_id}: any node"
    assert services.workspaces.get(ours.workspace_id).pools is None

    rows = json.loads(CliRunner().invoke(main, ["admin", "audit", "--action", "workspace.set_pools",
                                                "--workspace", ours.workspace_id, "--json"],
                                         env=env).output)
    assert [(r["actor"], r["workspace_id"], r["details"]) for r in rows] == [
        ("maya", ours.workspace_id, {"pools": None, "was": ["region=eu", "gpu,region=eu"]}),
        ("maya", ours.workspace_id, {"pools": ["region=eu", "gpu,region=eu"], "was": None})]
