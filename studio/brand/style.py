"""What the rules of a page say about its brand: colours by role, fonts, button radius.

A rule's role comes from the last compound of its selector: ``button``, ``.btn`` or ``.cta`` is a
button, ``a`` a link, ``h1``-``h3`` a heading, ``body``/``html``/``:root`` the page itself. Rules
for hover and focus states and pseudo-elements are left out of the roles (they repeat the colour,
darker). A rule weighs ``1 + n`` where ``n`` is how many elements of the page it matches, so the
``.btn-primary`` a page uses outweighs the ``.btn-danger`` its CSS framework also ships.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import tinycss2

from reelfarm.studio.brand.colors import colors_in, parse_channels, parse_color
from reelfarm.studio.brand.css import (
    Rule,
    font_shorthand,
    font_stack,
    parse_length_px,
    parse_weight,
    resolve_vars,
)
from reelfarm.studio.brand.page import ElementIndex
from reelfarm.studio.brand.palette import ColorEvidence

MAX_USE_COUNT = 20
UNUSED_WEIGHT = 0.25  # a rule whose selector matches nothing on the page
_STATES = frozenset({"hover", "focus", "active", "visited", "focus-visible", "focus-within", "disabled",
                     "checked", "target", "placeholder-shown", "invalid"})
_BUTTON_CLASS = re.compile(r"(^|[-_])(btn|button|cta)([-_]|$)", re.IGNORECASE)
_PAGE_TAGS = {"body": 0, "html": 1, ":root": 2}  # the lower, the more it says about the page
_GLOBAL = frozenset({":root", "html", "body", "*", ":host"})
_BG = ("background", "background-color", "background-image")
_OTHER_COLOR_PROPS = ("border", "border-color", "border-top", "border-bottom", "border-left", "border-right",
                      "outline-color", "fill", "stroke", "text-decoration-color")
_ROLE_WORDS = {"primary": "primary", "brand": "primary", "secondary": "secondary", "accent": "accent",
               "highlight": "accent", "tertiary": "accent", "background": "background", "bg": "background",
               "text": "text", "foreground": "text", "fg": "text", "ink": "text", "body": None}
_NEUTRAL_WORDS = frozenset({"color", "colour", "clr", "c", "wp", "preset", "theme", "bs", "main", "base",
                            "default", "rgb", "hsl", "site", "global", "ui", "value", "var", "mantine", "chakra",
                            "colors", "palette", "mui", "md", "sys", "ref", "tw"})
_SHADES = {"500": 1, "600": 2}


@dataclass(frozen=True)
class Compound:
    tag: str
    classes: frozenset[str]
    ident: str
    attributes: str
    state: bool  # a hover/focus state or a pseudo-element


@dataclass
class StyleFacts:
    colors: ColorEvidence = field(default_factory=ColorEvidence)
    body_font: list[str] = field(default_factory=list)
    body_weight: int | None = None
    heading_font: list[str] = field(default_factory=list)
    heading_weight: int | None = None
    radius_px: defaultdict[float, float] = field(default_factory=lambda: defaultdict(float))


def last_compounds(selector: str) -> list[Compound]:
    """The last compound of each selector in a selector list."""
    compounds: list[Compound] = []
    current: list = []
    boundary = False  # a combinator was seen: the next token starts a new compound
    for token in [*tinycss2.parse_component_value_list(selector, skip_comments=True), None]:
        if token is None or (token.type == "literal" and token.value == ","):
            if current:
                compounds.append(_compound(current))
            current, boundary = [], False
        elif token.type == "whitespace" or (token.type == "literal" and token.value in (">", "+", "~")):
            boundary = True
        else:
            if boundary:
                current, boundary = [], False
            current.append(token)
    return compounds


def _compound(tokens: list) -> Compound:
    tag, classes, ident, attributes, state = "", set(), "", [], False
    previous = None
    for token in tokens:
        text = tinycss2.serialize([token])
        if previous == ".":
            classes.add(text)
        elif previous == ":":
            name = token.lower_name if token.type == "function" else text.lower()
            if name in ("root", "host") and not tag:
                tag = ":" + name
            state = state or name in _STATES or name in ("before", "after") or text == ":"
        elif token.type == "hash":
            ident = token.value
        elif token.type == "[] block":
            attributes.append(text.lower().replace('"', "").replace("'", "").replace(" ", ""))
        elif token.type == "ident" or text == "*":
            tag = text.lower()
        previous = text if token.type == "literal" and text in (".", ":") else None
    return Compound(tag, frozenset(classes), ident, "".join(attributes), state)


def compound_role(compound: Compound) -> str | None:
    """``button``, ``link``, ``heading``, ``page`` or None."""
    if compound.state:
        return None
    if (compound.tag == "button" or any(_BUTTON_CLASS.search(c) for c in compound.classes)
            or "type=submit" in compound.attributes or "role=button" in compound.attributes):
        return "button"
    if compound.tag == "a":
        return "link"
    if compound.tag in ("h1", "h2", "h3"):
        return "heading"
    if compound.tag in _PAGE_TAGS and not compound.classes and not compound.ident:
        return "page"
    return None


def variable_role(name: str) -> tuple[str, int] | None:
    """The colour role a custom property's name declares, and a rank (lower is surer).

    ``--brand``, ``--color-primary``, ``--wp--preset--color--primary`` -> primary; ``--text-primary``
    -> text; ``--primary-foreground`` and ``--primary-hover`` say nothing about primary itself.
    """
    words = [w for w in re.split(r"[-_]+", name.lower()) if w and w not in _NEUTRAL_WORDS]
    roles = [role for w in words if (role := _ROLE_WORDS.get(w))]
    others = [w for w in words if w not in _ROLE_WORDS and w not in _SHADES]
    if not roles or others:
        return None
    shade = max((_SHADES[w] for w in words if w in _SHADES), default=0)
    if len(set(roles)) == 1:
        return roles[0], shade
    if roles[0] in ("text", "background"):  # --text-primary, --bg-brand
        return roles[0], shade + 3
    return None


def read_styles(rules: list[Rule], elements: ElementIndex | None) -> StyleFacts:
    """Collect brand evidence from every rule (stylesheets, ``<style>``, ``style`` attributes)."""
    variables = collect_variables(rules)
    facts = StyleFacts()
    _role_variables(variables, facts.colors)
    page_slots: dict[str, dict[int, object]] = {}
    heading_slots: dict[str, dict[int, object]] = {}
    for rule in rules:
        compounds = last_compounds(rule.selector)
        roles = _roles(compounds)
        weight = 1.0 if rule.inline else _weight(compounds, elements)
        for name, raw in rule.declarations:
            if name.startswith("--"):
                continue
            value = resolve_vars(raw, variables)
            _count_colors(facts.colors, roles, name, value, weight)
            if "page" in roles:
                _page_declaration(page_slots, roles["page"], name, value)
            if "heading" in roles:
                _page_declaration(heading_slots, roles["heading"], name, value)
            if "button" in roles and name == "border-radius":
                px = parse_length_px(value)
                if px is not None:
                    facts.radius_px[px] += weight
    _settle_page(facts, page_slots, heading_slots)
    return facts


def _roles(compounds: list[Compound]) -> dict[str, int]:
    """Each role the selector list takes, with a rank: h1 before h2, body before html."""
    roles: dict[str, int] = {}
    for compound in compounds:
        role = compound_role(compound)
        if role is None:
            continue
        rank = _PAGE_TAGS[compound.tag] if role == "page" else int(compound.tag[1]) if role == "heading" else 0
        roles[role] = min(rank, roles.get(role, rank))
    return roles


def collect_variables(rules: list[Rule]) -> dict[str, str]:
    """Custom properties: those set on ``:root``/``html``/``body`` win over ones set deeper."""
    scoped: dict[str, str] = {}
    global_: dict[str, str] = {}
    for rule in rules:
        compounds = last_compounds(rule.selector)
        is_global = bool(compounds) and all(
            c.tag in _GLOBAL and not c.classes and not c.ident and not c.attributes for c in compounds)
        for name, value in rule.declarations:
            if name.startswith("--"):
                (global_ if is_global else scoped)[name] = value
    return {**scoped, **global_}


def _role_variables(variables: dict[str, str], evidence: ColorEvidence) -> None:
    best: dict[str, int] = {}
    for name, raw in variables.items():
        value = resolve_vars(raw, variables)
        color = parse_color(value) or parse_channels(value)
        if color is None:
            continue
        found = variable_role(name)
        if found is not None and found[1] < best.get(found[0], 99):
            best[found[0]] = found[1]
            evidence.role_vars[found[0]] = color
        elif found is None and name.lower().startswith("--color-") and not re.search(r"\d", name):
            evidence.usage[color] += 0.5  # a named site colour (--color-ocean), not a framework scale


def _weight(compounds: list[Compound], elements: ElementIndex | None) -> float:
    if elements is None:
        return 1.0
    weight = 0.0
    for c in compounds:
        tag = "" if c.tag in ("", "*") or c.tag.startswith(":") else c.tag
        if not (tag or c.classes or c.ident):
            weight = max(weight, 1.0)  # nothing countable (:root, [data-x]): an ordinary rule
            continue
        used = elements.count(tag, c.classes, c.ident)
        weight = max(weight, 1.0 + min(used, MAX_USE_COUNT) if used else UNUSED_WEIGHT)
    return weight or 1.0


def _count_colors(evidence: ColorEvidence, roles: dict[str, int], name: str, value: str, weight: float) -> None:
    if name not in ("color", *_BG, *_OTHER_COLOR_PROPS):
        return
    found = colors_in(value)
    for color in found:
        evidence.usage[color] += weight
    if not found:
        return
    if "button" in roles and name in _BG:
        evidence.buttons[found[0]] += weight
    elif "link" in roles and name == "color":
        evidence.links[found[0]] += weight
    elif "heading" in roles and name == "color":
        evidence.headings[found[0]] += weight


def _page_declaration(slots: dict[str, dict[int, object]], rank: int, name: str, value: str) -> None:
    if name in ("background", "background-color"):
        found = colors_in(value)
        if found:
            slots.setdefault("background", {})[rank] = found[0]
    elif name == "color":
        color = parse_color(value)
        if color is not None:
            slots.setdefault("color", {})[rank] = color
    elif name == "font-family":
        stack = font_stack(value)
        if stack:
            slots.setdefault("font", {})[rank] = stack
    elif name == "font-weight":
        weight = parse_weight(value)
        if weight:
            slots.setdefault("weight", {})[rank] = weight
    elif name == "font":
        stack, weight = font_shorthand(value)
        if stack:
            slots.setdefault("font", {})[rank] = stack
        if weight:
            slots.setdefault("weight", {})[rank] = weight


def _settle_page(facts: StyleFacts, page: dict[str, dict[int, object]],
                 headings: dict[str, dict[int, object]]) -> None:
    def first(slots: dict[str, dict[int, object]], key: str) -> object:
        ranked = slots.get(key, {})
        return ranked[min(ranked)] if ranked else None
    facts.colors.body_background = first(page, "background")  # type: ignore[assignment]
    facts.colors.body_text = first(page, "color")  # type: ignore[assignment]
    facts.body_font = first(page, "font") or []  # type: ignore[assignment]
    facts.body_weight = first(page, "weight")  # type: ignore[assignment]
    facts.heading_font = first(headings, "font") or []  # type: ignore[assignment]
    facts.heading_weight = first(headings, "weight")  # type: ignore[assignment]


def radius_fraction(radius_px: Mapping[float, float], default: float = 0.02) -> float:
    """The most used button radius as a fraction of 1080 px, clamped to 0..0.1."""
    if not radius_px:
        return default
    px = max(radius_px, key=lambda value: radius_px[value])
    return round(min(0.1, max(0.0, px / 1080)), 4)
