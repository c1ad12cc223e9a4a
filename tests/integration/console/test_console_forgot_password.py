"""Forgot password: the sign-in page says how to get a new one-time link, and
`reelfarm admin sign-in-link EMAIL` makes one that sets a new password (once); two workspaces."""
from __future__ import annotations

from html import unescape

import pytest
from click.testing import CliRunner

from reelfarm.cli import main
from tests.integration.console.conftest import csrf_token
from tests.integration.console.test_console_app import EMAIL, PASSWORD, _sign_in, _user

NEW_PASSWORD = "a brand new passphrase 42"


@pytest.fixture(autouse=True)
def _fresh_emails() -> None:
    EMAIL.clear()  # a new address per test run: the PostgreSQL database is shared by the tests


def test_a_forgotten_password_is_replaced_through_a_link_from_reelfarm_admin(app, make_tenant, settings, tmp_path):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    _user(app, acme, EMAIL["ann"])
    _user(app, other, EMAIL["bob"])
    browser = app.test_client()
    page = unescape(browser.get("/app/sign-in").get_data(as_text=True))
    assert "Forgot your password?" in page and "reelfarm admin sign-in-link you@example.com" in page

    env = {"REELFARM_DATA_DIR": str(tmp_path / "cli"), "REELFARM_DATABASE_URL": settings.database_url}
    made = CliRunner().invoke(main, ["admin", "sign-in-link", EMAIL["ann"].upper()], env=env, catch_exceptions=False)
    assert made.exit_code == 0, made.output
    link = made.output.strip().splitlines()[-1]
    assert "/app/sign-in/link/" in link
    token = link.rsplit("/", 1)[1]
    assert _sign_in(app.test_client(), EMAIL["ann"]) == 302  # the old password works until the link is used

    set_new = browser.post(f"/app/sign-in/link/{token}", data={"csrf_token": csrf_token(browser), "password":
                                                               NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert set_new.status_code == 302
    assert _sign_in(app.test_client(), EMAIL["ann"], NEW_PASSWORD) == 302
    assert _sign_in(app.test_client(), EMAIL["ann"], PASSWORD) == 401  # refused
    assert _sign_in(app.test_client(), EMAIL["bob"], PASSWORD) == 302  # the other workspace's user is untouched
    assert browser.get(f"/app/sign-in/link/{token}").status_code == 410  # once

    unknown = CliRunner().invoke(main, ["admin", "sign-in-link", "nobody@example.com"], env=env)
    assert unknown.exit_code == 1 and "no console user has the email address nobody@example.com" in unknown.output
