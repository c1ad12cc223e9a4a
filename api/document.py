"""The served OpenAPI document and its interactive docs.

The document has one shape whatever the deployment; only ``servers`` follows the request, so a
client generated from it, or Swagger UI, calls the host and port that actually answered: the
configured public URL when the request came to that host (it keeps an ``https`` scheme or a path
a proxy in front adds), else the request's own scheme, host and port. The document is built once
and its serialized form kept per server URL.

What the server fills in when a request leaves a property out (a video's ``format``, a render's
``resolution``, a story's fields) is said in the property's description ("Default: ...") in the
schemas only request bodies use, not as ``default``: generators read ``default`` as "always
present" (openapi-typescript's ``defaultNonNullable``, on unless turned off, makes such a property
of a component schema required), and the smallest bodies the API takes would not type-check.
Schemas that answers use too keep their ``default``, which there is what an answer carries.

A file sent as a part of a ``multipart/form-data`` body is binary, not a JSON string: its schema is
written as OpenAPI 3.1 says for binary data, ``contentMediaType`` without ``type`` (marshmallow's
upload field comes out as 3.0's ``type: string, format: binary``). Generators then give it a type a
``Blob`` or ``File`` fits (openapi-typescript 7: ``unknown``), not ``string``.

Swagger UI is flask-smorest's own page (``OPENAPI_SWAGGER_UI_PATH``) at ``/api/v1/docs``; its
scripts and styles come from the ``swagger-ui-bundle-v2`` package (Swagger UI 5, which reads
OpenAPI 3.1) and are served by the app itself at ``/api/v1/docs/assets/``, so the page needs no
CDN and works offline.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import flask
import swagger_ui_bundle

DOCS_PATH = "docs"
ASSETS_ENDPOINT = "swagger_ui_assets"
SLASH_ENDPOINT = "openapi_swagger_ui_slash"
PUBLIC = {"api-docs.openapi_json", "api-docs.openapi_swagger_ui", f"api-docs.{ASSETS_ENDPOINT}",
          f"api-docs.{SLASH_ENDPOINT}"}
"""The doc blueprint's endpoints: served without an API key."""
_CACHED_HOSTS = 32


def config(url_prefix: str) -> dict[str, Any]:
    """flask-smorest settings for the docs page under ``url_prefix`` (``/api/v1``)."""
    return {"OPENAPI_SWAGGER_UI_PATH": DOCS_PATH, "OPENAPI_SWAGGER_UI_URL": f"{url_prefix}/{DOCS_PATH}/assets/",
            "OPENAPI_SWAGGER_UI_CONFIG": {"deepLinking": True, "displayOperationId": True,
                                          "defaultModelsExpandDepth": 0}}


def server_url(public_url: str) -> str:
    """The base URL of the API as this request reached it."""
    public = urlsplit(public_url)
    if public.netloc.lower() == flask.request.host.lower():
        return public_url.rstrip("/")
    return flask.request.host_url.rstrip("/")


class ServedDocument:
    """flask-smorest's doc blueprint with ``servers`` per request and Swagger UI's assets served locally.

    Mixed into ``flask_smorest.Api`` (it overrides two of its ``DocBlueprintMixin`` methods).
    """

    spec: Any
    _app: flask.Flask
    _document: dict[str, Any] | None = None
    _served: dict[str, str]

    def _openapi_json(self) -> flask.Response:
        if self._document is None:
            self._document = binary_parts(request_defaults_in_words(self.spec.to_dict()))
            self._served = {}
        url = server_url(self._app.config["REELFARM_PUBLIC_URL"])
        if url not in self._served:
            if len(self._served) >= _CACHED_HOSTS:
                self._served.clear()
            document = {k: ([{"url": url}] if k == "servers" else v) for k, v in self._document.items()}
            self._served[url] = json.dumps(document, indent=2, ensure_ascii=False)
        return flask.current_app.response_class(self._served[url], mimetype="application/json")

    def _register_swagger_ui_rule(self, blueprint: flask.Blueprint) -> None:
        super()._register_swagger_ui_rule(blueprint)  # type: ignore[misc]
        blueprint.add_url_rule(f"/{DOCS_PATH}/assets/<path:filename>", endpoint=ASSETS_ENDPOINT,
                               view_func=_asset)
        blueprint.add_url_rule(f"/{DOCS_PATH}/", endpoint=SLASH_ENDPOINT, view_func=_docs_page)


_SCHEMAS = "#/components/schemas/"
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
              "unevaluatedItems", "unevaluatedProperties")
_SUBSCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def request_defaults_in_words(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the defaults of the component schemas that only request bodies reach
    moved into the descriptions of their schemas (in place; returned)."""
    schemas = document.get("components", {}).get("schemas", {})
    requests: list[Any] = []
    answers: list[Any] = list(document.get("components", {}).get("responses", {}).values())
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict):
                requests.append(operation.get("requestBody"))
                answers.append(operation.get("responses"))
    for name in _reached(requests, schemas) - _reached(answers, schemas):
        _describe_defaults(schemas[name])
    return document


def binary_parts(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each file part of a ``multipart/form-data`` body (3.0's ``type: string,
    format: binary``) as 3.1's binary data, ``contentMediaType`` alone (in place; returned)."""
    schemas = document.get("components", {}).get("schemas", {})
    for item in document.get("paths", {}).values():
        for operation in item.values():
            content = (operation.get("requestBody") or {}).get("content", {}) if isinstance(operation, dict) else {}
            form = content.get("multipart/form-data", {}).get("schema") or {}
            ref = form.get("$ref", "")
            form = schemas.get(ref[len(_SCHEMAS):], {}) if ref.startswith(_SCHEMAS) else form
            properties = form.get("properties") or {}
            for name, part in properties.items():
                if isinstance(part, dict) and part.get("format") == "binary":
                    kept = {k: v for k, v in part.items() if k not in ("type", "format")}
                    properties[name] = {**kept, "contentMediaType": "application/octet-stream"}
    return document


def _reached(roots: list[Any], schemas: dict[str, Any]) -> set[str]:
    """The names of the component schemas that ``roots`` reference, directly or through others."""
    found: set[str] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_SCHEMAS):
                name = ref[len(_SCHEMAS):]
                if name in schemas and name not in found:
                    found.add(name)
                    todo.append(schemas[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def _describe_defaults(schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    if "default" in schema:
        said = f"Default: `{json.dumps(schema.pop('default'), ensure_ascii=False)}`."
        before = str(schema.get("description") or "").rstrip()
        schema["description"] = f"{before}{'' if before.endswith('.') else '.'} {said}" if before else said
    for key in _SUBSCHEMA:
        _describe_defaults(schema.get(key))
    for key in _SUBSCHEMAS:
        for sub in schema.get(key) or []:
            _describe_defaults(sub)
    for key in _SCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            _describe_defaults(sub)


def _docs_page() -> Any:
    """``/api/v1/docs/`` leads to the docs page, as ``/api/v1/docs`` does."""
    return flask.redirect(flask.url_for("api-docs.openapi_swagger_ui"), code=308)


def _asset(filename: str) -> flask.Response:
    return flask.send_from_directory(str(swagger_ui_bundle.swagger_ui_path), filename, max_age=86400)
