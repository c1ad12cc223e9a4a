"""The SDK's media library against a scripted loopback stand-in for the API: an upload streams one
``multipart/form-data`` body of known length with the file in the part ``file`` and tells its
progress chunk by chunk; a retried upload sends the whole body again; ``from_url`` sends the
address; ``list`` follows the cursor with the ``kind`` filter; 400, 409 ``asset_in_use`` and 413
``quota_exceeded`` are typed errors; a presigned upload sends the bare file to the URL answered,
without the API key, and completes it. The blocking and the awaited client alike.""" 
from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest

from reelfarm.client import (
    APIStatusError,
    AssetInUseError,
    AsyncClient,
    Client,
    ConflictError,
    QuotaExceededError,
    Retry,
    ValidationError,
    uploads,
)

KEY = "rf_live_" + "x" * 38
STAMP = "2026-11-28T10:00:00Z"
ASSET = {"id": "a1", "kind": "image", "content_type": "image/png", "bytes": 5000, "key": "assets/w/abc.png",
         "width": 10, "height": 20, "duration_sec": None, "url": "https://files.example/abc.png?sig=x",
         "thumbnail_url": "https://files.example/abc.thumb.jpg?sig=y", "created_at": STAMP}
SOUND = {**ASSET, "id": "a2", "kind": "audio", "content_type": "audio/mpeg", "width": None, "height": None,
         "duration_sec": 2.5, "thumbnail_url": None}


def envelope(status: int, code: str, details: Any = None) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"code": code, "message": code.replace("_", " "), "details": details,
                              "request_id": "req_1"}}


class API:
    """Answers ``(method, path)`` from a script (in turn, the last one kept); records every request
    as ``(method, path, query, headers, body)``."""

    def __init__(self, script: dict[tuple[str, str], list[tuple[int, Any]]]) -> None:
        self.script, self.seen = script, []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.reply()

            def do_POST(self) -> None:
                self.reply()

            def do_DELETE(self) -> None:
                self.reply()

            def do_PUT(self) -> None:
                self.reply()

            def do_PATCH(self) -> None:
                self.reply()

            def reply(self) -> None:
                parts = urlsplit(self.path)
                path = parts.path.removeprefix("/api/v1")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                api.seen.append((self.command, path, dict(parse_qsl(parts.query)), dict(self.headers), body))
                answers = api.script.get((self.command, path)) or [envelope(404, "not_found")]
                tries = sum(1 for m, p, *_ in api.seen if (m, p) == (self.command, path))
                status, answer = answers[min(tries, len(answers)) - 1]
                raw = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def file_part(headers: dict[str, str], body: bytes) -> tuple[str, bytes]:
    """The filename and bytes of the part ``file`` of a multipart body, read by the standard library."""
    assert int(headers["Content-Length"]) == len(body) and "Transfer-Encoding" not in headers
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {headers['Content-Type']}\r\n\r\n".encode() + body)
    parts = list(message.iter_parts())
    assert [p.get_param("name", header="content-disposition") for p in parts] == ["file"]
    return parts[0].get_filename(), parts[0].get_payload(decode=True)


@pytest.fixture
def data() -> bytes:
    return bytes(range(256)) * 20  # 5120 bytes


@pytest.fixture
def small_chunks(monkeypatch) -> Iterator[None]:
    monkeypatch.setattr(uploads, "CHUNK", 1024)
    yield


def sync_upload(api: API, source: Any, **options: Any) -> tuple[Any, list[tuple[int, int | None]]]:
    told: list[tuple[int, int | None]] = []
    with Client(api_key=KEY, base_url=api.url, retry=Retry(max_retries=2, backoff=0.0)) as rf:
        asset = rf.assets.upload(source, on_progress=lambda sent, total: told.append((sent, total)), **options)
    return asset, told


def async_upload(api: API, source: Any, **options: Any) -> tuple[Any, list[tuple[int, int | None]]]:
    told: list[tuple[int, int | None]] = []

    async def main() -> Any:
        async with AsyncClient(api_key=KEY, base_url=api.url, retry=Retry(max_retries=2, backoff=0.0)) as rf:
            return await rf.assets.upload(source, on_progress=lambda sent, total: told.append((sent, total)),
                                          **options)
    return anyio.run(main), told


