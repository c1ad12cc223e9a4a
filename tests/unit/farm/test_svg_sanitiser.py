"""Uploaded SVGs are rewritten from an allow-list (``reelfarm.farm.services.svg``, through
``media.admit``): every way an SVG can run script or fetch from elsewhere is gone, and what is
drawn stays: Skia draws the same pixels before and after."""
from __future__ import annotations

from xml.etree import ElementTree

import numpy as np
import pytest
import skia

from reelfarm.farm.services.media import MediaRefused, admit
from reelfarm.farm.services.svg import MAX_DEPTH, sanitise

OPEN = (b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        b'xmlns:h="http://www.w3.org/1999/xhtml" width="40" height="40">')
KEPT = b'<rect id="kept" width="40" height="40" fill="#0a0"/>'

# (what it is, the markup inside <svg>, what must not be left of it)
ATTACKS = [
    ("script element", b"<script>alert(1)</script>", [b"script", b"alert"]),
    ("script with CDATA", b"<script><![CDATA[alert(1)]]></script>", [b"script", b"alert"]),
    ("XHTML script", b"<h:script>alert(1)</h:script>", [b"script", b"alert"]),
    ("SVG script under a prefix", b'<s:script xmlns:s="http://www.w3.org/2000/svg">alert(1)</s:script>',
     [b"script", b"alert"]),
    ("event handler", b'<rect width="1" height="1" onclick="alert(1)" onmouseover="alert(2)"/>', [b"on", b"alert"]),
    ("handler on a group", b'<g onload="alert(1)"><circle r="1"/></g>', [b"onload", b"alert"]),
    ("foreignObject", b'<foreignObject width="9" height="9"><h:iframe src="javascript:alert(1)"/></foreignObject>',
     [b"foreignObject", b"iframe", b"javascript"]),
    ("iframe, embed, object", (b'<h:iframe src="https://evil.example/"/><h:embed src="https://evil.example/x.swf"/>'
     b'<h:object data="https://evil.example/x"/>'), [b"iframe", b"embed", b"object", b"evil"]),
    ("a link to javascript", b'<a xlink:href="javascript:alert(1)"><circle r="3"/></a>', [b"<a", b"javascript"]),
    ("a link spelled around", b'<a href="&#x20;java&#x09;script:alert(1)"><circle r="3"/></a>',
     [b"<a", b"script", b"alert"]),
    ("a link to another page", b'<a href="https://evil.example/"><circle r="3"/></a>', [b"<a", b"evil"]),
    ("use of another document", b'<use href="https://evil.example/sprite.svg#icon"/>', [b"evil"]),
    ("use of an SVG data URI", b'<use xlink:href="data:image/svg+xml;base64,PHN2Zy8+#x"/>', [b"data:"]),
    ("image from elsewhere", b'<image href="https://evil.example/pixel.png" width="1" height="1"/>', [b"evil"]),
    ("image of an SVG data URI", b'<image href="data:image/svg+xml,&lt;svg onload=alert(1)&gt;" width="1" height="1"/>',
     [b"data:", b"alert"]),
    ("feImage from elsewhere", b'<filter id="f"><feImage href="https://evil.example/x.png"/></filter>', [b"evil"]),
    ("gradient from elsewhere", b'<linearGradient id="g" xlink:href="https://evil.example/g.svg#g"/>', [b"evil"]),
    ("animate writing href", b'<a><animate attributeName="href" values="javascript:alert(1)"/><circle r="2"/></a>',
     [b"animate", b"javascript"]),
    ("set writing a handler", b'<circle r="2"><set attributeName="onmouseover" to="alert(1)"/></circle>',
     [b"set", b"alert"]),
    ("animateTransform, animateMotion", (b'<circle r="2"><animateTransform attributeName="transform" type="scale"/>'
     b'<animateMotion path="M0 0"/></circle>'), [b"animate"]),
    ("style @import", b'<style>@import url(https://evil.example/a.css); .x{fill:red}</style>', [b"import", b"evil"]),
    ("style @import of a string", b'<style>@import "https://evil.example/a.css";</style>', [b"import", b"evil"]),
    ("style url() elsewhere", b'<style>.x{fill:url(https://evil.example/p.svg#p);stroke:red}</style>', [b"evil"]),
    ("style url() escaped", b'<style>.x{fill:u\\72 l(https://evil.example/p.svg#p)}</style>', [b"evil"]),
    ("style @font-face", b'<style>@font-face{font-family:x;src:url(https://evil.example/f.woff)}</style>',
     [b"font-face", b"evil"]),
    ("style after an element", b'<style>.x{fill:red}<g/>@import url(https://evil.example/a.css);</style>',
     [b"import", b"evil"]),
    ("style inside @media", b'<style>@media screen{.x{background:url(https://evil.example/b.png)}}</style>',
     [b"evil"]),
    ("style attribute url()", b'<rect width="1" height="1" style="fill:url(https://evil.example/p#p);stroke:red"/>',
     [b"evil"]),
    ("style attribute image-set()", b'<rect width="1" height="1" style="fill:image-set(\'https://evil.example/x\')"/>',
     [b"evil", b"image-set"]),
    ("presentation url()", (b'<rect width="1" height="1" fill="url(https://evil.example/p.svg#p)" '
     b'filter="url(\'https://evil.example/f.svg#f\')" mask="URL(https://evil.example/m)"/>'), [b"evil"]),
    ("presentation url() escaped", b'<rect width="1" height="1" fill="u\\72 l(https://evil.example/p)"/>',
     [b"evil"]),
    ("cursor", b'<rect width="1" height="1" cursor="url(https://evil.example/c.cur), auto"/>', [b"evil", b"cursor"]),
    ("stylesheet instruction", b'<?xml-stylesheet href="https://evil.example/a.css"?><g/>', [b"evil", b"<?"]),
    ("XLink attributes", b'<use xlink:href="#kept" xlink:show="new" xlink:actuate="onLoad"/>',
     [b"show", b"actuate"]),
    ("other namespaces", (b'<i:pgf xmlns:i="http://ns.adobe.com/AdobeIllustrator/10.0/">eJzT</i:pgf>'
     b'<rect width="1" height="1" xmlns:x="urn:x" x:onclick="alert(1)"/>'), [b"pgf", b"eJzT", b"alert"]),
    ("metadata and comments", b'<metadata><h:script>alert(1)</h:script></metadata><!-- alert(2) -->',
     [b"metadata", b"alert"]),
    ("javascript in a local reference", b'<use href="#x&#10;javascript:alert(1)"/>', [b"javascript"]),
]


