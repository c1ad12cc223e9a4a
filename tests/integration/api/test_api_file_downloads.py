"""Signed file URLs as downloads: ``download=1`` (and ``name``) make ``/files/<key>`` answer as an
attachment named after the video, without touching what the signature covers (the key and the
expiry); without it a file stays inline for players.
"""
from __future__ import annotations

import uuid
from urllib.parse import quote, urlsplit

import pytest

from reelfarm.shared.storage import attachment_name, content_disposition, download_url
from tests.integration.api.support import assert_error

MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(200)


def _get(client, url, **kwargs):
    parts = urlsplit(url)
    return client.get(f"{parts.path}?{parts.query}", **kwargs)


@pytest.fixture
def stored(services):
    """A render's MP4 in storage and its signed URL."""
    key = f"renders/{uuid.uuid4()}/video.mp4"
    services.storage.put_bytes(key, MP4, "video/mp4")
    return key, services.storage.url(key, 600)


def test_a_signed_url_is_inline_and_with_download_an_attachment_named_by_the_console(client, stored):
    _, url = stored
    inline = _get(client, url)
    assert inline.status_code == 200 and inline.data == MP4
    assert inline.headers["Content-Disposition"].startswith("inline")

    name = "Spring sale teaser 9x16 720p.mp4"
    answer = _get(client, download_url(url, name))
    assert answer.status_code == 200 and answer.data == MP4 and answer.mimetype == "video/mp4"
    assert answer.headers["Content-Disposition"] == (
        'attachment; filename="Spring sale teaser 9x16 720p.mp4"; '
        "filename*=UTF-8''Spring%20sale%20teaser%209x16%20720p.mp4")
    ranged = _get(client, download_url(url, name), headers={"Range": "bytes=0-3"})
    assert ranged.status_code == 206 and ranged.data == MP4[:4]
    assert ranged.headers["Content-Disposition"].startswith("attachment;")

    unnamed = _get(client, url + "&download=1")
    assert unnamed.headers["Content-Disposition"] == "attachment; filename=\"video.mp4\"; filename*=UTF-8''video.mp4"


def test_a_name_outside_ascii_has_a_utf8_name_and_an_ascii_fallback(client, stored):
    _, url = stored
    answer = _get(client, download_url(url, "Oferta de café (es) 9x16 720p.mp4"))
    assert answer.status_code == 200
    assert answer.headers["Content-Disposition"] == (
        'attachment; filename="Oferta de cafe (es) 9x16 720p.mp4"; '
        f"filename*=UTF-8''{quote('Oferta de café (es) 9x16 720p.mp4', safe='')}")
    japanese = _get(client, download_url(url, "春のセール 9x16 720p.mp4")).headers["Content-Disposition"]
    assert japanese.startswith('attachment; filename="9x16 720p.mp4"; filename*=UTF-8\'\'%E6%98%A5')


@pytest.mark.parametrize(("asked", "saved"), [
    ("../../etc/passwd", "etc-passwd.mp4"),
    ("a\r\nSet-Cookie: x=1", "aSet-Cookie- x=1.mp4"),
    ('"quoted" \\ name', "quoted- - name.mp4"),
    ("setup.exe", "setup.exe.mp4"),
    ("...", "video.mp4"),
    ("", "video.mp4"),
    ("x" * 400, "x" * 146 + ".mp4"),
])
def test_names_are_sanitised_and_keep_the_files_own_extension(client, stored, asked, saved):
    _, url = stored
    assert attachment_name(asked, "renders/r/video.mp4") == saved
    header = _get(client, download_url(url, asked)).headers["Content-Disposition"]
    assert header == content_disposition(saved) and "\r" not in header and "\n" not in header


def test_download_neither_breaks_nor_replaces_the_signature(client, services, stored, clock):
    _, url = stored
    other = f"renders/{uuid.uuid4()}/video.mp4"
    services.storage.put_bytes(other, MP4, "video/mp4")
    parts = urlsplit(download_url(url, "a.mp4"))
    assert _get(client, parts.geturl()).status_code == 200
    assert_error(client.get(f"/files/{other}?{parts.query}"), 403, "forbidden")  # another key, same signature
    tampered = parts.query.replace("expires=", "expires=9")
    assert_error(client.get(f"{parts.path}?{tampered}"), 403, "forbidden")
    unsigned = "&".join(p for p in parts.query.split("&") if not p.startswith("sig="))
    assert_error(client.get(f"{parts.path}?{unsigned}"), 403, "forbidden")
    clock.advance(601)
    assert_error(_get(client, parts.geturl()), 403, "forbidden")


def test_only_urls_signed_by_this_storage_get_the_parameters():
    s3 = "https://bucket.s3.amazonaws.com/renders/r/video.mp4?X-Amz-Signature=abc&X-Amz-Expires=60"
    assert download_url(s3, "a.mp4") == s3
    ours = "http://h/files/renders/r/video.mp4?expires=1&sig=s&download=0&name=old"
    assert download_url(ours, "new name.mp4") == \
        "http://h/files/renders/r/video.mp4?expires=1&sig=s&download=1&name=new%20name.mp4"
