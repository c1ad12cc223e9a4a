"""The console over a real database (SQLite and PostgreSQL), two workspaces side by side: users and
one-time links, sign-in and its throttle, sessions versus API keys, CSRF, and workspace scoping.
"""
from __future__ import annotations

import re
import secrets
import uuid

import pytest
from flask.testing import FlaskClient

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import users as users_repo
from tests.integration.api.conftest import Tenant
from tests.integration.console.conftest import PASSWORD, csrf_token


class _Emails(dict):
    """A fresh address per name and test run: the PostgreSQL database is shared by the session."""

    def __missing__(self, name: str) -> str:
        self[name] = f"{name}-{secrets.token_hex(4)}@example.com"
        return self[name]


EMAIL = _Emails()


@pytest.fixture(autouse=True)
def _fresh_emails() -> None:
    EMAIL.clear()



def _user(app, tenant: Tenant, email: str, role: str = "member", operator: bool = False) -> str:
    """A user with their password set through their link; returns the link's token."""
    accounts = app.extensions["reelfarm"].accounts
    made = accounts.create_user(tenant.workspace_id, email, role=role, is_operator=operator, public_url="http://x")
    token = made.link.rsplit("/", 1)[1]
    accounts.use_link(token, PASSWORD)
    return token


def _sign_in(client: FlaskClient, email: str, password: str = PASSWORD) -> int:
    response = client.post("/app/sign-in", data={"csrf_token": csrf_token(client), "email": email,
                                                 "password": password})
    return response.status_code


