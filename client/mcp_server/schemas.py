"""Tool input schemas cut from the API's OpenAPI document.

For an operation (method, path) the request body's schema becomes the tool's input schema: the
components it references are carried along under ``$defs`` (``#/components/schemas/X`` becomes
``#/$defs/X``), so the schema stands alone and stays the API's own. Path parameters (``video_id``)
and the tool's own options (``wait``) are added beside the body's properties. A body that is a
``oneOf`` of object variants (create a video: one per story, from a brief, from a URL) is offered
as one object with every variant's properties, a property whose variants differ being their
``anyOf`` (``storyId`` the ``enum`` of their constants), so an agent passes the same flat
arguments whichever variant it means; the API judges the combination. Any other body that is not
a plain object with properties is nested under ``body``.

A tool may sum a property up instead (``summarized``): a story's ``fields`` (15 stories, each its
own schema, listed by ``list_stories``) or a whole ``doc`` (the VideoDoc schema, some 20 KB, in the
API's document) becomes its type and a description of where its schema is, and the ``$defs``
nothing references any more are dropped. The API still judges the value, naming each problem with
its JSON pointer.
"""
from __future__ import annotations

import copy
import functools
import time
from dataclasses import dataclass
from typing import Any

import httpx

from reelfarm.client.errors import APIConnectionError

COMPONENTS = "#/components/schemas/"
DEFS = "#/$defs/"
OPENAPI_PATH = "/api/v1/openapi.json"


def fetch_openapi(base_url: str, attempts: int = 6) -> dict[str, Any]:
    """The server's OpenAPI document (no key needed), tried for about 3 s while it starts."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            response = httpx.get(base_url.rstrip("/") + OPENAPI_PATH, timeout=10)
            response.raise_for_status()
            return dict(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            last = exc
            time.sleep(0.5)
    url = base_url.rstrip("/") + OPENAPI_PATH
    raise APIConnectionError(f"cannot read {url}: {last}", url=url)


async def fetch_openapi_async(base_url: str) -> dict[str, Any]:
    """The server's OpenAPI document, one try (an MCP server over HTTP asks again on the next call)."""
    url = base_url.rstrip("/") + OPENAPI_PATH
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, connect=3.0)) as http:
            response = await http.get(url)
        response.raise_for_status()
        return dict(response.json())
    except (httpx.HTTPError, ValueError) as exc:
        raise APIConnectionError(f"cannot read {url}: {exc or type(exc).__name__}", url=url) from exc


@dataclass(frozen=True)
class InputSchema:
    """A tool's input schema and how to split its arguments into path, body and options."""

    schema: dict[str, Any]
    path_params: tuple[str, ...]
    options: tuple[str, ...]
    nested: bool  # the body travels under "body"
    query_params: tuple[str, ...] = ()

    def split(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
        """(path values, request body or None, tool options) from a call's arguments (query
        parameters are taken out first, by ``query``)."""
        args = {k: v for k, v in (arguments or {}).items() if k not in self.query_params}
        path = {name: args.pop(name) for name in self.path_params if name in args}
        options = {name: args.pop(name) for name in self.options if name in args}
        body = args.pop("body", None) if self.nested else args
        return path, body, options

    def query(self, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The call's query parameters (``limit``, ``cursor``), or None."""
        found = {name: (arguments or {})[name] for name in self.query_params if name in (arguments or {})}
        return found or None

    @functools.cached_property
    def _validator(self) -> Any:
        from jsonschema import Draft202012Validator  # comes with the `mcp` extra

        return Draft202012Validator(self.schema)

    def problems(self, arguments: Any) -> list[dict[str, str]]:
        """Every way ``arguments`` breaks the schema, as ``{"field": JSON pointer, "message"}`` (the
        API's own detail shape): a missing or mistyped argument is named before anything is sent."""
        found = []
        for error in sorted(self._validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path]):
            if len(error.absolute_path) > 1 or error.validator in ("anyOf", "oneOf", "allOf", "not"):
                continue  # inside an argument: the API judges it, naming every problem with its pointer
            pointer = "".join(f"/{part}" for part in error.absolute_path)
            if error.validator == "required":
                missing = error.message.split("'")[1] if "'" in error.message else ""
                pointer, message = f"{pointer}/{missing}", "is required"
            elif error.validator == "additionalProperties":
                message = f"unknown argument: {error.message}"
            else:
                message = error.message
            found.append({"field": pointer or "/", "message": message})
        return found


def _refs(node: Any, found: set[str], prefix: str = COMPONENTS) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(prefix):
            found.add(ref[len(prefix):])
        for value in node.values():
            _refs(value, found, prefix)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found, prefix)


