"""Reading an HTML page (BeautifulSoup, html.parser): name, tagline, stylesheets, logo candidates.

No I/O here: ``read_page`` takes the decoded HTML and the URL it came from.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from bs4 import BeautifulSoup, Tag

from reelfarm.studio.brand.candidates import (
    LogoCandidate,
    link_rels,
    logo_candidates,
    meta_content,
)
from reelfarm.studio.brand.css import Rule, google_font_families, parse_declarations

TAGLINE_CHARS = 160
MAX_ELEMENTS = 20_000  # indexed for use counts; a bigger page is indexed in part
_SEPARATORS = re.compile(r"\s*\|\s*|\s+[-–—:·•]\s+|\s*[–—·•]\s*|:\s+")
_GENERIC_TITLE = frozenset({"home", "homepage", "home page", "welcome", "start", "index", "official site",
                            "official website", "startseite", "accueil", "inicio"})


class ElementIndex:
    """Counts the elements a simple selector (``a``, ``.btn``, ``button.primary``, ``#buy``) matches."""

    def __init__(self, soup: BeautifulSoup) -> None:
        self.tags: Counter[str] = Counter()
        self.by_class: dict[str, list[tuple[str, frozenset[str], str]]] = {}
        self.ids: Counter[str] = Counter()
        for element in soup.find_all(True, limit=MAX_ELEMENTS):
            classes = frozenset(element.get("class") or ())
            ident = str(element.get("id") or "")
            self.tags[element.name] += 1
            self.ids[ident] += 1
            for name in classes:
                self.by_class.setdefault(name, []).append((element.name, classes, ident))

    def count(self, tag: str, classes: frozenset[str], ident: str) -> int:
        """Elements with that tag (or any, for "" / "*"), all those classes and that id."""
        if classes:
            first = next(iter(classes))
            return sum(1 for name, have, own in self.by_class.get(first, ())
                       if classes <= have and (not tag or tag == name) and (not ident or ident == own))
        if ident:
            return self.ids[ident]
        return self.tags[tag] if tag else 0


@dataclass
class Page:
    """What brand extraction reads from the HTML itself."""

    url: str
    name: str
    tagline: str | None
    theme_colors: list[str] = field(default_factory=list)
    stylesheet_urls: list[str] = field(default_factory=list)
    style_blocks: list[str] = field(default_factory=list)
    inline_rules: list[Rule] = field(default_factory=list)
    logo_candidates: list[LogoCandidate] = field(default_factory=list)
    webfont_families: list[str] = field(default_factory=list)
    has_identity: bool = False  # a declared name (title, og:site_name) or description
    elements: ElementIndex | None = None


def read_page(html: str, url: str) -> Page:
    """Parse ``html`` fetched from ``url`` (the final URL, after redirects)."""
    soup = BeautifulSoup(html, "html.parser")
    base = _base_url(soup, url)
    site_name = meta_content(soup, "og:site_name") or meta_content(soup, "application-name")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag else ""
    description = meta_content(soup, "description") or meta_content(soup, "og:description")
    links = _stylesheet_links(soup, base)
    page = Page(url=url, name=choose_name(site_name, title, urlsplit(url).hostname or ""),
                tagline=clean_tagline(description), elements=ElementIndex(soup))
    page.theme_colors = _theme_colors(soup)
    page.webfont_families = [f for link in links for f in google_font_families(link)]
    page.stylesheet_urls = [link for link in links if not google_font_families(link)]
    page.style_blocks = [tag.get_text() for tag in soup.find_all("style") if not _dark_or_print(tag)]
    page.inline_rules = _inline_rules(soup)
    page.logo_candidates = logo_candidates(soup, base, html)
    page.has_identity = bool(site_name or title or description)
    return page


def choose_name(site_name: str | None, title: str | None, host: str) -> str:
    """og:site_name or application-name, else the title without its tagline, else the host name."""
    if site_name and site_name.strip():
        return " ".join(site_name.split())
    cleaned = clean_title(title or "", host)
    if cleaned:
        return cleaned
    return host.lower().removeprefix("www.")


def clean_title(title: str, host: str = "") -> str:
    """The brand part of a page title: ``"Acme | Fast widgets"`` -> ``"Acme"``.

    A part that matches the host name wins ("Fast widgets | Acme" on acme.com); otherwise the first
    part, unless it is generic ("Home", "Welcome"), then the last.
    """
    parts = [p.strip() for p in _SEPARATORS.split(" ".join(title.split())) if p.strip()]
    if not parts:
        return ""
    label = _host_label(host)
    for part in parts:
        if label and re.sub(r"[^a-z0-9]", "", part.lower()) == label:
            return part
    first = re.sub(r"^welcome to\s+", "", parts[0], flags=re.IGNORECASE)
    if first.lower() in _GENERIC_TITLE and len(parts) > 1:
        return parts[-1]
    return first


def _host_label(host: str) -> str:
    labels = [p for p in host.lower().split(".") if p and p != "www"]
    return re.sub(r"[^a-z0-9]", "", labels[0]) if len(labels) >= 2 else ""


def clean_tagline(text: str | None) -> str | None:
    """Whitespace collapsed and cut at a word boundary to at most 160 characters; None when empty."""
    collapsed = " ".join((text or "").split())
    if not collapsed:
        return None
    if len(collapsed) <= TAGLINE_CHARS:
        return collapsed
    cut = collapsed[:TAGLINE_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:.-")
    return cut + "…"



def _base_url(soup: BeautifulSoup, url: str) -> str:
    base = soup.find("base", href=True)
    return urljoin(url, str(base["href"]).strip()) if base else url


def _theme_colors(soup: BeautifulSoup) -> list[str]:
    tags = soup.find_all("meta", attrs={"name": re.compile(r"^(theme-color|msapplication-TileColor)$", re.IGNORECASE)})
    ranked = sorted(tags, key=lambda t: "dark" in str(t.get("media") or ""))  # the light scheme first
    return [str(t.get("content")).strip() for t in ranked if t.get("content")]



def _stylesheet_links(soup: BeautifulSoup, base: str) -> list[str]:
    urls: list[str] = []
    for link in soup.find_all("link", href=True):
        rels = link_rels(link)
        if "stylesheet" not in rels or "alternate" in rels or _dark_or_print(link):
            continue
        url = urljoin(base, str(link["href"]).strip())
        if url not in urls:
            urls.append(url)
    return urls


def _dark_or_print(tag: Tag) -> bool:
    media = str(tag.get("media") or "").lower()
    return "dark" in media or media.strip() == "print"


def _inline_rules(soup: BeautifulSoup) -> list[Rule]:
    rules = []
    for element in soup.find_all(style=True, limit=MAX_ELEMENTS):
        declarations = parse_declarations(str(element["style"]))
        if declarations:
            rules.append(Rule(describe_element(element), declarations, inline=True))
    return rules


def describe_element(element: Tag) -> str:
    """A compound selector naming ``element``: ``a.btn.primary#buy``."""
    classes = "".join(f".{c}" for c in element.get("class") or () if re.fullmatch(r"[\w-]+", c))
    ident = str(element.get("id") or "")
    return element.name + classes + (f"#{ident}" if re.fullmatch(r"[\w-]+", ident) else "")
