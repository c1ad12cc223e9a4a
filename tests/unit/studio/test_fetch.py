"""The SSRF guard without a network: a fake resolver and httpx's MockTransport stand in for DNS and servers."""
from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from reelfarm.shared.config import Settings
from reelfarm.studio.errors import StudioError
from reelfarm.studio.fetch import (
    FetchFailed,
    FetchRefused,
    FetchTooLarge,
    HostUnresolvable,
    SafeFetcher,
    make_fetcher,
    normalize_url,
    parse_ip_host,
    why_not_public,
)

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:4700::1111"


class FakeResolver:
    """An honest fake of ``system_resolve``: fixed records per host, a gaierror for unknown hosts.

    ``records[host]`` is a list of answers, one per successive lookup (the last one repeats), so a
    test can make a name change its answer between lookups, as DNS rebinding does.
    """

    def __init__(self, records: dict[str, list[str] | list[list[str]]]) -> None:
        self.records = {host: (answers if answers and isinstance(answers[0], list) else [answers])
                        for host, answers in records.items()}
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        if host not in self.records:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        answers = self.records[host]
        seen = self.calls.count(host)
        return list(answers[min(seen, len(answers)) - 1])


class Recorder:
    """A MockTransport factory that records every request and answers with ``handler``."""

    def __init__(self, handler: Callable[[httpx.Request], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.handler = handler or (lambda request: httpx.Response(200, headers={"Content-Type": "text/html"},
                                                                  content=b"<html>ok</html>"))

    def __call__(self) -> httpx.BaseTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return self.handler(request)
        return httpx.MockTransport(handle)


def fetcher(resolver: FakeResolver | None = None, transport: Recorder | None = None, **options) -> SafeFetcher:
    resolver = resolver or FakeResolver({"public.test": [PUBLIC_V4]})
    return SafeFetcher(resolve=resolver, transport_factory=transport or Recorder(), **options)


# -- the address rule ------------------------------------------------------------------------

LOOPBACK_SPELLINGS = [
    "http://127.0.0.1/", "http://0x7f000001/", "http://2130706433/", "http://017700000001/", "http://127.1/",
    "http://0177.0.0.1/", "http://0x7f.0.0.1/", "http://127.0.0.1./", "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/", "http://[::1]/", "http://[0:0:0:0:0:0:0:1]/", "https://127.0.0.1:8443/x",
    "127.0.0.1", "http://user:pass@127.0.0.1/",
]
OTHER_PRIVATE = [
    "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/",
    "http://100.64.0.1/", "http://100.127.255.254/", "http://0.0.0.0/", "http://0/", "http://[::]/",
    "http://224.0.0.1/", "http://239.255.255.250/", "http://240.0.0.1/", "http://255.255.255.255/",
    "http://[fe80::1]/", "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[fec0::1]/", "http://[ff02::1]/",
    "http://[2002:7f00:1::]/", "http://[64:ff9b::7f00:1]/", "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:10.0.0.1]/", "http://192.0.0.8/", "http://198.18.0.1/", "http://[2001:db8::1]/",
    "http://203.0.113.10/", "http://192.0.2.1/",
]


@pytest.mark.parametrize("url", LOOPBACK_SPELLINGS + OTHER_PRIVATE)
def test_non_public_addresses_are_refused_in_every_spelling(url):
    resolver, transport = FakeResolver({}), Recorder()
    # httpx itself rejects a dotted quad with a leading zero ("0177.0.0.1"): refused as no valid URL
    with pytest.raises(FetchRefused, match="not a public address|not a valid URL: Invalid IPv4"):
        fetcher(resolver, transport).fetch(url)
    assert transport.requests == []
    assert resolver.calls == []  # a numeric host is never looked up


@pytest.mark.parametrize("host, expected", [
    ("0x7f000001", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("10.1.0x1", "10.1.0.1"),
    ("0xA9FEA9FE", "169.254.169.254"), ("::ffff:127.0.0.1", "::ffff:7f00:1"), ("example.com", None),
    ("1.2.3.4.", "1.2.3.4"), ("0", "0.0.0.0"),
])
def test_numeric_hosts_are_read_as_the_c_library_reads_them(host, expected):
    parsed = parse_ip_host(host)
    assert (str(parsed) if parsed else None) == expected


@pytest.mark.parametrize("host", ["1.2.3.999", "256.1", "1.2.3.4.5", "example.0x10", "0x1ffffffff"])
def test_hosts_ending_in_a_number_that_are_no_address_are_refused(host):
    with pytest.raises(FetchRefused):
        parse_ip_host(host)


@pytest.mark.parametrize("address, reason", [
    ("127.0.0.1", "loopback"), ("169.254.169.254", "link-local"), ("100.64.0.1", "shared address space (CGNAT)"),
    ("::ffff:127.0.0.1", "loopback (it embeds 127.0.0.1)"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"),
    ("10.0.0.1", "private"), ("240.0.0.1", "reserved"), (PUBLIC_V4, None), (PUBLIC_V6, None), ("8.8.8.8", None),
])
def test_why_not_public_names_the_reason(address, reason):
    assert why_not_public(ipaddress.ip_address(address)) == reason


def test_a_name_with_any_private_address_is_refused():
    resolver = FakeResolver({"mixed.test": [PUBLIC_V4, "10.0.0.7"]})
    transport = Recorder()
    with pytest.raises(FetchRefused, match=r"mixed.test resolves to 10.0.0.7, which is not a public address: private"):
        fetcher(resolver, transport).fetch("https://mixed.test/")
    assert transport.requests == []


@pytest.mark.parametrize("records", [["127.0.0.1"], ["::1"], ["169.254.169.254"], ["::ffff:127.0.0.1"],
                                     [PUBLIC_V6, "fd00::1"]])
def test_names_resolving_to_private_addresses_are_refused(records):
    with pytest.raises(FetchRefused):
        fetcher(FakeResolver({"inside.test": records})).fetch("http://inside.test/")


@pytest.mark.parametrize("url", ["ftp://public.test/", "file:///etc/passwd", "javascript:alert(1)",
                                 "mailto:a@public.test", "gopher://public.test/", "data:text/html,hi", "", "http://"])
def test_only_http_and_https_urls_are_fetched(url):
    transport = Recorder()
    with pytest.raises(FetchRefused):
        fetcher(transport=transport).fetch(url)
    assert transport.requests == []


def test_a_url_without_scheme_is_fetched_over_https():
    assert str(normalize_url("public.test/about")) == "https://public.test/about"
    assert str(normalize_url("public.test:8443/x")) == "https://public.test:8443/x"
    transport = Recorder()
    result = fetcher(transport=transport).fetch("public.test/about")
    assert result.url == "https://public.test/about"
    assert transport.requests[0].url.scheme == "https"


def test_public_addresses_are_fetched():
    transport = Recorder()
    result = fetcher(transport=transport).fetch(f"http://{PUBLIC_V4}/page")
    assert (result.status, result.content_type, result.body) == (200, "text/html", b"<html>ok</html>")
    result = fetcher(transport=transport).fetch(f"http://[{PUBLIC_V6}]/page")
    assert transport.requests[-1].url.host == PUBLIC_V6


def test_allow_private_lifts_the_address_rule():
    transport = Recorder()
    result = fetcher(FakeResolver({"localhost": ["127.0.0.1"]}), transport, allow_private=True).fetch(
        "http://localhost:8080/")
    assert result.status == 200
    assert str(transport.requests[0].url) == "http://127.0.0.1:8080/"


def test_make_fetcher_follows_the_setting():
    assert make_fetcher(Settings.from_env({})).allow_private is False
    assert make_fetcher(Settings.from_env({"REELFARM_FETCH_ALLOW_PRIVATE": "1"})).allow_private is True


def test_errors_are_studio_errors():
    assert issubclass(FetchRefused, StudioError) and issubclass(FetchFailed, StudioError)


# -- connecting to the vetted address ----------------------------------------------------------

def test_the_request_goes_to_the_vetted_ip_with_the_original_host_and_sni():
    transport = Recorder()
    fetcher(FakeResolver({"public.test": [PUBLIC_V4]}), transport).fetch("https://public.test:8443/a?b=1")
    request = transport.requests[0]
    assert str(request.url) == f"https://{PUBLIC_V4}:8443/a?b=1"
    assert request.headers["Host"] == "public.test:8443"
    assert request.extensions["sni_hostname"] == "public.test"


def test_plain_http_sends_no_sni():
    transport = Recorder()
    fetcher(transport=transport).fetch("http://public.test/")
    assert transport.requests[0].headers["Host"] == "public.test"
    assert "sni_hostname" not in transport.requests[0].extensions


def test_dns_rebinding_cannot_redirect_the_connection():
    """The name answers public first, loopback afterwards: it is looked up once, and the
    connection goes to the address that was checked."""
    resolver = FakeResolver({"rebind.test": [[PUBLIC_V4], ["127.0.0.1"]]})
    transport = Recorder()
    fetcher(resolver, transport).fetch("http://rebind.test/")
    assert resolver.calls == ["rebind.test"]
    assert transport.requests[0].url.host == PUBLIC_V4
    assert transport.requests[0].headers["Host"] == "rebind.test"


@pytest.mark.parametrize("answer", [socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
                                    socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
                                    []], ids=["no-such-name", "no-resolver", "no-addresses"])
def test_a_failed_lookup_is_one_failure_in_our_words_whatever_the_resolver_said(answer):
    def resolve(host: str) -> list[str]:
        if isinstance(answer, Exception):
            raise answer
        return answer
    with pytest.raises(HostUnresolvable) as caught:
        fetcher(resolve).fetch("http://nowhere.test/")
    assert isinstance(caught.value, FetchFailed)
    assert (caught.value.code, caught.value.host) == ("unresolvable_host", "nowhere.test")
    assert caught.value.reason == "could not resolve nowhere.test: no address is known for that name"


def test_a_stuck_lookup_does_not_hang():
    release = threading.Event()

    def stuck(host: str) -> list[str]:
        release.wait(10)
        return [PUBLIC_V4]
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="took longer"):
        SafeFetcher(resolve=stuck, connect_timeout=0.2, transport_factory=Recorder()).fetch("http://slow.test/")
    assert time.monotonic() - started < 2
    release.set()


# -- redirects -----------------------------------------------------------------------------------

def redirecting(locations: dict[str, str]) -> Recorder:
    def handle(request: httpx.Request) -> httpx.Response:
        target = locations.get(request.url.path)
        if target:
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(200, headers={"Content-Type": "text/html; charset=utf-8"}, content=b"final")
    return Recorder(handle)


@pytest.mark.parametrize("location", ["http://127.0.0.1/secret", "http://0x7f000001/", "http://[::ffff:127.0.0.1]/",
                                      "http://169.254.169.254/latest/meta-data/", "http://inside.test/",
                                      "file:///etc/passwd", "ftp://public.test/"])
def test_every_redirect_hop_is_checked(location):
    transport = redirecting({"/start": location})
    resolver = FakeResolver({"public.test": [PUBLIC_V4], "inside.test": ["10.1.2.3"]})
    with pytest.raises(FetchRefused):
        fetcher(resolver, transport).fetch("http://public.test/start")
    assert [r.url.path for r in transport.requests] == ["/start"]


def test_a_redirect_to_no_url_fails_without_following():
    transport = redirecting({"/start": "http://[::1"})
    with pytest.raises(FetchFailed, match="(?i)invalid URL in location header"):  # httpx checks it first
        fetcher(transport=transport).fetch("http://public.test/start")
    assert len(transport.requests) == 1


def test_redirects_are_followed_relative_to_the_original_host():
    transport = redirecting({"/a": "/b", "/b": "https://other.test/c"})
    resolver = FakeResolver({"public.test": [PUBLIC_V4], "other.test": ["1.1.1.1"]})
    result = fetcher(resolver, transport).fetch("http://public.test/a")
    assert result.url == "https://other.test/c" and result.body == b"final"
    assert [(str(r.url), r.headers["Host"]) for r in transport.requests] == [
        (f"http://{PUBLIC_V4}/a", "public.test"), (f"http://{PUBLIC_V4}/b", "public.test"),
        ("https://1.1.1.1/c", "other.test")]


def test_more_than_max_redirects_fails():
    transport = redirecting({f"/{i}": f"/{i + 1}" for i in range(10)})
    with pytest.raises(FetchFailed, match="more than 5 redirects"):
        fetcher(transport=transport).fetch("http://public.test/0")
    assert len(transport.requests) == 6
    transport = redirecting({f"/{i}": f"/{i + 1}" for i in range(5)})
    assert fetcher(transport=transport).fetch("http://public.test/0").url == "http://public.test/5"


# -- responses -----------------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["image/png", "application/json", "", "text/htmlx"])
def test_unexpected_content_types_are_refused(content_type):
    transport = Recorder(lambda r: httpx.Response(200, headers={"Content-Type": content_type}, content=b"x"))
    with pytest.raises(FetchRefused, match="content type"):
        fetcher(transport=transport).fetch("http://public.test/")


def test_content_types_may_use_wildcards():
    transport = Recorder(lambda r: httpx.Response(200, headers={"Content-Type": "Image/PNG"}, content=b"png"))
    result = fetcher(transport=transport).fetch("http://public.test/logo", accept=("image/*",))
    assert result.content_type == "image/png"
    assert transport.requests[0].headers["Accept"] == "image/*"


def test_a_non_2xx_status_fails_with_the_status():
    transport = Recorder(lambda r: httpx.Response(404, headers={"Content-Type": "text/html"}, content=b"no"))
    with pytest.raises(FetchFailed) as caught:
        fetcher(transport=transport).fetch("http://public.test/")
    assert caught.value.status == 404


def test_a_declared_body_over_the_cap_fails():
    transport = Recorder(lambda r: httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"x" * 101))
    with pytest.raises(FetchTooLarge, match="more than the 100 allowed"):
        fetcher(transport=transport, max_bytes=100).fetch("http://public.test/")


def test_a_streamed_body_over_the_cap_stops_reading():
    produced = []

    def endless():
        for _ in range(1000):
            produced.append(1)
            yield b"x" * 40
    transport = Recorder(lambda r: httpx.Response(200, headers={"Content-Type": "text/html"},
                                                  stream=_Stream(endless())))
    with pytest.raises(FetchTooLarge, match="larger than the 100 bytes"):
        fetcher(transport=transport, max_bytes=100).fetch("http://public.test/")
    assert len(produced) == 3


def test_a_body_at_the_cap_is_accepted():
    transport = Recorder(lambda r: httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"x" * 100))
    assert fetcher(transport=transport, max_bytes=100).fetch("http://public.test/").body == b"x" * 100


class _Stream(httpx.SyncByteStream):
    def __init__(self, chunks) -> None:
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks


# -- post (webhooks) -----------------------------------------------------------------------------

def test_post_sends_the_body_to_the_vetted_address_and_reports_the_answer():
    transport = Recorder(lambda r: httpx.Response(202, content=b"thanks"))
    result = fetcher(transport=transport).post("https://public.test/hook", b'{"a":1}', {"webhook-id": "evt_1"})
    request = transport.requests[0]
    assert (request.method, str(request.url), request.content) == ("POST", f"https://{PUBLIC_V4}/hook", b'{"a":1}')
    assert request.headers["webhook-id"] == "evt_1" and request.headers["Content-Type"] == "application/json"
    assert (result.status, result.body) == (202, b"thanks")
    assert result.latency_ms >= 0


def test_post_does_not_follow_redirects():
    transport = redirecting({"/hook": "http://127.0.0.1/"})
    result = fetcher(transport=transport).post("http://public.test/hook", b"{}", {})
    assert result.status == 302
    assert len(transport.requests) == 1


def test_post_refuses_private_addresses():
    transport = Recorder()
    with pytest.raises(FetchRefused):
        fetcher(transport=transport).post("http://169.254.169.254/", b"{}", {})
    assert transport.requests == []


def test_post_keeps_only_the_start_of_a_long_answer():
    transport = Recorder(lambda r: httpx.Response(200, content=b"y" * 200_000))
    assert len(fetcher(transport=transport).post("http://public.test/", b"{}", {}).body) == 65_536
