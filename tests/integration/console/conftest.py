"""What the console's integration tests share: the API's app, services and tenants (its fixtures),
a password long enough for the console, and the CSRF token of a page's form."""
from __future__ import annotations

import re

from flask.testing import FlaskClient

from tests.integration.api.conftest import (  # noqa: F401  (fixtures)
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
