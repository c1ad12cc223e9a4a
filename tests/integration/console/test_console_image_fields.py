"""A story form's image addresses are checked when it is saved: an address that does not answer,
answers with something other than an image, or is refused by the SSRF guard keeps the form (400)
with the problem beside its field and makes no video; a good one saves. The images are served by a
real HTTP server on loopback (allowed to the fetcher here); the unresolvable host is under
``.invalid``, which no resolver answers.
"""
from __future__ import annotations

import re
from html import unescape

import pytest

from reelfarm.shared.config import Settings
from tests.integration.console.conftest import signed_in_owner
from tests.integration.console.test_console_previews import _form
from tests.integration.farm.test_remote_assets import server  # noqa: F401 - a fixture


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_FETCH_ALLOW_PRIVATE": "1"})


def _beside(page: str, field: str) -> str:
    match = re.search(rf'<p class="error" id="[^"]*-err" data-error-for="{re.escape(field)}" >([^<]*)<', page)
    assert match, f"no problem shown beside {field}"
    return unescape(match.group(1))


def test_image_addresses_are_checked_when_the_form_is_saved(app, services, make_tenant, server):  # noqa: F811
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio"})

    for url, reason in (("https://cdn.orbit.invalid/hero.png", "could not resolve cdn.orbit.invalid"),
                        (server.url("/page.html"), "could not be fetched"),
                        (server.url("/missing.png"), "404")):
        answer = ann.post("/app/videos/new/announcement", data={**posted, "f.image": url})
        page = answer.get_data(as_text=True)
        assert answer.status_code == 400, url
        message = _beside(page, "f.image")
        assert message.startswith("Image: the image at this address ") and reason in message, message
        assert f'value="{url}"' in page  # what was typed is kept
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    saved = ann.post("/app/videos/new/announcement", data={**posted, "f.image": server.url("/photo.png")})
    assert saved.status_code == 303
    made = services.videos.list(acme.workspace_id, 10)["data"]
    assert [v["id"] for v in made] == [saved.headers["Location"].rsplit("/", 1)[1]]
    assert services.videos.list(other.workspace_id, 10)["data"] == []


def test_a_changed_image_address_is_checked_when_a_videos_fields_are_saved(app, services, make_tenant,
                                                                           server):  # noqa: F811
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio", "f.image": server.url("/photo.png")})
    made = ann.post("/app/videos/new/announcement", data=posted)
    video_url = made.headers["Location"]
    video_id = video_url.rsplit("/", 1)[1]
    fields = {k: v for k, v in posted.items() if k.startswith("f.") or k == "csrf_token"}

    refused = ann.post(f"{video_url}/fields", data={**fields, "f.image": "https://cdn.orbit.invalid/hero.png"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert "could not resolve cdn.orbit.invalid" in _beside(page, "f.image")
    assert 'value="https://cdn.orbit.invalid/hero.png"' in page
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 1

    hits = server.hits["/photo.png"]
    saved = ann.post(f"{video_url}/fields", data={**fields, "f.headline": "Our third studio"})
    assert saved.status_code == 303
    assert server.hits["/photo.png"] == hits  # an address not changed is not fetched again
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 2
