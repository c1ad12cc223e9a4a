"""An SVG that could run script is stored sanitised by every way into the media library (a direct
upload, an address, a presigned upload's completion), and what is stored is what is counted,
hashed and served: on local files behind ``/files/``'s Content-Security-Policy, on S3 (moto's
server on loopback) as an attachment. A brand kit's logo made from one is stored as PNG. SQLite
and PostgreSQL."""
from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx
import pytest
from PIL import Image

from reelfarm.farm.services.media import admit
from reelfarm.shared.config import Settings
from reelfarm.studio.brand.logo import decode_logo
from tests.integration.api.test_api_asset_uploads import complete, put, start
from tests.integration.api.test_api_assets import s3_endpoint, storage_settings, upload  # noqa: F401  (fixture)

SCRIPTED = (b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60" '
            b'onload="document.title=\'ran\'"><script>alert(1)</script>'
            b'<a href="javascript:alert(2)"><rect width="120" height="60" fill="#00f"/></a>'
            b'<foreignObject><iframe xmlns="http://www.w3.org/1999/xhtml" src="javascript:alert(3)"/></foreignObject>'
            b'<image href="https://tracker.example/pixel.png" width="1" height="1"/></svg>')
GONE = (b"script", b"onload", b"javascript", b"alert", b"foreignObject", b"iframe", b"tracker")
STRICT = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


@pytest.fixture(params=["local", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path, db_url: str, monkeypatch) -> Settings:
    """Local files or S3 (as in ``test_api_assets.py``), with the fetcher allowed to reach loopback."""
    return storage_settings(request, tmp_path, db_url, monkeypatch, REELFARM_FETCH_ALLOW_PRIVATE="1")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A loopback server sending the scripted SVG at ``/logo.svg``."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "image/svg+xml")
            self.send_header("Content-Length", str(len(SCRIPTED)))
            self.end_headers()
            self.wfile.write(SCRIPTED)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def assert_stored_sanitised(client, services, asset: dict) -> bytes:
    """The asset's stored bytes: sanitised, counted and hashed as stored, and served as stored, with
    what keeps a browser that opens the link from running it."""
    stored = services.storage.get_bytes(asset["key"])
    assert stored == admit(SCRIPTED)[0]
    for word in GONE:
        assert word.lower() not in stored.lower(), word
    assert b'<g><rect width="120" height="60" fill="#00f"/></g>' in stored  # the drawing stays
    assert (asset["content_type"], asset["width"], asset["height"]) == ("image/svg+xml", 120, 60)
    assert asset["bytes"] == len(stored) and hashlib.sha256(stored).hexdigest() in asset["key"]
    assert asset["thumbnail_url"] == asset["url"]
    parts = urlsplit(asset["url"])
    if "/files/" in parts.path:
        answer = client.get(f"{parts.path}?{parts.query}")
        assert answer.status_code == 200 and answer.data == stored and answer.mimetype == "image/svg+xml"
        assert answer.headers["Content-Security-Policy"] == STRICT
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
    else:
        answer = httpx.get(asset["url"], timeout=30)
        assert answer.status_code == 200 and answer.content == stored
        assert answer.headers["Content-Type"] == "image/svg+xml"
        assert answer.headers["Content-Disposition"] == "attachment"
    return stored


def test_an_uploaded_svg_is_stored_sanitised(client, services, tenant):
    made = upload(client, tenant, SCRIPTED, name="logo.svg")
    assert made.status_code == 201, made.get_json()
    asset = made.get_json()
    stored = assert_stored_sanitised(client, services, asset)
    # the same upload again, or its sanitised copy, is the same asset: one copy
    for again in (SCRIPTED, stored):
        answer = upload(client, tenant, again)
        assert answer.status_code == 201 and answer.get_json()["id"] == asset["id"]
    assert services.storage.list_keys(f"assets/{tenant.workspace_id}") == [asset["key"]]


def test_an_svg_by_address_is_stored_sanitised(client, services, tenant, site):
    made = client.post("/api/v1/assets/from-url", json={"url": f"{site}/logo.svg"}, headers=tenant.headers)
    assert made.status_code == 201, made.get_json()
    assert_stored_sanitised(client, services, made.get_json())


@pytest.mark.parametrize("settings", ["s3"], indirect=True)
def test_a_presigned_svg_is_stored_sanitised_on_completion(client, services, tenant):
    presigned = start(client, tenant, SCRIPTED, content_type="image/svg+xml").get_json()
    assert put(presigned, SCRIPTED).status_code == 200
    done = complete(client, tenant, presigned["id"])
    assert done.status_code == 201, done.get_json()
    assert_stored_sanitised(client, services, done.get_json())
    assert services.storage.list_keys(f"uploads/{tenant.workspace_id}") == []  # the raw bytes went


def test_a_kits_logo_from_an_svg_is_stored_and_served_as_png(client, services, tenant):
    asset = upload(client, tenant, SCRIPTED).get_json()
    answer = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"logo_asset_id": asset["id"]},
                          headers=tenant.headers)
    assert answer.status_code == 200, answer.get_json()
    [key] = [k for k in services.storage.list_keys(f"brand-kits/{tenant.default_kit_id}")]
    assert key.endswith(".png")
    logo = services.storage.get_bytes(key)
    assert Image.open(io.BytesIO(logo)).format == "PNG" and b"<svg" not in logo
    assert urlsplit(answer.get_json()["tokens"]["logo"]["url"]).path.endswith(".png")


def test_an_extracted_svg_logo_is_kept_only_as_png():
    """Brand extraction decodes every logo it fetches (or finds inline) to PNG before storing it."""
    decoded = decode_logo(SCRIPTED, "image/svg+xml")
    assert decoded is not None and decoded.png.startswith(b"\x89PNG\r\n\x1a\n") and b"script" not in decoded.png
