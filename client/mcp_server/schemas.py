"""Tool input schemas cut from the API's OpenAPI document.

For an operation (method, path) the request body's schema becomes the tool's input schema: the
components it references are carried along under ``$defs`` (``#/components/schemas/X`` becomes
``#/$defs/X``), so the schema stands alone and stays the API's own. Path parameters (``video_id``)
and the tool's own options (``wait``) are added beside the body's properties; when the body is
not a plain object with properties (a bare ``oneOf``), it is nested under ``body`` instead.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import httpx

COMPONENTS = "#/components/schemas/"
OPENAPI_PATH = "/api/v1/openapi.json"


def fetch_openapi(base_url: str, attempts: int = 20) -> dict[str, Any]:
    """The server's OpenAPI document (no key needed), tried for a few seconds while it starts."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            response = httpx.get(base_url.rstrip("/") + OPENAPI_PATH, timeout=10)
            response.raise_for_status()
            return dict(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            last = exc
            time.sleep(0.5)
    raise RuntimeError(f"cannot read {base_url}{OPENAPI_PATH}: {last}")


@dataclass(frozen=True)
class InputSchema:
    """A tool's input schema and how to split its arguments into path, body and options."""

    schema: dict[str, Any]
    path_params: tuple[str, ...]
    options: tuple[str, ...]
    nested: bool  # the body travels under "body"

    def split(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
        """(path values, request body or None, tool options) from a call's arguments."""
        args = dict(arguments or {})
        path = {name: args.pop(name) for name in self.path_params if name in args}
        options = {name: args.pop(name) for name in self.options if name in args}
        body = args.pop("body", None) if self.nested else args
        return path, body, options


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(COMPONENTS):
            found.add(ref[len(COMPONENTS):])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


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
    params = {p["name"]: {**p.get("schema", {}), **({"description": p["description"]} if p.get("description") else {})}
              for p in op.get("parameters", []) if p.get("in") == "path"}
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    extra = {**params, **(options or {})}
    if body is None:
        schema: dict[str, Any] = {"type": "object", "properties": extra, "additionalProperties": False}
        nested = False
    else:
        standalone = _standalone(doc, body)
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
    return InputSchema(schema, tuple(params), tuple(options or {}), nested)
