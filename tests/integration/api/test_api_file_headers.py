"""Nothing served under ``/files/`` runs script on the API's origin (the console's): every answer,
errors included, carries ``X-Content-Type-Options: nosniff`` and a Content-Security-Policy with
no script and a sandbox; a video or a sound may still be played in a tab of its own. Local storage,
whose files the API serves itself (S3's objects: ``tests/integration/shared/test_shared_storage_headers.py``)."""
from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest

from reelfarm.shared.storage import download_url

STRICT = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
MEDIA = "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox allow-same-origin"
SCRIPTED_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="alert(1)">'
                b"<script>document.title='ran'</script></svg>")
MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(200)


def _get(client, url, **kwargs):
    parts = urlsplit(url)
    return client.get(f"{parts.path}?{parts.query}", **kwargs)


def _guarded(answer, policy: str = STRICT) -> None:
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers.getlist("Content-Security-Policy") == [policy]


def _stored(services, name: str, data: bytes, content_type: str) -> str:
    key = f"assets/{uuid.uuid4()}/{name}"
    services.storage.put_bytes(key, data, content_type)  # straight to storage: no upload's checks
    return services.storage.url(key, 600)


@pytest.mark.parametrize(("name", "data", "served_as"), [
    ("drawing.svg", SCRIPTED_SVG, "image/svg+xml"),
    ("page.html", b"<html><script>document.title='ran'</script></html>", "text/html"),
    ("picture.png", b"\x89PNG\r\n\x1a\n" + bytes(20), "image/png"),
    ("notes", b"<html><script>alert(1)</script>", "application/octet-stream"),
])
def test_a_file_is_served_with_no_script_and_no_sniffing(client, services, name, data, served_as):
    url = _stored(services, name, data, served_as)
    inline = _get(client, url)
    assert inline.status_code == 200 and inline.data == data and inline.mimetype == served_as
    _guarded(inline)
    attachment = _get(client, download_url(url, "saved"))
    assert attachment.status_code == 200 and attachment.headers["Content-Disposition"].startswith("attachment;")
    _guarded(attachment)


@pytest.mark.parametrize(("name", "served_as"), [("video.mp4", "video/mp4"), ("sound.mp3", "audio/mpeg"),
                                                   ("seg0.ts", "video/mp2t")])
def test_a_video_or_sound_can_be_played_in_a_tab_yet_runs_nothing(client, services, name, served_as):
    url = _stored(services, name, MP4, served_as)
    whole = _get(client, url)
    assert whole.status_code == 200 and whole.mimetype == served_as
    _guarded(whole, MEDIA)
    ranged = _get(client, url, headers={"Range": "bytes=0-3"})
    assert ranged.status_code == 206 and ranged.data == MP4[:4]
    _guarded(ranged, MEDIA)
    kept = _get(client, url, headers={"If-None-Match": whole.headers["ETag"]})
    assert kept.status_code == 304  # its headers replace the kept copy's: the same policy
    _guarded(kept, MEDIA)


def test_errors_under_files_carry_the_headers_too(client, services):
    url = _stored(services, "drawing.svg", SCRIPTED_SVG, "image/svg+xml")
    parts = urlsplit(url)
    tampered = client.get(f"{parts.path}?{parts.query.replace('sig=', 'sig=x')}")
    assert tampered.status_code == 403
    _guarded(tampered)
    services.storage.delete(parts.path.removeprefix("/files/"))
    gone = _get(client, url)
    assert gone.status_code == 404
    _guarded(gone)
    unsigned = client.get("/files/drawing.svg")
    assert unsigned.status_code == 403
    _guarded(unsigned)
    wrong_method = client.post(parts.path)
    assert wrong_method.status_code == 405
    _guarded(wrong_method)


def test_other_routes_keep_their_own_headers(client):
    health = client.get("/healthz")
    assert health.status_code == 200 and "Content-Security-Policy" not in health.headers
