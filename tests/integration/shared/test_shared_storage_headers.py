"""What S3 answers for a stored object cannot run script where its link is opened: S3 sends no
Content-Security-Policy or ``nosniff`` of ours, only an object's stored type and disposition, so
anything but a raster image, a video or a sound is stored as an attachment, and a presigned GET
of an ``.svg`` asks for one as well (an SVG stored before that rule included). Against moto's
S3 server on loopback, over real HTTP, as in ``test_shared_storage_contract.py``."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from reelfarm.shared.storage import S3Storage, served_inline
from tests.integration.shared.test_shared_storage_contract import BUCKET, s3_client, s3_endpoint  # noqa: F401

SCRIPTED_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
                b"<script>document.title='ran'</script></svg>")


@pytest.fixture
def storage(s3_endpoint: str, tmp_path: Path) -> S3Storage:  # noqa: F811
    client = s3_client(s3_endpoint)
    if not any(b["Name"] == BUCKET for b in client.list_buckets()["Buckets"]):
        client.create_bucket(Bucket=BUCKET)
    return S3Storage(BUCKET, f"run-{tmp_path.name}", client, tmp_path / "cache")


def _get(storage: S3Storage, key: str, filename: str | None = None) -> httpx.Response:
    answer = httpx.get(storage.url(key, 600, filename), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer


def test_an_svg_is_stored_and_served_as_an_attachment(storage: S3Storage, tmp_path: Path) -> None:
    storage.put_bytes("assets/w/one.svg", SCRIPTED_SVG, "image/svg+xml")
    source = tmp_path / "two.svg"
    source.write_bytes(SCRIPTED_SVG)
    storage.put_file("assets/w/two.svg", source, "image/svg+xml")
    for key in ("assets/w/one.svg", "assets/w/two.svg"):
        head = storage.client.head_object(Bucket=BUCKET, Key=storage.object_key(key))
        assert (head["ContentType"], head["ContentDisposition"]) == ("image/svg+xml", "attachment")
        answer = _get(storage, key)
        assert answer.content == SCRIPTED_SVG  # the type stays, so an <img> still draws it
        assert answer.headers["Content-Type"] == "image/svg+xml"
        assert answer.headers["Content-Disposition"] == "attachment"
    named = _get(storage, "assets/w/one.svg", filename="Logo")
    assert named.headers["Content-Disposition"].startswith('attachment; filename="Logo.svg"')


def test_an_svg_stored_before_the_rule_is_served_as_an_attachment(storage: S3Storage) -> None:
    key = "assets/w/old.svg"
    storage.client.put_object(Bucket=BUCKET, Key=storage.object_key(key), Body=SCRIPTED_SVG,
                              ContentType="image/svg+xml")
    assert "ContentDisposition" not in storage.client.head_object(Bucket=BUCKET, Key=storage.object_key(key))
    answer = _get(storage, key)
    assert "response-content-disposition=attachment" in storage.url(key, 600)
    assert answer.headers["Content-Disposition"] == "attachment"


@pytest.mark.parametrize(("key", "content_type", "inline"), [
    ("renders/r/video.mp4", "video/mp4", True),
    ("renders/r/poster.jpg", "image/jpeg", True),
    ("assets/w/photo.webp", "image/webp", True),
    ("assets/w/sound.mp3", "audio/mpeg", True),
    ("renders/r/stream/seg0.ts", "video/mp2t", True),
    ("renders/r/assets/remote", "text/html; charset=utf-8", False),  # a type a remote server named
    ("previews/w/thumbnails/s.png", "application/octet-stream", False),
    ("assets/w/data.xml", "application/xml", False),
])
def test_only_raster_images_video_and_sound_are_inline(storage: S3Storage, key: str, content_type: str,
                                                        inline: bool) -> None:
    assert served_inline(content_type) is inline
    storage.put_bytes(key, b"<html><script>document.title='ran'</script></html>", content_type)
    disposition = _get(storage, key).headers.get("Content-Disposition")
    assert disposition == (None if inline else "attachment")
