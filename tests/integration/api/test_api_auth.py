"""API keys: who may call, the key lifecycle, plans, and what the database keeps of a key."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event, inspect, text

from reelfarm.shared import keys
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import api_keys as keys_repo
from tests.integration.api.support import assert_error

VIDEO = str(uuid.uuid4())
KIT = str(uuid.uuid4())
# Every route that needs a key, with a body where it takes one.
AUTHED_ROUTES = [
    ("GET", "/api/v1/me", None),
    ("GET", "/api/v1/brand-kits", None),
    ("GET", f"/api/v1/brand-kits/{KIT}", None),
    ("PATCH", f"/api/v1/brand-kits/{KIT}", {"name": "x"}),
    ("GET", "/api/v1/stories", None),
    ("GET", "/api/v1/videos", None),
    ("POST", "/api/v1/videos", {"storyId": "announcement"}),
    ("GET", f"/api/v1/videos/{VIDEO}", None),
    ("PATCH", f"/api/v1/videos/{VIDEO}", {"title": "x"}),
    ("DELETE", f"/api/v1/videos/{VIDEO}", None),
    ("GET", f"/api/v1/videos/{VIDEO}/versions", None),
    ("GET", f"/api/v1/videos/{VIDEO}/versions/1", None),
    ("POST", f"/api/v1/videos/{VIDEO}/versions/1/restore", None),
]
ROUTE_IDS = [f"{m} {p.replace(VIDEO, '{id}').replace(KIT, '{id}')}" for m, p, _ in AUTHED_ROUTES]


def call(client, method, path, body, headers):
    return client.open(path, method=method, json=body, headers=headers)


def unknown_key() -> str:
    """A well-formed key with a valid checksum that no workspace owns."""
    return keys.generate_key()


def mistyped(key: str) -> str:
    """The key with one character of its body changed: the checksum no longer matches."""
    i = len(keys.KEY_PREFIX) + 5
    return key[:i] + ("b" if key[i] != "b" else "c") + key[i + 1:]


@pytest.mark.parametrize(("method", "path", "body"), AUTHED_ROUTES, ids=ROUTE_IDS)
def test_every_route_needs_a_key(client, method, path, body):
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Basic dXNlcjpwYXNz"},
                    {"Authorization": f"Bearer {unknown_key()}"}):
        assert_error(call(client, method, path, body, headers), 401, "unauthorized", details=None)


@pytest.mark.parametrize(("method", "path", "body"), AUTHED_ROUTES, ids=ROUTE_IDS)
def test_starter_plan_is_refused_on_every_route(client, make_tenant, method, path, body):
    starter = make_tenant(plan="starter")
    error = assert_error(call(client, method, path, body, starter.headers), 403, "plan_without_api", details=None)
    assert "plan" in error["message"]


@pytest.mark.parametrize("plan", ["pro", "crypto_pro", "agency"])
def test_plans_with_the_api_are_let_in(client, make_tenant, plan):
    tenant = make_tenant(plan=plan)
    response = client.get("/api/v1/me", headers=tenant.headers)
    assert response.status_code == 200
    assert response.get_json()["workspace"]["plan"] == plan


def test_bad_checksum_is_refused_without_touching_the_database(client, services, tenant):
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(services.engine, "before_cursor_execute", count)
    try:
        bad = assert_error(client.get("/api/v1/me", headers={"Authorization": f"Bearer {mistyped(tenant.key)}"}),
                           401, "unauthorized", details=None)
        assert "checksum" in bad["message"]
        assert statements == []
        short = client.get("/api/v1/me", headers={"Authorization": f"Bearer {tenant.key[:-1]}"})
        assert_error(short, 401, "unauthorized")
        assert statements == []
        # The counter does see queries: an unknown key with a valid checksum is looked up.
        assert_error(client.get("/api/v1/me", headers={"Authorization": f"Bearer {unknown_key()}"}),
                     401, "unauthorized")
        assert statements
    finally:
        event.remove(services.engine, "before_cursor_execute", count)


def test_a_key_works_and_records_last_used(client, services, clock, tenant):
    with services.engine.connect() as conn:
        assert keys_repo.list_api_keys(conn, tenant.workspace_id)[0].last_used_at is None
    clock.advance(30)
    response = client.get("/api/v1/me", headers=tenant.headers)
    assert response.status_code == 200
    with services.engine.connect() as conn:
        record = keys_repo.list_api_keys(conn, tenant.workspace_id)[0]
    assert record.last_used_at == clock.now()


def test_a_busy_key_takes_no_write_transaction_until_its_last_use_is_a_minute_old(client, services, clock, tenant):
    """Authentication reads; the use is written at most once a minute (on SQLite every write
    waits for the file's one write lock, so a burst must not queue behind its own touches)."""
    def last_used():
        with services.engine.connect() as conn:
            return keys_repo.list_api_keys(conn, tenant.workspace_id)[0].last_used_at

    updates: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE API_KEYS"):
            updates.append(statement)

    event.listen(services.engine, "before_cursor_execute", count)
    try:
        assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
        first = last_used()
        assert first == clock.now() and len(updates) == 1
        for _ in range(3):
            clock.advance(19)
            assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
        assert last_used() == first and len(updates) == 1  # 57 s after the first: not yet due
        clock.advance(3)
        assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
        assert last_used() == clock.now() and len(updates) == 2
    finally:
        event.remove(services.engine, "before_cursor_execute", count)


def test_the_scheme_is_case_insensitive(client, tenant):
    response = client.get("/api/v1/me", headers={"Authorization": f"bearer {tenant.key}"})
    assert response.status_code == 200


def test_a_revoked_key_is_refused_on_the_very_next_request(client, services, clock, tenant):
    assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
    with transaction(services.engine) as conn:
        keys_repo.revoke_api_key(conn, clock, tenant.key_id)
    error = assert_error(client.get("/api/v1/me", headers=tenant.headers), 401, "unauthorized", details=None)
    assert "revoked" in error["message"]
    assert_error(client.get("/api/v1/stories", headers=tenant.headers), 401, "unauthorized")


def test_revoking_one_key_leaves_the_others_working(client, services, clock, tenant):
    with transaction(services.engine) as conn:
        _, second = keys_repo.create_api_key(conn, clock, workspace_id=tenant.workspace_id, name="second")
        keys_repo.revoke_api_key(conn, clock, tenant.key_id)
    assert_error(client.get("/api/v1/me", headers=tenant.headers), 401, "unauthorized")
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {second}"}).status_code == 200


def test_an_expired_key_is_refused(client, clock, make_tenant):
    tenant = make_tenant(expires_at=clock.now() + timedelta(hours=1))
    assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
    clock.advance(3599)
    assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
    clock.advance(1)
    error = assert_error(client.get("/api/v1/me", headers=tenant.headers), 401, "unauthorized", details=None)
    assert "expired" in error["message"]


def test_no_plaintext_key_anywhere_in_the_database(client, services, clock, tenant):
    assert client.get("/api/v1/me", headers=tenant.headers).status_code == 200
    with transaction(services.engine) as conn:
        _, second = keys_repo.create_api_key(conn, clock, workspace_id=tenant.workspace_id, name="second")
    secrets = [tenant.key, second, tenant.key[len(keys.KEY_PREFIX):], second[len(keys.KEY_PREFIX):]]
    dumped: list[str] = []
    with services.engine.connect() as conn:
        names = inspect(conn).get_table_names()
        assert {"api_keys", "workspaces", "brand_kits"} <= set(names)
        for name in names:
            for row in conn.execute(text(f'SELECT * FROM "{name}"')):
                dumped.extend(str(value) for value in row)
    everything = "\n".join(dumped)
    assert keys.hash_key(tenant.key) in everything  # the dump does reach the keys table
    for secret in secrets:
        assert secret not in everything
