"""The SSRF guard against a real HTTP server on 127.0.0.1 (http.server in a thread).

To reach loopback through names that the guard takes for public, a fake resolver answers
``public.test`` with 93.184.216.34, and the test transport routes connections to that address to
127.0.0.1 (and records which address each connection was dialed to).
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from reelfarm.studio.fetch import FetchFailed, FetchRefused, SafeFetcher

ROUTED = "93.184.216.34"  # public to the guard (TEST-NET ranges are not); the transport dials 127.0.0.1


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Host")))  # type: ignore[attr-defined]
        route = ROUTES.get(self.path.split("?")[0], ROUTES["/page"])
        route(self)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen.append((self.path, body))  # type: ignore[attr-defined]
        self.send(201, "application/json", b'{"ok":true}')

    def send(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def _redirect(location: str):
    def route(h: Handler) -> None:
        h.send(302, "text/html", b"", Location=location.format(port=h.server.server_address[1]))
    return route


def _big_without_length(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Connection", "close")
    h.end_headers()
    try:
        for _ in range(200):
            h.wfile.write(b"x" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the fetcher stopped reading: what the test wants


def _sleepy(h: Handler) -> None:
    time.sleep(3)
    h.send(200, "text/html", b"late")


def _trickle(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "100")
    h.end_headers()
    try:
        for _ in range(100):
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass


ROUTES = {
    "/page": lambda h: h.send(200, "text/html; charset=utf-8", b"<html>hello</html>"),
    "/png": lambda h: h.send(200, "image/png", b"\x89PNG"),
    "/big": lambda h: h.send(200, "text/html", b"x" * 2_000_000),
    "/big-chunked": _big_without_length,
    "/sleep": _sleepy,
    "/trickle": _trickle,
    "/to-loopback": _redirect("http://127.0.0.1:{port}/secret"),
    "/to-hex-loopback": _redirect("http://0x7f000001:{port}/secret"),
    "/to-metadata": _redirect("http://169.254.169.254/latest/meta-data/"),
    "/to-public": _redirect("http://public.test:{port}/page"),
    "/secret": lambda h: h.send(200, "text/html", b"internal"),
}


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


class FakeResolver:
    """An honest fake resolver: fixed answers per host (successive lookups may differ), else gaierror."""

    def __init__(self, records: dict[str, list[list[str]]]) -> None:
        self.records = records
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        if host not in self.records:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        answers = self.records[host]
        return list(answers[min(self.calls.count(host), len(answers)) - 1])


class RoutingTransport(httpx.BaseTransport):
    """A real HTTP transport that dials 127.0.0.1 for ROUTED, recording the address it was asked for."""

    def __init__(self, dialed: list[str]) -> None:
        self.inner = httpx.HTTPTransport(retries=0)
        self.dialed = dialed

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.dialed.append(request.url.host)
        if request.url.host == ROUTED:
            request.url = request.url.copy_with(host="127.0.0.1")
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def routed(dialed: list[str] | None = None, records: dict[str, list[list[str]]] | None = None,
           **options) -> SafeFetcher:
    dialed = [] if dialed is None else dialed
    resolver = FakeResolver(records or {"public.test": [[ROUTED]]})
    return SafeFetcher(resolve=resolver, transport_factory=lambda: RoutingTransport(dialed), **options)


def port(server: ThreadingHTTPServer) -> int:
    return server.server_address[1]


def test_loopback_is_refused_by_default_and_nothing_is_sent(server):
    for url in (f"http://127.0.0.1:{port(server)}/page", f"http://localhost:{port(server)}/page",
                f"http://2130706433:{port(server)}/page", f"http://[::ffff:127.0.0.1]:{port(server)}/page"):
        with pytest.raises(FetchRefused, match="not a public address"):
            SafeFetcher().fetch(url)  # the real system resolver for localhost
    assert server.seen == []


def test_loopback_is_fetched_with_allow_private(server):
    result = SafeFetcher(allow_private=True).fetch(f"http://localhost:{port(server)}/page?q=1")
    assert (result.status, result.content_type, result.body) == (200, "text/html", b"<html>hello</html>")
    assert result.url == f"http://localhost:{port(server)}/page?q=1"
    assert server.seen == [("/page?q=1", f"localhost:{port(server)}")]


def test_the_connection_carries_the_original_host(server):
    dialed: list[str] = []
    result = routed(dialed).fetch(f"http://public.test:{port(server)}/page")
    assert result.body == b"<html>hello</html>"
    assert dialed == [ROUTED]
    assert server.seen == [("/page", f"public.test:{port(server)}")]


@pytest.mark.parametrize("path", ["/to-loopback", "/to-hex-loopback", "/to-metadata"])
def test_a_redirect_to_a_private_address_is_refused_before_it_is_followed(server, path):
    dialed: list[str] = []
    with pytest.raises(FetchRefused, match="not a public address"):
        routed(dialed).fetch(f"http://public.test:{port(server)}{path}")
    assert dialed == [ROUTED]
    assert [p for p, _ in server.seen] == [path]  # /secret was never asked for


def test_a_redirect_to_a_public_name_is_followed(server):
    dialed: list[str] = []
    result = routed(dialed).fetch(f"http://public.test:{port(server)}/to-public")
    assert result.url == f"http://public.test:{port(server)}/page"
    assert [p for p, _ in server.seen] == ["/to-public", "/page"]


def test_dns_rebinding_connects_to_the_checked_address(server):
    """public first, loopback on any later lookup: the guard looks up once and dials what it checked."""
    dialed: list[str] = []
    records = {"rebind.test": [[ROUTED], ["127.0.0.1"]]}
    fetcher = routed(dialed, records)
    fetcher.fetch(f"http://rebind.test:{port(server)}/page")
    assert dialed == [ROUTED]
    assert server.seen == [("/page", f"rebind.test:{port(server)}")]
    with pytest.raises(FetchRefused, match="rebind.test resolves to 127.0.0.1"):
        fetcher.fetch(f"http://rebind.test:{port(server)}/page")  # the second lookup sees loopback
    assert dialed == [ROUTED]


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
def test_a_body_over_the_cap_fails(server, path):
    with pytest.raises(FetchFailed, match="1000000"):
        SafeFetcher(allow_private=True, max_bytes=1_000_000).fetch(f"http://127.0.0.1:{port(server)}{path}")


def test_a_server_that_does_not_answer_times_out(server):
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="in time"):
        SafeFetcher(allow_private=True, read_timeout=0.5).fetch(f"http://127.0.0.1:{port(server)}/sleep")
    assert time.monotonic() - started < 2.5


def test_a_trickling_body_stops_at_the_total_timeout(server):
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="gave up after 1 s"):
        SafeFetcher(allow_private=True, read_timeout=5, total_timeout=1).fetch(
            f"http://127.0.0.1:{port(server)}/trickle")
    assert time.monotonic() - started < 2.5


def test_a_closed_port_fails_quickly():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with pytest.raises(FetchFailed, match="could not reach"):
        SafeFetcher(allow_private=True).fetch(f"http://127.0.0.1:{free}/")


def test_an_unexpected_content_type_is_refused(server):
    fetcher = SafeFetcher(allow_private=True)
    with pytest.raises(FetchRefused, match="image/png"):
        fetcher.fetch(f"http://127.0.0.1:{port(server)}/png")
    assert fetcher.fetch(f"http://127.0.0.1:{port(server)}/png", accept=("image/png",)).body == b"\x89PNG"


def test_post_delivers_to_loopback_only_with_allow_private(server):
    url = f"http://127.0.0.1:{port(server)}/hook"
    with pytest.raises(FetchRefused):
        SafeFetcher().post(url, b'{"type":"webhook.test"}', {"webhook-id": "evt_1"})
    result = SafeFetcher(allow_private=True).post(url, b'{"type":"webhook.test"}', {"webhook-id": "evt_1"})
    assert (result.status, result.body) == (201, b'{"ok":true}')
    assert server.seen == [("/hook", b'{"type":"webhook.test"}')]
