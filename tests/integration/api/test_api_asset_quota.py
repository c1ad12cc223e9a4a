"""The media library's quota and retention, across two workspaces, on SQLite and PostgreSQL, on local
files and on the S3 emulator (the fixtures of ``test_api_assets``).

- Quota: each plan's bytes (``reelfarm.shared.plans``), shown in ``GET /me`` and the console's
  settings; an upload that would pass it is 413 ``quota_exceeded`` and stores nothing; the same
  bytes again cost nothing; one workspace's use does not count against another's.
- Retention: an asset uploaded more than the retention period ago that no version (old ones too)
  and no brand kit names goes, row, file and thumbnail; another workspace's identical upload is
  its own copy and stays.
"""
from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType

import pytest

from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.retention import purge
from reelfarm.farm.services.errors import QuotaExceeded
from reelfarm.farm.services.library import URL_FETCH_OPTIONS
from reelfarm.farm.services.media_sizes import file_size
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.shared import plans
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import assets as assets_repo
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.storage_keys import asset_thumbnail_key
from reelfarm.studio.fetch import make_fetcher
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import (  # noqa: F401  (fixtures)
    mp3,
    png,
    s3_endpoint,
    settings,
    stored,
    upload,
)
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image
from tests.integration.console.conftest import signed_in_owner

RED, GREEN, BLUE = png(colour=(255, 0, 0)), png(colour=(0, 255, 0)), png((80, 60), colour=(0, 0, 255))
QUOTA = len(RED) + len(BLUE) + 10  # any two of them fit, not all three


@pytest.fixture
def small_quota(services):
    """Pro's quota cut to ``QUOTA`` bytes for this test (the other plans keep theirs)."""
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, "pro": QUOTA})


def library(client, tenant) -> dict[str, int]:
    me = client.get("/api/v1/me", headers=tenant.headers)
    assert me.status_code == 200
    return me.get_json()["library"]


def test_the_plans_quotas_are_shown_in_me(client, make_tenant):
    for plan, limit in (("pro", 10 * 1024 ** 3), ("crypto_pro", 10 * 1024 ** 3), ("agency", 100 * 1024 ** 3)):
        assert library(client, make_tenant(plan=plan)) == {"used_bytes": 0, "limit_bytes": limit}
    assert plans.PLANS["starter"].library_bytes == 100 * 1024 ** 2


def test_an_upload_past_the_quota_is_refused_and_stores_nothing(client, services, make_tenant, small_quota):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    assert library(client, a) == {"used_bytes": 0, "limit_bytes": QUOTA}
    red = upload(client, a, RED).get_json()
    green = upload(client, a, GREEN).get_json()
    assert library(client, a)["used_bytes"] == len(RED) + len(GREEN)
    again = upload(client, a, RED)  # the same bytes: the asset already there, nothing more counted
    assert again.status_code == 201 and again.get_json()["id"] == red["id"]
    assert library(client, a)["used_bytes"] == len(RED) + len(GREEN)
    keys = sorted(stored(services, a))
    assert len(keys) == 4  # two files, two thumbnails

    error = assert_error(upload(client, a, BLUE), 413, "quota_exceeded", details=None)
    assert f"{file_size(len(RED) + len(GREEN))} of its {file_size(QUOTA)};" in error["message"]
    assert sorted(stored(services, a)) == keys
    listed = client.get("/api/v1/assets", headers=a.headers).get_json()["data"]
    assert {x["id"] for x in listed} == {red["id"], green["id"]}
    assert library(client, a)["used_bytes"] == len(RED) + len(GREEN)

    # B's library is its own: A's use does not count against it
    assert upload(client, b, BLUE).status_code == 201
    assert upload(client, b, RED).status_code == 201
    assert library(client, b) == {"used_bytes": len(BLUE) + len(RED), "limit_bytes": QUOTA}
    assert library(client, a)["used_bytes"] == len(RED) + len(GREEN)

    # room made in A, the upload fits
    assert client.delete(f"/api/v1/assets/{green['id']}", headers=a.headers).status_code == 204
    assert upload(client, a, BLUE).status_code == 201
    assert library(client, a)["used_bytes"] == len(RED) + len(BLUE)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A loopback server of ``/red.png`` and ``/blue.png``."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = {"/red.png": RED, "/blue.png": BLUE}.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_import_by_address_past_the_quota_is_refused_too(client, services, settings, tenant, site,  # noqa: F811
                                                          small_quota):
    # the loopback server is reached as brand extraction's tests reach theirs
    services.assets.fetcher = make_fetcher(dataclasses.replace(settings, fetch_allow_private=True),
                                           **URL_FETCH_OPTIONS)
    upload(client, tenant, GREEN)
    first = client.post("/api/v1/assets/from-url", json={"url": f"{site}/red.png"}, headers=tenant.headers)
    assert first.status_code == 201, first.get_json()
    before = sorted(stored(services, tenant))
    refused = client.post("/api/v1/assets/from-url", json={"url": f"{site}/blue.png"}, headers=tenant.headers)
    assert_error(refused, 413, "quota_exceeded", details=None)
    assert sorted(stored(services, tenant)) == before
    again = client.post("/api/v1/assets/from-url", json={"url": f"{site}/red.png"}, headers=tenant.headers)
    assert again.status_code == 201 and again.get_json()["id"] == first.get_json()["id"]


