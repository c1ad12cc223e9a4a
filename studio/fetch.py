"""The one SSRF guard: every URL a user gives us (brand extraction, webhook delivery) is fetched here.

A URL is allowed when its scheme is http or https and every address its host resolves to is
globally routable, however the host is spelled (``0x7f000001``, ``2130706433``, ``017700000001``,
``[::ffff:127.0.0.1]`` are all 127.0.0.1). The connection then goes to the address that was
checked, never to a second lookup, so a DNS answer that changes between check and connect
(rebinding) cannot redirect it: the request URL names the vetted IP, while the ``Host`` header and
TLS SNI (and certificate check) carry the original host name. Redirects are followed here, one hop
at a time, and every hop is checked the same way. Connect, read and total time and the body size
are capped, so a fetch never hangs.

``allow_private=True`` (``REELFARM_FETCH_ALLOW_PRIVATE``) lifts the address rule; it exists for
tests against servers on loopback.
"""
from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from reelfarm.shared.config import Settings
from reelfarm.studio.errors import FetchError, FetchFailed, FetchRefused, FetchTooLarge, HostUnresolvable

__all__ = ["FetchError", "FetchFailed", "FetchRefused", "FetchResult", "FetchTooLarge", "HostUnresolvable", "PostResult",
           "Resolver", "SafeFetcher", "Target", "check_address", "make_fetcher", "normalize_url", "parse_ip_host", "system_resolve"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], list[str]]
