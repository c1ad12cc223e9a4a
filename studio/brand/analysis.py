"""Turning a parsed page, its stylesheets and its logo into ``BrandKit.tokens`` (docs: API.md).

Pure: no fetching. ``build_tokens`` is what ``BrandExtractor`` calls once everything is fetched.
"""
from __future__ import annotations

from reelfarm.studio.brand.colors import parse_color
from reelfarm.studio.brand.css import Sheet
from reelfarm.studio.brand.fonts import DEFAULT_FAMILY, choose_font
from reelfarm.studio.brand.logo import DecodedLogo
from reelfarm.studio.brand.page import Page
from reelfarm.studio.brand.palette import choose_colors, rank_palette
from reelfarm.studio.brand.style import StyleFacts, radius_fraction, read_styles

HEADING_WEIGHT = 700
BODY_WEIGHT = 400


def build_tokens(page: Page, sheets: list[Sheet], logo: DecodedLogo | None,
                 webfonts: list[str] | None = None) -> dict | None:
    """The brand tokens, with ``"logo": None``; None when the page shows nothing to read a brand from.

    Args:
        page: the parsed HTML.
        sheets: its stylesheets in cascade order (linked, imported and ``<style>`` blocks).
        logo: the decoded logo, if one was found.
        webfonts: families named by web-font links beyond the page's own (e.g. in ``@import``).
    """
    rules = [rule for sheet in sheets for rule in sheet.rules] + page.inline_rules
    facts = read_styles(rules, page.elements)
    evidence = facts.colors
    evidence.theme = next((c for c in map(parse_color, page.theme_colors) if c is not None), None)
    evidence.logo = list(logo.colors) if logo else []
    families = _unique([*page.webfont_families, *(webfonts or []),
                        *(face for sheet in sheets for face in sheet.font_faces)])
    declared_fonts = bool(facts.body_font or facts.heading_font or families)
    if not (page.has_identity or logo or declared_fonts or not evidence.is_empty()):
        return None
    colors = choose_colors(evidence)
    return {
        "colors": colors,
        "palette": rank_palette(evidence, colors),
        "fonts": choose_fonts(facts, families),
        "logo": None,
        "radius": radius_fraction(facts.radius_px),
        "tagline": page.tagline,
    }


def choose_fonts(facts: StyleFacts, webfonts: list[str]) -> dict:
    """Heading and body fonts from declared stacks, else from web-font links and ``@font-face``.

    With no ``font-family`` on the page at all, the first web font is the body's and a second one,
    if any, the headings'; headings without a font of their own use the body's.
    """
    body_stack = facts.body_font or webfonts[:1]
    if facts.heading_font:
        heading_stack = facts.heading_font
    elif not facts.body_font and len(webfonts) > 1:
        heading_stack = webfonts[1:2]
    else:
        heading_stack = body_stack
    body = choose_font(body_stack, facts.body_weight or BODY_WEIGHT, heading=False, fallback=DEFAULT_FAMILY)
    heading = choose_font(heading_stack, facts.heading_weight or HEADING_WEIGHT, heading=True,
                          fallback=body["family"])
    return {"heading": heading, "body": body}


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.lower(), name)
    return list(seen.values())
