"""Storage keys a document names are the workspace's own, checked on save and again where renders read them.

Workspace A has a brand-kit logo in storage (a pure red PNG). Workspace B names A's key in its own
video's document: the PATCH is a 400 naming the asset, and a version that holds such a key anyway
(written before the rule, or by any path around the API) fails its stills job and its render with
the asset named, refunded, without a pixel of A's image being drawn. A naming its own key works.
"""
from __future__ import annotations

import copy
import io

import pytest
from PIL import Image

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import objects
from reelfarm.shared.repos import videos as videos_repo
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_renders import _download, _video, _wait


def red_png(size: int = 64) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), (255, 0, 0)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def farm_client(services, app):
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


@pytest.fixture
def logo_of_a(services, make_tenant):
    """Tenant A, whose default kit has a logo stored under its own key."""
    a = make_tenant(name="a", credits=5)
    key = f"brand-kits/{a.default_kit_id}/logo.png"
    services.storage.put_bytes(key, red_png(), "image/png")
    return a, key


def with_image(doc: dict, key: str | None = None, url: str | None = None) -> dict:
    """``doc`` with a full-frame image layer drawing asset ``pic``."""
    doc = copy.deepcopy(doc)
    doc.setdefault("assets", {})["pic"] = {"type": "image", **({"key": key} if key else {}), **({"url": url} if url else {})}
    doc["scenes"][0]["layers"].append({"id": "pic", "type": "image", "asset": "pic", "x": 0.5, "y": 0.5,
                                       "w": 1.0, "h": 1.0, "fit": "cover"})
    return doc


def test_owner_of_follows_the_key_to_its_workspace(services, logo_of_a, make_tenant):
    a, key = logo_of_a
    b = make_tenant(name="b")
    with services.engine.connect() as conn:
        assert objects.owner_of(conn, key) == a.workspace_id
        assert objects.owned_by(conn, a.workspace_id, key) and not objects.owned_by(conn, b.workspace_id, key)
        for odd in (f"brand-kits/{a.default_kit_id}", "brand-kits//logo.png", "files/x.png", "../etc/passwd",
                    "/etc/passwd", f"renders/{'x' * 300}/poster.jpg", ""):
            assert objects.owner_of(conn, odd) is None, odd


def test_patching_another_workspaces_key_is_a_400_naming_the_asset(client, logo_of_a, make_tenant):
    _, key = logo_of_a
    b = make_tenant(name="b")
    video = _video(client, b)
    doc = with_image(video["current_version"]["doc"], key=key)
    doc["brand"]["logo"] = {"url": "https://example.com/logo.png", "key": key}
    r = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=b.headers)
    error = assert_error(r, 400, "validation_failed")
    found = {d["field"]: d for d in error["details"]}
    assert set(found) == {"/doc/assets/pic/key", "/doc/brand/logo/key"}
    assert all(d["code"] == "unknown_storage_key" and key in d["message"] for d in found.values())
    versions = client.get(f"/api/v1/videos/{video['id']}/versions", headers=b.headers).get_json()["data"]
    assert len(versions) == 1  # nothing half-written


@pytest.mark.parametrize("key", ["../brand-kits/x/logo.png", "/etc/passwd", "files/anything.png",
                                 "renders/00000000-0000-0000-0000-000000000000/poster.jpg",
                                 "renders/a\x00b/poster.jpg", "jobs/\ud800/still-0.png", "brand-kits/x/\x00"])
def test_keys_that_name_nothing_of_the_workspace_are_refused_alike(client, tenant, key):
    video = _video(client, tenant)
    r = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": with_image(video["current_version"]["doc"],
                                                                                key=key)}, headers=tenant.headers)
    error = assert_error(r, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/doc/assets/pic/key"]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "/etc/passwd", "ftp://example.com/a.png"])
def test_asset_urls_other_than_https_are_refused_on_save(client, tenant, url):
    video = _video(client, tenant)
    r = client.patch(f"/api/v1/videos/{video['id']}", json={"doc": with_image(video["current_version"]["doc"],
                                                                                url=url)}, headers=tenant.headers)
    error = assert_error(r, 400, "validation_failed")
    assert "/doc/assets/pic/url" in [d["field"] for d in error["details"]]


def test_a_workspace_uses_its_own_logo_key(farm_client, logo_of_a):
    a, key = logo_of_a
    video = _video(farm_client, a, format="1:1", durationSec=6)
    r = farm_client.patch(f"/api/v1/videos/{video['id']}", json={"doc": with_image(video["current_version"]["doc"],
                                                                                    key=key)}, headers=a.headers)
    assert r.status_code == 200, r.get_json()
    job = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [0.5], "format": "1:1"},
                           headers=a.headers).get_json()
    done, _ = _wait(farm_client, f"/api/v1/jobs/{job['id']}", a.headers)
    assert done["status"] == "succeeded", done["error"]
    still = Image.open(io.BytesIO(_download(farm_client, done["result"]["stills"][0]["url"]))).convert("RGB")
    assert still.getpixel((still.width // 2, still.height // 2)) == (255, 0, 0)


def test_a_foreign_key_already_in_a_version_fails_at_render_and_refunds(farm_client, services, clock,
                                                                          logo_of_a, make_tenant):
    _, key = logo_of_a
    b = make_tenant(name="b", credits=2)
    video = _video(farm_client, b, format="1:1", durationSec=6)
    doc = with_image(video["current_version"]["doc"], key=key)
    with transaction(services.engine) as conn:  # around the API, as data written before the rule would be
        videos_repo.append_version(conn, clock, workspace_id=b.workspace_id, video_id=video["id"],
                                   version=videos_repo.NewVersion(doc=doc, source="doc", note=None, fields=None,
                                                                  lint=[], duration_sec=6.0))
    job = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [0.5], "format": "1:1"},
                           headers=b.headers).get_json()
    done, _ = _wait(farm_client, f"/api/v1/jobs/{job['id']}", b.headers)
    assert done["status"] == "failed" and "'pic'" in done["error"] and "no object of this workspace" in done["error"]
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "1:1", "resolution": 720},
                         headers=b.headers)
    assert r.status_code == 202, r.get_json()
    render, _ = _wait(farm_client, f"/api/v1/renders/{r.get_json()['id']}", b.headers)
    assert render["status"] == "failed" and "'pic'" in render["error"] and render["url"] is None
    assert farm_client.get("/api/v1/me", headers=b.headers).get_json()["workspace"]["credits"] == 2  # refunded