UPLOADERS = pytest.mark.parametrize("send", [sync_upload, async_upload], ids=["sync", "async"])


@UPLOADERS
def test_a_path_is_streamed_as_one_multipart_body_with_progress(tmp_path: Path, data, small_chunks, send):
    path = tmp_path / "team photo.png"
    path.write_bytes(data)
    with API({("POST", "/assets"): [(201, ASSET)]}) as api:
        asset, told = send(api, path)
    assert (asset.id, asset.kind, asset.width, asset.height, asset.bytes) == ("a1", "image", 10, 20, 5000)
    assert asset.created_at.tzinfo is not None and asset.raw == ASSET
    [(method, route, _, headers, body)] = api.seen
    assert (method, route) == ("POST", "/assets") and headers["Idempotency-Key"].startswith("rfc_")
    assert file_part(headers, body) == ("team photo.png", data)
    assert told == [(0, 5120), (1024, 5120), (2048, 5120), (3072, 5120), (4096, 5120), (5120, 5120)]


@UPLOADERS
def test_a_file_object_is_read_from_where_it_stands_and_left_open(data, small_chunks, send):
    handle = io.BytesIO(b"skip me:" + data)
    handle.seek(8)
    with API({("POST", "/assets"): [(201, ASSET)]}) as api:
        _, told = send(api, handle, filename='a"b\r\nc.png')
    assert file_part(api.seen[0][3], api.seen[0][4]) == ("a_b__c.png", data)
    assert told[-1] == (5120, 5120) and not handle.closed


@UPLOADERS
def test_a_retried_upload_sends_the_whole_body_again_under_one_key(tmp_path: Path, data, send):
    path = tmp_path / "x.png"
    path.write_bytes(data)
    with API({("POST", "/assets"): [envelope(503, "unavailable"), (201, ASSET)]}) as api:
        asset, told = send(api, path)
    assert asset.id == "a1" and len(api.seen) == 2
    assert [file_part(headers, body)[1] for *_, headers, body in api.seen] == [data, data]
    assert len({headers["Idempotency-Key"] for *_, headers, _ in api.seen}) == 1
    assert told == [(0, 5120), (5120, 5120)] * 2  # told afresh for the second try


@UPLOADERS
def test_a_refused_upload_is_a_validation_error_with_its_reason(tmp_path: Path, send):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello")
    refused = envelope(400, "validation_failed", [{"field": "/file", "code": "unsupported_media",
                                                   "message": "not an image or a sound"}])
    with API({("POST", "/assets"): [refused]}) as api, pytest.raises(ValidationError) as caught:
        send(api, path)
    assert caught.value.details == [{"field": "/file", "code": "unsupported_media", "message": "not an image or a sound"}]
    assert "/file: not an image or a sound" in str(caught.value)


def test_an_unseekable_file_is_refused_before_anything_is_sent() -> None:
    class Pipe(io.RawIOBase):
        def readable(self) -> bool:
            return True

    with pytest.raises(ValueError, match="seekable"):
        uploads.form_of(Pipe())


def test_from_url_list_get_and_delete_in_the_blocking_client():
    script = {
        ("POST", "/assets/from-url"): [(201, ASSET)],
        ("GET", "/assets"): [(200, {"data": [SOUND], "next_cursor": "1.c"}), (200, {"data": [SOUND], "next_cursor": None})],
        ("GET", "/assets/a1"): [(200, ASSET)],
        ("DELETE", "/assets/a1"): [envelope(409, "asset_in_use"), (204, None)],
    }
    with API(script) as api, Client(api_key=KEY, base_url=api.url) as rf:
        assert rf.assets.from_url("https://example.com/team.png").id == "a1"
        listed = list(rf.assets.list(kind="audio", page_size=1))
        assert [a.duration_sec for a in listed] == [2.5, 2.5]
        assert rf.assets.get("a1").thumbnail_url == ASSET["thumbnail_url"]
        with pytest.raises(AssetInUseError) as caught:
            rf.assets.delete("a1")
        assert isinstance(caught.value, ConflictError) and caught.value.code == "asset_in_use"
        assert rf.assets.delete("a1") is None
    assert json.loads(api.seen[0][4]) == {"url": "https://example.com/team.png"}
    assert [q for m, p, q, *_ in api.seen if p == "/assets"] == [{"kind": "audio", "limit": "1"},
                                                                 {"kind": "audio", "limit": "1", "cursor": "1.c"}]


