"""Names in the media library (``/api/v1/assets``): a file keeps the name it came with (an upload's
file name, a presigned upload's ``filename``, the last part of the address it was fetched from),
the same bytes again keep theirs, ``PATCH`` renames (checked, in the one error envelope), ``?q=``
searches names in any case with ``%`` and ``_`` taken as themselves; each workspace sees, renames
and finds only its own. Also: a transparent image's thumbnail keeps its transparency (a WebP), a
refused upload names sizes in MB and an oversized image's pixels, and an asset in use is refused
naming the videos by title. On SQLite and PostgreSQL; on local files and moto's S3 where storage
matters.
"""
from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from PIL import Image

from reelfarm.shared.config import Settings
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_asset_uploads import ON_S3, complete, put, start
from tests.integration.api.test_api_assets import (  # noqa: F401  (fixtures)
    fetch,
    huge_png,
    mp3,
    png,
    s3_endpoint,
    storage_settings,
    stored,
    upload,
)
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image

ON_LOCAL_FILES = pytest.mark.parametrize("settings", ["local"], indirect=True)


@pytest.fixture(params=["local", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path, db_url: str, monkeypatch) -> Settings:
    return storage_settings(request, tmp_path, db_url, monkeypatch, REELFARM_FETCH_ALLOW_PRIVATE="1")


def transparent_png(size: tuple[int, int] = (400, 200)) -> bytes:
    """A red disc-less picture: its left half opaque red, its right half fully transparent."""
    image = Image.new("RGBA", size, (0, 0, 0, 0))
    image.paste((220, 30, 30, 255), (0, 0, size[0] // 2, size[1]))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A loopback server of a few images, under paths whose last part is (or is not) a name."""
    routes = {"/files/Team%20Photo%20%28final%29.png": png(colour=(1, 2, 3)),
              "/a/..%2F..%2Fetc%2Fpasswd.png": png(colour=(4, 5, 6)),
              "/images/": png(colour=(7, 8, 9))}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
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


def rename(client, tenant, asset_id: str, body):
    return client.patch(f"/api/v1/assets/{asset_id}", json=body, headers=tenant.headers)


def names(client, tenant, query: str = "") -> list[str | None]:
    answer = client.get(f"/api/v1/assets{query}", headers=tenant.headers)
    assert answer.status_code == 200, answer.get_json()
    return [a["name"] for a in answer.get_json()["data"]]


@ON_LOCAL_FILES
def test_an_upload_keeps_its_file_name_and_the_same_bytes_keep_theirs(client, services, tenant, clock):
    first = upload(client, tenant, png(), name="photos/2026/Logo\tdark.png").get_json()
    assert first["name"] == "Logo dark.png"  # the last path part, a tab made a space
    again = upload(client, tenant, png(), name="other.png").get_json()
    assert (again["id"], again["name"]) == (first["id"], "Logo dark.png")
    # bytes kept without a name take the name they come with next
    nameless = services.assets.upload(tenant.workspace_id, mp3(1.0))
    assert nameless["name"] is None
    clock.advance(1)
    named = upload(client, tenant, mp3(1.0), name="jingle.mp3").get_json()
    assert (named["id"], named["name"]) == (nameless["id"], "jingle.mp3")
    assert client.get(f"/api/v1/assets/{first['id']}", headers=tenant.headers).get_json()["name"] == "Logo dark.png"


@ON_LOCAL_FILES
def test_rename_and_search_by_name_each_workspace_its_own(client, make_tenant, clock):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    logo = upload(client, a, png(colour=(1, 1, 1)), name="Logo_100%.png").get_json()
    clock.advance(1)
    dark = upload(client, a, png(colour=(2, 2, 2)), name="logo-dark.png").get_json()
    clock.advance(1)
    upload(client, a, mp3(1.0), name="Jingle.mp3")
    clock.advance(1)
    theirs = upload(client, b, png(colour=(3, 3, 3)), name="B logo.png").get_json()

    assert names(client, a, "?q=LOGO") == ["logo-dark.png", "Logo_100%.png"]  # any case, newest first
    assert names(client, a, "?q=100%25") == ["Logo_100%.png"]
    assert names(client, a, "?q=o_1") == ["Logo_100%.png"]  # "_" is itself, not any one character
    assert names(client, a, "?q=%25") == ["Logo_100%.png"]  # "%" is itself, not anything
    assert names(client, a, "?q=o-d&kind=image") == ["logo-dark.png"]
    assert names(client, a, "?q=logo&kind=audio") == []
    assert len(names(client, a, "?q=")) == len(names(client, a, "?q=%20%20")) == 3  # an empty search: all
    first = client.get("/api/v1/assets?q=logo&limit=1", headers=a.headers).get_json()
    rest = client.get(f"/api/v1/assets?q=logo&limit=1&cursor={first['next_cursor']}", headers=a.headers).get_json()
    assert [x["name"] for x in first["data"] + rest["data"]] == ["logo-dark.png", "Logo_100%.png"]
    assert rest["next_cursor"] is None

    renamed = rename(client, a, dark["id"], {"name": "  Brand mark (dark).png "})
    assert renamed.status_code == 200 and renamed.get_json()["name"] == "Brand mark (dark).png"
    assert renamed.get_json()["key"] == dark["key"]  # the label changes, not the file
    assert names(client, a, "?q=brand") == ["Brand mark (dark).png"]

    for bad, code in (("", "blank"), ("   ", "blank"), ("a/b.png", "invalid"), ("a\\b.png", "invalid"),
                      ("two\nlines", "invalid"), ("x" * 256, "too_long")):
        error = assert_error(rename(client, a, logo["id"], {"name": bad}), 400, "validation_failed")
        assert [(d["field"], d["code"]) for d in error["details"]] == [("/name", code)], bad
    error = assert_error(rename(client, a, logo["id"], {"name": "x.png", "key": "k"}), 400, "validation_failed")
    assert "/key" in [d["field"] for d in error["details"]]
    assert_error(rename(client, a, logo["id"], {"name": 5}), 400, "validation_failed")
    assert_error(client.get("/api/v1/assets?q=" + "x" * 256, headers=a.headers), 400, "validation_failed")
    assert client.get(f"/api/v1/assets/{logo['id']}", headers=a.headers).get_json()["name"] == "Logo_100%.png"

    # B: neither A's names nor A's assets
    assert_error(rename(client, b, logo["id"], {"name": "mine now.png"}), 404, "not_found")
    assert names(client, b, "?q=logo") == ["B logo.png"] and names(client, b, "?q=brand") == []
    assert_error(rename(client, a, theirs["id"], {"name": "x.png"}), 404, "not_found")
    assert client.get(f"/api/v1/assets/{logo['id']}", headers=a.headers).get_json()["name"] == "Logo_100%.png"
    assert client.get(f"/api/v1/assets/{theirs['id']}", headers=b.headers).get_json()["name"] == "B logo.png"


@ON_LOCAL_FILES
def test_a_name_comes_from_the_address_it_was_fetched_from(client, tenant, site):
    def added(path: str):
        answer = client.post("/api/v1/assets/from-url", json={"url": site + path}, headers=tenant.headers)
        assert answer.status_code == 201, answer.get_json()
        return answer.get_json()["name"]
    assert added("/files/Team%20Photo%20%28final%29.png") == "Team Photo (final).png"  # URL-decoded
    assert added("/a/..%2F..%2Fetc%2Fpasswd.png") == "passwd.png"  # no path in a name
    assert added("/images/") is None  # no last part: no name


@ON_S3
def test_a_presigned_upload_is_named_by_its_filename(client, tenant):
    data = png((30, 20), (9, 99, 199))
    staged = start(client, tenant, data, filename="Poster – final.png").get_json()
    assert put(staged, data).status_code == 200
    done = complete(client, tenant, staged["id"])
    assert done.status_code == 201 and done.get_json()["name"] == "Poster – final.png"


def test_a_transparent_image_keeps_its_transparency_in_its_thumbnail(client, services, tenant):
    clear = upload(client, tenant, transparent_png(), name="badge.png").get_json()
    assert urlsplit(clear["thumbnail_url"]).path.endswith(".thumb.webp")
    with Image.open(io.BytesIO(fetch(client, clear["thumbnail_url"]))) as thumb:
        assert (thumb.format, thumb.mode, thumb.size) == ("WEBP", "RGBA", (320, 160))
        assert thumb.getpixel((300, 80))[3] == 0 and thumb.getpixel((20, 80))[3] == 255  # clear stays clear
        red, green, blue, _ = thumb.getpixel((20, 80))
        assert red > 180 and green < 80 and blue < 80
    opaque = upload(client, tenant, png((400, 200)), name="flat.png").get_json()
    assert urlsplit(opaque["thumbnail_url"]).path.endswith(".thumb.jpg")  # nothing to keep: a JPEG as before
    assert fetch(client, opaque["thumbnail_url"])[:3] == b"\xff\xd8\xff"
    assert client.delete(f"/api/v1/assets/{clear['id']}", headers=tenant.headers).status_code == 204
    assert not any(clear["key"].rsplit(".", 1)[0] in key for key in stored(services, tenant))  # the WebP went too


@ON_LOCAL_FILES
def test_a_refused_upload_says_sizes_in_megabytes_and_pixels(client, tenant):
    heavy = b"\x89PNG\r\n\x1a\n" + b"\0" * (30_742_583 - 8)
    error = assert_error(upload(client, tenant, heavy, name="scan.png"), 413, "payload_too_large")
    assert error["details"][0]["message"] == "the image is 29.3 MB, more than the 20 MB allowed"
    error = assert_error(upload(client, tenant, huge_png(12_000, 9_000), name="poster.png"), 413, "payload_too_large")
    assert error["details"][0]["message"] == ("the image is 12000×9000 pixels (108 million), more than the "
                                              "40 million pixels allowed")
    error = assert_error(upload(client, tenant, huge_png(20_000, 100), name="strip.png"), 413, "payload_too_large")
    assert error["details"][0]["message"] == ("the image is 20000×100 pixels, more than the 16384 pixels on a "
                                              "side allowed")
    assert names(client, tenant) == []


@ON_LOCAL_FILES
def test_an_asset_in_use_is_refused_naming_the_videos_by_title(client, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    asset = upload(client, a, png(), name="hero.png").get_json()
    video = _video(client, a)
    doc = with_image(video["current_version"]["doc"], key=asset["key"])
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=a.headers).status_code == 200
    other = _video(client, b)  # B's video naming A's key names nothing of A's
    b_doc = with_image(other["current_version"]["doc"], key=asset["key"])
    client.patch(f"/api/v1/videos/{other['id']}", json={"doc": b_doc}, headers=b.headers)
    error = assert_error(client.delete(f"/api/v1/assets/{asset['id']}", headers=a.headers), 409, "asset_in_use",
                         details=None)
    assert f'the video "{video["title"]}" (id {video["id"]})' in error["message"]
    assert other["id"] not in error["message"]


def test_the_openapi_document_describes_names_rename_and_search(client):
    doc = client.get("/api/v1/openapi.json").get_json()
    item = doc["paths"]["/api/v1/assets/{asset_id}"]
    assert item["patch"]["operationId"] == "renameAsset"
    assert {"200", "400", "404"} <= set(item["patch"]["responses"])
    listed = doc["paths"]["/api/v1/assets"]["get"]
    assert "q" in [p["name"] for p in listed["parameters"] if p["in"] == "query"]
    asset = doc["components"]["schemas"]["Asset"]
    assert "name" in asset["required"] and "name" in asset["properties"]