"""``resolve(host) -> [address, ...]``: every A and AAAA record of a host name, as strings."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
POST_RESPONSE_BYTES = 65_536  # of a webhook receiver's answer, kept for the delivery log
USER_AGENT = "reelfarm-fetch/1"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_HOST = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.|$))+$|^[0-9A-Fa-f:.]+$")  # names (IDNA-encoded) or IPv6
_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
# Not globally routable, yet some Python versions call them global (3.11 does for 192.0.0.0/24).
_NOT_GLOBAL = ((ipaddress.ip_network("100.64.0.0/10"), "shared address space (CGNAT)"),
               (ipaddress.ip_network("192.0.0.0/24"), "reserved for IETF protocol assignments"),
               (ipaddress.ip_network("198.18.0.0/15"), "reserved for benchmarking"))
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


@dataclass(frozen=True)
class FetchResult:
    url: str  # the final URL, after redirects
    status: int
    content_type: str  # the media type, lower case, without parameters
    body: bytes
    headers: Mapping[str, str]


@dataclass(frozen=True)
class PostResult:
    url: str
    status: int
    latency_ms: int
    body: bytes  # the first POST_RESPONSE_BYTES of the answer
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Target:
    """A URL that passed the guard, and the one address to connect to for it."""

    url: httpx.URL
    address: str


def system_resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to (A and AAAA), through the system resolver."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def normalize_url(raw: str) -> httpx.URL:
    """``raw`` as an absolute http(s) URL (``https://`` added when no scheme is given).

    Raises:
        FetchRefused: another scheme, no host, or not a URL at all.
    """
    text = raw.strip()
    if text.startswith("//"):
        text = "https:" + text
    else:
        scheme = _SCHEME.match(text)
        rest = text[scheme.end():] if scheme else ""
        if scheme is None or (rest[:1].isdigit() and not rest.startswith("//")):
            text = "https://" + text  # "example.com/x", or "example.com:8080/x" (a port, not a scheme)
        elif not rest.startswith("//"):
            raise FetchRefused(f"only http and https URLs can be fetched, not {scheme.group(1).lower()}:")
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchRefused(f"not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise FetchRefused(f"only http and https URLs can be fetched, not {url.scheme}:")
    if not url.host:
        raise FetchRefused("the URL has no host")
    if not _HOST.match(url.raw_host.decode("ascii", "replace")):
        raise FetchRefused(f"not a valid host name: {url.host!r}")
    return url


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a numeric host names, in any spelling ``inet_aton`` accepts; None for a name.

    ``0x7f000001``, ``2130706433``, ``017700000001``, ``127.1`` and ``0177.0.0.1`` are all
    127.0.0.1, as browsers and the C library read them. Raises FetchRefused for a host that
    ends in a number but is no valid address (``1.2.3.999``, ``example.0x1``).
    """
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    parts = bare[:-1].split(".") if bare.endswith(".") else bare.split(".")
    if not _NUMBER.fullmatch(parts[-1]):
        return None  # a host name
    if len(parts) > 4 or not all(_NUMBER.fullmatch(p) for p in parts):
        raise FetchRefused(f"{host!r} is neither a host name nor a valid IPv4 address")
    values = [_parse_number(p) for p in parts]
    last_bits = 8 * (5 - len(values))
    if any(v > 255 for v in values[:-1]) or values[-1] >= 1 << last_bits:
        raise FetchRefused(f"{host!r} is not a valid IPv4 address")
    number = values[-1]
    for index, value in enumerate(values[:-1]):
        number |= value << (24 - 8 * index)
    return ipaddress.IPv4Address(number)


def _parse_number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    return int(part, 8) if part.startswith("0") else int(part)


def why_not_public(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be fetched from (e.g. ``"loopback"``), or None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            why = why_not_public(embedded)
            if why:
                return f"{why} (it embeds {embedded})"
    flags = (("loopback", ip.is_loopback), ("unspecified", ip.is_unspecified), ("link-local", ip.is_link_local),
             ("multicast", ip.is_multicast), ("reserved", ip.is_reserved), ("private", ip.is_private),
             ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local))
    for name, flag in flags:
        if flag:
            return name
    for network, name in _NOT_GLOBAL:
        if ip.version == network.version and ip in network:
            return name
    return None if ip.is_global else "not globally routable"


def check_address(ip: IPAddress, host: str | None = None) -> None:
    """Raises FetchRefused unless ``ip`` is globally routable."""
    why = why_not_public(ip)
    if why:
        named = f"{host} resolves to {ip}" if host and host.strip("[]") != str(ip) else f"{ip}"
        raise FetchRefused(f"{named}, which is not a public address: {why}")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in network for network in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


class SafeFetcher:
    """GET and POST to user-given URLs behind the SSRF guard.

    Args:
        allow_private: skip the address rule (tests on loopback only).
        connect_timeout, read_timeout, total_timeout: seconds; the total covers lookups,
            every redirect hop and reading the body.
        max_bytes: largest body ``fetch`` accepts.
        max_redirects: redirects ``fetch`` follows (each hop checked); ``post`` follows none.
        resolve: the resolver (``system_resolve`` by default; tests pass an honest fake).
        transport_factory: makes the httpx transport for one call (tests route through it).
    """

    def __init__(self, allow_private: bool = False, connect_timeout: float = 5, read_timeout: float = 10,
                 total_timeout: float = 20, max_bytes: int = 5_000_000, max_redirects: int = 5, *,
                 resolve: Resolver | None = None,
                 transport_factory: Callable[[], httpx.BaseTransport] | None = None) -> None:
        self.allow_private = allow_private
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.total_timeout = total_timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self._resolve = resolve or system_resolve
        self._transport_factory = transport_factory or _fresh_transport

    def vet(self, url: str, deadline: float | None = None) -> Target:
        """Check ``url`` and pick the address to connect to. Raises FetchRefused or FetchFailed."""
        target = normalize_url(url)
        host = target.host
        ip = parse_ip_host(host)
        addresses = [ip] if ip is not None else self._lookup(host, deadline)
        if not self.allow_private:
            for address in addresses:
                check_address(address, host)
        return Target(target, str(addresses[0]))

    def fetch(self, url: str, accept: tuple[str, ...] = ("text/html",), *, deadline: float | None = None) -> FetchResult:
        """GET ``url``, following up to ``max_redirects`` checked redirects.

        ``deadline`` (a ``time.monotonic()`` value) ends the fetch sooner than ``total_timeout``
        would, for callers with a budget of their own.

        Raises:
            FetchRefused: the URL, a redirect target or the response's content type is refused.
            FetchFailed: timeout, body over ``max_bytes``, connection error, too many redirects,
                or a status other than 2xx (``.status``).
        """
        own = time.monotonic() + self.total_timeout
        deadline = own if deadline is None else min(own, deadline)
        target = self.vet(url, deadline)
        headers = {"Accept": ", ".join(accept) or "*/*", "Accept-Encoding": "identity"}
        with self._client() as client:
            for hop in range(self.max_redirects + 1):
                response = self._send(client, "GET", target, headers, None, deadline)
                try:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_STATUSES and location:
                        if hop == self.max_redirects:
                            raise FetchFailed(f"more than {self.max_redirects} redirects", response.status_code)
                        target = self.vet(_resolve_location(target.url, location), deadline)
                        continue
                    return self._result(target, response, accept, deadline)
                finally:
                    response.close()
        raise AssertionError("unreachable: the loop returns or raises")

    def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> PostResult:
        """POST ``body`` to ``url`` (webhook delivery) and report the answer, whatever its status.

        Redirects are not followed: a 3xx is returned like any other non-2xx status.
        Raises FetchRefused for a refused URL, FetchFailed for a timeout or connection error.
        """
        deadline = time.monotonic() + self.total_timeout
        target = self.vet(url, deadline)
        started = time.monotonic()
        with self._client() as client:
            response = self._send(client, "POST", target, {"Content-Type": "application/json", **headers},
                                  body, deadline)
            try:
                answer = self._read(response, deadline, POST_RESPONSE_BYTES, truncate=True)
            finally:
                response.close()
        return PostResult(url=str(target.url), status=response.status_code,
                          latency_ms=round((time.monotonic() - started) * 1000), body=answer,
                          headers=dict(response.headers))

    def _result(self, target: Target, response: httpx.Response, accept: tuple[str, ...],
                deadline: float) -> FetchResult:
        status = response.status_code
        if not 200 <= status < 300:
            raise FetchFailed(f"{target.url} answered {status}", status)
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if not _accepted(media, accept):
            raise FetchRefused(f"{target.url} sent content type {media or '(none)'!r}; "
                               f"expected {', '.join(accept)}")
        body = self._read(response, deadline, self.max_bytes, truncate=False)
        return FetchResult(url=str(target.url), status=status, content_type=media, body=body,
                           headers=dict(response.headers))

    def _client(self) -> httpx.Client:
        # trust_env=False: a proxy from the environment would connect to whatever it resolves.
        return httpx.Client(transport=self._transport_factory(), trust_env=False, follow_redirects=False,
                            headers={"User-Agent": USER_AGENT})

    def _send(self, client: httpx.Client, method: str, target: Target, headers: Mapping[str, str],
              content: bytes | None, deadline: float) -> httpx.Response:
        """Send to the vetted address, naming the original host in ``Host`` and SNI."""
        remaining = self._remaining(deadline)
        extensions = {}
        if target.url.scheme == "https" and parse_ip_host(target.url.host) is None:
            extensions["sni_hostname"] = target.url.host  # also the name the certificate must match
        timeout = httpx.Timeout(connect=min(self.connect_timeout, remaining), read=min(self.read_timeout, remaining),
                                write=min(self.read_timeout, remaining), pool=min(self.connect_timeout, remaining))
        request = client.build_request(
            method, target.url.copy_with(host=target.address), content=content, timeout=timeout,
            headers={**headers, "Host": target.url.netloc.decode("ascii")}, extensions=extensions)
        try:
            return client.send(request, stream=True)
        except httpx.TimeoutException:
            raise FetchFailed(f"{target.url} did not answer in time") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(f"could not reach {target.url}: {_words(exc)}") from None

    def _read(self, response: httpx.Response, deadline: float, limit: int, *, truncate: bool) -> bytes:
        declared = response.headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > limit:
            raise FetchTooLarge(f"the body is {declared} bytes, more than the {limit} allowed")
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limit:
                    if truncate:
                        chunks.append(chunk[:len(chunk) - (size - limit)])
                        break
                    raise FetchTooLarge(f"the body is larger than the {limit} bytes allowed")
                chunks.append(chunk)
                self._remaining(deadline)
        except httpx.TimeoutException:
            raise FetchFailed("the body did not arrive in time") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(f"reading the body failed: {_words(exc)}") from None
        return b"".join(chunks)

    def _lookup(self, host: str, deadline: float | None) -> list[IPAddress]:
        """The host's addresses; the resolver runs in a thread so a stuck lookup cannot hang us."""
        limit = self.connect_timeout if deadline is None else min(self.connect_timeout, self._remaining(deadline))
        answers: list[list[str]] = []
        failures: list[Exception] = []

        def run() -> None:
            try:
                answers.append(list(self._resolve(host)))
            except Exception as exc:  # noqa: BLE001 - reported below as FetchFailed
                failures.append(exc)
        worker = threading.Thread(target=run, name="fetch-resolve", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            raise FetchFailed(f"looking up {host} took longer than {limit:g} s")
        if failures:
            raise HostUnresolvable(host, _words(failures[0])) from failures[0]
        found = answers[0] if answers else []
        if not found:
            raise HostUnresolvable(host, "the resolver answered no addresses")
        try:
            return [ipaddress.ip_address(str(a).split("%")[0]) for a in found]
        except ValueError as exc:
            raise FetchRefused(f"{host} resolved to something that is not an address: {exc}") from None

    def _remaining(self, deadline: float) -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchFailed(f"gave up after {self.total_timeout:g} s")
        return remaining


def _words(exc: Exception) -> str:
    """An error's message without errno prefixes (``[Errno -2] Name or service not known``)."""
    text = _ERRNO.sub("", str(exc)).strip() or type(exc).__name__
    return text[:1].lower() + text[1:]


def make_fetcher(settings: Settings, **options: object) -> SafeFetcher:
    """The fetcher the service uses: private addresses allowed only when settings say so (tests)."""
    return SafeFetcher(allow_private=settings.fetch_allow_private, **options)  # type: ignore[arg-type]


def _resolve_location(base: httpx.URL, location: str) -> str:
    try:
        return str(base.join(location))  # relative to the URL as the user named it, not the IP
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchRefused(f"{base} redirected to something that is not a URL: {exc}") from None


def _fresh_transport() -> httpx.BaseTransport:
    # No keep-alive: a pooled TLS connection to one IP must never serve another host name.
    return httpx.HTTPTransport(retries=0, limits=httpx.Limits(max_keepalive_connections=0))


def _accepted(media: str, accept: tuple[str, ...]) -> bool:
    for pattern in (p.lower() for p in accept):
        if pattern == "*/*" or pattern == media or (pattern.endswith("/*") and media.startswith(pattern[:-1])):
            return True
    return False
