"""A webhook address on loopback or a private network is refused when it is saved in the console
(as through the API), the reason beside the field and the address typed kept; a public one is saved."""
from __future__ import annotations

import dataclasses
import re
from html import unescape

from reelfarm.studio.fetch import make_fetcher
from reelfarm.studio.webhooks import WebhookService
from tests.integration.console.conftest import csrf_token, signed_in_owner


def test_a_loopback_webhook_address_is_refused_when_saved(app, services, make_tenant, monkeypatch):
    strict = dataclasses.replace(services.settings, fetch_allow_private=False)
    monkeypatch.setattr(services, "webhooks", WebhookService(services.engine, services.clock, make_fetcher(strict)))
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    for url in ("http://127.0.0.1:9000/hook", "http://localhost/hook", "http://10.1.2.3/in"):
        answer = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"), "url": url})
        page = unescape(answer.get_data(as_text=True))
        assert answer.status_code == 400, url
        error = re.search(r'id="wh-url-err"[^>]*>([^<]+)<', page).group(1)
        assert error.startswith("This address cannot be used: ") and "public internet addresses only" in error
        assert f'value="{url}"' in page
    assert services.webhooks.list_all(acme.workspace_id) == []
    saved = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"),
                                            "url": "https://93.184.215.14/hook"})
    assert saved.status_code == 303
    assert [w["url"] for w in services.webhooks.list_all(acme.workspace_id)] == ["https://93.184.215.14/hook"]
    assert services.webhooks.list_all(other.workspace_id) == []
