"""`reelfarm admin ...` against the same database as a running app."""
from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from reelfarm.cli import main
from reelfarm.shared import keys
from tests.integration.api.support import assert_error


@pytest.fixture
def admin(tmp_path, db_url):
    """``admin("create-workspace", "x", ...)`` -> click Result, on the test's database."""
    env = {"REELFARM_DATA_DIR": str(tmp_path / "cli"), "REELFARM_DATABASE_URL": db_url}

    def run(*args: str, ok: bool = True):
        result = CliRunner().invoke(main, ["admin", *args], env=env, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result
    return run


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_create_workspace_and_key_then_use_it(client, admin):
    made = json.loads(admin("create-workspace", "Studio Nine", "--plan", "pro", "--credits", "7", "--json").output)
    assert set(made) == {"id", "name", "plan", "credits"}
    assert (made["name"], made["plan"], made["credits"]) == ("Studio Nine", "pro", 7)
    uuid.UUID(made["id"])

    created = json.loads(admin("create-key", made["id"], "--name", "ci", "--json").output)
    assert set(created) == {"id", "key", "prefix", "expires_at", "plan", "api"}
    assert (created["plan"], created["api"]) == ("pro", True)
    assert keys.checksum_ok(created["key"]) and created["key"].startswith(created["prefix"])
    assert created["expires_at"] is None

    me = client.get("/api/v1/me", headers=bearer(created["key"]))
    assert me.status_code == 200
    assert me.get_json()["workspace"] == {"id": made["id"], "name": "Studio Nine", "plan": "pro", "credits": 7}
    assert me.get_json()["api_key"] == {"id": created["id"], "prefix": created["prefix"]}
    kits = client.get("/api/v1/brand-kits", headers=bearer(created["key"])).get_json()["data"]
    assert [(k["name"], k["is_default"]) for k in kits] == [("Default", True)]


def test_plain_output_prints_the_id_and_the_key(client, admin):
    workspace_id = admin("create-workspace", "Plain", "--plan", "agency").output.strip()
    uuid.UUID(workspace_id)
    key = admin("create-key", workspace_id, "--name", "plain", "--expires-in-days", "30").output.strip()
    assert keys.checksum_ok(key)
    assert client.get("/api/v1/me", headers=bearer(key)).get_json()["workspace"]["plan"] == "agency"


def test_list_keys_shows_prefixes_never_keys(admin):
    workspace_id = admin("create-workspace", "Keys", "--plan", "pro").output.strip()
    first = json.loads(admin("create-key", workspace_id, "--name", "first", "--json").output)
    second = json.loads(admin("create-key", workspace_id, "--name", "second", "--json").output)
    admin("revoke-key", first["id"])

    text = admin("list-keys", workspace_id).output
    listed = json.loads(admin("list-keys", workspace_id, "--json").output)
    for output in (text, json.dumps(listed)):
        assert first["prefix"] in output and second["prefix"] in output
        assert first["key"] not in output and second["key"] not in output
        assert first["key"][len(keys.KEY_PREFIX):] not in output
    lines = text.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(first["id"]) and lines[0].endswith("revoked")
    assert lines[1].startswith(second["id"]) and lines[1].endswith("active")
    assert [(k["id"], k["name"], k["prefix"]) for k in listed] == [
        (first["id"], "first", first["prefix"]), (second["id"], "second", second["prefix"])]
    assert listed[0]["revoked_at"] is not None and listed[1]["revoked_at"] is None
    assert all("key" not in k and "key_hash" not in k for k in listed)


def test_revoke_key_refuses_the_next_request(client, admin):
    workspace_id = admin("create-workspace", "Revoked", "--plan", "pro").output.strip()
    created = json.loads(admin("create-key", workspace_id, "--name", "doomed", "--json").output)
    assert client.get("/api/v1/me", headers=bearer(created["key"])).status_code == 200
    revoked = json.loads(admin("revoke-key", created["id"], "--json").output)
    assert revoked["id"] == created["id"] and revoked["revoked_at"]
    assert_error(client.get("/api/v1/me", headers=bearer(created["key"])), 401, "unauthorized")


def test_each_key_answers_for_its_own_workspace_and_a_revocation_touches_one_key(client, admin):
    """Two workspaces' keys: ``/me`` names each key's own workspace (``ApiKeyService.authenticate``)
    and revoking one (``revoke_any``, the operator's) leaves the other's key working."""
    made = {name: admin("create-workspace", name, "--plan", "pro").output.strip() for name in ("Left", "Right")}
    created = {name: json.loads(admin("create-key", ws, "--name", name, "--json").output) for name, ws in made.items()}
    for name, key in created.items():
        me = client.get("/api/v1/me", headers=bearer(key["key"])).get_json()
        assert me["workspace"] == {"id": made[name], "name": name, "plan": "pro", "credits": 0}
        assert me["api_key"] == {"id": key["id"], "prefix": key["prefix"]}
    admin("revoke-key", created["Left"]["id"])
    assert_error(client.get("/api/v1/me", headers=bearer(created["Left"]["key"])), 401, "unauthorized")
    assert client.get("/api/v1/me", headers=bearer(created["Right"]["key"])).status_code == 200
    assert [k["revoked_at"] is None for k in json.loads(admin("list-keys", made["Right"], "--json").output)] == [True]


def test_add_credits_shows_in_me(client, admin):
    workspace_id = admin("create-workspace", "Credits", "--plan", "crypto_pro", "--credits", "3").output.strip()
    key = admin("create-key", workspace_id, "--name", "k").output.strip()
    assert admin("add-credits", workspace_id, "10").output.strip() == "13"
    assert json.loads(admin("add-credits", "--json", workspace_id, "--", "-5").output) == {
        "workspace_id": workspace_id, "credits": 8}
    assert client.get("/api/v1/me", headers=bearer(key)).get_json()["workspace"]["credits"] == 8
    too_much = admin("add-credits", workspace_id, "--", "-9", ok=False)
    assert too_much.exit_code == 1 and "8 credits" in too_much.output
    assert client.get("/api/v1/me", headers=bearer(key)).get_json()["workspace"]["credits"] == 8


def test_starter_workspace_key_is_refused_by_the_api(client, admin):
    workspace_id = admin("create-workspace", "Starter", "--plan", "starter").output.strip()
    key = admin("create-key", workspace_id, "--name", "k").stdout.strip()  # the warning goes to stderr
    assert_error(client.get("/api/v1/me", headers=bearer(key)), 403, "plan_without_api")


def test_unknown_ids_fail_cleanly(admin):
    missing = str(uuid.uuid4())
    for args in (("create-key", missing, "--name", "x"), ("revoke-key", missing), ("add-credits", missing, "5")):
        result = admin(*args, ok=False)
        assert result.exit_code == 1
        assert missing in result.output and "Traceback" not in result.output


def test_an_operator_sets_a_workspaces_share_of_the_farm_and_takes_it_back(admin, services):
    from reelfarm.farm.runtime.dispatch import workspace_shares

    agency = admin("create-workspace", "Big", "--plan", "agency").output.strip()
    other = admin("create-workspace", "Small", "--plan", "pro").output.strip()
    assert admin("share", agency, "--weight", "8").output.strip() == "weight 8, cap 32"  # the plan's cap kept
    assert json.loads(admin("share", agency, "--cap", "3", "--json").output) == {
        "workspace_id": agency, "plan": "agency", "weight": 8.0, "cap": 3, "overridden": True}
    with services.engine.connect() as conn:
        shares = workspace_shares(conn, {agency, other})
    assert (shares[agency].weight, shares[agency].cap) == (8.0, 3)
    assert (shares[other].weight, shares[other].cap) == (2.0, 16)  # another workspace is untouched
    assert admin("share", agency, "--plan-default").output.strip() == "weight 4, cap 32"
    assert admin("share", str(uuid.uuid4()), "--weight", "2", ok=False).exit_code == 1


def test_a_key_for_a_plan_without_the_api_warns_and_set_plan_opens_it(client, admin):
    workspace_id = admin("create-workspace", "Small", "--plan", "starter").output.strip()
    made = admin("create-key", workspace_id, "--name", "early")
    key = made.stdout.strip()
    assert keys.checksum_ok(key)  # the key alone on stdout, for scripts
    assert "plan starter, which has no API" in made.stderr and f"admin set-plan {workspace_id}" in made.stderr
    assert_error(client.get("/api/v1/me", headers=bearer(key)), 403, "plan_without_api")

    moved = json.loads(admin("set-plan", workspace_id, "pro", "--json").output)
    assert moved == {"workspace_id": workspace_id, "plan": "pro", "api": True, "rate_limit": 600, "locales": True}
    me = client.get("/api/v1/me", headers=bearer(key))
    assert me.status_code == 200 and me.get_json()["workspace"]["plan"] == "pro"
    assert "warning" not in admin("create-key", workspace_id, "--name", "later").stderr

    assert admin("set-plan", "00000000-0000-0000-0000-000000000000", "pro", ok=False).exit_code != 0
    assert admin("set-plan", workspace_id, "gold", ok=False).exit_code != 0
