"""A render whose image cannot be fetched: its error names the asset, the reason and what to
change, once, the same in the API's render, the ``render.failed`` webhook payload and the console.

The image's host is under ``.invalid`` (RFC 6761), which no resolver answers, so the lookup fails
for real; the embedded farm retries the import at once and then gives up.
"""
from __future__ import annotations

import re
from html import unescape

import pytest
from sqlalchemy import select

from reelfarm.shared.config import Settings
from reelfarm.shared.tables import event_outbox
from tests.integration.api.test_api_renders import _video, _wait
from tests.integration.console.conftest import signed_in_owner

HOST = "cdn.orbit.invalid"


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url})


@pytest.fixture
def farm_client(services, app):
    services.farm.queue.retry_intervals = (0,)  # no waiting between the import's tries
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


def test_an_unresolvable_image_host_fails_the_render_naming_the_asset_and_what_to_change(
        farm_client, app, services, make_tenant):
    tenant, other = make_tenant(credits=3), make_tenant(credits=3)
    url = f"https://{HOST}/spring/hero.png"
    video = _video(farm_client, tenant, format="1:1", fields={"headline": "Spring", "image": url})
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    done, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)

    assert done["status"] == "failed"
    # our words, not the resolver's: those differ from machine to machine (no such name, no resolver)
    assert done["error"] == (f"image asset 'image' could not be fetched from {url}: could not resolve {HOST}: "
                             "no address is known for that name; check its address or give another image, then "
                             "render again; the 1 credit charged for it was refunded"), done["error"]
    assert "internal error" not in done["error"] and "try again" not in done["error"]
    assert farm_client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 3

    with services.engine.connect() as conn:
        events = conn.execute(select(event_outbox.c.workspace_id, event_outbox.c.type, event_outbox.c.payload)
                              .where(event_outbox.c.type == "render.failed")).all()
    # the session's PostgreSQL database holds other tests' events too: this render's, once, in its workspace
    ours = [(e.workspace_id, e.payload["render"]["error"]) for e in events if e.payload["render"]["id"] == done["id"]]
    assert ours == [(tenant.workspace_id, done["error"])]

    page = signed_in_owner(app, tenant).get(f"/app/videos/{video['id']}").get_data(as_text=True)
    shown = unescape(re.search(r'<p class="error">(.*?)</p>', page, re.DOTALL).group(1))
    assert shown == f"It failed: {done['error']}."
    assert shown.count("refunded") == 1
    assert signed_in_owner(app, other).get(f"/app/videos/{video['id']}").status_code == 404