def test_links_work_once_expire_and_belong_to_one_user(app, services, clock, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    accounts = services.accounts
    first = accounts.create_user(acme.workspace_id, EMAIL["ann"].title(), role="owner", public_url="http://x")
    second = accounts.create_user(other.workspace_id, EMAIL["bob"], public_url="http://x")
    assert first.user.email == EMAIL["ann"] and first.link.startswith("http://x/app/sign-in/link/")
    with services.engine.connect() as conn:
        assert [u.email for u in users_repo.list_users(conn, acme.workspace_id)] == [EMAIL["ann"]]
        assert [u.email for u in users_repo.list_users(conn, other.workspace_id)] == [EMAIL["bob"]]
        stored = users_repo.find_user_by_email(conn, EMAIL["ann"])
    token = first.link.rsplit("/", 1)[1]
    assert token not in str(stored) and stored.link_hash == users_repo.hash_token(token)
    with pytest.raises(users_repo.EmailTaken):
        accounts.create_user(other.workspace_id, EMAIL["ann"].upper(), public_url="http://x")

    client = app.test_client()
    path = f"/app/sign-in/link/{token}"
    assert client.get(path).status_code == 200
    csrf = csrf_token(client, path)
    mismatch = client.post(path, data={"csrf_token": csrf, "password": PASSWORD, "confirm": "other"})
    assert mismatch.status_code == 400
    used = client.post(path, data={"csrf_token": csrf, "password": PASSWORD, "confirm": PASSWORD})
    assert used.status_code == 302 and used.headers["Location"] == "/app/videos"
    assert client.get(path).status_code == 410  # once only

    clock.advance(hours=25)
    late = second.link.rsplit("/", 1)[1]
    assert app.test_client().get(f"/app/sign-in/link/{late}").status_code == 410
    with transaction(services.engine) as conn:
        fresh = users_repo.issue_link(conn, clock, second.user.id)
        assert users_repo.find_by_link(conn, late, clock.now()) is None
        assert users_repo.find_by_link(conn, fresh, clock.now()).id == second.user.id


def test_sign_in_tells_nothing_about_accounts_and_is_throttled(app, make_tenant):
    tenant = make_tenant()
    _user(app, tenant, EMAIL["ann"])
    client = app.test_client()
    wrong = client.post("/app/sign-in", data={"csrf_token": csrf_token(client), "email": EMAIL["ann"],
                                              "password": "nope"})
    unknown = client.post("/app/sign-in", data={"csrf_token": csrf_token(client), "email": EMAIL["nobody"],
                                                "password": "nope"})
    assert wrong.status_code == unknown.status_code == 401
    message = "The email or password is not right."
    assert message in wrong.get_data(as_text=True) and message in unknown.get_data(as_text=True)
    for _ in range(9):  # ten attempts in all: the limit
        assert _sign_in(client, EMAIL["ann"], "still wrong") == 401
    throttled = client.post("/app/sign-in", data={"csrf_token": csrf_token(client), "email": EMAIL["ann"],
                                                  "password": PASSWORD})
    assert throttled.status_code == 429 and "Too many sign-in attempts" in throttled.get_data(as_text=True)
    assert _sign_in(app.test_client(), EMAIL["nobody-else"], "x") == 401  # another account is not held up


def test_sessions_are_not_api_keys_and_keys_do_not_open_the_console(app, make_tenant):
    tenant = make_tenant()
    _user(app, tenant, EMAIL["ann"], role="owner")
    client = app.test_client()
    assert _sign_in(client, EMAIL["ann"]) == 302
    assert client.get("/app/settings").status_code == 200
    api = client.get("/api/v1/me")
    assert api.status_code == 401 and api.get_json()["error"]["code"] == "unauthorized"
    keyed = app.test_client().get("/app/settings", headers=tenant.headers)
    assert keyed.status_code == 302 and keyed.headers["Location"].startswith("/app/sign-in")
    cookie = client.get_cookie("reelfarm_session", path="/app")
    assert cookie is not None and cookie.http_only and cookie.same_site == "Lax"


def test_only_a_response_that_changes_the_session_sends_its_cookie(app, make_tenant):
    """A poll sent while something waited in the session to be shown once (a flash, a new key) may
    end after the page showed it: were every response to send the session again, the poll's would
    bring back what was shown."""
    tenant = make_tenant()
    _user(app, tenant, EMAIL["ann"], role="owner")
    client = app.test_client()
    _sign_in(client, EMAIL["ann"])
    client.get("/app/settings")
    made = client.post("/app/settings/keys", data={"name": "x", "expires": "", "csrf_token": csrf_token(client, "/app/settings")})
    assert made.status_code == 303 and "reelfarm_session=" in made.headers.get("Set-Cookie", "")
    waiting = client.get_cookie("reelfarm_session", path="/app").value
    shown = client.get("/app/settings")
    [key] = re.findall(r"rf_live_\w{20,}", shown.get_data(as_text=True))
    assert "reelfarm_session=" in shown.headers.get("Set-Cookie", "")

    late = app.test_client()  # the poll that set out before the page was shown, with the cookie of then
    late.set_cookie("reelfarm_session", waiting, path="/app")
    poll = late.get(f"/app/jobs/{uuid.uuid4()}.json")
    assert poll.status_code == 404 and "Set-Cookie" not in poll.headers
    again = client.get("/app/settings")
    assert again.status_code == 200 and "Set-Cookie" not in again.headers
    assert key not in again.get_data(as_text=True), "shown once"


def test_posts_without_the_session_csrf_token_are_refused(app, make_tenant):
    tenant = make_tenant()
    _user(app, tenant, EMAIL["ann"], role="owner")
    client = app.test_client()
    _sign_in(client, EMAIL["ann"])
    assert client.post("/app/settings/keys", data={"name": "x", "expires": ""}).status_code == 403
    assert client.post("/app/settings/keys", data={"name": "x", "expires": "", "csrf_token": "forged"}).status_code == 403
    foreign = client.post("/app/settings/keys", data={"name": "x", "expires": "", "csrf_token": csrf_token(client, "/app/settings")},
                          headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    made = client.post("/app/settings/keys", data={"name": "x", "expires": "", "csrf_token": csrf_token(client, "/app/settings")})
    assert made.status_code == 303 and made.headers["Location"] == "/app/settings#keys"
    assert "rf_live_" in client.get("/app/settings").get_data(as_text=True)


def test_a_workspace_sees_only_its_own_videos_keys_and_pages(app, client, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    _user(app, acme, EMAIL["ann"], role="owner")
    _user(app, other, EMAIL["bob"], role="owner")
    theirs = create_video(other, title="Bob's video")
    ours = create_video(acme, title="Ann's video")
    ann = app.test_client()
    _sign_in(ann, EMAIL["ann"])
    grid = ann.get("/app/videos").get_data(as_text=True)
    assert "Ann&#39;s video" in grid and "Bob" not in grid
    assert ann.get(f"/app/videos/{ours['id']}").status_code == 200
    missing = ann.get(f"/app/videos/{theirs['id']}")
    assert missing.status_code == 404 and "Not found" in missing.get_data(as_text=True)
    assert missing.headers["Content-Type"].startswith("text/html")
    assert ann.get(f"/app/videos/{theirs['id']}/status.json").status_code == 404
    token = csrf_token(ann, "/app/settings")
    assert ann.post(f"/app/videos/{theirs['id']}/renders", data={"csrf_token": token, "format": "1:1",
                                                                  "resolution": "720"}).status_code == 404
    assert ann.get(f"/app/settings/keys/{other.key_id}/revoke").status_code == 404
    assert ann.post(f"/app/settings/keys/{other.key_id}/revoke", data={"csrf_token": token}).status_code == 404
    settings_page = ann.get("/app/settings").get_data(as_text=True)
    assert other.key[:12] not in settings_page and acme.key[:12] in settings_page
    assert ann.get("/app/nothing-here").status_code == 404
    assert client.get("/api/v1/nothing-here").get_json()["error"]["code"] == "not_found"


def test_roles_members_and_operators(app, make_tenant):
    tenant = make_tenant()
    _user(app, tenant, EMAIL["member"])
    _user(app, tenant, EMAIL["op"], operator=True)
    member, operator = app.test_client(), app.test_client()
    _sign_in(member, EMAIL["member"])
    _sign_in(operator, EMAIL["op"])
    assert member.get("/app/farm").status_code == 403
    assert member.get("/app/webhooks").status_code == 403
    assert member.get("/app/videos").status_code == 200
    assert operator.get("/app/farm").status_code == 200


def test_changing_the_password_ends_other_sessions(app, make_tenant):
    tenant = make_tenant()
    _user(app, tenant, EMAIL["ann"])
    here, elsewhere = app.test_client(), app.test_client()
    _sign_in(here, EMAIL["ann"])
    _sign_in(elsewhere, EMAIL["ann"])
    changed = here.post("/app/account/password", data={"csrf_token": csrf_token(here, "/app/account/password"),
                                                        "current": PASSWORD, "new": "another long password",
                                                        "confirm": "another long password"})
    assert changed.status_code == 302
    assert here.get("/app/videos").status_code == 200
    assert elsewhere.get("/app/videos").status_code == 302
    assert _sign_in(app.test_client(), EMAIL["ann"], "another long password") == 302
