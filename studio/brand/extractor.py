"""``BrandExtractor``: fetch a page, its stylesheets and its logo through the SSRF guard, then analyze.

Every request goes through the ``SafeFetcher`` handed in, so the guard's address rules, timeouts
and byte caps hold for stylesheets and logos as for the page. Only the page itself can fail an
extraction; a stylesheet or logo that fails is skipped.

What does not depend on anything else is fetched at once on a small ``FetchPool``: the linked
stylesheets together, with the logo candidates behind them, then the ``@import``-ed sheets
together. The logo is the most preferred candidate that arrived and decodes, whichever answered
first. One deadline (``TIME_LIMIT``) covers the whole extraction; whatever has not arrived by then
is left out, so fetching from a slow site takes at most that long.
"""
from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from urllib.parse import unquote_to_bytes, urljoin

from bs4.dammit import UnicodeDammit

from reelfarm.studio.brand.analysis import build_tokens
from reelfarm.studio.brand.candidates import LogoCandidate
from reelfarm.studio.brand.css import Sheet, google_font_families, parse_sheet
from reelfarm.studio.brand.logo import DecodedLogo, decode_logo
from reelfarm.studio.brand.model import ExtractedBrand, Logo
from reelfarm.studio.brand.page import Page, read_page
from reelfarm.studio.brand.pool import FetchPool
from reelfarm.studio.errors import BrandExtractionError
from reelfarm.studio.fetch import FetchResult, SafeFetcher

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
CSS_TYPES = ("text/css", "text/plain")  # some servers label stylesheets text/plain
IMAGE_TYPES = ("image/*", "application/octet-stream")  # what it is, skia decides
MAX_LOGO_FETCHES = 5
MAX_DATA_URL_BYTES = 2_000_000
FETCH_WORKERS = 4  # fetches at once per extraction: a few, to be quick without hammering the site
TIME_LIMIT = 30.0  # seconds for a whole extraction; the page's own fetch included

Progress = Callable[[str, float], None]
_PAGE_DONE, _SHEETS_DONE, _FETCH_DONE, _ANALYZE_DONE = 0.2, 0.5, 0.6, 0.9
_LoadLogo = Callable[[], tuple[DecodedLogo | None, str]]  # a logo candidate decoded, and its source URL


class BrandExtractor:
    """Reads a brand (name, colours, fonts, logo, radius, tagline) from a website.

    Args:
        fetcher: the SSRF guard every request goes through.
        max_stylesheets: most stylesheets fetched per page, ``@import``-ed ones included.
        workers: most fetches under way at once.
        time_limit: seconds for one extraction; stylesheets and logos not fetched by then are left out.
    """

    def __init__(self, fetcher: SafeFetcher, *, max_stylesheets: int = 8, workers: int = FETCH_WORKERS,
                 time_limit: float = TIME_LIMIT) -> None:
        self._fetcher = fetcher
        self._max_stylesheets = max_stylesheets
        self._workers = workers
        self._time_limit = time_limit

    def extract(self, url: str, progress: Progress | None = None) -> ExtractedBrand:
        """Fetch ``url`` and read its brand.

        ``progress(stage, fraction)`` is called, always from the calling thread, with stage "fetch"
        (0 to 0.6: the page, each stylesheet as it arrives, then each logo candidate examined) and
        then "analyze" (0.6 to 0.9).

        Raises:
            FetchRefused: the URL, a redirect or the page's content type is refused.
            FetchFailed: the page could not be fetched (timeout, too large, error status), or not
                within the time limit.
            BrandExtractionError: the answer is not an HTML page, or shows nothing to read a brand from.
        """
        report = progress or (lambda stage, fraction: None)
        report("fetch", 0.0)
        pool = FetchPool(self._fetcher, workers=self._workers, time_limit=self._time_limit)
        try:
            answer = pool.fetch(url, HTML_TYPES)
            page = read_page(decode_html(answer), answer.url)
            report("fetch", _PAGE_DONE)
            budget = _Budget(self._max_stylesheets, len(page.stylesheet_urls), report)
            linked = _submit_sheets(page.stylesheet_urls, pool, budget)
            logos = _plan_logos(page, pool)  # behind the linked sheets, before any @import
            sheets, webfonts = _stylesheets(page, linked, pool, budget)
            report("fetch", _SHEETS_DONE)
            logo, logo_url = _choose_logo(logos, report)
            report("fetch", _FETCH_DONE)
        finally:
            pool.close()
        report("analyze", _FETCH_DONE)
        tokens = build_tokens(page, sheets, logo, webfonts)
        if tokens is None:
            raise BrandExtractionError(f"{answer.url} shows nothing to read a brand from "
                                       "(no title, description, colours, fonts or logo)")
        report("analyze", _ANALYZE_DONE)
        return ExtractedBrand(name=page.name, source_url=answer.url, tokens=tokens,
                              logo=_as_logo(logo, logo_url) if logo else None)


def _submit_sheets(urls: list[str], pool: FetchPool, budget: _Budget) -> dict[str, Future[FetchResult]]:
    """Start fetching each of ``urls`` (at most once) while the stylesheet cap allows."""
    futures: dict[str, Future[FetchResult]] = {}
    for url in urls:
        if url in futures:
            continue
        if not budget.take():
            log.info("brand: stylesheet cap reached, skipping %s", url)
            continue
        futures[url] = pool.submit(url, CSS_TYPES)
    return futures