def _rewrite(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _rewrite(v) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(COMPONENTS):
            out["$ref"] = "#/$defs/" + ref[len(COMPONENTS):]
        return out
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def _standalone(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its top-level ``$ref`` inlined and every component it reaches under ``$defs``."""
    components = doc.get("components", {}).get("schemas", {})
    top = copy.deepcopy(schema)
    while isinstance(top.get("$ref"), str) and top["$ref"].startswith(COMPONENTS) and len(top) == 1:
        top = copy.deepcopy(components[top["$ref"][len(COMPONENTS):]])
    needed: set[str] = set()
    _refs(top, needed)
    pending = list(needed)
    while pending:
        more: set[str] = set()
        _refs(components[pending.pop()], more)
        pending += list(more - needed)
        needed |= more
    out = _rewrite(top)
    if needed:
        out["$defs"] = {name: _rewrite(components[name]) for name in sorted(needed)}
    return out


def _variants(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The object variants of a ``oneOf`` (through ``$defs`` references and nested ``oneOf``s), or
    None when ``schema`` is not a union of objects."""
    ref = schema.get("$ref", "")
    if ref.startswith(DEFS):
        return _variants(defs[ref[len(DEFS):]], defs)
    if "oneOf" in schema:
        found = [_variants(branch, defs) for branch in schema["oneOf"]]
        return None if any(v is None for v in found) else [v for group in found for v in (group or [])]
    return [schema] if isinstance(schema.get("properties"), dict) else None


def _merged(variants: list[dict[str, Any]]) -> dict[str, Any]:
    """One object schema offering every variant's properties (required: what all of them require)."""
    seen: dict[str, list[Any]] = {}
    for variant in variants:
        for name, prop in variant["properties"].items():
            if prop not in seen.setdefault(name, []):
                seen[name].append(prop)
    props = {}
    for name, options in seen.items():
        if len(options) == 1:
            props[name] = options[0]
        elif all("const" in o for o in options):
            props[name] = {"type": "string", "enum": [o["const"] for o in options]}
        else:
            props[name] = {"anyOf": options}
    required = set.intersection(*(set(v.get("required", [])) for v in variants))
    return {"type": "object", "properties": props, "required": [n for n in props if n in required],
            "additionalProperties": False}


def _flattened(standalone: dict[str, Any]) -> dict[str, Any]:
    """``standalone`` with a union of objects merged into one object (see the module docstring)."""
    defs = standalone.get("$defs", {})
    variants = _variants(standalone, defs)
    if not variants or "properties" in standalone:
        return standalone
    merged = _merged(variants)
    if standalone.get("description"):
        merged["description"] = standalone["description"]
    needed: set[str] = set()
    pending = [merged]
    while pending:
        found: set[str] = set()
        _refs(pending.pop(), found, DEFS)
        pending += [defs[name] for name in found - needed]
        needed |= found
    if needed:
        merged["$defs"] = {name: defs[name] for name in sorted(needed)}
    return merged


def summarized(made: InputSchema, summaries: dict[str, str]) -> InputSchema:
    """``made`` with each property named in ``summaries`` replaced by its JSON type and that
    description, and the ``$defs`` no longer referenced dropped (see the module docstring)."""
    schema = made.schema
    props = schema.get("properties", {})
    for name, description in summaries.items():
        if name in props:
            kind = props[name].get("type", "object")
            props[name] = {"type": kind, "description": description}
    defs = schema.get("$defs")
    if defs:
        needed: set[str] = set()
        pending: list[Any] = [{k: v for k, v in schema.items() if k != "$defs"}]
        while pending:
            found: set[str] = set()
            _refs(pending.pop(), found, DEFS)
            pending += [defs[name] for name in found - needed if name in defs]
            needed |= found
        kept = {name: defs[name] for name in sorted(needed) if name in defs}
        if kept:
            schema["$defs"] = kept
        else:
            del schema["$defs"]
    return made


def operation(doc: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    """The operation object, with the path item's shared parameters folded in."""
    try:
        item = doc["paths"][path]
        op = dict(item[method.lower()])
    except KeyError:
        raise KeyError(f"the API's OpenAPI document has no {method.upper()} {path}") from None
    own = {(p.get("in"), p.get("name")) for p in op.get("parameters", [])}
    shared = [p for p in item.get("parameters", []) if (p.get("in"), p.get("name")) not in own]
    op["parameters"] = [*shared, *op.get("parameters", [])]
    return op


def input_schema(doc: dict[str, Any], method: str, path: str, options: dict[str, Any] | None = None) -> InputSchema:
    """The input schema of a tool doing ``method path``, plus ``options`` (name -> schema) of its own."""
    op = operation(doc, method, path)
    def described(p: dict[str, Any]) -> dict[str, Any]:
        return {**p.get("schema", {}), **({"description": p["description"]} if p.get("description") else {})}

    params = {p["name"]: described(p) for p in op.get("parameters", []) if p.get("in") == "path"}
    query = {p["name"]: described(p) for p in op.get("parameters", []) if p.get("in") == "query"}
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    extra = {**params, **query, **(options or {})}
    if body is None:
        schema: dict[str, Any] = {"type": "object", "properties": extra, "additionalProperties": False}
        nested = False
    else:
        standalone = _flattened(_standalone(doc, body))
        nested = "properties" not in standalone
        if nested:
            defs = standalone.pop("$defs", None)
            schema = {"type": "object", "properties": {**extra, "body": standalone}}
            schema["required"] = ["body"]
            if defs:
                schema["$defs"] = defs
        else:
            schema = standalone
            schema["type"] = "object"
            schema["properties"] = {**extra, **schema["properties"]}
    required = [name for name in params if name not in schema.get("required", [])]
    if required or schema.get("required"):
        schema["required"] = required + list(schema.get("required", []))
    return InputSchema(schema, tuple(params), tuple(options or {}), nested, tuple(query))
