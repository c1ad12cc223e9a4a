"""Where a page's logo may be, best first: inline SVG, a logo ``<img>``, touch and favicon links, og:image.

No I/O: the candidates are URLs or SVG markup for ``BrandExtractor`` to fetch (all at once) and
decode, taking the first that decodes in this order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag

_SVG_NAMES = {name.lower(): name for name in (
    "viewBox", "preserveAspectRatio", "gradientUnits", "gradientTransform", "patternUnits", "patternTransform",
    "clipPathUnits", "linearGradient", "radialGradient", "clipPath", "textPath", "stdDeviation", "spreadMethod",
    "maskUnits", "maskContentUnits", "markerWidth", "markerHeight", "refX", "refY")}
_CAMEL_CASE = re.compile(r"(?<=[<\s/])(" + "|".join(_SVG_NAMES) + r")(?=[\s=>/])")
_HEADER_HINT = re.compile(r"header|navbar|masthead|topbar|site-nav", re.IGNORECASE)


@dataclass(frozen=True)
class LogoCandidate:
    """Where a logo may be: a URL (absolute, or a ``data:`` URL) or inline SVG markup."""

    kind: str  # inline_svg, img, apple_touch_icon, icon, og_image, favicon
    url: str | None = None
    svg: str | None = None


def logo_candidates(soup: BeautifulSoup, base: str, html: str = "") -> list[LogoCandidate]:
    """Every place a logo may be, best first: inline SVG in the header or marked as a logo, an
    ``<img>`` named logo, apple-touch-icon, icon links (largest first), og:image, then /favicon.ico.
    """
    found: list[LogoCandidate] = [LogoCandidate("inline_svg", svg=markup) for markup in _inline_svgs(soup, html)]
    images = [img for img in soup.find_all("img")
              if _mentions_logo(img, img.get("src"), img.get("alt")) or (img.parent and _mentions_logo(img.parent))]
    images.sort(key=lambda img: not _in_header(img))
    found += [LogoCandidate("img", url=urljoin(base, src)) for img in images if (src := _image_source(img))]
    found += [LogoCandidate("apple_touch_icon", url=urljoin(base, href)) for href in _icons(soup, "apple")]
    found += [LogoCandidate("icon", url=urljoin(base, href)) for href in _icons(soup, "icon")]
    for key in ("og:image", "og:image:secure_url", "og:image:url", "twitter:image"):
        content = meta_content(soup, key)
        if content:
            found.append(LogoCandidate("og_image", url=urljoin(base, content)))
    found.append(LogoCandidate("favicon", url=urljoin(base, "/favicon.ico")))
    unique: list[LogoCandidate] = []
    seen: set[str] = set()
    for candidate in found:
        key = candidate.url or candidate.svg or ""
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def _mentions_logo(tag: Tag, *values: object) -> bool:
    classes = " ".join(tag.get("class") or ())
    texts = [classes, str(tag.get("id") or ""), str(tag.get("aria-label") or ""), *(str(v or "") for v in values)]
    return any("logo" in text.lower() for text in texts)


def _in_header(tag: Tag) -> bool:
    for parent in tag.parents:
        if parent.name in ("header", "nav") or str(parent.get("role") or "") == "banner":
            return True
        if _HEADER_HINT.search(" ".join(parent.get("class") or ()) + " " + str(parent.get("id") or "")):
            return True
    return False


def _image_source(img: Tag) -> str | None:
    for attr in ("src", "data-src", "data-lazy-src"):
        value = str(img.get(attr) or "").strip()
        if value and not value.startswith("data:image/gif"):  # a lazy-loading placeholder pixel
            return value
    srcset = str(img.get("srcset") or "").strip()
    return srcset.split(",")[0].split()[0] if srcset else None


def _icons(soup: BeautifulSoup, kind: str) -> list[str]:
    ranked: list[tuple[int, int, str]] = []
    for order, link in enumerate(soup.find_all("link", href=True)):
        rels = link_rels(link)
        apple = any(r.startswith("apple-touch-icon") for r in rels)
        if (kind == "apple") != apple or (kind == "icon" and "icon" not in rels and "mask-icon" not in rels):
            continue
        ranked.append((-_icon_size(link, rels), order, str(link["href"]).strip()))
    return [href for _, _, href in sorted(ranked)]


def _icon_size(link: Tag, rels: list[str]) -> int:
    if "mask-icon" in rels:
        return -1  # monochrome, for Safari pinned tabs: the icon of last resort
    sizes = str(link.get("sizes") or "").lower()
    if sizes == "any" or "svg" in str(link.get("type") or "") or str(link["href"]).lower().endswith(".svg"):
        return 1024
    numbers = [int(a) for a, _ in re.findall(r"(\d+)x(\d+)", sizes)]
    return max(numbers) if numbers else 16


def _inline_svgs(soup: BeautifulSoup, html: str) -> list[str]:
    """Inline ``<svg>`` markup, logo-marked ones first, then others in the header; icons skipped."""
    marked, header = [], []
    for svg in soup.find_all("svg"):
        if svg.find_parent("svg") is not None or svg.find_parent(("defs", "symbol")) is not None:
            continue
        hinted = _mentions_logo(svg) or any(_mentions_logo(p) for p in list(svg.parents)[:3])
        if hinted:
            marked.append(svg)
        elif _in_header(svg) and not _is_icon(svg):
            header.append(svg)
    marked.sort(key=lambda svg: not _in_header(svg))
    return [svg_markup(svg, html) for svg in marked + header]


def _is_icon(svg: Tag) -> bool:
    def size(attr: str) -> float:
        match = re.match(r"\s*(\d+(?:\.\d+)?)\s*(px)?\s*$", str(svg.get(attr) or ""))
        return float(match.group(1)) if match else 1e9
    return size("width") <= 32 and size("height") <= 32  # menu, search and social icons


def svg_markup(svg: Tag, html: str) -> str:
    """The ``<svg>`` element's source text (html.parser lower-cases names like viewBox), with xmlns."""
    markup = _source_text(svg, html) or _CAMEL_CASE.sub(lambda m: _SVG_NAMES[m.group(0).lower()], str(svg))
    opening = markup[:markup.find(">") + 1]
    additions = ""
    if "xmlns=" not in opening:
        additions += ' xmlns="http://www.w3.org/2000/svg"'
    if "xlink:" in markup and "xmlns:xlink" not in opening:
        additions += ' xmlns:xlink="http://www.w3.org/1999/xlink"'
    return markup[:4] + additions + markup[4:] if additions else markup


def _source_text(svg: Tag, html: str) -> str | None:
    if svg.sourceline is None or svg.sourcepos is None or not html:
        return None
    lines = html.split("\n")
    if svg.sourceline > len(lines):
        return None
    start = sum(len(line) + 1 for line in lines[:svg.sourceline - 1]) + svg.sourcepos
    if html[start:start + 4].lower() != "<svg":
        return None
    depth = 0
    for match in re.compile(r"<(/?)svg\b[^>]*?(/?)>", re.IGNORECASE).finditer(html, start):
        if match.group(1):
            depth -= 1
        elif not match.group(2):
            depth += 1
        if depth <= 0:
            return html[start:match.end()]
    return None


def meta_content(soup: BeautifulSoup, key: str) -> str | None:
    for attr in ("property", "name"):
        tag = soup.find("meta", attrs={attr: re.compile(rf"^{re.escape(key)}$", re.IGNORECASE)})
        if tag and str(tag.get("content") or "").strip():
            return str(tag["content"]).strip()
    return None



def link_rels(tag: Tag) -> list[str]:
    rel: str | list[str] = tag.get("rel") or []
    return [r.lower() for r in (rel.split() if isinstance(rel, str) else rel)]

