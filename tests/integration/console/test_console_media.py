"""The console's Media page over a real database (SQLite and PostgreSQL): files uploaded without
JavaScript (one multipart post with several files), listed with a thumbnail or a sound's length,
filtered by kind and paged; a refused upload (wrong content, too large, over the plan's quota) named beside the
upload with nothing stored; a delete refused while a version names the file, with the reason and
where it is used shown, then allowed; and each workspace's library its own. On local files and
on the S3 emulator (moto's server on loopback).
"""
from __future__ import annotations

import io
import re
from html import unescape
from types import MappingProxyType
from urllib.parse import urlsplit

import httpx
from flask.testing import FlaskClient

from reelfarm.console.pages import media
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES
from reelfarm.shared import plans
from reelfarm.shared.storage import LocalStorage
from tests.integration.api.test_api_assets import (  # noqa: F401 - s3_endpoint, settings: fixtures, local files or moto's S3
    mp3,
    png,
    s3_endpoint,
    settings,
)
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.unit.farm.test_media_video import clip


def _post_files(browser: FlaskClient, *files: tuple[bytes, str]):
    data = {"csrf_token": csrf_token(browser, "/app/media"),
            "files": [(io.BytesIO(body), name) for body, name in files]}
    return browser.post("/app/media", data=data, content_type="multipart/form-data")


def _stored(services, workspace_id: str) -> list[str]:
    return services.storage.list_keys(f"assets/{workspace_id}")


def _items(html: str) -> list[str]:
    return re.findall(r'<li class="media-item" id="asset-([0-9a-f-]+)"', html)


def test_files_uploaded_without_javascript_are_listed_and_filtered(app, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    page = ann.get("/app/media").get_data(as_text=True)
    assert '<a href="/app/media" aria-current="page">Media</a>' in page  # in the nav
    assert 'enctype="multipart/form-data"' in page and 'type="file" multiple' in page and "Nothing uploaded yet." in page
    made = _post_files(ann, (png((200, 100)), "photo.png"), (mp3(3.0), "jingle.mp3"))
    assert made.status_code == 303 and made.headers["Location"] == "/app/media"
    listed = services.assets.list(tenant.workspace_id, 10)["data"]
    assert sorted(a["kind"] for a in listed) == ["audio", "image"]
    image = next(a for a in listed if a["kind"] == "image")
    sound = next(a for a in listed if a["kind"] == "audio")
    html = ann.get("/app/media").get_data(as_text=True)
    assert "2 files uploaded." in html
    assert sorted(_items(html)) == sorted([image["id"], sound["id"]])
    src = unescape(re.search(r'<img src="([^"]+)" alt="Image, 200×100"', html).group(1))
    assert urlsplit(src).path == urlsplit(image["thumbnail_url"]).path and src.split("?")[0].endswith(".thumb.jpg")
    assert '<span class="sound-len">0:03</span>' in html and "audio/mpeg" in html
    assert html.count("Not used yet") == 2
    assert _items(ann.get("/app/media?kind=image").get_data(as_text=True)) == [image["id"]]
    assert _items(ann.get("/app/media?kind=audio").get_data(as_text=True)) == [sound["id"]]
    if isinstance(services.storage, LocalStorage):  # served by the app, behind a signed URL
        thumb = ann.get(f"{urlsplit(src).path}?{urlsplit(src).query}")
        status, body = thumb.status_code, thumb.data
    else:  # a presigned URL of the bucket (moto's S3 here)
        fetched = httpx.get(src)
        status, body = fetched.status_code, fetched.content
    assert status == 200 and body[:3] == b"\xff\xd8\xff"  # the JPEG thumbnail is served


def test_the_library_is_paged(app, services, make_tenant, monkeypatch):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    monkeypatch.setattr(media, "PAGE_SIZE", 2)
    assert _post_files(ann, *[(png(colour=(i * 40, 0, 0)), f"{i}.png") for i in range(3)]).status_code == 303
    first = ann.get("/app/media").get_data(as_text=True)
    assert len(_items(first)) == 2 and "First page" not in first
    after = unescape(re.search(r'<a href="([^"]+)" rel="next">Next page</a>', first).group(1))
    second = ann.get(after).get_data(as_text=True)
    assert len(_items(second)) == 1 and "Next page" not in second and "First page" in second
    assert not set(_items(first)) & set(_items(second))


def test_a_refused_upload_is_named_beside_the_upload_and_stores_nothing(app, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    refused = _post_files(ann, (b"%PDF-1.4 not a picture at all", "cover.png"))
    assert refused.status_code == 400
    html = refused.get_data(as_text=True)
    err = re.search(r'<div class="error" id="media-files-err" role="alert">(.*?)</div>', html, re.DOTALL)
    assert err is not None and "cover.png" in err.group(1)
    assert 'aria-describedby="media-files-err"' in html
    assert _stored(services, tenant.workspace_id) == [] and services.assets.list(tenant.workspace_id, 10)["data"] == []
    # over an upload's size: named beside the upload (not a 413 page), nothing stored
    big = _post_files(ann, (b"\x89PNG\r\n\x1a\n" + b"\0" * MAX_UPLOAD_BYTES, "poster.png"))
    assert big.status_code == 400 and "poster.png" in big.get_data(as_text=True)
    assert "the file is larger than the 50 MB allowed" in big.get_data(as_text=True)
    assert _stored(services, tenant.workspace_id) == []
    # one good and one bad in the same post: the good one is kept, the bad one named
    mixed = _post_files(ann, (png(), "good.png"), (mp3(2.0)[:3000], "cut.mp3"))
    assert mixed.status_code == 200
    html = mixed.get_data(as_text=True)
    assert "1 file uploaded; these were not stored:" in html and "cut.mp3" in html
    assert len(services.assets.list(tenant.workspace_id, 10)["data"]) == 1
    # over the plan's quota: the figures named, nothing stored
    before = _stored(services, tenant.workspace_id)
    plan = services.accounts.workspace(tenant.workspace_id).plan
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, plan: len(png()) + 10})
    try:
        over = _post_files(ann, (png((300, 300), (0, 0, 255)), "big.png"))
    finally:
        services.assets.quotas = plans.LIBRARY_BYTES
    assert over.status_code == 400 and "quota" in over.get_data(as_text=True)
    assert _stored(services, tenant.workspace_id) == before
    # the script's one-file upload answers JSON, refused the same way
    token = csrf_token(ann, "/app/media")
    bad = ann.post("/app/media/upload.json", data={"file": (io.BytesIO(b"GIF89a nope"), "x.gif")},
                   content_type="multipart/form-data", headers={"X-CSRF-Token": token})
    assert bad.status_code == 400 and bad.get_json()["error"]["message"]
    good = ann.post("/app/media/upload.json", data={"file": (io.BytesIO(png(colour=(9, 9, 9))), "y.png")},
                    content_type="multipart/form-data", headers={"X-CSRF-Token": token})
    assert good.status_code == 201 and good.get_json()["kind"] == "image"
    # no CSRF token: refused, nothing stored
    kept = _stored(services, tenant.workspace_id)
    forged = ann.post("/app/media", data={"files": [(io.BytesIO(png(colour=(1, 2, 3))), "z.png")]},
                      content_type="multipart/form-data")
    assert forged.status_code == 403 and _stored(services, tenant.workspace_id) == kept


