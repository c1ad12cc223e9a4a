"""Brand extraction against fixture websites served by a real HTTP server on 127.0.0.1.

Two ``ThreadingHTTPServer``s run in threads: the site, and a "CDN" on another port (another origin)
for stylesheets. Every request goes through a real ``SafeFetcher(allow_private=True)``; logo
images are drawn here with Pillow, and the PNG the extractor returns is decoded to check pixels.
Some routes answer late (``delayed``) or only once the test is over (``hanging``), to show that
independent fetches run at once and that one time limit bounds a whole extraction.
"""
from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from PIL import Image

from reelfarm.studio.brand import BrandExtractor, ExtractedBrand
from reelfarm.studio.errors import BrandExtractionError, FetchFailed, FetchRefused
from reelfarm.studio.fetch import SafeFetcher

ROUTED = "93.184.216.34"  # public to the guard; the test transport dials 127.0.0.1 instead

Route = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.server.seen.append(path)  # type: ignore[attr-defined]
        self.server.events.append(("asked", path))  # type: ignore[attr-defined]
        route = self.server.routes.get(path)  # type: ignore[attr-defined]
        if route is None:
            self.send(404, "text/html", b"<h1>not found</h1>")
        else:
            route(self)

    def send(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        # noted before the client can have it, so a test never looks before it is there
        self.server.answered.append(self.path.split("?")[0])  # type: ignore[attr-defined]
        self.server.events.append(("answered", self.path.split("?")[0]))  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the fetcher gave up reading, as some tests want


def png(size: tuple[int, int], fill: str, *, spot: str | None = None, fmt: str = "PNG") -> bytes:
    """An image of ``fill`` with a smaller ``spot`` square in the top-left quarter."""
    image = Image.new("RGBA", size, fill)
    if spot:
        image.paste(Image.new("RGBA", (size[0] // 4, size[1] // 4), spot), (0, 0))
    out = io.BytesIO()
    if fmt == "ICO":
        image.save(out, fmt, sizes=[size])
    else:
        image.save(out, fmt)
    return out.getvalue()


def page(body: str) -> Route:
    return lambda h: h.send(200, "text/html; charset=utf-8", body.encode("utf-8"))


def css(text: str) -> Route:
    return lambda h: h.send(200, "text/css", text.encode("utf-8"))


def image(data: bytes, content_type: str = "image/png") -> Route:
    return lambda h: h.send(200, content_type, data)


def redirect(location: str) -> Route:
    return lambda h: h.send(301, "text/html", b"", Location=location)


def delayed(seconds: float, route: Route) -> Route:
    """``route``, answered after ``seconds``."""
    def answer(h: Handler) -> None:
        time.sleep(seconds)
        route(h)
    return answer


def hanging(route: Route) -> Route:
    """``route``, answered only once the test is over (the fixture releases it), or after 10 s."""
    def answer(h: Handler) -> None:
        h.server.release.wait(10)  # type: ignore[attr-defined]
        route(h)
    return answer


VARS_HTML = """<!doctype html><html><head>
<title>Acme | Fast widgets for everyone</title>
<meta name="description" content="  Widgets,
      made   fast.  ">
<link rel="stylesheet" href="/vars/site.css">
</head><body>
<header><img src="/vars/acme-logo.png" alt="Acme"></header>
<h1>Widgets</h1><a class="btn btn-primary" href="/buy">Buy</a><a class="btn btn-primary" href="/try">Try</a>
<a href="/about">About</a>
</body></html>"""

VARS_CSS = """
@import url("https://fonts.googleapis.com/css2?family=Playfair+Display:wght@800&display=swap");
:root { --brand: #E11D48; --accent: #7C3AED; --bg: #FFFFFF; --text: #1F2937;
        --font-body: "Helvetica Neue", Arial, sans-serif; }
body { background: var(--bg); color: var(--text); font-family: var(--font-body); }
h1, h2, h3 { font-family: "Playfair Display", Georgia, serif; font-weight: 800; color: #111827; }
.btn { background-color: var(--brand); color: #fff; border-radius: 8px; }
.btn-danger { background-color: #DC2626; border-radius: 2px; }
a { color: var(--brand); }
@media (prefers-color-scheme: dark) { body { background: #000000; color: #FFFFFF; } }
"""

EXTERNAL_HTML = """<html><head><title>Home - Globex</title>
<link rel="stylesheet" href="/external/missing.css">
<link rel="stylesheet" href="http://127.0.0.1:{cdn}/cdn/theme.css">
</head><body><button class="button">Sign up</button><h1>Globex</h1><a href="/">x</a></body></html>"""

INLINE_HTML = """<html><head><title>Initech: Software that works</title>
<meta name="theme-color" content="#ffffff"></head>
<body style="background-color: #0F172A; color: #94A3B8; font-family: Georgia, serif">
<h1 style="color: #F8FAFC; font-family: 'Roboto Condensed'">Initech</h1>
<a class="cta" style="background: #FACC15; color: #111111">Get started</a>
<p style="border: 1px solid #FACC15">Text</p>
</body></html>"""

SVG_HTML = """<html><head><title>Umbrella</title></head><body>
<header class="site-header"><a href="/" class="brand">
  <svg viewBox="0 0 120 40" width="240" height="80" role="img"><title>Umbrella</title>
    <rect width="120" height="40" fill="#2563EB"/><rect x="8" y="8" width="12" height="12" fill="#FFFFFF"/>
  </svg></a>
  <nav><svg width="24" height="24"><path d="M0 0h24v24H0z" fill="#000"/></svg></nav>
</header>
<img src="/svg/old-logo.png" alt="logo"><p>Umbrella Corporation</p></body></html>"""

FAVICON_HTML = """<html><head><title>Hooli</title><link rel="icon" href="/favicon-only/icon.ico"></head>
<body><p>Hooli</p></body></html>"""

OG_HTML = """<html><head><title>Pied Piper</title>
<meta property="og:image" content="/og-only/card.png"></head><body><p>Compression</p></body></html>"""

BROKEN_LOGO_HTML = """<html><head><title>Vandelay</title>
<link rel="apple-touch-icon" href="/broken/touch.png"><link rel="icon" sizes="64x64" href="/broken/icon.png">
</head><body><img class="logo" src="/broken/missing-logo.png"><p>Importers</p></body></html>"""

SLOW = 0.5  # seconds: every slow stylesheet or logo takes at least this long to answer

SLOW_SHEETS_HTML = """<html><head><title>Slowpoke</title>
<link rel="stylesheet" href="/slow-sheets/1.css"><link rel="stylesheet" href="/slow-sheets/2.css">
<link rel="stylesheet" href="/slow-sheets/3.css"><link rel="stylesheet" href="/slow-sheets/4.css">
</head><body><button class="button">Go</button><a href="/">Home</a></body></html>"""

SLOW_IMPORTS_HTML = """<html><head><title>Slowpoke</title>
<link rel="stylesheet" href="/slow-imports/a.css"><link rel="stylesheet" href="/slow-imports/b.css">
</head><body><button class="button">Go</button><a href="/">Home</a></body></html>"""

HANGING_HTML = """<html><head><title>Hangtime</title>
<link rel="stylesheet" href="/hanging/site.css"><link rel="stylesheet" href="/hanging/theme.css">
<link rel="icon" sizes="64x64" href="/hanging/icon.png">
</head><body style="color: #334155"><img class="logo" src="/hanging/logo.png">
<a class="cta" style="background: #FACC15; color: #111111">Get started</a></body></html>"""

PREFER_HTML = """<html><head><title>Tortoise</title><link rel="icon" href="/prefer/icon.png"></head>
<body><header><img src="/prefer/logo.png" alt="Tortoise logo"></header></body></html>"""


def site_routes(cdn_port: int) -> dict[str, Route]:
    return {
        "/vars/": page(VARS_HTML),
        "/vars/site.css": css(VARS_CSS),
        "/vars/acme-logo.png": image(png((200, 100), "#E11D48", spot="#FFFFFF")),
        "/external/": page(EXTERNAL_HTML.format(cdn=cdn_port)),
        "/inline/": page(INLINE_HTML),
        "/svg/": page(SVG_HTML),
        "/svg/old-logo.png": image(png((50, 50), "#000000")),
        "/favicon-only/": page(FAVICON_HTML),
        "/favicon-only/icon.ico": image(png((32, 32), "#059669", fmt="ICO"), "image/x-icon"),
        "/og-only/": page(OG_HTML),
        "/og-only/card.png": image(png((2400, 1260), "#7C3AED", spot="#FDE68A")),
        "/broken/": page(BROKEN_LOGO_HTML),
        "/broken/touch.png": image(b"\x89PNG\r\n\x1a\nnot really a png"),
        "/broken/icon.png": image(png((64, 64), "#0891B2")),
        "/moved": redirect("/vars/"),
        "/data.json": lambda h: h.send(200, "application/json", b'{"hello": "world"}'),
        "/binary": lambda h: h.send(200, "text/html", png((8, 8), "#000000")),
        "/empty/": page("<html><head></head><body>   </body></html>"),
        "/big/": page("<html><body>" + "<p>filler</p>" * 20_000 + "</body></html>"),
        "/slow/": _slow,
        "/slow-sheets/": page(SLOW_SHEETS_HTML),
        # the first sheet answers last and the fourth first: the cascade still ends with the fourth
        "/slow-sheets/1.css": delayed(SLOW + 0.15, css("body { font-family: Georgia, serif; }")),
        "/slow-sheets/2.css": delayed(SLOW + 0.1, css(".button { background: #16A34A; color: #FFFFFF; }")),
        "/slow-sheets/3.css": delayed(SLOW + 0.05, css("a { color: #7C3AED; }")),
        "/slow-sheets/4.css": delayed(SLOW, css("body { font-family: Futura, sans-serif; }")),
        "/slow-imports/": page(SLOW_IMPORTS_HTML),
        "/slow-imports/a.css": delayed(SLOW, css('@import "a1.css"; @import "a2.css";\n'
                                                 ".button { background: #16A34A; }")),
        "/slow-imports/a1.css": delayed(SLOW + 0.1, css("body { font-family: Georgia, serif; }")),
        "/slow-imports/a2.css": delayed(SLOW, css("a { color: #7C3AED; }")),
        "/slow-imports/b.css": delayed(SLOW, css('@import "b1.css"; @import "b2.css";')),
        "/slow-imports/b1.css": delayed(SLOW, css(".button { border-radius: 8px; }")),
        "/slow-imports/b2.css": delayed(SLOW, css("body { font-family: Futura, sans-serif; }")),
        "/hanging/": page(HANGING_HTML),
        "/hanging/site.css": hanging(css("body { background: #000000; }")),
        "/hanging/theme.css": hanging(css("a { color: #000000; }")),
        "/hanging/logo.png": hanging(image(png((200, 100), "#E11D48"))),
        "/hanging/icon.png": image(png((64, 64), "#0891B2")),
        "/prefer/": page(PREFER_HTML),
        "/prefer/logo.png": delayed(SLOW, image(png((120, 60), "#2563EB"))),
        "/prefer/icon.png": image(png((32, 32), "#059669")),
    }


CDN_ROUTES: dict[str, Route] = {
    "/cdn/theme.css": css('@import "more.css";\n'
                          ".button { background: #16A34A; color: #FFFFFF; border-radius: 0.5rem; }\n"
                          "body { font-family: Futura, 'Trebuchet MS', sans-serif; color: #222222; }\n"),
    "/cdn/more.css": css('@import "deeper.css";\n'
                         'h1 { font-family: "Bebas Neue", Impact, sans-serif; }\n a { color: #7C3AED; }\n'),
    "/cdn/deeper.css": css("body { background: #000000; }"),
}


def _slow(h: Handler) -> None:
    h.server.release.wait(5)  # type: ignore[attr-defined]
    h.send(200, "text/html", b"<title>late</title>")


def _serve(routes: dict[str, Route]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    httpd.answered = []  # type: ignore[attr-defined]
    httpd.events = []  # type: ignore[attr-defined]
    httpd.routes = routes  # type: ignore[attr-defined]
    httpd.release = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    return httpd, thread


@pytest.fixture
def servers() -> Iterator[tuple[ThreadingHTTPServer, ThreadingHTTPServer]]:
    cdn, _ = _serve(CDN_ROUTES)
    site, _ = _serve(site_routes(cdn.server_address[1]))
    yield site, cdn
    for httpd in (site, cdn):
        httpd.release.set()  # type: ignore[attr-defined]
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def site(servers) -> ThreadingHTTPServer:
    return servers[0]


def url(server: ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def extract(server: ThreadingHTTPServer, path: str, progress=None, **options) -> ExtractedBrand:
    """Extract from ``path`` on ``server``; ``max_stylesheets`` and ``time_limit`` go to the extractor,
    other options to the fetcher."""
    settings = {name: options.pop(name) for name in ("max_stylesheets", "time_limit") if name in options}
    fetcher = SafeFetcher(allow_private=True, **options)
    return BrandExtractor(fetcher, **settings).extract(url(server, path), progress)


def pixel(png_bytes: bytes, x: int, y: int) -> tuple[int, int, int, int]:
    return Image.open(io.BytesIO(png_bytes)).convert("RGBA").getpixel((x, y))


def test_css_variables_give_colors_fonts_radius_and_the_logo(site):
    brand = extract(site, "/vars/")
    tokens = brand.tokens
    assert brand.name == "Acme"
    assert brand.source_url == url(site, "/vars/")
    assert tokens["colors"] == {"primary": "#E11D48", "secondary": "#FADDE4", "accent": "#7C3AED",
                                "background": "#FFFFFF", "text": "#1F2937"}
    assert tokens["palette"][0] == "#E11D48"
    assert {"#E11D48", "#7C3AED", "#1F2937", "#FFFFFF"} <= set(tokens["palette"])
    assert tokens["fonts"] == {"heading": {"family": "Playfair Display", "weight": 800, "original": "Playfair Display"},
                               "body": {"family": "Inter", "weight": 400, "original": "Helvetica Neue"}}
    assert tokens["radius"] == 0.0074  # the used .btn (8px), not the unused .btn-danger (2px)
    assert tokens["tagline"] == "Widgets, made fast."
    assert tokens["logo"] is None
    assert brand.logo is not None
    assert (brand.logo.width, brand.logo.height) == (200, 100)
    assert brand.logo.dominant_color == "#E11D48"
    assert brand.logo.source_url == url(site, "/vars/acme-logo.png")
    assert brand.logo.png.startswith(b"\x89PNG")
    assert pixel(brand.logo.png, 10, 10) == (255, 255, 255, 255)
    assert pixel(brand.logo.png, 150, 80) == (0xE1, 0x1D, 0x48, 255)


def test_progress_goes_fetch_then_analyze_and_only_forward(site):
    calls: list[tuple[str, float]] = []
    fetcher = SafeFetcher(allow_private=True)
    BrandExtractor(fetcher).extract(url(site, "/vars/"), lambda stage, fraction: calls.append((stage, fraction)))
    stages = [stage for stage, _ in calls]
    assert calls[0] == ("fetch", 0.0) and calls[-1] == ("analyze", 0.9)
    assert stages == sorted(stages, key=["fetch", "analyze"].index)
    fractions = [fraction for _, fraction in calls]
    assert fractions == sorted(fractions)
    assert all(0 <= f <= 0.6 for s, f in calls if s == "fetch")
    assert all(0.6 <= f <= 0.9 for s, f in calls if s == "analyze")


def test_external_stylesheets_on_another_origin_with_one_level_of_import(servers):
    site, cdn = servers
    brand = extract(site, "/external/")
    tokens = brand.tokens
    assert brand.name == "Globex"  # "Home - Globex": the generic part is dropped
    assert tokens["colors"]["primary"] == "#16A34A"  # the button
    assert tokens["colors"]["accent"] == "#7C3AED"  # the links, from the imported sheet
    assert tokens["colors"]["background"] == "#FFFFFF"  # deeper.css (black) is two imports down
    assert tokens["colors"]["text"] == "#222222"
    assert tokens["fonts"]["body"] == {"family": "Poppins", "weight": 400, "original": "Futura"}
    assert tokens["fonts"]["heading"] == {"family": "Oswald", "weight": 700, "original": "Bebas Neue"}
    assert tokens["radius"] == 0.0074  # 0.5rem = 8px
    assert "/external/missing.css" in site.seen  # a 404 stylesheet is skipped, not fatal
    assert cdn.seen == ["/cdn/theme.css", "/cdn/more.css"]


def test_the_stylesheet_cap_is_kept(servers):
    site, cdn = servers
    brand = extract(site, "/external/", max_stylesheets=2)
    assert cdn.seen == ["/cdn/theme.css"]  # missing.css and theme.css used the two fetches
    assert brand.tokens["colors"]["primary"] == "#16A34A"
    assert brand.tokens["fonts"]["heading"]["original"] == "Futura"  # no h1 font without more.css


def test_inline_styles_on_a_dark_page(site):
    tokens = extract(site, "/inline/").tokens
    assert tokens["colors"]["background"] == "#0F172A"
    assert tokens["colors"]["text"] == "#94A3B8"
    assert tokens["colors"]["primary"] == "#FACC15"  # the CTA; the white theme-color is not a brand colour
    assert tokens["fonts"]["body"] == {"family": "Merriweather", "weight": 400, "original": "Georgia"}
    assert tokens["fonts"]["heading"] == {"family": "Oswald", "weight": 700, "original": "Roboto Condensed"}
    assert tokens["palette"][0] == "#FACC15"


def test_an_inline_svg_logo_in_the_header_is_rasterized(site):
    brand = extract(site, "/svg/")
    assert brand.name == "Umbrella"
    assert brand.logo is not None
    assert (brand.logo.width, brand.logo.height) == (1024, 341)
    assert brand.logo.dominant_color == "#2563EB"
    assert brand.logo.source_url == url(site, "/svg/")
    # viewBox (camel case, which html.parser lower-cases) kept: the drawing fills the whole image
    assert pixel(brand.logo.png, 1000, 330) == (0x25, 0x63, 0xEB, 255)
    assert pixel(brand.logo.png, 120, 120) == (255, 255, 255, 255)
    assert brand.tokens["colors"]["primary"] == "#2563EB"  # no CSS: the logo's colour
    assert "/svg/old-logo.png" not in site.seen


def test_a_favicon_only_site(site):
    brand = extract(site, "/favicon-only/")
    assert brand.logo is not None
    assert (brand.logo.width, brand.logo.height, brand.logo.dominant_color) == (32, 32, "#059669")
    assert brand.logo.source_url == url(site, "/favicon-only/icon.ico")
    assert brand.tokens["colors"]["primary"] == "#059669"
    assert brand.tokens["fonts"]["body"] == {"family": "Inter", "weight": 400, "original": None}
    assert brand.tokens["radius"] == 0.02
    assert brand.tokens["tagline"] is None


def test_an_og_image_only_site_is_scaled_to_1024(site):
    brand = extract(site, "/og-only/")
    assert brand.logo is not None
    assert (brand.logo.width, brand.logo.height) == (1024, 538)
    assert brand.logo.dominant_color == "#7C3AED"
    assert brand.logo.source_url == url(site, "/og-only/card.png")  # preferred to /favicon.ico


def test_logo_candidates_that_fail_are_skipped(site):
    brand = extract(site, "/broken/")
    assert brand.logo is not None
    assert brand.logo.source_url == url(site, "/broken/icon.png")
    assert (brand.logo.width, brand.logo.height, brand.logo.dominant_color) == (64, 64, "#0891B2")
    assert site.seen[0] == "/broken/"
    # the candidates are fetched at once, so in no set order
    assert {"/broken/missing-logo.png", "/broken/touch.png", "/broken/icon.png"} <= set(site.seen[1:])


def test_a_redirect_is_followed_and_the_final_url_kept(site):
    brand = extract(site, "/moved")
    assert brand.source_url == url(site, "/vars/")
    assert brand.name == "Acme"
    assert site.seen[:2] == ["/moved", "/vars/"]


def test_a_non_html_answer_is_refused_with_its_content_type(site):
    with pytest.raises(FetchRefused, match="application/json"):
        extract(site, "/data.json")


def test_a_binary_body_labelled_html_is_no_brand(site):
    with pytest.raises(BrandExtractionError, match="not answer with an HTML page"):
        extract(site, "/binary")


def test_a_page_with_nothing_on_it_is_no_brand(site):
    with pytest.raises(BrandExtractionError, match="nothing to read a brand from"):
        extract(site, "/empty/")


def test_a_page_over_the_byte_cap_fails(site):
    with pytest.raises(FetchFailed, match="bytes"):
        extract(site, "/big/", max_bytes=100_000)


def test_a_page_slower_than_the_timeout_fails(site):
    with pytest.raises(FetchFailed):
        extract(site, "/slow/", connect_timeout=0.5, read_timeout=0.3, total_timeout=0.5)



# --- slow sites: independent fetches at once, one deadline for the whole extraction ---------------

def all_asked_before_any_answered(site: ThreadingHTTPServer, paths: list[str]) -> bool:
    """Whether the site was asked for every one of ``paths`` before it answered any of them: fetched
    at once, each answering ``SLOW`` seconds after it is asked. Unlike the time the extraction took,
    this holds on a machine loaded enough to stretch every step."""
    events = [(kind, path) for kind, path in site.events if path in paths]  # type: ignore[attr-defined]
    first_answer = next((i for i, (kind, _) in enumerate(events) if kind == "answered"), len(events))
    return {path for kind, path in events[:first_answer] if kind == "asked"} == set(paths)


def test_stylesheets_arrive_together_and_keep_their_cascade_order(site):
    calls: list[tuple[str, float, threading.Thread]] = []
    brand = extract(site, "/slow-sheets/", lambda stage, fraction: calls.append(
        (stage, fraction, threading.current_thread())))
    assert all_asked_before_any_answered(site, [f"/slow-sheets/{n}.css" for n in "1234"]), site.events
    tokens = brand.tokens
    assert (tokens["colors"]["primary"], tokens["colors"]["accent"]) == ("#16A34A", "#7C3AED")
    assert tokens["fonts"]["body"]["original"] == "Futura"  # 4.css answered first, yet comes last
    # progress moves on as each sheet arrives, and is always reported on the caller's thread
    assert [f for s, f, _ in calls if s == "fetch" and 0.2 < f < 0.5] == pytest.approx([0.275, 0.35, 0.425])
    assert {thread for *_, thread in calls} == {threading.current_thread()}


def test_imported_stylesheets_arrive_together_after_the_linked_ones(site):
    brand = extract(site, "/slow-imports/")  # two rounds of fetches, not six fetches in a row
    assert all_asked_before_any_answered(site, ["/slow-imports/a.css", "/slow-imports/b.css"]), site.events
    assert all_asked_before_any_answered(site, ["/slow-imports/a1.css", "/slow-imports/a2.css"]), site.events
    assert all_asked_before_any_answered(site, ["/slow-imports/b1.css", "/slow-imports/b2.css"]), site.events
    tokens = brand.tokens
    assert (tokens["colors"]["primary"], tokens["colors"]["accent"]) == ("#16A34A", "#7C3AED")
    assert tokens["radius"] == 0.0074  # b1.css
    assert tokens["fonts"]["body"]["original"] == "Futura"  # b2.css comes after a1.css, which answered last


def test_stylesheets_that_hang_past_the_time_limit_are_left_out(site):
    started = time.monotonic()
    brand = extract(site, "/hanging/", time_limit=1.0)  # the fetcher alone would wait 10 s for each
    elapsed = time.monotonic() - started
    assert elapsed < 1.0 + 1.0, f"{elapsed:.2f} s"
    assert {"/hanging/site.css", "/hanging/theme.css"} <= set(site.seen)
    assert brand.name == "Hangtime"
    assert brand.tokens["colors"]["text"] == "#334155"  # from the page's own style attributes
    assert "#FACC15" in brand.tokens["palette"]
    assert brand.tokens["colors"]["background"] == "#FFFFFF"  # site.css (black) never arrived
    # the logo <img> hangs too: the best candidate that did arrive, the icon, is taken
    assert brand.logo is not None and brand.logo.source_url == url(site, "/hanging/icon.png")
    assert (brand.logo.width, brand.logo.height, brand.logo.dominant_color) == (64, 64, "#0891B2")
    # the abandoned fetches got the same deadline: their threads end with it, not 10 s later (the
    # slack is for a loaded machine, where a thread past its deadline may wait seconds for a core)
    wait_until = time.monotonic() + 5.0
    while any(t.name.startswith("brand-fetch") for t in threading.enumerate()) and time.monotonic() < wait_until:
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("brand-fetch")]


def test_the_preferred_logo_wins_though_a_lesser_one_answers_first(site):
    brand = extract(site, "/prefer/")
    assert brand.logo is not None
    assert brand.logo.source_url == url(site, "/prefer/logo.png")
    assert (brand.logo.width, brand.logo.height, brand.logo.dominant_color) == (120, 60, "#2563EB")
    assert site.answered.index("/prefer/icon.png") < site.answered.index("/prefer/logo.png")


def test_a_page_slower_than_the_time_limit_fails(site):
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="did not answer within 0.5 s"):
        extract(site, "/slow/", time_limit=0.5)  # the fetcher alone would wait 10 s
    assert time.monotonic() - started < 0.5 + 1.0


def test_a_page_slower_than_the_time_limit_fails_alike_when_the_fetch_ends_first(site, monkeypatch):
    """The fetch is given the extraction's deadline too: where its own timeout ends it before the
    extraction stops waiting (a busy machine wakes the waiting thread late), the answer is the same."""
    from concurrent.futures import wait

    from reelfarm.studio.brand import pool
    monkeypatch.setattr(pool, "wait", lambda futures, timeout: wait(futures, timeout=timeout + 2.0))
    with pytest.raises(FetchFailed, match="did not answer within 0.5 s"):
        extract(site, "/slow/", time_limit=0.5)

def test_loopback_is_refused_without_allow_private_and_nothing_is_sent(site):
    extractor = BrandExtractor(SafeFetcher(allow_private=False))
    with pytest.raises(FetchRefused, match="not a public address"):
        extractor.extract(url(site, "/vars/"))
    assert site.seen == []


class _PublicResolver:
    """An honest fake resolver: ``public.test`` is a public address; other names do not exist."""

    def __call__(self, host: str) -> list[str]:
        if host == "public.test":
            return [ROUTED]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


class _RoutingTransport(httpx.BaseTransport):
    """A real transport that dials 127.0.0.1 for ROUTED (what ``public.test`` resolves to)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport(retries=0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == ROUTED:
            request.url = request.url.copy_with(host="127.0.0.1")
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_a_stylesheet_on_a_private_address_is_refused_and_the_page_still_extracted(servers):
    site, cdn = servers
    fetcher = SafeFetcher(resolve=_PublicResolver(), transport_factory=_RoutingTransport)
    brand = BrandExtractor(fetcher).extract(f"http://public.test:{site.server_address[1]}/external/")
    assert brand.name == "Globex"
    assert cdn.seen == []  # the CDN link names 127.0.0.1: the guard refused it before sending
    assert brand.tokens["colors"]["primary"] == "#111111"  # no colour anywhere: the default text colour
