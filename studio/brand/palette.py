"""Choosing brand colours from the evidence a page gives, and keeping every pair readable.

Explicit declarations win (a ``--primary`` or ``--brand`` custom property, then ``theme-color``);
otherwise colours compete on a score: button backgrounds count most, then links, headings, the
logo and plain use. Text on the background reaches 4.5:1 and primary and accent reach 3:1 (WCAG),
by moving their lightness, never by picking another hue.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from reelfarm.studio.brand.colors import (
    GRAPHIC_CONTRAST,
    NEAR_BLACK,
    RGB,
    TEXT_CONTRAST,
    WHITE,
    distance,
    ensure_contrast,
    is_chromatic,
    mix,
    rotate_hue,
    to_hex,
)

PALETTE_SIZE = 8
SAME = 24.0  # colours closer than this (redmean) are one colour in the palette
DISTINCT = 60.0  # secondary and accent differ from primary at least this much
FALLBACK_ACCENT: RGB = (245, 158, 11)
_WEIGHTS = {"buttons": 2.0, "links": 1.5, "headings": 1.0, "usage": 0.5}
_LOGO_WEIGHT = 8.0  # times the logo colour's share of the logo
_PALETTE_LOGO_WEIGHT = 3.0  # the logo is one image: in the palette it weighs like a few uses


@dataclass
class ColorEvidence:
    """Colours seen on a page, by where they were seen; counters hold weighted use counts."""

    role_vars: dict[str, RGB] = field(default_factory=dict)  # primary, secondary, accent, background, text
    theme: RGB | None = None
    body_background: RGB | None = None
    body_text: RGB | None = None
    buttons: defaultdict[RGB, float] = field(default_factory=lambda: defaultdict(float))
    links: defaultdict[RGB, float] = field(default_factory=lambda: defaultdict(float))
    headings: defaultdict[RGB, float] = field(default_factory=lambda: defaultdict(float))
    usage: defaultdict[RGB, float] = field(default_factory=lambda: defaultdict(float))
    logo: list[tuple[RGB, float]] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.role_vars or self.theme or self.body_background or self.body_text or self.usage
                    or self.buttons or self.links or self.headings or self.logo)


def choose_colors(evidence: ColorEvidence) -> dict[str, str]:
    """``{"primary", "secondary", "accent", "background", "text"}`` as ``#RRGGBB``, readable pairs."""
    background = evidence.body_background or evidence.role_vars.get("background") or WHITE
    text = evidence.body_text or evidence.role_vars.get("text") or NEAR_BLACK
    text = ensure_contrast(text, background, TEXT_CONTRAST)
    ranked = [c for c in rank_brand_colors(evidence) if distance(c, background) >= SAME]
    primary = _explicit_primary(evidence, background) or next(iter(ranked), None) or text
    chosen = [primary]
    accent = evidence.role_vars.get("accent") or _next_distinct(ranked, chosen)
    if accent is None:
        accent = rotate_hue(primary, 180) if is_chromatic(primary) else FALLBACK_ACCENT
    chosen.append(accent)
    secondary = (evidence.role_vars.get("secondary") or _next_distinct(ranked, chosen)
                 or mix(primary, background, 0.85))
    return {
        "primary": to_hex(ensure_contrast(primary, background, GRAPHIC_CONTRAST)),
        "secondary": to_hex(secondary),
        "accent": to_hex(ensure_contrast(accent, background, GRAPHIC_CONTRAST)),
        "background": to_hex(background),
        "text": to_hex(text),
    }


def _explicit_primary(evidence: ColorEvidence, background: RGB) -> RGB | None:
    declared = evidence.role_vars.get("primary")
    if declared is not None and distance(declared, background) >= SAME:
        return declared
    if evidence.theme is not None and is_chromatic(evidence.theme):  # white theme-colors are common
        return evidence.theme
    return None


def _next_distinct(ranked: list[RGB], chosen: list[RGB]) -> RGB | None:
    for color in ranked:
        if is_chromatic(color) and all(distance(color, c) >= DISTINCT for c in chosen):
            return color
    return None


def brand_scores(evidence: ColorEvidence) -> defaultdict[RGB, float]:
    """How strongly each colour seen reads as a brand colour."""
    scores: defaultdict[RGB, float] = defaultdict(float)
    for name, weight in _WEIGHTS.items():
        for color, count in getattr(evidence, name).items():
            scores[color] += weight * count
    for color, share in evidence.logo:
        scores[color] += _LOGO_WEIGHT * share
    return scores


def rank_brand_colors(evidence: ColorEvidence) -> list[RGB]:
    """Colours best first: chromatic ones by score, then the rest (greys, black) by score."""
    scores = brand_scores(evidence)
    ordered = sorted(scores, key=lambda c: (not is_chromatic(c), -scores[c]))
    return [c for c in ordered if scores[c] > 0]


def rank_palette(evidence: ColorEvidence, roles: dict[str, str]) -> list[str]:
    """Up to eight distinct colours, most used first; the role colours when the page shows none."""
    totals: defaultdict[RGB, float] = defaultdict(float, evidence.usage)
    for color, share in evidence.logo:
        totals[color] += _PALETTE_LOGO_WEIGHT * share
    if evidence.theme is not None:
        totals[evidence.theme] += 1
    for color in evidence.role_vars.values():
        totals[color] += 2
    kept: list[RGB] = []
    for color in sorted(totals, key=lambda c: -totals[c]):
        if totals[color] > 0 and all(distance(color, k) >= SAME for k in kept):
            kept.append(color)
        if len(kept) == PALETTE_SIZE:
            break
    if not kept:
        return list(dict.fromkeys(roles[k] for k in ("primary", "secondary", "accent", "text", "background")))
    return [to_hex(c) for c in kept]
