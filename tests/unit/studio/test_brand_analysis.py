"""Brand analysis on literal HTML and CSS: colours and contrast, fonts, names, logo choice. No I/O."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from bs4 import BeautifulSoup

from reelfarm.studio.brand.analysis import build_tokens
from reelfarm.studio.brand.candidates import logo_candidates, svg_markup
from reelfarm.studio.brand.colors import (
    contrast_ratio,
    ensure_contrast,
    from_hex,
    parse_channels,
    parse_color,
    to_hex,
)
from reelfarm.studio.brand.css import (
    font_shorthand,
    font_stack,
    google_font_families,
    parse_sheet,
    resolve_vars,
)
from reelfarm.studio.brand.extractor import parse_data_url
from reelfarm.studio.brand.fonts import map_family, map_stack
from reelfarm.studio.brand.logo import decode_logo, dominant_colors
from reelfarm.studio.brand.page import (
    choose_name,
    clean_tagline,
    clean_title,
    read_page,
)
from reelfarm.studio.brand.palette import ColorEvidence, choose_colors, rank_palette
from reelfarm.studio.brand.style import radius_fraction, read_styles, variable_role

PAGE = "https://www.acme.com/"


def tokens_for(html: str, css: str = "") -> dict:
    page = read_page(html, PAGE)
    sheets = [parse_sheet(css)] + [parse_sheet(block) for block in page.style_blocks]
    tokens = build_tokens(page, sheets, None)
    assert tokens is not None
    return tokens


# --- colours and contrast ---------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("#1d4ed8", "#1D4ED8"), ("#abc", "#AABBCC"), ("rgb(29 78 216)", "#1D4ED8"), ("rgba(29,78,216,1)", "#1D4ED8"),
    ("hsl(0 100% 50%)", "#FF0000"), ("rebeccapurple", "#663399"), ("rgb(0 0 0 / 50%)", "#808080"),
])
def test_css_colors_are_read_as_upper_case_hex(value, expected):
    assert to_hex(parse_color(value)) == expected


@pytest.mark.parametrize("value", ["transparent", "currentColor", "rgba(0,0,0,.1)", "solid", "inherit", "12px"])
def test_non_colors_and_faint_colors_are_none(value):
    assert parse_color(value) is None


def test_channel_triplets_in_custom_properties():
    assert to_hex(parse_channels("29 78 216")) == "#1D4ED8"
    assert to_hex(parse_channels("29, 78, 216")) == "#1D4ED8"
    assert to_hex(parse_channels("0 100% 50%")) == "#FF0000"
    assert parse_channels("1px 2px 3px") is None


def test_wcag_contrast_ratio():
    assert contrast_ratio(from_hex("#FFFFFF"), from_hex("#000000")) == pytest.approx(21.0)
    assert contrast_ratio(from_hex("#777777"), from_hex("#FFFFFF")) == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio(from_hex("#1D4ED8"), from_hex("#1D4ED8")) == 1.0


@pytest.mark.parametrize("color", ["#FFD400", "#FFFFFF", "#EEEEEE", "#0EA5E9", "#777777", "#000000", "#1E293B"])
@pytest.mark.parametrize("background", ["#FFFFFF", "#000000", "#0F172A", "#777777", "#FACC15", "#808080"])
@pytest.mark.parametrize("minimum", [3.0, 4.5])
def test_ensure_contrast_always_reaches_the_minimum(color, background, minimum):
    adjusted = ensure_contrast(from_hex(color), from_hex(background), minimum)
    assert contrast_ratio(adjusted, from_hex(background)) >= minimum


def test_ensure_contrast_keeps_a_readable_color_and_the_hue_of_an_unreadable_one():
    assert to_hex(ensure_contrast(from_hex("#1D4ED8"), from_hex("#FFFFFF"), 3)) == "#1D4ED8"
    r, g, b = ensure_contrast(from_hex("#FFD400"), from_hex("#FFFFFF"), 3)
    assert r > g > b  # still a yellow, darkened


def test_explicit_brand_variables_win_and_pairs_are_readable():
    evidence = ColorEvidence(role_vars={"primary": from_hex("#E11D48"), "text": from_hex("#DDDDDD")},
                             theme=from_hex("#0000FF"))
    colors = choose_colors(evidence)
    assert colors["primary"] == "#E11D48"
    assert colors["background"] == "#FFFFFF"
    assert colors["text"] != "#DDDDDD"
    assert contrast_ratio(from_hex(colors["text"]), from_hex(colors["background"])) >= 4.5


def test_a_white_theme_color_is_not_a_primary_but_a_colored_one_is():
    assert choose_colors(ColorEvidence(theme=from_hex("#FFFFFF")))["primary"] == "#111111"
    assert choose_colors(ColorEvidence(theme=from_hex("#0F766E")))["primary"] == "#0F766E"


def test_a_light_primary_on_white_is_darkened_to_3_to_1():
    colors = choose_colors(ColorEvidence(role_vars={"primary": from_hex("#FFD400")}))
    assert colors["primary"] != "#FFD400"
    assert contrast_ratio(from_hex(colors["primary"]), from_hex("#FFFFFF")) >= 3
    assert contrast_ratio(from_hex(colors["accent"]), from_hex("#FFFFFF")) >= 3


def test_defaults_are_white_and_near_black():
    colors = choose_colors(ColorEvidence())
    assert (colors["background"], colors["text"]) == ("#FFFFFF", "#111111")


def test_buttons_outweigh_links_and_plain_use():
    evidence = ColorEvidence()
    evidence.buttons[from_hex("#16A34A")] += 3
    evidence.links[from_hex("#7C3AED")] += 3
    evidence.usage.update({from_hex("#DC2626"): 4, from_hex("#16A34A"): 3, from_hex("#7C3AED"): 3})
    colors = choose_colors(evidence)
    assert (colors["primary"], colors["accent"], colors["secondary"]) == ("#16A34A", "#7C3AED", "#DC2626")


def test_palette_is_distinct_most_used_first_and_at_most_eight():
    evidence = ColorEvidence()
    for index in range(12):
        evidence.usage[(index * 20, 255 - index * 20, 128)] += 12 - index
    evidence.usage[(1, 254, 128)] += 20  # next to (0, 255, 128): the same colour in the palette
    palette = rank_palette(evidence, choose_colors(evidence))
    assert len(palette) == 8
    assert palette[0] == "#01FE80"
    assert "#00FF80" not in palette
    assert palette[1] == "#14EB80"


def test_css_custom_properties_button_link_and_inline_colors():
    html = """<html><head><title>Acme</title><style>
      :root { --brand: #E11D48; --color-text: #1F2937; }
      [data-theme=dark] { --brand: #FB7185; }
      body { background-color: #FAFAFA; }
      .btn-primary { background: #2563EB; border-radius: 12px; }
      .btn-danger { background: #DC2626; border-radius: 2px; }
      a { color: #7C3AED; }
    </style></head><body><a class="btn-primary">a</a><a class="btn-primary">b</a>
    <span style="color: #059669">x</span></body></html>"""
    tokens = tokens_for(html)
    assert tokens["colors"]["primary"] == "#E11D48"  # the declared brand beats the buttons
    assert tokens["colors"]["text"] == "#1F2937"
    assert tokens["colors"]["background"] == "#FAFAFA"
    assert tokens["colors"]["accent"] == "#2563EB"
    assert "#059669" in tokens["palette"]
    assert tokens["radius"] == round(12 / 1080, 4)


def test_a_dark_mode_media_query_does_not_count():
    css = "body{background:#fff;color:#222} @media (prefers-color-scheme: dark){body{background:#000;color:#eee}}"
    colors = tokens_for("<title>x</title>", css)["colors"]
    assert (colors["background"], colors["text"]) == ("#FFFFFF", "#222222")


@pytest.mark.parametrize("name, role", [
    ("--brand", ("primary", 0)), ("--color-primary", ("primary", 0)), ("--wp--preset--color--primary", ("primary", 0)),
    ("--bs-primary", ("primary", 0)), ("--brand-color", ("primary", 0)), ("--color-brand-500", ("primary", 1)),
    ("--accent", ("accent", 0)), ("--secondary", ("secondary", 0)), ("--bg", ("background", 0)),
    ("--text-primary", ("text", 3)), ("--primary-foreground", None), ("--primary-hover", None),
    ("--color-red-500", None), ("--spacing", None),
])
def test_variable_roles(name, role):
    assert variable_role(name) == role


def test_var_references_resolve_with_fallbacks_and_nesting():
    variables = {"--a": "var(--b)", "--b": "#123456", "--h": "222 47% 11%"}
    assert resolve_vars("1px solid var(--a)", variables) == "1px solid #123456"
    assert resolve_vars("var(--missing, rgb(1, 2, 3))", variables) == "rgb(1, 2, 3)"
    assert to_hex(parse_color(resolve_vars("hsl(var(--h))", variables))) == "#0F1729"


def test_radius_is_a_fraction_of_1080_clamped():
    assert radius_fraction(Counter({8.0: 2, 2.0: 1})) == 0.0074
    assert radius_fraction(Counter({float("inf"): 1})) == 0.1
    assert radius_fraction(Counter()) == 0.02


def test_pill_and_rem_radii():
    assert tokens_for("<title>x</title>", "button{border-radius:9999px}")["radius"] == 0.1
    assert tokens_for("<title>x</title>", ".btn{border-radius:50%}")["radius"] == 0.1
    assert tokens_for("<title>x</title>", ".btn{border-radius:.25rem}")["radius"] == 0.0037


def test_hover_rules_do_not_decide_roles():
    page = read_page("<title>x</title><a class='btn'>x</a>", PAGE)
    facts = read_styles(parse_sheet(".btn{background:#2563EB} .btn:hover{background:#1E40AF}").rules, page.elements)
    assert list(facts.colors.buttons) == [from_hex("#2563EB")]


# --- fonts -----------------------------------------------------------------------------------

@pytest.mark.parametrize("declared, shipped", [
    ("Inter", "Inter"), ("montserrat", "Montserrat"), ("Open Sans", "Open Sans"), ("DM Sans", "DM Sans"),
    ("Playfair Display", "Playfair Display"), ("Noto Serif", "Noto Serif"),
    ("Helvetica Neue", "Inter"), ("Arial", "Inter"), ("system-ui", "Inter"), ("-apple-system", "Inter"),
    ("sans-serif", "Inter"), ("Georgia", "Merriweather"), ("Times New Roman", "Merriweather"),
    ("Futura", "Poppins"), ("Avenir Next LT Pro", "Poppins"), ("Circular", "Poppins"),
    ("Gotham", "Montserrat"), ("Proxima Nova", "Montserrat"), ("Bebas Neue", "Oswald"),
    ("Roboto Condensed", "Oswald"), ("Impact", "Oswald"), ("Roboto Slab", "Merriweather"),
    ("Inter Tight", "Inter"), ("Some Grotesk", "Inter"), ("Acme Serif", "Merriweather"),
])
def test_font_names_map_to_shipped_families(declared, shipped):
    assert map_family(declared) == shipped


def test_serif_headings_get_a_display_serif():
    assert map_family("serif", heading=True) == "Playfair Display"
    assert map_family("serif") == "Merriweather"
    assert map_family("Georgia", heading=True) == "Merriweather"


def test_unknown_names_fall_through_the_stack():
    assert map_family("BrandFont") is None
    assert map_stack(["BrandFont", "Georgia", "serif"]) == "Merriweather"
    assert map_stack(["BrandFont"]) is None


def test_font_values():
    assert font_stack('"Helvetica Neue", Arial ,sans-serif') == ["Helvetica Neue", "Arial", "sans-serif"]
    assert font_shorthand('italic 700 16px/1.5 "Inter", sans-serif') == (["Inter", "sans-serif"], 700)
    assert google_font_families("https://fonts.googleapis.com/css2?family=Poppins:wght@400;700"
                                "&family=Open+Sans&display=swap") == ["Poppins", "Open Sans"]
    assert google_font_families("https://fonts.googleapis.com/css?family=Roboto:400,700|Lato") == ["Roboto", "Lato"]
    assert google_font_families("https://example.com/css?family=Roboto") == []


def test_fonts_from_rules_keep_the_declared_name():
    css = """body { font: 400 16px/1.5 "Proxima Nova", Arial, sans-serif; }
             h1, h2 { font-family: Didot, serif; font-weight: bold; } h3 { font-family: Inter; }"""
    fonts = tokens_for("<title>x</title>", css)["fonts"]
    assert fonts == {"heading": {"family": "Playfair Display", "weight": 700, "original": "Didot"},
                     "body": {"family": "Montserrat", "weight": 400, "original": "Proxima Nova"}}


def test_fonts_from_web_font_links_when_no_rule_names_one():
    html = """<title>x</title><link rel="stylesheet"
      href="https://fonts.googleapis.com/css2?family=Lato:wght@400&family=Oswald:wght@600">"""
    page = read_page(html, PAGE)
    assert page.stylesheet_urls == []  # read from the URL, not fetched
    fonts = tokens_for(html)["fonts"]
    assert fonts["body"] == {"family": "Lato", "weight": 400, "original": "Lato"}
    assert fonts["heading"] == {"family": "Oswald", "weight": 700, "original": "Oswald"}


def test_font_face_names_count_as_web_fonts():
    fonts = tokens_for("<title>x</title>", "@font-face { font-family: 'Poppins'; src: url(p.woff2); }")["fonts"]
    assert fonts["body"]["family"] == fonts["heading"]["family"] == "Poppins"


# --- name and tagline --------------------------------------------------------------------------

@pytest.mark.parametrize("title, expected", [
    ("Acme | Fast widgets", "Acme"), ("Acme – Fast widgets", "Acme"), ("Acme — Fast widgets", "Acme"),
    ("Acme - Fast widgets", "Acme"), ("Acme: Fast widgets", "Acme"), ("Acme · Fast widgets", "Acme"),
    ("Coca-Cola", "Coca-Cola"), ("Home | Globex", "Globex"), ("Welcome to Initech", "Initech"),
    ("Fast widgets for all | Acme", "Acme"), ("  Acme  ", "Acme"),
])
def test_titles_are_cleaned_of_taglines(title, expected):
    assert clean_title(title, "www.acme.com") == expected


def test_name_prefers_site_name_then_title_then_host():
    assert choose_name("Acme Corp", "Something | Else", "acme.com") == "Acme Corp"
    assert choose_name(None, "Acme | Widgets", "acme.com") == "Acme"
    assert choose_name(None, "", "www.acme.com") == "acme.com"


def test_name_and_tagline_from_meta_tags():
    html = """<html><head><title>Ignored | Title</title><meta property="og:site_name" content="Acme Inc">
      <meta property="og:description" content="  Build
        faster.  "></head></html>"""
    page = read_page(html, PAGE)
    assert (page.name, page.tagline) == ("Acme Inc", "Build faster.")
    assert read_page("<meta name='application-name' content='AcmeApp'><title>T</title>", PAGE).name == "AcmeApp"


def test_taglines_are_cut_at_160_characters_on_a_word():
    text = clean_tagline("word " * 60)
    assert len(text) <= 160 and text.endswith("…") and "wor…" not in text
    assert clean_tagline("   ") is None


# --- logo ------------------------------------------------------------------------------------

def test_logo_candidates_come_in_order_of_preference():
    html = """<html><head>
      <meta property="og:image" content="/og.png">
      <link rel="icon" href="/favicon-16.png" sizes="16x16"><link rel="icon" href="/favicon-32.png" sizes="32x32">
      <link rel="mask-icon" href="/mask.svg">
      <link rel="apple-touch-icon" href="/touch.png">
    </head><body>
      <img src="/hero.jpg" alt="hero"><img src="/img/brand.png" class="site-logo">
      <header><nav><svg width="24" height="24"><path d="M0 0h1"/></svg></nav>
        <svg viewBox="0 0 100 20"><rect width="100" height="20"/></svg></header>
      <footer><svg id="footer-logo" viewBox="0 0 10 10"><circle r="5"/></svg></footer>
    </body></html>"""
    soup = BeautifulSoup(html, "html.parser")
    found = logo_candidates(soup, "https://acme.com/x/", html)
    assert [c.kind for c in found] == ["inline_svg", "inline_svg", "img", "apple_touch_icon", "icon", "icon",
                                       "icon", "og_image", "favicon"]
    assert 'id="footer-logo"' in found[0].svg  # marked as a logo
    assert 'viewBox="0 0 100 20"' in found[1].svg and 'xmlns="http://www.w3.org/2000/svg"' in found[1].svg
    assert [c.url for c in found[2:]] == [
        "https://acme.com/img/brand.png", "https://acme.com/touch.png", "https://acme.com/favicon-32.png",
        "https://acme.com/favicon-16.png", "https://acme.com/mask.svg", "https://acme.com/og.png",
        "https://acme.com/favicon.ico"]


def test_svg_markup_restores_camel_case_when_the_source_is_unknown():
    svg = BeautifulSoup("<p><svg viewBox='0 0 2 1'><linearGradient gradientUnits='userSpaceOnUse'/></svg></p>",
                        "html.parser").find("svg")
    assert svg_markup(svg, "") == ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 2 1">'
                                   '<linearGradient gradientUnits="userSpaceOnUse"></linearGradient></svg>')


def test_an_image_inside_a_logo_link_is_a_candidate():
    page = read_page("<a class='logo' href='/'><img src='/brand.png' alt='Acme'></a><img src='/hero.png'>", PAGE)
    assert [c.url for c in page.logo_candidates] == ["https://www.acme.com/brand.png",
                                                      "https://www.acme.com/favicon.ico"]


def test_a_base_href_resolves_relative_logo_urls():
    page = read_page("<base href='https://cdn.acme.com/'><img src='logo.png'>", PAGE)
    assert page.logo_candidates[0].url == "https://cdn.acme.com/logo.png"


def test_dominant_color_ignores_white_and_transparent_pixels():
    pixels = np.zeros((10, 10, 4), dtype=np.uint8)
    pixels[:, :5] = (255, 255, 255, 255)  # half white
    pixels[:3, 5:] = (0x25, 0x63, 0xEB, 255)
    pixels[3:5, 5:] = (0x25, 0x63, 0xEC, 255)  # same bucket: counted with the blue
    pixels[5:6, 5:] = (0xF5, 0x9E, 0x0B, 255)
    # rows 6..9 on the right stay transparent
    colors = dominant_colors(pixels)
    assert [to_hex(c) for c, _ in colors] == ["#2563EB", "#F59E0B"]
    assert colors[0][1] == pytest.approx(25 / 30)


def test_svg_and_raster_logos_decode_to_png_and_blank_ones_do_not():
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="#0891B2"/></svg>'
    logo = decode_logo(svg, "image/svg+xml")
    assert (logo.width, logo.height, to_hex(logo.colors[0][0])) == (1024, 512, "#0891B2")
    assert logo.png.startswith(b"\x89PNG")
    assert decode_logo(decode_logo(svg, "").png).width == 1024  # sniffed as SVG, then PNG round trip
    assert decode_logo(b'<svg xmlns="http://www.w3.org/2000/svg" width="5" height="5"></svg>') is None
    assert decode_logo(b"\x89PNG\r\n\x1a\n garbage") is None


def test_data_urls():
    assert parse_data_url("data:image/svg+xml,%3Csvg%3E") == (b"<svg>", "image/svg+xml")
    assert parse_data_url("data:image/png;base64,iVBORw==") == (b"\x89PNG", "image/png")
    assert parse_data_url("data:image/png;base64,@@@") == (b"", "image/png")


def test_an_empty_page_has_no_brand():
    page = read_page("<html><body></body></html>", PAGE)
    assert build_tokens(page, [], None) is None