def test_delete_is_refused_while_a_version_names_the_file_then_allowed(app, client, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    assert _post_files(ann, (png(), "logo.png")).status_code == 303
    asset = services.assets.list(tenant.workspace_id, 10)["data"][0]
    video = _video(client, tenant)
    doc = with_image(video["current_version"]["doc"], key=asset["key"])
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=tenant.headers).status_code == 200
    html = ann.get("/app/media").get_data(as_text=True)
    assert f'Used by: <a href="/app/videos/{video["id"]}">Video: ' in html
    token = csrf_token(ann, "/app/media")
    refused = ann.post(f"/app/media/{asset['id']}/delete", data={"csrf_token": token, "back": "/app/media"})
    assert refused.status_code == 409  # the confirmation page, naming the video by its title, linked
    shown = refused.get_data(as_text=True)
    assert "“logo.png” is in use" in shown and f'<a href="/app/videos/{video["id"]}">Video: ' in shown
    assert _items(ann.get("/app/media").get_data(as_text=True)) == [asset["id"]]
    assert len(_stored(services, tenant.workspace_id)) == 2
    # a file nothing names is deleted, with its thumbnail
    unused = services.assets.upload(tenant.workspace_id, png(colour=(0, 200, 0)))
    deleted = ann.post(f"/app/media/{unused['id']}/delete", data={"csrf_token": token})
    assert deleted.status_code == 303 and deleted.headers["Location"] == "/app/media"
    after = ann.get("/app/media").get_data(as_text=True)
    assert "is deleted." in after and _items(after) == [asset["id"]]
    assert not any(unused["key"].rsplit(".", 1)[0] in k for k in _stored(services, tenant.workspace_id))


def test_each_workspace_sees_and_deletes_only_its_own_files(app, services, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    ann, bob = signed_in_owner(app, a), signed_in_owner(app, b)
    assert _post_files(ann, (png(), "a.png")).status_code == 303
    mine = services.assets.list(a.workspace_id, 10)["data"][0]
    page = bob.get("/app/media").get_data(as_text=True)
    assert _items(page) == [] and mine["id"] not in page and mine["key"] not in page
    assert _post_files(bob, (png(), "same-bytes.png")).status_code == 303  # B's own copy of the same bytes
    theirs = services.assets.list(b.workspace_id, 10)["data"][0]
    assert theirs["id"] != mine["id"] and _items(bob.get("/app/media").get_data(as_text=True)) == [theirs["id"]]
    refused = bob.post(f"/app/media/{mine['id']}/delete", data={"csrf_token": csrf_token(bob, "/app/media")})
    assert refused.status_code == 404
    assert services.assets.get(a.workspace_id, mine["id"])["id"] == mine["id"]
    assert _items(ann.get("/app/media").get_data(as_text=True)) == [mine["id"]]
    assert services.assets.used_by(b.workspace_id, [mine["id"]]) == {}


def test_a_video_is_listed_with_its_poster_and_filtered(app, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    made = _post_files(ann, (clip(rotate=-90, audio_sec=1.0), "IMG_0042.MOV"), (png(), "photo.png"))
    assert made.status_code == 303
    video = services.assets.list(tenant.workspace_id, 10, kind="video")["data"][0]
    html = ann.get("/app/media?kind=video").get_data(as_text=True)
    assert _items(html) == [video["id"]]
    src = unescape(re.search(r'<img src="([^"]+)" alt="Video poster, 48×64"', html).group(1))
    assert urlsplit(src).path == urlsplit(video["thumbnail_url"]).path
    assert "<strong class=\"break\">IMG_0042.MOV</strong>" in html and "Video · " in html and "· 48×64 · 0:02" in html
    assert '<a href="/app/media?kind=video" aria-current="true">Videos</a>' in html
