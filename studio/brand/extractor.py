"""``BrandExtractor``: fetch a page, its stylesheets and its logo through the SSRF guard, then analyze.

Every request goes through the ``SafeFetcher`` handed in, so the guard's address rules, timeouts
and byte caps hold for stylesheets and logos as for the page. Only the page itself can fail an
extraction; a stylesheet or logo that fails is skipped.
"""
from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from urllib.parse import unquote_to_bytes, urljoin

from bs4.dammit import UnicodeDammit

from studio.brand.analysis import build_tokens
from studio.brand.candidates import LogoCandidate
from studio.brand.css import Sheet, google_font_families, parse_sheet
from studio.brand.logo import DecodedLogo, decode_logo
from studio.brand.model import ExtractedBrand, Logo
from studio.brand.page import Page, read_page
from studio.errors import BrandExtractionError, FetchError
from studio.fetch import FetchResult, SafeFetcher

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
CSS_TYPES = ("text/css", "text/plain")  # some servers label stylesheets text/plain
IMAGE_TYPES = ("image/*", "application/octet-stream")  # what it is, skia decides
MAX_LOGO_FETCHES = 5
MAX_DATA_URL_BYTES = 2_000_000

Progress = Callable[[str, float], None]
_PAGE_DONE, _SHEETS_DONE, _FETCH_DONE, _ANALYZE_DONE = 0.2, 0.5, 0.6, 0.9


class BrandExtractor:
    """Reads a brand (name, colours, fonts, logo, radius, tagline) from a website.

    Args:
        fetcher: the SSRF guard every request goes through.
        max_stylesheets: most stylesheets fetched per page, ``@import``-ed ones included.
    """

    def __init__(self, fetcher: SafeFetcher, *, max_stylesheets: int = 8) -> None:
        self._fetcher = fetcher
        self._max_stylesheets = max_stylesheets

    def extract(self, url: str, progress: Progress | None = None) -> ExtractedBrand:
        """Fetch ``url`` and read its brand.

        ``progress(stage, fraction)`` is called with stage "fetch" (0 to 0.6: the page, each
        stylesheet, then the logo) and then "analyze" (0.6 to 0.9).

        Raises:
            FetchRefused: the URL, a redirect or the page's content type is refused.
            FetchFailed: the page could not be fetched (timeout, too large, error status).
            BrandExtractionError: the answer is not an HTML page, or shows nothing to read a brand from.
        """
        report = progress or (lambda stage, fraction: None)
        report("fetch", 0.0)
        answer = self._fetcher.fetch(url, accept=HTML_TYPES)
        page = read_page(decode_html(answer), answer.url)
        report("fetch", _PAGE_DONE)
        sheets, webfonts = self._stylesheets(page, report)
        report("fetch", _SHEETS_DONE)
        logo, logo_url = self._logo(page, report)
        report("fetch", _FETCH_DONE)
        report("analyze", _FETCH_DONE)
        tokens = build_tokens(page, sheets, logo, webfonts)
        if tokens is None:
            raise BrandExtractionError(f"{answer.url} shows nothing to read a brand from "
                                       "(no title, description, colours, fonts or logo)")
        report("analyze", _ANALYZE_DONE)
        return ExtractedBrand(name=page.name, source_url=answer.url, tokens=tokens,
                              logo=_as_logo(logo, logo_url) if logo else None)

    def _stylesheets(self, page: Page, report: Progress) -> tuple[list[Sheet], list[str]]:
        """Linked sheets (each after its ``@import``-ed ones), then ``<style>`` blocks, and the
        families of web-font imports (which are read from their URL, not fetched)."""
        budget = _Budget(self._max_stylesheets, len(page.stylesheet_urls), report)
        sheets: list[Sheet] = []
        webfonts: list[str] = []
        sources = [(url, None) for url in page.stylesheet_urls] + [(page.url, text) for text in page.style_blocks]
        for base, text in sources:
            if text is None:
                fetched = self._fetch_sheet(base, budget)
                if fetched is None:
                    continue
                base, text = fetched
            sheet = parse_sheet(text)
            for imported in sheet.imports:
                target = urljoin(base, imported)
                families = google_font_families(target)
                if families:
                    webfonts.extend(families)
                    continue
                budget.expect()
                nested = self._fetch_sheet(target, budget)
                if nested is not None:
                    sheets.append(parse_sheet(nested[1]))  # one level: its own imports are not followed
            sheets.append(sheet)
        return sheets, webfonts

    def _fetch_sheet(self, url: str, budget: _Budget) -> tuple[str, str] | None:
        if not budget.take():
            log.info("brand: stylesheet cap reached, skipping %s", url)
            return None
        try:
            answer = self._fetcher.fetch(url, accept=CSS_TYPES)
        except FetchError as exc:
            log.info("brand: skipping stylesheet %s: %s", url, exc)
            return None
        finally:
            budget.done()
        return answer.url, _decode_text(answer)

    def _logo(self, page: Page, report: Progress) -> tuple[DecodedLogo | None, str]:
        fetches = 0
        for candidate in page.logo_candidates:
            if candidate.url and not candidate.url.startswith("data:"):
                if fetches >= MAX_LOGO_FETCHES:
                    break
                fetches += 1
                report("fetch", _SHEETS_DONE + (_FETCH_DONE - _SHEETS_DONE) * fetches / (MAX_LOGO_FETCHES + 1))
            decoded, source = self._load_logo(candidate, page.url)
            if decoded is not None:
                return decoded, source
        return None, ""

    def _load_logo(self, candidate: LogoCandidate, page_url: str) -> tuple[DecodedLogo | None, str]:
        if candidate.svg is not None:
            return decode_logo(candidate.svg.encode("utf-8"), "image/svg+xml"), page_url
        url = candidate.url or ""
        if url.startswith("data:"):
            data, media = parse_data_url(url)
            return (decode_logo(data, media) if data else None), page_url
        try:
            answer = self._fetcher.fetch(url, accept=IMAGE_TYPES)
        except FetchError as exc:
            log.info("brand: skipping logo candidate %s: %s", url, exc)
            return None, url
        decoded = decode_logo(answer.body, answer.content_type)
        if decoded is None:
            log.info("brand: logo candidate %s could not be decoded", url)
        return decoded, answer.url


