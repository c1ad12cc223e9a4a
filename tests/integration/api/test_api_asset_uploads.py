"""Presigned uploads to the media library (``POST /api/v1/assets/uploads``, then ``.../complete``):
on the S3 emulator (moto's server on loopback) the client PUTs the bytes straight to a staging key
under its workspace and completing the upload stores them exactly as a direct upload; refused bytes
store nothing and go; another workspace cannot complete the upload; the quota is checked up front
and again at the end; uploads never completed go in the retention round. On local files the
request is a 409 naming the direct upload. The SDK's ``assets.upload`` takes the presigned way on S3
(asked for, or for a file over its threshold) and the direct one on local files. SQLite and
PostgreSQL."""
from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import anyio
import httpx
import pytest

from reelfarm.client import AsyncClient, Client, ConflictError, QuotaExceededError, uploads
from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.retention import purge
from reelfarm.farm.services.library import UPLOAD_GRACE_SEC, UPLOAD_URL_TTL_SEC
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.shared import plans
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_assets import (  # noqa: F401  (fixtures)
    fetch,
    png,
    s3_endpoint,
    settings,
    stored,
    upload,
)
from tests.integration.api.test_api_idempotency import served  # noqa: F401 - fixture: the app on a real HTTP server

ON_S3 = pytest.mark.parametrize("settings", ["s3"], indirect=True)
ON_LOCAL_FILES = pytest.mark.parametrize("settings", ["local"], indirect=True)
PRESIGNED_KEYS = {"id", "method", "url", "headers", "bytes", "expires_at"}


def start(client, tenant, data: bytes, content_type: str = "image/png", **extra):
    body = {"bytes": len(data), "content_type": content_type, "filename": "photo.png", **extra}
    return client.post("/api/v1/assets/uploads", json=body, headers=tenant.headers)


def put(presigned: dict, data: bytes) -> httpx.Response:
    """The PUT a client makes, with the headers given and the length of what it sends (a client that
    sends another size than declared: S3 refuses it by the signature, the emulator checks none)."""
    headers = {**presigned["headers"], "Content-Length": str(len(data))}
    return httpx.request(presigned["method"], presigned["url"], content=data, headers=headers, timeout=30)


def complete(client, tenant, upload_id: str):
    return client.post(f"/api/v1/assets/uploads/{upload_id}/complete", headers=tenant.headers)


def staged(services, tenant) -> list[str]:
    return services.storage.list_keys(f"uploads/{tenant.workspace_id}")


@ON_LOCAL_FILES
def test_on_local_files_the_direct_upload_is_named(client, services, tenant):
    error = assert_error(start(client, tenant, png()), 409, "presigned_uploads_unavailable", details=None)
    assert "POST /api/v1/assets" in error["message"]
    assert staged(services, tenant) == [] and stored(services, tenant) == []
    assert upload(client, tenant, png()).status_code == 201  # the direct upload works


@ON_S3
def test_a_presigned_upload_is_stored_as_a_direct_upload(client, services, tenant):
    data = png((90, 70), (10, 200, 30))
    created = start(client, tenant, data)
    assert created.status_code == 201, created.get_json()
    presigned = created.get_json()
    assert set(presigned) == PRESIGNED_KEYS
    assert (presigned["method"], presigned["bytes"], presigned["headers"]) == (
        "PUT", len(data), {"Content-Type": "image/png", "Content-Length": str(len(data))})
    assert f"uploads/{tenant.workspace_id}/{presigned['id']}" in presigned["url"]
    assert assert_error(complete(client, tenant, presigned["id"]), 409, "upload_incomplete", details=None)

    # the size and type are signed into the URL with the host (S3 refuses a PUT of another size or
    # type, so the URL cannot store more than was declared; the emulator checks no signature)
    assert "X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost" in presigned["url"]
    assert staged(services, tenant) == []
    assert put(presigned, data).status_code == 200
    assert staged(services, tenant) == [f"uploads/{tenant.workspace_id}/{presigned['id']}"]

    done = complete(client, tenant, presigned["id"])
    assert done.status_code == 201, done.get_json()
    asset = done.get_json()
    assert (asset["kind"], asset["content_type"], asset["width"], asset["height"], asset["bytes"]) == (
        "image", "image/png", 90, 70, len(data))
    assert staged(services, tenant) == []  # the staged object went
    assert fetch(client, asset["url"]) == data
    assert len(stored(services, tenant)) == 2  # the file and its thumbnail

    again = complete(client, tenant, presigned["id"])  # completing twice: the same asset
    assert again.status_code == 201 and again.get_json()["id"] == asset["id"]
    direct = upload(client, tenant, data).get_json()  # the same bytes uploaded directly: one copy
    assert (direct["id"], direct["key"]) == (asset["id"], asset["key"])
    assert len(stored(services, tenant)) == 2


