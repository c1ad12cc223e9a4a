"""The media library (``/api/v1/assets``): uploads probed by content, stored once per workspace under
its own prefix, listed, read, used in a document by key and deleted, across two workspaces, on
SQLite and PostgreSQL, on local files and on the S3 emulator (moto's server on loopback)."""
from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import av
import httpx
import numpy as np
import pytest
from moto.server import ThreadedMotoServer
from PIL import Image

from reelfarm.shared.config import Settings
from reelfarm.shared.storage import make_s3_client
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image

BUCKET = "reelfarm-assets"
ASSET_KEYS = {"id", "kind", "content_type", "bytes", "key", "width", "height", "duration_sec", "fps", "has_audio",
              "url", "thumbnail_url", "created_at", "name", "cues"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(params=["local", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path, db_url: str, monkeypatch) -> Settings:
    return storage_settings(request, tmp_path, db_url, monkeypatch)


def storage_settings(request: pytest.FixtureRequest, tmp_path, db_url: str, monkeypatch, **extra: str) -> Settings:
    """Settings on local files or moto's S3 (``request.param``), with ``extra`` variables."""
    env = {"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url, **extra}
    if request.param == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
            monkeypatch.setenv(name, value)
        client = make_s3_client(endpoint)
        if not any(b["Name"] == BUCKET for b in client.list_buckets()["Buckets"]):
            client.create_bucket(Bucket=BUCKET)
        env.update(REELFARM_STORAGE_URL=f"s3://{BUCKET}/{tmp_path.name}", REELFARM_S3_ENDPOINT_URL=endpoint)
    return Settings.from_env(env)


def png(size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def huge_png(width: int = 50_000, height: int = 50_000) -> bytes:
    """A small file whose header claims ``width`` x ``height`` pixels (2.5 billion)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b"")


def mp3(seconds: float = 2.0) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=44100)
        stream.layout = "mono"
        total = int(44100 * seconds)
        for start in range(0, total, 1152):
            samples = np.sin(np.arange(start, min(total, start + 1152)) / 10).astype(np.float32) * 0.3
            frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="fltp", layout="mono")
            frame.sample_rate = 44100
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def ogg(codec: str, seconds: float = 2.0, layout: str = "mono") -> bytes:
    """An Ogg sound of ``seconds`` of a tone: Opus (``libopus``) or Vorbis (``vorbis``, FFmpeg's own
    encoder: stereo only, marked experimental)."""
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream(codec, rate=48000)
        stream.layout = layout
        if codec == "vorbis":
            stream.codec_context.options = {"strict": "experimental"}
        channels = 2 if layout == "stereo" else 1
        total = int(48000 * seconds)
        for start in range(0, total, 960):
            tone = np.sin(np.arange(start, min(total, start + 960)) / 10).astype(np.float32) * 0.3
            frame = av.AudioFrame.from_ndarray(np.tile(tone, (channels, 1)), format="fltp", layout=layout)
            frame.sample_rate, frame.pts = 48000, start
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="#00f"/></svg>'
SVG_BOMB = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                       for i in range(1, 10))
            + b']><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&lol9;</text></svg>')


def upload(client, tenant, data: bytes, name: str = "file.bin"):
    return client.post("/api/v1/assets", data={"file": (io.BytesIO(data), name)},
                       content_type="multipart/form-data", headers=tenant.headers)


def stored(services, tenant) -> list[str]:
    return services.storage.list_keys(f"assets/{tenant.workspace_id}")


def fetch(client, url: str) -> bytes:
    """The bytes behind a signed URL: from this app's ``/files/`` (local storage) or from S3."""
    parts = urlsplit(url)
    if "/files/" in parts.path:
        answer = client.get(f"{parts.path}?{parts.query}")
        assert answer.status_code == 200
        return answer.data
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200, response.text
    return response.content


def test_an_image_upload_is_probed_stored_once_and_served(client, services, tenant):
    first = upload(client, tenant, png(), name="holiday.txt")  # the name says nothing
    assert first.status_code == 201, first.get_json()
    asset = first.get_json()
    assert set(asset) == ASSET_KEYS
    assert (asset["kind"], asset["content_type"], asset["width"], asset["height"]) == ("image", "image/png", 64, 48)
    assert asset["bytes"] == len(png()) and asset["duration_sec"] is None
    assert asset["key"].startswith(f"assets/{tenant.workspace_id}/") and asset["key"].endswith(".png")
    assert asset["name"] == "holiday.txt"  # kept as a label, though it says nothing of what the file is
    again = upload(client, tenant, png(), name="other.png")
    assert again.status_code == 201 and again.get_json()["id"] == asset["id"]
    assert again.get_json()["name"] == "holiday.txt"  # the same bytes keep the name they were known by
    assert len(stored(services, tenant)) == 2  # the file and its thumbnail, once
    assert fetch(client, asset["url"]) == png()
    thumb = Image.open(io.BytesIO(fetch(client, asset["thumbnail_url"])))
    assert thumb.format == "JPEG" and thumb.size == (64, 48)
    got = client.get(f"/api/v1/assets/{asset['id']}", headers=tenant.headers)
    assert got.status_code == 200 and got.get_json()["key"] == asset["key"]


def test_svg_and_sound_are_measured(client, tenant):
    svg = upload(client, tenant, SVG).get_json()
    assert (svg["kind"], svg["content_type"], svg["width"], svg["height"]) == ("image", "image/svg+xml", 120, 60)
    sound = upload(client, tenant, mp3(2.0))
    assert sound.status_code == 201, sound.get_json()
    sound = sound.get_json()
    assert (sound["kind"], sound["content_type"], sound["thumbnail_url"]) == ("audio", "audio/mpeg", None)
    assert sound["duration_sec"] == pytest.approx(2.0, abs=0.1)
    listed = client.get("/api/v1/assets?kind=audio", headers=tenant.headers).get_json()
    assert [a["id"] for a in listed["data"]] == [sound["id"]]


@pytest.mark.parametrize(("codec", "layout"), [("libopus", "mono"), ("vorbis", "stereo")])
def test_an_ogg_sound_is_accepted_with_its_duration(client, services, tenant, codec, layout):
    data = ogg(codec, 2.5, layout)
    response = upload(client, tenant, data, name="jingle.bin")
    assert response.status_code == 201, response.get_json()
    sound = response.get_json()
    assert (sound["kind"], sound["content_type"], sound["width"], sound["thumbnail_url"]) == (
        "audio", "audio/ogg", None, None)
    assert sound["duration_sec"] == pytest.approx(2.5, abs=0.05) and sound["bytes"] == len(data)
    assert sound["key"].startswith(f"assets/{tenant.workspace_id}/") and sound["key"].endswith(".ogg")
    assert stored(services, tenant) == [sound["key"]]  # no thumbnail for a sound
    assert fetch(client, sound["url"]) == data


@pytest.mark.parametrize("what", ["text", "svg_bomb", "huge_png", "truncated_mp3", "truncated_png", "empty"])
def test_refused_uploads_store_nothing(client, services, tenant, what):
    data = {"text": b"hello, this is not media" * 10, "svg_bomb": SVG_BOMB, "huge_png": huge_png(),
            "truncated_mp3": mp3(3.0)[:8000], "truncated_png": png((400, 400))[:300], "empty": b""}[what]
    response = upload(client, tenant, data, name="picture.png")
    too_large = what == "huge_png"  # past the pixels allowed: a file too large, as one past the bytes
    error = assert_error(response, *((413, "payload_too_large") if too_large else (400, "validation_failed")))
    assert [d["field"] for d in error["details"]] == ["/file"]
    assert stored(services, tenant) == []
    assert client.get("/api/v1/assets", headers=tenant.headers).get_json()["data"] == []


def test_too_large_and_not_multipart_are_refused(client, services, tenant, monkeypatch):
    from reelfarm.farm.services import media
    monkeypatch.setattr(media, "MAX_IMAGE_BYTES", 1000)
    error = assert_error(upload(client, tenant, png((300, 300), (1, 2, 3)) + b"\0" * 2000), 413, "payload_too_large")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/file", "payload_too_large")]
    r = client.post("/api/v1/assets", json={"file": "x"}, headers=tenant.headers)
    assert r.status_code == 415
    assert stored(services, tenant) == []


def test_pages_newest_first(client, clock, tenant):
    ids = []
    for shade in range(3):
        ids.append(upload(client, tenant, png(colour=(shade, 0, 0))).get_json()["id"])
        clock.advance(1)
    first = client.get("/api/v1/assets?limit=2", headers=tenant.headers).get_json()
    assert [a["id"] for a in first["data"]] == ids[:0:-1] and first["next_cursor"]
    rest = client.get(f"/api/v1/assets?limit=2&cursor={first['next_cursor']}", headers=tenant.headers).get_json()
    assert [a["id"] for a in rest["data"]] == [ids[0]] and rest["next_cursor"] is None


def test_two_workspaces_keep_their_own(client, services, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    asset = upload(client, a, png()).get_json()
    same = upload(client, b, png()).get_json()  # the same bytes: B's own copy, under B's prefix
    assert same["id"] != asset["id"] and same["key"].startswith(f"assets/{b.workspace_id}/")
    assert [x["id"] for x in client.get("/api/v1/assets", headers=b.headers).get_json()["data"]] == [same["id"]]
    assert_error(client.get(f"/api/v1/assets/{asset['id']}", headers=b.headers), 404, "not_found", details=None)
    assert_error(client.delete(f"/api/v1/assets/{asset['id']}", headers=b.headers), 404, "not_found", details=None)
    # B names A's key in its own document: refused like any key that is not B's
    video = _video(client, b)
    doc = with_image(video["current_version"]["doc"], key=asset["key"])
    error = assert_error(client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=b.headers),
                         400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["/doc/assets/pic/key"]
    # a signed URL of A's file with B's key put in it is not a URL of B's file
    if "/files/" in urlsplit(asset["url"]).path:
        parts = urlsplit(asset["url"])
        query = dict(parse_qsl(parts.query))
        forged = client.get(parts.path.replace(a.workspace_id, b.workspace_id) + "?" + urlencode(query))
        assert forged.status_code == 403
    assert client.get(f"/api/v1/assets/{asset['id']}", headers=a.headers).status_code == 200
    assert len(stored(services, a)) == 2


def test_delete_is_refused_while_a_version_names_it(client, services, tenant):
    asset = upload(client, tenant, png()).get_json()
    unused = upload(client, tenant, png(colour=(0, 255, 0))).get_json()
    video = _video(client, tenant)
    doc = with_image(video["current_version"]["doc"], key=asset["key"])
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=tenant.headers).status_code == 200
    error = assert_error(client.delete(f"/api/v1/assets/{asset['id']}", headers=tenant.headers), 409, "asset_in_use",
                         details=None)
    assert video["id"] in error["message"]
    assert client.delete(f"/api/v1/assets/{unused['id']}", headers=tenant.headers).status_code == 204
    assert client.get(f"/api/v1/assets/{unused['id']}", headers=tenant.headers).status_code == 404
    assert sorted(stored(services, tenant)) == sorted([asset["key"], asset["key"][:-4] + ".thumb.jpg"])
