"""A file too large is one answer however it arrives: 413 ``payload_too_large`` whose ``details[0]``
points at what was too large, and one SDK error, ``PayloadTooLargeError``: a file past a limit read
from an upload, a body past the upload's length limit before it is read, a presigned upload's
declared size (a ``bytes`` field the SDK filled in, not its caller), and what an address sent. A
JSON body past its limit stays 413 ``payload_too_large`` without details. SQLite and PostgreSQL."""
from __future__ import annotations

from pathlib import Path

import pytest

from reelfarm.client import Client, PayloadTooLargeError
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_asset_uploads import ON_LOCAL_FILES, ON_S3
from tests.integration.api.test_api_assets import (  # noqa: F401  (fixtures)
    png,
    s3_endpoint,
    settings,
    stored,
    upload,
)
from tests.integration.api.test_api_idempotency import served  # noqa: F401 - fixture: the app on a real HTTP server


def _raised(base: str, tenant, path: Path, presigned: bool) -> PayloadTooLargeError:
    with Client(api_key=tenant.key, base_url=base) as rf, pytest.raises(PayloadTooLargeError) as caught:
        rf.assets.upload(path, presigned=presigned)
    assert (caught.value.status, caught.value.code) == (413, "payload_too_large")
    assert caught.value.request_id and caught.value.request_id.startswith("req_")
    return caught.value


@ON_LOCAL_FILES
def test_a_file_past_the_limit_read_is_413_on_file(served, services, tenant, tmp_path: Path, monkeypatch):  # noqa: F811
    from reelfarm.farm.services import media
    monkeypatch.setattr(media, "MAX_UPLOAD_BYTES", 1000)
    path = tmp_path / "photo.png"
    path.write_bytes(png((300, 300), (1, 2, 3)) + b"\0" * 2000)
    error = _raised(served, tenant, path, presigned=False)
    assert [(d["field"], d["code"]) for d in error.details or []] == [("/file", "payload_too_large")]
    assert "1000" in error.message
    assert stored(services, tenant) == []


@ON_LOCAL_FILES
def test_a_body_past_the_uploads_length_limit_is_the_same_413(served, services, tenant, tmp_path: Path,  # noqa: F811
                                                              monkeypatch):
    from reelfarm.api import app
    monkeypatch.setattr(app, "MAX_UPLOAD_BYTES", 1000)  # the body's limit: 1000 bytes and 64 KiB of form
    path = tmp_path / "photo.png"
    path.write_bytes(png() + b"\0" * 80_000)
    error = _raised(served, tenant, path, presigned=False)
    assert [(d["field"], d["code"]) for d in error.details or []] == [("/file", "payload_too_large")]
    assert "at most 1000 bytes" in error.message
    assert stored(services, tenant) == []


@ON_S3
def test_a_presigned_uploads_declared_size_past_the_limit_is_the_same_413(served, services, tenant,  # noqa: F811
                                                                         tmp_path: Path, monkeypatch):
    from reelfarm.farm.services import library
    monkeypatch.setattr(library, "MAX_UPLOAD_BYTES", 1000)
    path = tmp_path / "photo.png"
    path.write_bytes(png((300, 300), (1, 2, 3)) + b"\0" * 2000)
    error = _raised(served, tenant, path, presigned=True)
    assert [(d["field"], d["code"]) for d in error.details or []] == [("/bytes", "payload_too_large")]
    assert stored(services, tenant) == []


@ON_LOCAL_FILES
def test_a_json_body_past_its_limit_is_413_without_details(client, tenant):
    response = client.post("/api/v1/assets/from-url", data=b'{"url": "' + b"a" * 3_000_000 + b'"}',
                           headers={**tenant.headers, "Content-Type": "application/json"})
    assert_error(response, 413, "payload_too_large", details=None)
