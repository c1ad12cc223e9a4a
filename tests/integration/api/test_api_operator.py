"""The operator API (``/api/v1/operator``): only an operator key opens it (none set: 404; an API
key or none: 401); the farm's status; a render's and a workspace's controls, each recorded in the
audit log under ``key:<name>``, one workspace's control leaving another's renders alone; the audit
log read back. The farm is not started: renders wait (the embedded queue)."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reelfarm.shared.config import Settings
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_render_controls import _render

ALICE = "a" * 40
OPERATOR = {"Authorization": f"Bearer {ALICE}"}


@pytest.fixture
def settings(tmp_path: Any, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_OPERATOR_KEYS": f"alice:{ALICE},bob:{'b' * 40}"})


def test_only_an_operator_key_opens_it(client, services, tenant) -> None:
    assert client.get("/api/v1/operator/farm", headers=OPERATOR).status_code == 200
    assert_error(client.get("/api/v1/operator/farm"), 401, "unauthorized")
    assert_error(client.get("/api/v1/operator/farm", headers=tenant.headers), 401, "unauthorized")
    assert_error(client.post("/api/v1/operator/renders/x/suspend", headers=tenant.headers), 401, "unauthorized")
    services.settings = dataclasses.replace(services.settings, operator_keys=())
    assert_error(client.get("/api/v1/operator/farm", headers=OPERATOR), 404, "not_found")


def test_controls_over_http_are_audited_under_the_keys_name(client, clock, make_tenant) -> None:
    mine, theirs = make_tenant(credits=10), make_tenant(credits=10)
    held, other = _render(client, mine), _render(client, theirs)

    done = client.post(f"/api/v1/operator/workspaces/{mine.workspace_id}/suspend", json={"reason": "billing"},
                       headers=OPERATOR)
    assert done.status_code == 200, done.get_json()
    assert [(d["render_id"], d["changed"]) for d in done.get_json()] == [(held["id"], True)]
    assert client.get(f"/api/v1/renders/{held['id']}", headers=mine.headers).get_json()["held_up"]["reason"] == \
        "suspended"
    assert client.get(f"/api/v1/renders/{other['id']}", headers=theirs.headers).get_json()["held_up"] is None

    clock.advance(1)
    assert_error(client.post(f"/api/v1/operator/renders/{held['id']}/priority", json={"priority": "urgent"},
                             headers=OPERATOR), 400, "validation_failed")
    lowered = client.post(f"/api/v1/operator/renders/{held['id']}/priority", json={"priority": "low"},
                          headers=OPERATOR).get_json()
    assert lowered[0]["changed"] and lowered[0]["priority"] == "low"
    clock.advance(1)
    resumed = client.post(f"/api/v1/operator/renders/{held['id']}/resume", headers=OPERATOR).get_json()
    assert resumed[0]["changed"] and resumed[0]["chunks"] == held["queue"]["chunks_waiting"]
    assert_error(client.post("/api/v1/operator/renders/no-such-render/suspend", headers=OPERATOR), 404, "not_found")
    assert_error(client.post(f"/api/v1/operator/renders/{held['id']}/explode", headers=OPERATOR), 404, "not_found")
    assert_error(client.post("/api/v1/operator/farm/pause", headers=OPERATOR), 409, "not_a_farm")

    log = client.get(f"/api/v1/operator/audit?workspace={mine.workspace_id}", headers=OPERATOR).get_json()["data"]
    assert [(e["action"], e["actor"]) for e in log] == [
        ("render.resume", "key:alice"), ("render.priority", "key:alice"), ("render.suspend", "key:alice")]
    assert log[2]["details"]["reason"] == "billing"
    assert client.get(f"/api/v1/operator/audit?workspace={theirs.workspace_id}",
                      headers=OPERATOR).get_json()["data"] == []
    assert_error(client.get("/api/v1/operator/audit?limit=0", headers=OPERATOR), 400, "validation_failed")


def test_pause_and_resume_on_a_farm(client, services, clock, redis_url: str) -> None:
    """On a farm (its queue on Redis, a namespace of the test's own) pause and resume over HTTP
    are the farm's (``fair:paused``), audited once each."""
    import secrets

    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.runtime.wiring import make_redis

    namespace = f"t{secrets.token_hex(4)}"
    services.farm.queue = RQQueue(make_redis(redis_url), namespace=namespace)
    paused = client.post("/api/v1/operator/farm/pause", json={"reason": "upgrade"}, headers=OPERATOR).get_json()
    assert paused["by"] == "key:alice" and paused["reason"] == "upgrade" and paused["changed"]
    assert services.farm.queue.dispatcher.paused()["by"] == "key:alice"
    again = client.post("/api/v1/operator/farm/pause", json={"reason": "again"}, headers={
        "Authorization": f"Bearer {'b' * 40}"}).get_json()
    assert again["by"] == "key:alice" and not again["changed"]  # the first pause stands
    assert client.get("/api/v1/operator/farm", headers=OPERATOR).get_json()["paused"]["reason"] == "upgrade"
    clock.advance(1)
    assert client.post("/api/v1/operator/farm/resume", headers=OPERATOR).get_json() == {"resumed": True}
    assert client.post("/api/v1/operator/farm/resume", headers=OPERATOR).get_json() == {"resumed": False}
    log = client.get("/api/v1/operator/audit?action=farm.&actor=key:alice", headers=OPERATOR).get_json()["data"]
    assert [e["action"] for e in log[:2]] == ["farm.resume", "farm.pause"]
    assert not client.get("/api/v1/operator/audit?action=farm.&actor=key:bob", headers=OPERATOR).get_json()["data"]
