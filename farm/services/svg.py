"""An uploaded SVG rewritten from an allow-list, so that no browser that opens it runs or fetches anything.

``sanitise(root)`` takes a parsed document (``reelfarm.farm.services.media`` parses it, after refusing
a document type and entities) and writes a new one from what it allows, never from the text sent:

- elements: the drawing ones (shapes, text, gradients, patterns, clips, masks, markers, filters,
  ``<use>``, ``<image>``, ``<style>``) in the SVG namespace; ``<a>`` and ``<switch>`` become groups
  (their drawing kept, no link); everything else goes with its content: ``<script>``,
  ``<foreignObject>``, ``<iframe>``/``<embed>``/``<object>``, animation (``<set>``/``<animate>``
  can write ``href`` or an event handler), metadata, and every element of another namespace
  (an XHTML ``<script>`` runs inside SVG too). Comments and processing instructions
  (``<?xml-stylesheet?>``) are not kept;
- attributes: geometry and presentation by name (so no ``on*`` handler), plus ``id``, ``class``,
  ``style``, ``xml:space``/``xml:lang`` and ``href``. A reference (``href``, ``xlink:href``) is kept
  only when it names a fragment of the document itself (``#id``), or, on ``<image>`` and
  ``<feImage>``, a raster ``data:image/png|jpeg|gif|webp`` URI: no other document, no SVG in a data
  URI, no ``javascript:``. It is written as ``xlink:href``, the only spelling Skia reads;
- CSS (the ``style`` attribute, ``<style>``, and every attribute value, which browsers read as CSS
  for presentation): tokenised by tinycss2, so escapes cannot hide a ``url(``; a ``url()`` must
  name a local ``#fragment``, functions come from an allow-list, properties are the presentation
  ones, and in ``<style>`` every at-rule but ``@media`` goes (``@import``, ``@font-face``).

Skia draws what it drew before: it reads none of what is removed (it runs no script, loads nothing
outside, ignores ``<style>``), and the output is plain SVG 1.1 with local element names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from xml.etree import ElementTree

import tinycss2
from tinycss2 import ast

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"
MAX_DEPTH = 256
_CSS_DEPTH = 16

_ELEMENTS = frozenset({
    "svg", "g", "defs", "desc", "title", "symbol", "use", "image", "style", "path", "rect", "circle", "ellipse",
    "line", "polyline", "polygon", "text", "tspan", "textPath", "linearGradient", "radialGradient", "stop",
    "pattern", "clipPath", "mask", "marker", "filter", "feBlend", "feColorMatrix", "feComponentTransfer",
    "feComposite", "feConvolveMatrix", "feDiffuseLighting", "feDisplacementMap", "feDistantLight",
    "feDropShadow", "feFlood", "feFuncA", "feFuncB", "feFuncG", "feFuncR", "feGaussianBlur", "feImage",
    "feMerge", "feMergeNode", "feMorphology", "feOffset", "fePointLight", "feSpecularLighting", "feSpotLight",
    "feTile", "feTurbulence"
})
_GROUPS = frozenset({"a", "switch"})  # kept as <g> (as <tspan> inside text): their drawing, not their link
_TEXT = frozenset({"text", "tspan", "textPath"})

# Presentation attributes, which are CSS properties too (in ``style`` and ``<style>``).
_PRESENTATION = frozenset({
    "alignment-baseline", "baseline-shift", "clip", "clip-path", "clip-rule", "color", "color-interpolation",
    "color-interpolation-filters", "direction", "display", "dominant-baseline", "fill", "fill-opacity",
    "fill-rule", "filter", "flood-color", "flood-opacity", "font", "font-family", "font-size",
    "font-size-adjust", "font-stretch", "font-style", "font-variant", "font-weight", "image-rendering",
    "isolation", "letter-spacing", "lighting-color", "marker", "marker-end", "marker-mid", "marker-start",
    "mask", "mix-blend-mode", "opacity", "overflow", "paint-order", "shape-rendering", "stop-color",
    "stop-opacity", "stroke", "stroke-dasharray", "stroke-dashoffset", "stroke-linecap", "stroke-linejoin",
    "stroke-miterlimit", "stroke-opacity", "stroke-width", "text-anchor", "text-decoration", "text-rendering",
    "transform", "transform-box", "transform-origin", "unicode-bidi", "vector-effect", "visibility",
    "white-space", "word-spacing", "writing-mode"
})
_ATTRIBUTES = _PRESENTATION | frozenset({
    "id", "class", "style", "lang", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy",
    "fr", "width", "height", "d", "points", "pathLength", "viewBox", "preserveAspectRatio", "version", "dx",
    "dy", "rotate", "textLength", "lengthAdjust", "startOffset", "method", "spacing", "side", "gradientUnits",
    "gradientTransform", "spreadMethod", "offset", "patternUnits", "patternContentUnits", "patternTransform",
    "clipPathUnits", "maskUnits", "maskContentUnits", "markerWidth", "markerHeight", "markerUnits", "refX",
    "refY", "orient", "filterUnits", "primitiveUnits", "in", "in2", "result", "mode", "type", "values",
    "tableValues", "slope", "intercept", "amplitude", "exponent", "operator", "k1", "k2", "k3", "k4", "order",
    "kernelMatrix", "divisor", "bias", "targetX", "targetY", "edgeMode", "kernelUnitLength", "preserveAlpha",
    "surfaceScale", "diffuseConstant", "specularConstant", "specularExponent", "scale", "xChannelSelector",
    "yChannelSelector", "stdDeviation", "radius", "azimuth", "elevation", "z", "pointsAtX", "pointsAtY",
    "pointsAtZ", "limitingConeAngle", "baseFrequency", "numOctaves", "seed", "stitchTiles"
})
_FUNCTIONS = frozenset({
    "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "calc", "min", "max", "clamp",
    "matrix", "translate", "translatex", "translatey", "scale", "scalex", "scaley", "rotate", "skew", "skewx",
    "skewy"
})
_RASTER_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp)[;,]", re.IGNORECASE)
_UNPRINTED = re.compile(r"[\x00-\x20\x7f]+")
_SCRIPT_SCHEMES = ("javascript:", "vbscript:", "livescript:")


class SvgTooDeep(ValueError):
    """Elements nested more than ``MAX_DEPTH`` deep."""


def sanitise(root: ElementTree.Element) -> bytes:
    """The document under ``root`` (an ``<svg>``) written anew from what the allow-list keeps, UTF-8.

    Raises ValueError when the root is not ``<svg>``, SvgTooDeep when it nests past ``MAX_DEPTH``.
    """
    if _kept_name(root, inside_text=False) != "svg":
        raise ValueError("the root element is not <svg>")
    out: list[str] = []
    _write(root, "svg", out, 0)
    return "".join(out).encode("utf-8")


def _write(element: ElementTree.Element, name: str, out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise SvgTooDeep(f"elements nest more than {MAX_DEPTH} deep")
    out.append(f"<{name}")
    if depth == 0:
        out.append(f' xmlns="{SVG_NS}" xmlns:xlink="{XLINK_NS}"')
    for key, value in _attributes(element, name):
        out.append(f' {key}="{_escape(value, attribute=True)}"')
    out.append(">")
    opened = len(out)
    if name == "style":  # its sheet is all of its text, the text after any child element included
        sheet = (element.text or "") + "".join(child.tail or "" for child in element)
        out.append(_escape(_sanitise_sheet(sheet)))
    else:
        out.append(_escape(element.text or ""))
        for child in element:
            kept = _kept_name(child, inside_text=name in _TEXT)
            if kept is not None:
                _write(child, kept, out, depth + 1)
            out.append(_escape(child.tail or ""))  # the text after a child is its parent's, kept or not
    if any(out[opened:]):
        out.append(f"</{name}>")
    else:
        out[opened - 1] = "/>"


def _kept_name(element: ElementTree.Element, inside_text: bool) -> str | None:
    """The name ``element`` is written under, or None when it goes with everything inside it."""
    if not isinstance(element.tag, str):
        return None
    namespace, _, local = element.tag[1:].rpartition("}") if element.tag.startswith("{") else ("", "", element.tag)
    if namespace not in ("", SVG_NS):
        return None
    if local in _GROUPS:
        return "tspan" if inside_text else "g"
    return local if local in _ELEMENTS else None


def _attributes(element: ElementTree.Element, name: str) -> Iterable[tuple[str, str]]:
    seen: set[str] = set()
    for key, value in element.attrib.items():
        kept = _attribute(key, value, name)
        if kept is not None and kept[0] not in seen:
            seen.add(kept[0])
            yield kept


def _attribute(key: str, value: str, element: str) -> tuple[str, str] | None:
    """``(name, value)`` as written, or None for an attribute that goes."""
    if key in ("href", f"{{{XLINK_NS}}}href"):
        return ("xlink:href", value) if _safe_reference(value, element) else None
    if key in (f"{{{XML_NS}}}space", f"{{{XML_NS}}}lang"):
        return f"xml:{key.rpartition('}')[2]}", value
    if key not in _ATTRIBUTES or _names_script(value):
        return None
    if key == "style":
        return key, _sanitise_declarations(value)
    if key in ("id", "class", "lang") or "(" not in value:  # no function, so no url(), without a "("
        return key, value
    return (key, value) if _safe_css(tinycss2.parse_component_value_list(value)) else None


def _safe_reference(value: str, element: str) -> bool:
    """A fragment of this document; on an image, a raster image in a data URI."""
    target = value.strip()
    if target.startswith("#"):
        return not _names_script(target)
    return element in ("image", "feImage") and bool(_RASTER_DATA.match(_UNPRINTED.sub("", target)))


def _names_script(value: str) -> bool:
    """Whether ``value`` holds a script URL anywhere, however spaced (browsers skip control characters)."""
    flat = _UNPRINTED.sub("", value).lower()
    return any(scheme in flat for scheme in _SCRIPT_SCHEMES)


def _safe_css(tokens: Iterable[ast.Node], depth: int = 0) -> bool:
    """Whether CSS ``tokens`` load nothing: ``url()`` only of a local fragment, functions only
    from the allow-list (nested at most ``_CSS_DEPTH`` deep), no at-keyword or braces."""
    return depth <= _CSS_DEPTH and all(_safe_token(token, depth) for token in tokens)


def _safe_token(token: ast.Node, depth: int) -> bool:
    if isinstance(token, ast.URLToken):
        return token.value.strip().startswith("#")
    if isinstance(token, ast.FunctionBlock) and token.lower_name == "url":
        target = [t for t in token.arguments if not isinstance(t, ast.WhitespaceToken | ast.Comment)]
        return len(target) == 1 and isinstance(target[0], ast.StringToken) and target[0].value.strip().startswith("#")
    if isinstance(token, ast.FunctionBlock):
        return token.lower_name in _FUNCTIONS and _safe_css(token.arguments, depth + 1)
    if isinstance(token, ast.ParenthesesBlock | ast.SquareBracketsBlock):
        return _safe_css(token.content, depth + 1)
    if isinstance(token, ast.StringToken | ast.IdentToken):
        return not _names_script(token.value)
    return not isinstance(token, ast.AtKeywordToken | ast.CurlyBracketsBlock)


def _sanitise_declarations(text: str) -> str:
    """A ``style`` attribute's (or a rule's) declarations: presentation properties whose values load nothing."""
    kept = []
    for item in tinycss2.parse_declaration_list(text, skip_comments=True, skip_whitespace=True):
        if isinstance(item, ast.Declaration) and item.lower_name in _PRESENTATION and _safe_css(item.value):
            value = tinycss2.serialize(item.value).strip()
            kept.append(f"{item.lower_name}:{value}{' !important' if item.important else ''}")
    return ";".join(kept)


def _sanitise_sheet(text: str) -> str:
    """A ``<style>`` sheet's rules with their declarations sanitised; at-rules other than ``@media`` gone."""
    return _sanitise_rules(tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True))


def _sanitise_rules(rules: Iterable[ast.Node]) -> str:
    kept = []
    for rule in rules:
        if isinstance(rule, ast.QualifiedRule) and _safe_css(rule.prelude):
            declarations = _sanitise_declarations(tinycss2.serialize(rule.content))
            kept.append(f"{tinycss2.serialize(rule.prelude).strip()}{{{declarations}}}")
        elif (isinstance(rule, ast.AtRule) and rule.lower_at_keyword == "media" and rule.content is not None
              and _safe_css(rule.prelude)):
            inner = tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True)
            kept.append(f"@media {tinycss2.serialize(rule.prelude).strip()}{{{_sanitise_rules(inner)}}}")
    return "".join(kept)


def _escape(text: str, attribute: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if attribute:
        text = text.replace('"', "&quot;").replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")
    return text