def _await_sheets(futures: dict[str, Future[FetchResult]], pool: FetchPool,
                  budget: _Budget) -> dict[str, tuple[str, str]]:
    """The ``(final URL, text)`` of each sheet that arrived in time, reporting each as it comes."""
    for _ in pool.completed(futures.values()):
        budget.done()
    texts: dict[str, tuple[str, str]] = {}
    for url, future in futures.items():
        answer = pool.result(future)
        if answer is not None:
            texts[url] = (answer.url, _decode_text(answer))
    return texts


def _stylesheets(page: Page, linked: dict[str, Future[FetchResult]], pool: FetchPool,
                 budget: _Budget) -> tuple[list[Sheet], list[str]]:
    """Linked sheets (each after its ``@import``-ed ones), then ``<style>`` blocks, and the
    families of web-font imports (which are read from their URL, not fetched).

    The linked sheets arrive together, then every sheet they and the ``<style>`` blocks import,
    together; imports of imports are not followed.
    """
    fetched = _await_sheets(linked, pool, budget)
    sources = [fetched[url] for url in page.stylesheet_urls if url in fetched]
    parsed = [(base, parse_sheet(text)) for base, text in sources + [(page.url, t) for t in page.style_blocks]]
    webfonts: list[str] = []
    imports: list[list[str]] = []  # per source, the URLs it imports, in order
    for base, sheet in parsed:
        targets = [urljoin(base, imported) for imported in sheet.imports]
        fonts = [google_font_families(target) for target in targets]
        webfonts.extend(family for families in fonts for family in families)
        imports.append([target for target, families in zip(targets, fonts, strict=True) if not families])
    wanted = [target for targets in imports for target in targets]
    budget.expect(len(set(wanted)))
    nested = _await_sheets(_submit_sheets(wanted, pool, budget), pool, budget)
    sheets: list[Sheet] = []
    for (_, sheet), targets in zip(parsed, imports, strict=True):
        sheets.extend(parse_sheet(nested[target][1]) for target in targets if target in nested)
        sheets.append(sheet)
    return sheets, webfonts


def _plan_logos(page: Page, pool: FetchPool) -> list[_LoadLogo]:
    """How to load each logo candidate worth trying, best first, with the fetches of URL ones started.

    A candidate that needs no fetch (inline SVG, ``data:`` URL) ahead of every URL one is decoded
    at once: when it decodes, nothing is fetched at all.
    """
    plan: list[_LoadLogo] = []
    fetches = 0
    for candidate in page.logo_candidates:
        if not _is_local(candidate):
            if fetches == MAX_LOGO_FETCHES:
                break
            fetches += 1
            plan.append(partial(_load_fetched, candidate, pool.submit(candidate.url or "", IMAGE_TYPES), pool))
        elif fetches:
            plan.append(partial(_load_local, candidate, page.url))
        else:
            loaded = _load_local(candidate, page.url)
            if loaded[0] is not None:
                return [_already(loaded)]
    return plan


def _already(loaded: tuple[DecodedLogo | None, str]) -> _LoadLogo:
    return lambda: loaded


def _choose_logo(plan: list[_LoadLogo], report: Progress) -> tuple[DecodedLogo | None, str]:
    """The first candidate, in order of preference, that arrived in time and decodes, and its URL."""
    for examined, load in enumerate(plan, 1):
        decoded, source = load()
        report("fetch", _SHEETS_DONE + (_FETCH_DONE - _SHEETS_DONE) * examined / (len(plan) + 1))
        if decoded is not None:
            return decoded, source
    return None, ""


def _is_local(candidate: LogoCandidate) -> bool:
    return candidate.svg is not None or (candidate.url or "").startswith("data:")


def _load_local(candidate: LogoCandidate, page_url: str) -> tuple[DecodedLogo | None, str]:
    """An inline SVG or ``data:`` URL candidate, decoded; its source is the page."""
    if candidate.svg is not None:
        return decode_logo(candidate.svg.encode("utf-8"), "image/svg+xml"), page_url
    data, media = parse_data_url(candidate.url or "")
    return (decode_logo(data, media) if data else None), page_url


def _load_fetched(candidate: LogoCandidate, future: Future[FetchResult],
                  pool: FetchPool) -> tuple[DecodedLogo | None, str]:
    """A URL candidate, decoded once its fetch arrives (waiting for it until the deadline)."""
    answer = pool.result(future)
    if answer is None:
        return None, candidate.url or ""
    decoded = decode_logo(answer.body, answer.content_type)
    if decoded is None:
        log.info("brand: logo candidate %s could not be decoded", candidate.url)
    return decoded, answer.url


class _Budget:
    """Counts stylesheet fetches against the cap and reports progress from 0.2 to 0.5 as they end."""

    def __init__(self, cap: int, expected: int, report: Progress) -> None:
        self.cap, self.expected, self.report = cap, expected, report
        self.used = self.finished = 0
        self.last = _PAGE_DONE

    def expect(self, more: int) -> None:
        self.expected += more

    def take(self) -> bool:
        if self.used >= self.cap:
            return False
        self.used += 1
        return True

    def done(self) -> None:
        self.finished += 1
        planned = max(1, min(self.cap, self.expected))
        fraction = _PAGE_DONE + (_SHEETS_DONE - _PAGE_DONE) * min(1.0, self.finished / planned)
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
