"""Reading stylesheets with tinycss2: rules and declarations, ``@import``, ``@font-face``, ``var()``.

Only what brand extraction needs: no cascade, no specificity. Rules inside ``@media`` and
``@supports`` count, except dark-mode and print ones (a brand kit describes the default look).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import tinycss2

MAX_RULES = 20_000  # per stylesheet; a bigger one is cut, not refused
_VAR_DEPTH = 8
_SKIPPED_MEDIA = re.compile(r"prefers-color-scheme\s*:\s*dark|^\s*print\b|\bprint\s*$|forced-colors", re.IGNORECASE)
_GROUPING_AT_RULES = ("media", "supports", "layer", "container", "document", "scope")
GOOGLE_FONT_HOSTS = ("fonts.googleapis.com", "fonts.bunny.net")


@dataclass(frozen=True)
class Rule:
    """One style rule: its selector text and ``(name, value)`` declarations, in source order.

    ``selector`` is "" for nothing; for a ``style`` attribute it describes the element
    (``a.btn#buy``) and ``inline`` is True. Property names are lower case except custom properties.
    """

    selector: str
    declarations: tuple[tuple[str, str], ...]
    inline: bool = False


@dataclass
class Sheet:
    rules: list[Rule] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # URLs as written
    font_faces: list[str] = field(default_factory=list)  # @font-face family names


def parse_sheet(text: str) -> Sheet:
    """The rules, imports and font faces of a stylesheet; broken parts are skipped, never raised."""
    sheet = Sheet()
    nodes = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    _walk(nodes, sheet)
    return sheet


def parse_declarations(text: str) -> tuple[tuple[str, str], ...]:
    """The declarations of a ``style`` attribute (or a rule body)."""
    nodes = tinycss2.parse_declaration_list(text, skip_comments=True, skip_whitespace=True)
    return tuple(_declaration(node) for node in nodes if node.type == "declaration")


def _walk(nodes: list, sheet: Sheet) -> None:
    for node in nodes:
        if len(sheet.rules) >= MAX_RULES:
            return
        if node.type == "qualified-rule":
            declarations = _block(node.content)
            if declarations:
                sheet.rules.append(Rule(tinycss2.serialize(node.prelude).strip(), declarations))
        elif node.type == "at-rule":
            _at_rule(node, sheet)


def _at_rule(node: tinycss2.ast.AtRule, sheet: Sheet) -> None:
    prelude = tinycss2.serialize(node.prelude).strip()
    keyword = node.lower_at_keyword
    if keyword == "import":
        url = _import_url(node.prelude)
        if url and not _SKIPPED_MEDIA.search(prelude.split(")", 1)[-1]):
            sheet.imports.append(url)
    elif keyword == "font-face" and node.content is not None:
        for name, value in _block(node.content):
            if name == "font-family":
                sheet.font_faces.extend(font_stack(value)[:1])
    elif keyword in _GROUPING_AT_RULES and node.content is not None and not _SKIPPED_MEDIA.search(prelude):
        _walk(tinycss2.parse_rule_list(node.content, skip_comments=True, skip_whitespace=True), sheet)


def _block(content: list | None) -> tuple[tuple[str, str], ...]:
    if content is None:
        return ()
    nodes = tinycss2.parse_blocks_contents(content, skip_comments=True, skip_whitespace=True)
    return tuple(_declaration(node) for node in nodes if node.type == "declaration")


def _declaration(node: tinycss2.ast.Declaration) -> tuple[str, str]:
    name = node.name if node.name.startswith("--") else node.lower_name
    return name, tinycss2.serialize(node.value).strip()


def _import_url(prelude: list) -> str | None:
    for token in prelude:
        if token.type in ("url", "string"):
            return str(token.value)
        if token.type == "function" and token.lower_name == "url":
            strings = [t.value for t in token.arguments if t.type == "string"]
            return strings[0] if strings else None
        if token.type not in ("whitespace", "comment"):
            return None
    return None


def resolve_vars(value: str, variables: Mapping[str, str], depth: int = 0) -> str:
    """``value`` with every ``var(--name, fallback)`` replaced by the variable's value (or fallback)."""
    if "var(" not in value.lower() or depth > _VAR_DEPTH:
        return value
    tokens = tinycss2.parse_component_value_list(value, skip_comments=True)
    return _substitute(tokens, variables, depth).strip()


def _substitute(tokens: list, variables: Mapping[str, str], depth: int) -> str:
    parts: list[str] = []
    for token in tokens:
        if token.type == "function" and token.lower_name == "var":
            parts.append(_var_value(token.arguments, variables, depth))
        elif token.type == "function":
            parts.append(f"{token.name}({_substitute(token.arguments, variables, depth)})")
        elif token.type in ("() block", "[] block", "{} block"):
            opening, closing = token.type[0], token.type[1]
            parts.append(f"{opening}{_substitute(token.content, variables, depth)}{closing}")
        else:
            parts.append(tinycss2.serialize([token]))
    return "".join(parts)


def _var_value(arguments: list, variables: Mapping[str, str], depth: int) -> str:
    names = [t.value for t in arguments if t.type == "ident" and t.value.startswith("--")]
    commas = [i for i, t in enumerate(arguments) if t.type == "literal" and t.value == ","]
    if names and names[0] in variables:
        return resolve_vars(variables[names[0]], variables, depth + 1)
    if commas:
        return resolve_vars(tinycss2.serialize(arguments[commas[0] + 1:]).strip(), variables, depth + 1)
    return ""


def font_stack(value: str) -> list[str]:
    """The family names of a ``font-family`` value, quotes removed, in order."""
    families: list[str] = []
    words: list[str] = []
    for token in tinycss2.parse_component_value_list(value, skip_comments=True):
        if token.type == "literal" and token.value == ",":
            families.append(" ".join(words))
            words = []
        elif token.type in ("string", "ident"):
            words.append(str(token.value).strip())
    families.append(" ".join(words))
    return [f for f in families if f]


def font_shorthand(value: str) -> tuple[list[str], int | None]:
    """The family stack and weight of a ``font`` shorthand (``700 16px/1.5 Inter, sans-serif``)."""
    tokens = [t for t in tinycss2.parse_component_value_list(value, skip_comments=True)
              if t.type not in ("whitespace", "comment")]
    size_at = next((i for i, t in enumerate(tokens) if t.type in ("dimension", "percentage")
                    or (t.type == "ident" and t.lower_value in _SIZE_KEYWORDS)), None)
    if size_at is None:
        return [], None
    weight = None
    for token in tokens[:size_at]:
        weight = parse_weight(tinycss2.serialize([token])) or weight
    rest = tokens[size_at + 1:]
    if len(rest) >= 2 and rest[0].type == "literal" and rest[0].value == "/":
        rest = rest[2:]
    return font_stack(" ".join(tinycss2.serialize([t]) for t in rest)), weight


_SIZE_KEYWORDS = frozenset({"xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large",
                            "xxx-large", "smaller", "larger"})


def parse_weight(value: str) -> int | None:
    """A ``font-weight`` as a multiple of 100 in 100..900, or None when it is relative or unknown."""
    text = value.strip().lower()
    if text in ("bold", "bolder"):
        return 700 if text == "bold" else None
    if text == "normal":
        return 400
    try:
        number = float(text)
    except ValueError:
        return None
    return int(min(900, max(100, round(number / 100) * 100)))


def parse_length_px(value: str) -> float | None:
    """The first length of a value in px (rem and em as 16 px); ``inf`` for 50% or more (a pill)."""
    for token in tinycss2.parse_component_value_list(value, skip_comments=True):
        if token.type == "number" and token.value == 0:
            return 0.0
        if token.type == "dimension":
            unit = token.lower_unit
            if unit == "px":
                return float(token.value)
            if unit in ("rem", "em"):
                return float(token.value) * 16
            return None
        if token.type == "percentage":
            return float("inf") if token.value >= 50 else None
        if token.type not in ("whitespace", "comment"):
            return None
    return None


def google_font_families(url: str) -> list[str]:
    """The families a Google Fonts (or Bunny Fonts) stylesheet URL asks for; [] for other URLs.

    ``css2?family=Poppins:wght@400;700&family=Open+Sans`` and the old ``css?family=Roboto:400|Lato``.
    """
    parts = urlsplit(url)
    if (parts.hostname or "").lower() not in GOOGLE_FONT_HOSTS:
        return []
    families: list[str] = []
    for raw in parse_qs(parts.query).get("family", []):
        for item in raw.split("|"):
            name = item.split(":")[0].strip()
            if name and name not in families:
                families.append(name)
    return families