def test_from_url_and_list_in_the_awaited_client():
    refused = envelope(400, "validation_failed", [{"field": "/url", "code": "address_refused",
                                                   "message": "127.0.0.1 is not a public address: loopback"}])
    script = {("POST", "/assets/from-url"): [refused],
              ("GET", "/assets"): [(200, {"data": [ASSET, SOUND], "next_cursor": None})]}

    async def main() -> list[str]:
        async with AsyncClient(api_key=KEY, base_url=api.url) as rf:
            with pytest.raises(ValidationError) as caught:
                await rf.assets.from_url("http://127.0.0.1/x.png")
            assert caught.value.details[0]["code"] == "address_refused"
            return [a.id async for a in rf.assets.list()]

    with API(script) as api:
        assert anyio.run(main) == ["a1", "a2"]
    assert api.seen[-1][2] == {}


@UPLOADERS
def test_an_upload_past_the_quota_is_a_quota_exceeded_error(tmp_path: Path, data, send):
    path = tmp_path / "x.png"
    path.write_bytes(data)
    with API({("POST", "/assets"): [envelope(413, "quota_exceeded")]}) as api, \
            pytest.raises(QuotaExceededError) as caught:
        send(api, path)
    assert (caught.value.status, caught.value.code) == (413, "quota_exceeded") and len(api.seen) == 1  # not retried
    with API({("POST", "/assets"): [envelope(413, "payload_too_large")]}) as api, pytest.raises(APIStatusError) as other:
        send(api, path)
    assert not isinstance(other.value, QuotaExceededError)


@UPLOADERS
def test_a_presigned_upload_sends_the_bare_file_without_the_key(tmp_path: Path, data, small_chunks, send):
    path = tmp_path / "clip.wav"
    path.write_bytes(data)
    declared = uploads.content_type_of("clip.wav")  # by the name (the system's table: audio/wav or audio/x-wav)
    assert declared.startswith("audio/")
    with API({}) as api:
        staged = {"id": "u1", "method": "PUT", "url": f"{api.url}/bucket/uploads/w/u1?X-Amz-Signature=s",
                  "headers": {"Content-Type": declared}, "bytes": len(data), "expires_at": STAMP}
        api.script.update({("POST", "/assets/uploads"): [(201, staged)], ("PUT", "/bucket/uploads/w/u1"): [(200, None)],
                           ("POST", "/assets/uploads/u1/complete"): [(201, SOUND)]})
        asset, told = send(api, path, presigned=True)
    assert asset.id == "a2"
    (_, _, _, _, created), (_, _, query, headers, body), (_, done, *_) = api.seen
    assert json.loads(created) == {"bytes": len(data), "content_type": declared, "filename": "clip.wav"}
    assert body == data and query == {"X-Amz-Signature": "s"}  # the file alone, to the URL as answered
    assert headers["Content-Type"] == declared and int(headers["Content-Length"]) == len(data)
    assert "Authorization" not in headers  # the key stays with the API
    assert done == "/assets/uploads/u1/complete"
    assert told[0] == (0, 5120) and told[-1] == (5120, 5120) and len(told) == 6


@UPLOADERS
def test_a_large_file_falls_back_to_the_direct_upload_where_no_presigned_one_is_offered(
        tmp_path: Path, data, send, monkeypatch):
    monkeypatch.setattr(uploads, "PRESIGNED_OVER", 1000)
    path = tmp_path / "x.png"
    path.write_bytes(data)
    script = {("POST", "/assets/uploads"): [envelope(409, "presigned_uploads_unavailable")],
              ("POST", "/assets"): [(201, ASSET)]}
    with API(script) as api:
        assert send(api, path)[0].id == "a1"
    assert [p for _, p, *_ in api.seen] == ["/assets/uploads", "/assets"]
    with API(script) as api, pytest.raises(ConflictError):  # asked for, it is not replaced
        send(api, path, presigned=True)
    with API(script) as api:  # small files go directly at once
        monkeypatch.setattr(uploads, "PRESIGNED_OVER", len(data))
        send(api, path)
    assert [p for _, p, *_ in api.seen] == ["/assets"]
