"""A story's image field given as a URL, through the HTTP API: the embedded farm fetches it once
(behind the SSRF guard, allowed onto loopback here) and draws it into the MP4."""
from __future__ import annotations

import pytest

from reelfarm.shared.config import Settings
from tests.integration.api.test_api_renders import _download, _video, _wait
from tests.integration.farm.test_remote_assets import first_frame, server  # noqa: F401 - a fixture


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_FETCH_ALLOW_PRIVATE": "1"})


@pytest.fixture
def farm_client(services, app):
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_story_image_at_a_url_is_fetched_once_and_drawn(farm_client, make_tenant, server, tmp_path):  # noqa: F811
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="1:1", fields={"headline": "Our second studio",
                                                             "image": server.url("/photo.png")})
    assets = video["current_version"]["doc"]["assets"]
    assert assets["image"] == {"type": "image", "url": server.url("/photo.png")}
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    done, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    path = tmp_path / "out.mp4"
    path.write_bytes(_download(farm_client, done["url"]))
    assert first_frame(path).shape[:2] == (720, 720)
    assert server.hits["/photo.png"] == 1


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_image_url_that_is_not_an_image_fails_the_render_with_a_refund(farm_client, make_tenant, server):  # noqa: F811
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="1:1", fields={"headline": "Our second studio",
                                                             "image": server.url("/page.html")})
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720},
                         headers=tenant.headers)
    done, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", tenant.headers)
    assert done["status"] == "failed" and "asset 'image'" in done["error"] and "text/html" in done["error"]
    assert farm_client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 3
