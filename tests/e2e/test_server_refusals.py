"""What the HTTP server itself refuses is answered in the API's error envelope, and idle connections
stay open long enough for a client that polls every few seconds to reuse one."""
from __future__ import annotations

import json
import socket
import time

import pytest

from reelfarm.api.server import KEEPALIVE_SEC
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    process, lines = start_server(tmp_path_factory.mktemp("refusals") / "data", port)
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(f"http://127.0.0.1:{port}")
        yield port, key
    finally:
        stop(process)


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes on a new connection; the status, headers and body of the one answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        return read_response(sock)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body[:length]


def assert_envelope(status: int, headers: dict[str, str], body: bytes, want_status: int, want_code: str) -> dict:
    assert status == want_status, body
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == want_code and error["message"]
    assert error["request_id"] == headers["x-request-id"] and error["request_id"].startswith("req_")
    return error


def test_a_nul_byte_in_a_header_is_a_400_envelope(server):
    port, key = server
    raw = f"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nX-Bad: a\x00b\r\n\r\n".encode()
    error = assert_envelope(*exchange(port, raw), 400, "validation_failed")
    assert error["details"][0]["field"] == "request" and error["details"][0]["code"] == "malformed_request"
    assert key not in json.dumps(error)


def test_a_huge_header_is_a_431_envelope(server):
    port, _ = server
    raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 10_000 + b"\r\n\r\n"
    assert_envelope(*exchange(port, raw), 431, "headers_too_large")


def test_a_huge_path_is_a_414_envelope(server):
    port, _ = server
    raw = b"GET /api/v1/" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert_envelope(*exchange(port, raw), 414, "uri_too_long")


def test_a_garbled_request_line_is_a_400_envelope(server):
    port, _ = server
    assert_envelope(*exchange(port, b"GARBAGE\r\n\r\n"), 400, "validation_failed")


def test_an_idle_connection_is_reused_after_a_polling_pause(server):
    port, key = server
    request = f"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(request)
            status, headers, _ = read_response(sock)
            assert status == 200 and headers.get("connection", "").lower() != "close"
            time.sleep(2.5)  # longer than gunicorn's stock keep-alive of 2 s
    assert KEEPALIVE_SEC > 60