def clean(markup: bytes) -> bytes:
    data, media = admit(OPEN + markup + KEPT + b"</svg>")
    assert media.content_type == "image/svg+xml"
    return data


@pytest.mark.parametrize(("markup", "gone"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_each_way_to_run_script_or_fetch_is_removed(markup: bytes, gone: list[bytes]) -> None:
    data = clean(markup)
    for word in gone:
        assert word.lower() not in data.lower(), data
    assert b'<rect id="kept" width="40" height="40" fill="#0a0"/>' in data  # the drawing around it stays
    ElementTree.fromstring(data)  # and it is well-formed


BENIGN = b"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="200" height="120"
     viewBox="0 0 200 120">
  <title>Spring sale</title>
  <defs>
    <linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#0af"/><stop offset="1" stop-color="#fff" stop-opacity="0.5"/>
    </linearGradient>
    <radialGradient id="sun" cx="0.5" cy="0.5" r="0.5">
      <stop offset="0%" style="stop-color:#ff0"/><stop offset="100%" stop-color="#f80"/>
    </radialGradient>
    <clipPath id="clip"><circle cx="100" cy="60" r="50"/></clipPath>
    <path id="star" d="M10,0 L13,7 L20,7 L14,12 L16,20 L10,15 L4,20 L6,12 L0,7 L7,7 Z"/>
    <filter id="blur"><feGaussianBlur stdDeviation="1.5"/></filter>
    <pattern id="dots" width="6" height="6" patternUnits="userSpaceOnUse"><circle cx="3" cy="3" r="1.5"
      fill="#fa0"/></pattern>
  </defs>
  <style>.label { font-style: italic } @media (prefers-color-scheme: dark) { .label { fill: #eee } }</style>
  <rect width="200" height="120" fill="url(#sky)"/>
  <g clip-path="url(#clip)" transform="translate(5,0)">
    <circle cx="150" cy="30" r="20" fill="url(#sun)" filter="url(#blur)"/>
    <polygon points="0,120 60,50 120,120" fill="#363" stroke="#030" stroke-width="2"/>
  </g>
  <rect x="130" y="60" width="60" height="20" fill="url(#dots)" rx="4"/>
  <use xlink:href="#star" x="20" y="10" fill="#c00"/>
  <use xlink:href="#star" x="50" y="10" fill="#00c" transform="rotate(10 60 20)"/>
  <ellipse cx="160" cy="100" rx="30" ry="10" fill="none" stroke="#000" stroke-dasharray="4 2"/>
  <image x="180" y="2" width="16" height="16"
    xlink:href="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="/>
  <text class="label" x="10" y="110" font-family="sans-serif" font-size="16" fill="#222">Spring
    <tspan font-weight="bold" fill="#a00">sale</tspan> &amp; more</text>
</svg>"""


def draw(data: bytes, width: int = 200, height: int = 120) -> np.ndarray:
    dom = skia.SVGDOM.MakeFromStream(skia.MemoryStream(data))
    assert dom is not None
    surface = skia.Surface(width, height)
    canvas = surface.getCanvas()
    canvas.clear(skia.ColorWHITE)
    dom.setContainerSize(skia.Size(width, height))
    dom.render(canvas)
    return surface.makeImageSnapshot().toarray()


def test_a_benign_drawing_survives_and_draws_the_same_pixels() -> None:
    data, media = admit(BENIGN)
    assert (media.width, media.height) == (200, 120)
    for kept in (b"<linearGradient", b"<radialGradient", b'style="stop-color:#ff0"', b"<clipPath", b"<pattern",
                 b"<feGaussianBlur", b'<use xlink:href="#star"', b"data:image/png;base64,", b">sale</tspan>",
                 b"&amp; more", b".label{font-style:italic}", b"@media (prefers-color-scheme: dark){.label{fill:#eee}}",
                 b"<title>Spring sale</title>"):
        assert kept in data, kept
    before, after = draw(BENIGN), draw(data)
    assert len(np.unique(before.reshape(-1, 4), axis=0)) > 100  # a real drawing, not a blank
    assert np.array_equal(before, after)


def test_sanitising_again_changes_nothing() -> None:
    """An SVG uploaded again, or its sanitised copy uploaded, is the same bytes: one asset."""
    for markup in [a[1] for a in ATTACKS] + [b""]:
        once = clean(markup)
        assert admit(once)[0] == once
    assert admit(admit(BENIGN)[0])[0] == admit(BENIGN)[0]


def test_svg2_href_and_prefixed_names_are_written_as_skia_reads_them() -> None:
    """``<use href>`` (SVG 2) and ``<s:rect>`` under a prefix were not drawn by Skia; written as
    ``xlink:href`` and plain names, they are, as a browser draws them."""
    svg2 = (b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><defs><rect id="r" width="40" '
            b'height="40" fill="#f00"/></defs><use href="#r"/></svg>')
    prefixed = (b'<?xml version="1.0"?><s:svg xmlns:s="http://www.w3.org/2000/svg" width="40" height="40"><s:rect width="40" height="40" '
                b'fill="#f00"/></s:svg>')
    red = [0, 0, 255, 255]  # Skia's BGRA
    assert draw(svg2, 40, 40)[20, 20].tolist() != red
    assert skia.SVGDOM.MakeFromStream(skia.MemoryStream(prefixed)) is None
    for source in (svg2, prefixed):
        data, _ = admit(source)
        assert draw(data, 40, 40)[20, 20].tolist() == red


def test_a_link_keeps_its_drawing_as_a_group() -> None:
    data = clean(b'<a href="https://example.com/"><circle r="3" fill="#00f"/></a>'
                 b'<text x="1" y="9">see <a href="https://example.com/">here</a></text>')
    assert b'<g><circle r="3" fill="#00f"/></g>' in data
    assert b"<text x=\"1\" y=\"9\">see <tspan>here</tspan></text>" in data


def test_nesting_past_the_limit_is_refused_and_the_root_must_be_svg() -> None:
    deep = OPEN + b"<g>" * (MAX_DEPTH + 1) + b"</g>" * (MAX_DEPTH + 1) + b"</svg>"
    with pytest.raises(MediaRefused, match=f"nest more than {MAX_DEPTH} deep"):
        admit(deep)
    fine = OPEN + b"<g>" * (MAX_DEPTH - 1) + KEPT + b"</g>" * (MAX_DEPTH - 1) + b"</svg>"
    assert b'id="kept"' in admit(fine)[0]
    with pytest.raises(ValueError):
        sanitise(ElementTree.fromstring(b'<a xmlns="http://www.w3.org/2000/svg"/>'))


def test_raster_uploads_are_stored_as_sent() -> None:
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                        "0000000d4944415478da63fccfc0f01f0005050200 5fc8f1d20000000049454e44ae426082".replace(" ", ""))
    data, media = admit(png)
    assert data is png and media.content_type == "image/png"
