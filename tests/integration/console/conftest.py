"""What the console's integration tests share: the API's app, services and tenants (its fixtures),
a password long enough for the console, the CSRF token of a page's form, and a signed-in owner."""
from __future__ import annotations

import re
import secrets
from typing import Any

from flask.testing import FlaskClient

from tests.integration.api.conftest import (  # noqa: F401  (fixtures)
    Tenant,
    app,
    client,
    clock,
    create_video,
    make_tenant,
    services,
    settings,
)

PASSWORD = "a long enough password"


def csrf_token(browser: FlaskClient, path: str = "/app/sign-in") -> str:
    """The CSRF token in the form of the page at ``path``."""
    page = browser.get(path)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    assert found is not None, f"no form on {path}"
    return found.group(1)


def signed_in_owner(flask_app: Any, tenant: Tenant) -> FlaskClient:
    """A signed-in browser of a new owner of ``tenant``'s workspace."""
    email = f"owner-{secrets.token_hex(4)}@example.com"
    accounts = flask_app.extensions["reelfarm"].accounts
    made = accounts.create_user(tenant.workspace_id, email, role="owner", public_url="http://x")
    accounts.use_link(made.link.rsplit("/", 1)[1], PASSWORD)
    browser = flask_app.test_client()
    signed = browser.post("/app/sign-in", data={"csrf_token": csrf_token(browser), "email": email, "password": PASSWORD})
    assert signed.status_code == 302
    return browser
