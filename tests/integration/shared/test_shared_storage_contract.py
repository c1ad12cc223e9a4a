"""One contract, two backends: LocalStorage on a temporary folder, S3Storage against moto.

moto's ``ThreadedMotoServer`` is a fake of an outside service (Amazon S3), run in this process
on 127.0.0.1 with a random port; boto3 talks to it over real HTTP, so request signing,
presigned URLs and error codes go through the same client code as in production.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from reelfarm.shared.config import Settings
from reelfarm.shared.errors import InvalidStorageKey, ObjectNotFound
from reelfarm.shared.storage import LocalStorage, S3Storage, Storage, make_s3_client, make_storage

BUCKET = "reelfarm-test"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_client(endpoint: str) -> Any:
    return make_s3_client(endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return LocalStorage(tmp_path / "files", "http://127.0.0.1:8000", "k" * 48)
    client = s3_client(request.getfixturevalue("s3_endpoint"))
    if not any(b["Name"] == BUCKET for b in client.list_buckets()["Buckets"]):
        client.create_bucket(Bucket=BUCKET)
    return S3Storage(BUCKET, f"run-{tmp_path.name}", client, tmp_path / "cache")


def test_put_and_get_bytes(storage: Storage) -> None:
    storage.put_bytes("renders/r1/poster.png", b"\x89PNG data", "image/png")
    assert storage.get_bytes("renders/r1/poster.png") == b"\x89PNG data"
    assert storage.exists("renders/r1/poster.png")
    assert storage.size("renders/r1/poster.png") == 9


def test_put_replaces(storage: Storage) -> None:
    storage.put_bytes("chunks/r1/0001.ts", b"first try", "video/mp2t")
    storage.put_bytes("chunks/r1/0001.ts", b"retry", "video/mp2t")
    assert storage.get_bytes("chunks/r1/0001.ts") == b"retry"


def test_put_file_and_open_local(storage: Storage, tmp_path: Path) -> None:
    source = tmp_path / "video.mp4"
    payload = bytes(range(256)) * 4096  # 1 MiB
    source.write_bytes(payload)
    storage.put_file("renders/r2/video.mp4", source, "video/mp4")

    local = storage.open_local("renders/r2/video.mp4")
    assert Path(local).read_bytes() == payload
    assert storage.open_local("renders/r2/video.mp4") == local  # the same (cached) path again
    assert storage.size("renders/r2/video.mp4") == len(payload)


def test_missing_objects(storage: Storage) -> None:
    assert not storage.exists("nothing/here.png")
    with pytest.raises(ObjectNotFound):
        storage.get_bytes("nothing/here.png")
    with pytest.raises(ObjectNotFound):
        storage.size("nothing/here.png")
    with pytest.raises(ObjectNotFound):
        storage.open_local("nothing/here.png")
    storage.delete("nothing/here.png")  # deleting what is not there is fine


def test_delete(storage: Storage) -> None:
    storage.put_bytes("stills/s.png", b"x", "image/png")
    storage.delete("stills/s.png")
    assert not storage.exists("stills/s.png")


def test_list_keys_of_a_folder(storage: Storage) -> None:
    for key in ("renders/r1/stream/seg1.ts", "renders/r1/stream/seg0.ts", "renders/r1/seg0.mp4",
                "renders/r10/stream/seg0.ts", "renders/r2/stream/seg0.ts"):
        storage.put_bytes(key, b"x", "video/mp2t")
    assert storage.list_keys("renders/r1/stream") == ["renders/r1/stream/seg0.ts", "renders/r1/stream/seg1.ts"]
    assert storage.list_keys("renders/r1") == ["renders/r1/seg0.mp4", "renders/r1/stream/seg0.ts",
                                               "renders/r1/stream/seg1.ts"], "not renders/r10's"
    storage.delete("renders/r1/stream/seg0.ts")
    assert storage.list_keys("renders/r1/stream") == ["renders/r1/stream/seg1.ts"]
    assert storage.list_keys("renders/r3") == []


def test_modified_is_when_the_object_was_written(storage: Storage) -> None:
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)  # S3 keeps whole seconds
    storage.put_bytes("brand-kits/k1/logo.png", b"x", "image/png")
    written = storage.modified("brand-kits/k1/logo.png")
    assert before <= written <= datetime.now(UTC) + timedelta(seconds=1) and written.tzinfo is not None
    with pytest.raises(ObjectNotFound):
        storage.modified("brand-kits/k1/other.png")


@pytest.mark.parametrize("key", ["../escape", "/abs", "a//b"])
def test_unsafe_keys_are_refused(storage: Storage, key: str) -> None:
    with pytest.raises(InvalidStorageKey):
        storage.put_bytes(key, b"x", "text/plain")
    with pytest.raises(InvalidStorageKey):
        storage.url(key, 60)


def test_url_is_signed_and_expiring(storage: Storage) -> None:
    storage.put_bytes("stills/t.png", b"png", "image/png")
    url = storage.url("stills/t.png", expires_in=600)
    assert "stills/t.png" in url
    if isinstance(storage, LocalStorage):
        assert "expires=" in url and "sig=" in url
    else:
        assert "X-Amz-Expires=600" in url and "X-Amz-Signature=" in url


def test_s3_presigned_url_downloads(s3_endpoint: str, tmp_path: Path) -> None:
    """The URL works without credentials. (moto does not check signatures, so refusing a
    tampered one is S3's job and is not tested here; LocalStorage's own check is unit-tested.)"""
    client = s3_client(s3_endpoint)
    client.create_bucket(Bucket="presign-check")
    storage = S3Storage("presign-check", "p", client, tmp_path)
    storage.put_bytes("a.mp4", b"movie", "video/mp4")

    url = storage.url("a.mp4", 60)
    with urllib.request.urlopen(url) as response:
        assert response.read() == b"movie"
        assert response.headers["Content-Type"] == "video/mp4"


def test_s3_keys_live_under_the_prefix(s3_endpoint: str, tmp_path: Path) -> None:
    client = s3_client(s3_endpoint)
    client.create_bucket(Bucket="prefix-check")
    S3Storage("prefix-check", "farm/one", client, tmp_path).put_bytes("x/y.png", b"1", "image/png")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="prefix-check")["Contents"]]
    assert keys == ["farm/one/x/y.png"]


def test_make_storage_picks_the_backend_from_the_url(tmp_path: Path, s3_endpoint: str) -> None:
    base = {"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_SECRET_KEY": "k" * 48}
    local = make_storage(Settings.from_env(base))
    assert isinstance(local, LocalStorage) and local.root == (tmp_path / "files").resolve()

    s3 = make_storage(Settings.from_env({**base, "REELFARM_STORAGE_URL": "s3://bucket/some/prefix",
                                         "REELFARM_S3_ENDPOINT_URL": s3_endpoint}))
    assert isinstance(s3, S3Storage)
    assert (s3.bucket, s3.prefix) == ("bucket", "some/prefix")
    assert s3.cache_dir == (tmp_path / "cache" / "s3").resolve()