class _Budget:
    """Counts stylesheet fetches against the cap and reports progress from 0.2 to 0.5."""

    def __init__(self, cap: int, expected: int, report: Progress) -> None:
        self.cap, self.expected, self.used, self.report, self.last = cap, expected, 0, report, _PAGE_DONE

    def expect(self) -> None:
        self.expected += 1

    def take(self) -> bool:
        if self.used >= self.cap:
            return False
        self.used += 1
        return True

    def done(self) -> None:
        planned = max(1, min(self.cap, self.expected))
        fraction = _PAGE_DONE + (_SHEETS_DONE - _PAGE_DONE) * min(1.0, self.used / planned)
        if fraction > self.last:
            self.last = fraction
            self.report("fetch", fraction)


def decode_html(answer: FetchResult) -> str:
    """The page's text, decoded by its declared or sniffed charset.

    Raises BrandExtractionError for a body that is binary or empty, whatever its content type says.
    """
    body = answer.body
    head = body[:4096]
    if not body.strip():
        raise BrandExtractionError(f"{answer.url} answered with an empty page")
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BrandExtractionError(f"{answer.url} did not answer with an HTML page "
                                   f"(the {answer.content_type} body is binary)")
    charset = _charset(answer)
    text = UnicodeDammit(body, [charset] if charset else [], is_html=True).unicode_markup
    if text is None:
        raise BrandExtractionError(f"{answer.url} sent text in no encoding we can read")
    return text


def _decode_text(answer: FetchResult) -> str:
    charset = _charset(answer) or "utf-8"
    try:
        return answer.body.decode(charset, errors="replace")
    except LookupError:
        return answer.body.decode("utf-8", errors="replace")


def _charset(answer: FetchResult) -> str | None:
    header = next((v for k, v in answer.headers.items() if k.lower() == "content-type"), "")
    for part in header.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("'\"")
    return None


def parse_data_url(url: str) -> tuple[bytes, str]:
    """The bytes and media type of a ``data:`` URL; empty bytes when it is malformed or too big."""
    header, _, payload = url[5:].partition(",")
    media = header.split(";")[0].strip().lower()
    if len(payload) > MAX_DATA_URL_BYTES * 2:
        return b"", media
    try:
        data = base64.b64decode(payload) if header.endswith(";base64") else unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return b"", media
    return (data, media) if len(data) <= MAX_DATA_URL_BYTES else (b"", media)


def _as_logo(decoded: DecodedLogo, source_url: str) -> Logo:
    dominant = decoded.colors[0][0] if decoded.colors else (0, 0, 0)
    return Logo(png=decoded.png, width=decoded.width, height=decoded.height,
                dominant_color="#{:02X}{:02X}{:02X}".format(*dominant), source_url=source_url)