def test_a_sound_past_the_quota_is_refused_too(client, services, tenant, small_quota):
    assert_error(upload(client, tenant, mp3(2.0)), 413, "quota_exceeded", details=None)
    assert stored(services, tenant) == []


def test_two_uploads_at_once_cannot_both_take_the_last_bytes(services, tenant, small_quota):
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, "pro": len(RED) + len(BLUE) - 1})
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def send(data: bytes) -> None:
        start.wait()
        try:
            services.assets.upload(tenant.workspace_id, data)
            outcomes.append("stored")
        except QuotaExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=send, args=(data,)) for data in (RED, BLUE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["refused", "stored"]
    assert services.assets.usage(tenant.workspace_id)["used_bytes"] in (len(RED), len(BLUE))
    assert len(stored(services, tenant)) == 2  # the one kept: its file and thumbnail


def test_the_console_settings_show_the_library(app, client, tenant, make_tenant, small_quota):
    upload(client, tenant, RED)
    page = signed_in_owner(app, tenant).get("/app/settings").get_data(as_text=True)
    assert "<dt>Media library</dt>" in page
    assert f"<dd>{len(RED)} Bytes of {QUOTA} Bytes used</dd>" in page
    other = signed_in_owner(app, make_tenant(name="b", plan="agency")).get("/app/settings").get_data(as_text=True)
    assert "<dd>0 Bytes of 100.0 GiB used</dd>" in other


def test_unused_assets_go_after_the_retention_period(client, services, clock, make_tenant, settings):  # noqa: F811
    a, b = make_tenant(name="a"), make_tenant(name="b")
    storage = services.storage
    unused = upload(client, a, RED).get_json()
    in_old_version = upload(client, a, GREEN).get_json()
    in_kit = upload(client, a, BLUE).get_json()
    b_same = upload(client, b, RED).get_json()  # the same bytes as A's unused one: B's own copy, used by B
    assert b_same["key"] != unused["key"]
    video = _video(client, a)
    first = with_image(video["current_version"]["doc"], key=in_old_version["key"])
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": first}, headers=a.headers).status_code == 200
    # a later version no longer names it; the old one still does
    later = video["current_version"]["doc"]
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": later}, headers=a.headers).status_code == 200
    with transaction(services.engine) as conn:
        kit = kits_repo.get_brand_kit(conn, a.workspace_id, a.default_kit_id)
        tokens = copy.deepcopy(kit.tokens)
        tokens["logo"] = {"url": in_kit["url"], "key": in_kit["key"], "width": 80, "height": 60,
                          "dominant_color": "#0000FF"}
        kits_repo.update_brand_kit(conn, services.clock, a.workspace_id, a.default_kit_id, tokens=tokens)
    b_video = _video(client, b)
    b_doc = with_image(b_video["current_version"]["doc"], key=b_same["key"])
    assert client.patch(f"/api/v1/videos/{b_video['id']}", json={"doc": b_doc}, headers=b.headers).status_code == 200
    clock.advance(days=20)
    young = upload(client, b, GREEN).get_json()  # unused, but uploaded 20 days before the purge
    ours = [unused, in_old_version, in_kit, b_same, young]

    configure(TaskContext(engine=services.engine, storage=storage, clock=clock, progress=MemoryProgress(),
                          settings=settings))

    def present() -> set[str]:
        with services.engine.connect() as conn:
            rows = {x["id"] for x in ours if assets_repo.find_by_hash(
                conn, a.workspace_id if x["key"].startswith(f"assets/{a.workspace_id}/") else b.workspace_id,
                x["key"].rsplit("/", 1)[1].split(".")[0]) is not None}
        return rows

    clock.advance(days=9)  # 29 days after the first uploads: nothing of ours is due
    purge()
    assert present() == {x["id"] for x in ours}
    assert len(stored(services, a)) == 6 and len(stored(services, b)) == 4

    clock.advance(days=2)  # 31 days: A's unused asset goes, row, file and thumbnail
    # one asset at a time, over several batches; the session's PostgreSQL database holds other
    # tests' unused assets, due too, so the round is given batches enough for all of them
    purge(batch=1, max_batches=100_000, round_sec=600)
    assert present() == {x["id"] for x in ours} - {unused["id"]}
    assert not storage.exists(unused["key"]) and not storage.exists(asset_thumbnail_key(unused["key"]))
    assert_error(client.get(f"/api/v1/assets/{unused['id']}", headers=a.headers), 404, "not_found", details=None)
    assert sorted(stored(services, a)) == sorted(
        k for x in (in_old_version, in_kit) for k in (x["key"], asset_thumbnail_key(x["key"])))
    assert storage.exists(b_same["key"]) and storage.exists(asset_thumbnail_key(b_same["key"]))
    assert len(stored(services, b)) == 4
    assert client.get(f"/api/v1/assets/{b_same['id']}", headers=b.headers).status_code == 200

    purge()  # again: nothing more of ours goes
    assert present() == {x["id"] for x in ours} - {unused["id"]}
    assert len(stored(services, a)) == 4 and len(stored(services, b)) == 4
    assert library(client, a)["used_bytes"] == len(GREEN) + len(BLUE)


def test_an_assets_age_counts_from_its_first_upload(client, services, clock, tenant, settings):  # noqa: F811
    """The same bytes uploaded again answer the asset as it was: they do not make it younger, so an
    unused asset goes the retention period after its first upload, however often it was sent since."""
    first = upload(client, tenant, RED).get_json()
    clock.advance(days=20)
    again = upload(client, tenant, RED).get_json()
    assert (again["id"], again["created_at"]) == (first["id"], first["created_at"])
    clock.advance(days=9, hours=23)
    again = upload(client, tenant, RED).get_json()  # an hour before the period is over
    assert again["created_at"] == first["created_at"]
    configure(TaskContext(engine=services.engine, storage=services.storage, clock=clock, progress=MemoryProgress(),
                          settings=settings))
    purge()
    assert client.get(f"/api/v1/assets/{first['id']}", headers=tenant.headers).status_code == 200
    clock.advance(hours=2)  # an hour past the period from the first upload, two hours after the last
    purge()
    assert_error(client.get(f"/api/v1/assets/{first['id']}", headers=tenant.headers), 404, "not_found", details=None)
    assert stored(services, tenant) == []

    # uploaded once more after it went, it is a new asset, whose period starts now
    fresh = upload(client, tenant, RED).get_json()
    assert fresh["id"] != first["id"] and fresh["created_at"] != first["created_at"]
    clock.advance(days=29)
    purge()
    assert client.get(f"/api/v1/assets/{fresh['id']}", headers=tenant.headers).status_code == 200
    assert len(stored(services, tenant)) == 2


def test_the_retention_round_checks_again_before_deleting(services, clock, tenant, client):
    asset = upload(client, tenant, RED).get_json()
    clock.advance(days=40)
    with services.engine.connect() as conn:
        stale = [x for x in assets_repo.unused_before(conn, clock.now() - timedelta(days=30), 1000)
                 if x.id == asset["id"]]
    assert len(stale) == 1
    # named by a kit after the round listed it: kept
    with transaction(services.engine) as conn:
        kit = kits_repo.get_brand_kit(conn, tenant.workspace_id, tenant.default_kit_id)
        tokens = {**copy.deepcopy(kit.tokens), "tagline": f"see {asset['id']}"}
        kits_repo.update_brand_kit(conn, services.clock, tenant.workspace_id, tenant.default_kit_id, tokens=tokens)
    with transaction(services.engine) as conn:
        assert not assets_repo.forget_unused(conn, stale[0])
    assert services.storage.exists(asset["key"])