@ON_S3
def test_refused_bytes_store_nothing_and_are_deleted(client, services, tenant):
    text = b"this is no image, whatever its name says" * 10
    presigned = start(client, tenant, text).get_json()
    assert put(presigned, text).status_code == 200
    error = assert_error(complete(client, tenant, presigned["id"]), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/file", "unsupported_media")]
    assert staged(services, tenant) == [] and stored(services, tenant) == []
    assert client.get("/api/v1/assets", headers=tenant.headers).get_json()["data"] == []
    assert_error(complete(client, tenant, presigned["id"]), 409, "upload_incomplete", details=None)

    # an image of another size than the one declared is refused too (where storage did not refuse
    # the PUT already), and may be sent again
    data = png()
    presigned = start(client, tenant, data + b"\0" * 10).get_json()
    assert put(presigned, data).status_code == 200
    error = assert_error(complete(client, tenant, presigned["id"]), 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/file", "size_mismatch")]
    assert staged(services, tenant) == [] and stored(services, tenant) == []


@ON_S3
def test_the_declared_size_and_type_are_checked(client, services, tenant):
    too_large = client.post("/api/v1/assets/uploads", json={"bytes": MAX_UPLOAD_BYTES + 1, "content_type": "image/png"},
                            headers=tenant.headers)
    error = assert_error(too_large, 413, "payload_too_large")  # as an upload's file past the limit
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/bytes", "payload_too_large")]
    for body, field in (({"bytes": 0, "content_type": "image/png"}, "/bytes"),
                        ({"bytes": 10, "content_type": "png"}, "/content_type"),
                        ({"bytes": 10}, "/content_type")):
        response = client.post("/api/v1/assets/uploads", json=body, headers=tenant.headers)
        error = assert_error(response, 400, "validation_failed")
        assert [d["field"] for d in error["details"]] == [field]
    assert staged(services, tenant) == []


@ON_S3
def test_another_workspace_cannot_complete_the_upload(client, services, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    data = png()
    presigned = start(client, a, data).get_json()
    assert put(presigned, data).status_code == 200
    assert_error(complete(client, b, presigned["id"]), 404, "not_found", details=None)
    assert stored(services, b) == [] and staged(services, a) == [f"uploads/{a.workspace_id}/{presigned['id']}"]
    b_presigned = start(client, b, data).get_json()
    assert f"uploads/{b.workspace_id}/{b_presigned['id']}" in b_presigned["url"]
    asset = complete(client, a, presigned["id"]).get_json()
    assert asset["key"].startswith(f"assets/{a.workspace_id}/")
    assert_error(complete(client, b, presigned["id"]), 404, "not_found", details=None)  # completed, still A's
    assert_error(client.get(f"/api/v1/assets/{asset['id']}", headers=b.headers), 404, "not_found", details=None)


@ON_S3
def test_the_quota_is_checked_up_front_and_again_at_the_end(client, services, tenant):
    red, blue = png(colour=(255, 0, 0)), png((80, 60), (0, 0, 255))
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, "pro": len(red) + len(blue) - 1})
    assert_error(start(client, tenant, red + b"\0" * len(blue)), 413, "quota_exceeded", details=None)
    presigned = start(client, tenant, blue).get_json()  # fits now...
    assert put(presigned, blue).status_code == 200
    assert upload(client, tenant, red).status_code == 201  # ...but a direct upload takes the room meanwhile
    assert_error(complete(client, tenant, presigned["id"]), 413, "quota_exceeded", details=None)
    assert staged(services, tenant) == []
    assert len(stored(services, tenant)) == 2  # the red image and its thumbnail alone


@ON_S3
def test_uploads_never_completed_go_after_their_expiry(client, services, clock, make_tenant, settings):  # noqa: F811
    a, b = make_tenant(name="a"), make_tenant(name="b")
    data = png()
    left = start(client, a, data).get_json()
    assert put(left, data).status_code == 200
    done = start(client, a, data).get_json()
    assert put(done, data).status_code == 200
    asset = complete(client, a, done["id"]).get_json()
    clock.advance(seconds=UPLOAD_URL_TTL_SEC)
    b_left = start(client, b, data).get_json()  # B's, an hour younger
    assert put(b_left, data).status_code == 200
    configure(TaskContext(engine=services.engine, storage=services.storage, clock=clock, progress=MemoryProgress(),
                          settings=settings))

    clock.advance(seconds=UPLOAD_GRACE_SEC - 1)  # within the grace: a late completion still works
    assert purge().uploads == 0
    assert staged(services, a) == [f"uploads/{a.workspace_id}/{left['id']}"]

    clock.advance(seconds=2)
    assert purge().uploads >= 2  # A's two (the session's PostgreSQL database may hold others' too)
    assert staged(services, a) == []
    assert_error(complete(client, a, left["id"]), 404, "not_found", details=None)
    assert_error(complete(client, a, done["id"]), 404, "not_found", details=None)
    assert client.get(f"/api/v1/assets/{asset['id']}", headers=a.headers).status_code == 200  # the asset stays
    assert staged(services, b) == [f"uploads/{b.workspace_id}/{b_left['id']}"]
    assert complete(client, b, b_left["id"]).status_code == 201
    clock.advance(UPLOAD_URL_TTL_SEC + UPLOAD_GRACE_SEC)
    purge()
    assert staged(services, b) == []


def everything_of(services, tenant) -> list[str]:
    """The staged objects and stored assets of the tenant, as one listing."""
    return staged(services, tenant) + stored(services, tenant)


@ON_S3
def test_the_sdk_uploads_by_a_presigned_url_on_s3(served, services, tenant, tmp_path: Path, monkeypatch):  # noqa: F811
    photo = tmp_path / "team photo.png"
    photo.write_bytes(png((120, 80), (200, 100, 0)))
    told: list[tuple[int, int | None]] = []
    monkeypatch.setattr(uploads, "CHUNK", 256)
    with Client(api_key=tenant.key, base_url=served) as rf:
        asset = rf.assets.upload(photo, presigned=True, on_progress=lambda sent, total: told.append((sent, total)))
        assert (asset.kind, asset.width, asset.height, asset.bytes) == ("image", 120, 80, photo.stat().st_size)
        assert told[0] == (0, photo.stat().st_size) and told[-1] == (photo.stat().st_size, photo.stat().st_size)
        assert len(told) > 2  # a chunk at a time
        assert staged(services, tenant) == [] and len(stored(services, tenant)) == 2
        assert rf.assets.upload(photo, presigned=False).id == asset.id  # the same bytes, directly: one asset

    # over the threshold, the awaited client goes the presigned way by itself
    monkeypatch.setattr(uploads, "PRESIGNED_OVER", 10)
    other = tmp_path / "other.png"
    other.write_bytes(png((30, 30), (1, 2, 3)))
    created: list[str] = []
    real = services.assets.create_upload
    monkeypatch.setattr(services.assets, "create_upload", lambda *a, **k: created.append("presigned") or real(*a, **k))

    async def main() -> str:
        async with AsyncClient(api_key=tenant.key, base_url=served) as rf:
            return (await rf.assets.upload(other)).content_type
    assert anyio.run(main) == "image/png" and created == ["presigned"]
    assert staged(services, tenant) == [] and len(stored(services, tenant)) == 4


@ON_S3
def test_the_sdk_raises_quota_exceeded_from_either_way(served, services, tenant, tmp_path: Path):  # noqa: F811
    services.assets.quotas = MappingProxyType({**plans.LIBRARY_BYTES, "pro": 100})
    photo = tmp_path / "photo.png"
    photo.write_bytes(png())
    with Client(api_key=tenant.key, base_url=served) as rf:
        for presigned in (True, False):
            with pytest.raises(QuotaExceededError) as caught:
                rf.assets.upload(photo, presigned=presigned)
            assert (caught.value.status, caught.value.code) == (413, "quota_exceeded")
    assert everything_of(services, tenant) == []


@ON_LOCAL_FILES
def test_the_sdk_uploads_directly_on_local_files(served, services, tenant, tmp_path: Path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(uploads, "PRESIGNED_OVER", 10)
    photo = tmp_path / "photo.png"
    photo.write_bytes(png())
    with Client(api_key=tenant.key, base_url=served) as rf:
        with pytest.raises(ConflictError) as caught:
            rf.assets.upload(photo, presigned=True)
        assert caught.value.code == "presigned_uploads_unavailable"
        asset = rf.assets.upload(photo)  # over the threshold, but the server has no presigned uploads
    assert asset.width == 64 and len(stored(services, tenant)) == 2
