"""``POST /api/v1/assets/from-url``: the server fetches an address through the SSRF guard and stores
what it sent exactly as an upload (same checks, same one copy), on SQLite and PostgreSQL.

The images and sounds are served by a real HTTP server on loopback; the service's fetcher reaches
it because the settings say ``REELFARM_FETCH_ALLOW_PRIVATE=1``, the flag brand extraction's and
remote assets' tests use. The refusal of private addresses is tested with the fetcher the
service has by default.
"""
from __future__ import annotations

import io
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from reelfarm.farm.services.library import URL_FETCH_OPTIONS
from reelfarm.shared.config import Settings
from reelfarm.studio.fetch import make_fetcher
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import mp3, png, stored, upload


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_FETCH_ALLOW_PRIVATE": "1"})


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A loopback server: ``path -> (status, content type, body)``."""
    routes = {
        "/photo.png": (200, "image/png", png()),
        "/download": (200, "application/octet-stream", png(colour=(0, 0, 255))),  # the bytes decide
        "/tone.mp3": (200, "audio/mpeg", mp3(1.5)),
        "/page.html": (200, "image/png", b"<html><body>not an image, whatever it says</body></html>"),
        "/big.png": (200, "image/png", noise()),
        "/moved": (302, "text/plain", b""),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, content_type, body = routes.get(self.path, (404, "text/plain", b"not found"))
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/photo.png")
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def noise(side: int = 64) -> bytes:
    """A PNG of random pixels: about 12 kB that no compression shrinks."""
    pixels = random.Random(7).randbytes(side * side * 3)
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(out, "PNG")
    return out.getvalue()


def from_url(client, tenant, url: str):
    return client.post("/api/v1/assets/from-url", json={"url": url}, headers=tenant.headers)


def test_an_image_by_address_is_stored_as_its_upload_would_be(client, services, tenant, site):
    made = from_url(client, tenant, f"{site}/photo.png")
    assert made.status_code == 201, made.get_json()
    asset = made.get_json()
    assert (asset["kind"], asset["content_type"], asset["width"], asset["height"]) == ("image", "image/png", 64, 48)
    assert asset["bytes"] == len(png()) and asset["key"].startswith(f"assets/{tenant.workspace_id}/")
    assert services.storage.get_bytes(asset["key"]) == png()
    # the same bytes, uploaded or fetched again (through a redirect), are the same one asset
    assert upload(client, tenant, png()).get_json()["id"] == asset["id"]
    assert from_url(client, tenant, f"{site}/moved").get_json()["id"] == asset["id"]
    assert len(stored(services, tenant)) == 2  # the file and its thumbnail, once
    listed = client.get("/api/v1/assets", headers=tenant.headers).get_json()["data"]
    assert [a["id"] for a in listed] == [asset["id"]]


def test_the_bytes_decide_not_the_declared_type(client, tenant, site):
    image = from_url(client, tenant, f"{site}/download")
    assert image.status_code == 201 and image.get_json()["content_type"] == "image/png"
    sound = from_url(client, tenant, f"{site}/tone.mp3").get_json()
    assert (sound["kind"], sound["content_type"]) == ("audio", "audio/mpeg")
    assert sound["duration_sec"] == pytest.approx(1.5, abs=0.1)


@pytest.mark.parametrize(("path", "code", "words"), [
    ("/page.html", "unsupported_media", "what the address sent is refused"),
    ("/missing.png", "unreachable", "answered 404"),
])
def test_what_is_no_media_or_no_answer_is_refused(client, services, tenant, site, path, code, words):
    error = assert_error(from_url(client, tenant, f"{site}{path}"), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/url", code)]
    assert words in error["details"][0]["message"]
    assert stored(services, tenant) == []
    assert client.get("/api/v1/assets", headers=tenant.headers).get_json()["data"] == []


def test_a_closed_port_is_unreachable(client, services, tenant):
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = probe.server_address[1]
    probe.server_close()
    error = assert_error(from_url(client, tenant, f"http://127.0.0.1:{port}/x.png"), 400, "validation_failed")
    assert error["details"][0]["code"] == "unreachable"
    assert stored(services, tenant) == []


def test_a_body_over_the_limit_is_refused(client, services, tenant, site, settings, monkeypatch):
    small = make_fetcher(settings, **{**URL_FETCH_OPTIONS, "max_bytes": 2000})
    monkeypatch.setattr(services.assets, "fetcher", small)
    assert from_url(client, tenant, f"{site}/photo.png").status_code == 201  # under the limit
    error = assert_error(from_url(client, tenant, f"{site}/big.png"), 413, "payload_too_large")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/url", "payload_too_large")]
    assert "more than the 2 KB an upload may be" in error["details"][0]["message"]  # sizes in words
    assert len(stored(services, tenant)) == 2  # only the first one and its thumbnail


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0x7f000001", "10.0.0.1", "169.254.169.254", "2130706433"])
def test_private_addresses_are_refused_by_default(client, services, tenant, site, tmp_path, db_url, monkeypatch, host):
    strict = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "strict"), "REELFARM_DATABASE_URL": db_url})
    monkeypatch.setattr(services.assets, "fetcher", make_fetcher(strict, **URL_FETCH_OPTIONS))
    port = site.rsplit(":", 1)[1]
    error = assert_error(from_url(client, tenant, f"http://{host}:{port}/photo.png"), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/url", "address_refused")]
    assert "not a public address" in error["details"][0]["message"]
    assert stored(services, tenant) == []


@pytest.mark.parametrize("body", [{"url": "file:///etc/passwd"}, {"url": "photo.png"}, {}, {"url": "https://a.b/x", "kind": "image"}])
def test_the_body_is_checked(client, services, tenant, body):
    response = client.post("/api/v1/assets/from-url", json=body, headers=tenant.headers)
    assert_error(response, 400, "validation_failed")
    assert stored(services, tenant) == []


def test_two_workspaces_fetch_their_own_copies(client, services, make_tenant, site):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    mine = from_url(client, a, f"{site}/photo.png").get_json()
    theirs = from_url(client, b, f"{site}/photo.png").get_json()
    assert mine["id"] != theirs["id"] and theirs["key"].startswith(f"assets/{b.workspace_id}/")
    assert_error(client.get(f"/api/v1/assets/{mine['id']}", headers=b.headers), 404, "not_found", details=None)
    assert [x["id"] for x in client.get("/api/v1/assets", headers=b.headers).get_json()["data"]] == [theirs["id"]]
    assert len(stored(services, a)) == 2 and len(stored(services, b)) == 2


def test_the_import_path_is_no_assets_path(client, tenant):
    allowed = client.options("/api/v1/assets/from-url", headers=tenant.headers).headers["Allow"]
    assert sorted(m.strip() for m in allowed.split(",")) == ["OPTIONS", "POST"]
    assert_error(client.get("/api/v1/assets/from-url", headers=tenant.headers), 405, "method_not_allowed")
    assert_error(client.get("/api/v1/assets/not-an-id", headers=tenant.headers), 404, "not_found", details=None)
