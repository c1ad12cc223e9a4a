"""The served OpenAPI document as a client generator reads it: stable operation ids, examples that
hold to their schemas, ``servers`` from the request, named create-video variants, one shape
whatever the deployment, and Swagger UI served with its assets from the app itself."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
from flask import Flask
from jsonschema import Draft202012Validator

from reelfarm.api import app as api_app
from reelfarm.api import examples
from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.farm.services.jobs import published_locales
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import api_keys as keys_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.studio.stories import list_stories

METHODS = ("get", "put", "post", "patch", "delete")
CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]*)*")


def _app(tmp: Path, apertium: str, built: bool = False) -> Iterator[tuple[Flask, Services]]:
    """An app on its own data folder; its document built for it (``built``: the one this process
    built before for the same configuration, as every app after a process's first has)."""
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp), "REELFARM_APERTIUM": apertium})
    services = Services.from_settings(settings, clock=FixedClock())
    if not built:
        api_app._DOCUMENTS.clear()
    yield create_app(services=services), services
    services.engine.dispose()


@pytest.fixture(scope="module")
def with_apertium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flask, Services]]:
    yield from _app(tmp_path_factory.mktemp("with"), "1")


@pytest.fixture(scope="module")
def without_apertium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flask, Services]]:
    yield from _app(tmp_path_factory.mktemp("without"), "0")


@pytest.fixture(scope="module")
def doc(with_apertium: tuple[Flask, Services]) -> dict[str, Any]:
    return with_apertium[0].test_client().get("/api/v1/openapi.json").get_json()


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, item in doc["paths"].items()
            for method, op in item.items() if method in METHODS]


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in ``doc``."""
    return Draft202012Validator({**schema, "components": doc["components"]})


def _examples(media: dict[str, Any]) -> list[Any]:
    if "example" in media:
        return [media["example"]]
    return [e["value"] for e in media.get("examples", {}).values()]


def _response(doc: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    ref = response.get("$ref", "")
    return doc["components"]["responses"][ref.rsplit("/", 1)[-1]] if ref else response


def test_every_operation_has_a_unique_camel_case_operation_id(doc):
    ids = [op.get("operationId") for _, _, op in _operations(doc)]
    assert len(ids) >= 36 and all(isinstance(i, str) and CAMEL.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    named = {(m, p): op["operationId"] for m, p, op in _operations(doc)}
    assert named[("POST", "/api/v1/videos")] == "createVideo"
    assert named[("POST", "/api/v1/videos/{video_id}/renders")] == "renderVideo"
    assert named[("GET", "/api/v1/renders/{render_id}")] == "getRender"


def test_every_request_and_response_body_has_examples_that_validate(doc):
    checked = 0
    for method, path, op in _operations(doc):
        bodies = []
        if "requestBody" in op:  # JSON, or an upload's multipart/form-data
            bodies += [("request", media) for media in op["requestBody"]["content"].values()]
        for status, response in op["responses"].items():
            for media in _response(doc, response).get("content", {}).values():
                if "schema" in media:
                    bodies.append((status, media))
        for where, media in bodies:
            found = _examples(media)
            assert found, f"{method} {path} {where}: no example"
            # an empty object shows a client nothing it may send
            assert where != "request" or all(e not in ({}, [], "", None) for e in found), \
                f"{method} {path} request: only an empty example"
            validator = _validator(doc, media["schema"])
            for example in found:
                errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(example)]
                assert errors == [], f"{method} {path} {where}"
                checked += 1
    assert checked > 200


def test_create_video_examples_cover_story_brief_and_url(doc):
    media = doc["paths"]["/api/v1/videos"]["post"]["requestBody"]["content"]["application/json"]
    assert set(media["examples"]) == {"story", "brief", "url"}


def test_create_video_variants_are_named_and_discriminated_by_story_id(doc):
    schemas = doc["components"]["schemas"]
    create = schemas["VideoCreate"]
    assert [b["$ref"].rsplit("/", 1)[-1] for b in create["oneOf"]] == [
        "VideoCreate.story", "VideoCreate.brief", "VideoCreate.url"]
    story = schemas["VideoCreate.story"]
    ids = [s.id for s in list_stories()]
    assert story["discriminator"]["propertyName"] == "storyId"
    assert story["discriminator"]["mapping"] == {i: f"#/components/schemas/VideoCreate.story.{i}" for i in ids}
    for i in ids:
        variant = schemas[f"VideoCreate.story.{i}"]
        assert variant["properties"]["storyId"]["const"] == i
        assert variant["properties"]["fields"] == {"$ref": f"#/components/schemas/StoryFields.{i}"}
        assert variant["additionalProperties"] is False

    def matches(body: dict[str, Any]) -> int:
        return sum(_validator(doc, b).is_valid(body) for b in create["oneOf"])
    assert matches({"storyId": "quote", "fields": {"quote": "Hi"}}) == 1
    assert matches({"brief": "Spring sale", "url": "example.com"}) == 1
    assert matches({"url": "example.com"}) == 1
    assert matches({"storyId": "quote", "brief": "Spring sale"}) == 0
    assert matches({"fields": {}}) == 0


def test_video_patch_is_one_object_that_changes_something(doc):
    patch = doc["components"]["schemas"]["VideoPatch"]
    assert "anyOf" not in patch and "oneOf" not in patch and patch["properties"]
    validator = _validator(doc, patch)
    assert validator.is_valid({"title": "New"}) and validator.is_valid({"fields": {"author": "Ray"}, "note": "n"})
    assert not validator.is_valid({"note": "only a note"}) and not validator.is_valid({})
    assert not validator.is_valid({"doc": examples.VIDEO_DOC, "fields": {}})
    quote = doc["components"]["schemas"]["StoryFieldsPatch.quote"]
    assert "required" not in quote and all("default" not in p for p in quote["properties"].values())


def test_servers_follow_the_host_that_was_asked(with_apertium):
    app, services = with_apertium
    client = app.test_client()
    for host in ("api.example.org:8443", "127.0.0.1:5123", "localhost"):
        served = client.get("/api/v1/openapi.json", headers={"Host": host}).get_json()
        assert served["servers"] == [{"url": f"http://{host}"}]
    public = services.settings.public_url
    served = client.get("/api/v1/openapi.json", base_url=public).get_json()
    assert served["servers"] == [{"url": public}]


def _tenant(services: Services) -> dict[str, str]:
    clock = FixedClock()
    with transaction(services.engine) as conn:
        ws = ws_repo.create_workspace(conn, clock, name="docs", plan="pro", brand_tokens=NEUTRAL_BRAND, credits=5)
        _, key = keys_repo.create_api_key(conn, clock, workspace_id=ws.id, name="docs")
    return {"Authorization": f"Bearer {key}"}


def test_the_document_is_the_same_whichever_translation_engines_are_installed(with_apertium, without_apertium):
    (app_with, services_with), (app_without, services_without) = with_apertium, without_apertium
    assert "es" in published_locales(services_with.jobs.studio.translators)
    assert published_locales(services_without.jobs.studio.translators) == []
    served = [a.test_client().get("/api/v1/openapi.json", headers={"Host": "h:1"}).get_json()
              for a in (app_with, app_without)]
    assert served[0] == served[1]
    locales = served[0]["components"]["schemas"]["VariantsCreate"]["properties"]["locales"]
    assert "enum" not in locales["items"] and "maxItems" in locales

    for app, services, tag, engines in ((app_without, services_without, "es", []), (app_with, services_with, "xx", None)):
        client, headers = app.test_client(), _tenant(services)
        listed = client.get("/api/v1/locales", headers=headers).get_json()["data"]
        assert engines is None or listed == engines
        video = client.post("/api/v1/videos", json={"storyId": "quote", "format": "1:1"}, headers=headers).get_json()
        answer = client.post(f"/api/v1/videos/{video['id']}/variants", json={"formats": ["1:1"], "locales": [tag]},
                             headers=headers)
        assert answer.status_code == 400, answer.get_json()
        assert [(d["field"], d["code"]) for d in answer.get_json()["error"]["details"]] == [
            ("/locales/0", "unsupported_locale")]


def test_an_app_sharing_the_document_built_before_serves_the_same_document(with_apertium, tmp_path):
    fresh = with_apertium[0].test_client().get("/api/v1/openapi.json", headers={"Host": "h:1"})
    assert api_app._DOCUMENTS  # the fixture's app built it (or an app since, from the same configuration)
    for app, services in _app(tmp_path, "1", built=True):
        assert app.extensions["flask-smorest"]["apis"][""]["ext_obj"].documented
        shared = app.test_client().get("/api/v1/openapi.json", headers={"Host": "h:1"})
        assert shared.get_json() == fresh.get_json() and len(shared.get_json()["paths"]) >= 30
        stories = app.test_client().get("/api/v1/stories", headers=_tenant(services))  # routes registered all the same
        assert stories.status_code == 200 and len(stories.get_json()["data"]) == len(list_stories())


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        url = found.get("src") if tag == "script" else found.get("href") if tag == "link" else None
        if url:
            self.urls.append(url)


def test_swagger_ui_is_served_with_its_assets_from_the_app(with_apertium):
    client = with_apertium[0].test_client()
    page = client.get("/api/v1/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    parser = _Assets()
    parser.feed(page.get_data(as_text=True))
    assert len(parser.urls) == 3, parser.urls
    for url in parser.urls:
        absolute = urljoin("http://localhost/api/v1/docs", url)
        assert absolute.startswith("http://localhost/api/v1/"), url  # no CDN
        asset = client.get(absolute)
        assert asset.status_code == 200 and len(asset.data) > 10_000, url
    assert '"/api/v1/openapi.json"' in page.get_data(as_text=True)
    slash = client.get("/api/v1/docs/", follow_redirects=True)
    assert slash.status_code == 200 and slash.get_data() == page.get_data()


def test_a_doubled_base_path_says_that_the_base_is_the_server_root(with_apertium):
    client = with_apertium[0].test_client()
    answer = client.get("/api/v1/api/v1/stories", headers={"Host": "api.example.org:8443"})
    assert answer.status_code == 404
    error = answer.get_json()["error"]
    assert error["code"] == "not_found"
    assert "/api/v1 twice" in error["message"] and "server root (http://api.example.org:8443)" in error["message"]
    assert "twice" not in client.get("/api/v1/nothing-here").get_json()["error"]["message"]


def test_forwarded_headers_are_believed_only_from_the_trusted_proxies(with_apertium):
    from reelfarm.app import create_app

    app, services = with_apertium
    forwarded = {"Host": "10.0.0.7:8000", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.org"}
    served = app.test_client().get("/api/v1/openapi.json", headers=forwarded).get_json()
    assert served["servers"] == [{"url": "http://10.0.0.7:8000"}]  # no proxy trusted: headers ignored

    behind = create_app(dataclasses.replace(services.settings, trusted_proxies=1), services=services)
    served = behind.test_client().get("/api/v1/openapi.json", headers=forwarded).get_json()
    assert served["servers"] == [{"url": "https://api.example.org"}]


def test_the_command_lines_render_choices_are_the_documents(doc):
    """The client cannot import the server, so ``reelfarm videos`` keeps its own lists of formats,
    resolutions and frame rates: they are the ones the served document offers."""
    from reelfarm.client.cli import videos as cli

    render = doc["components"]["schemas"]["RenderCreate"]["properties"]

    def enum(prop: dict[str, Any]) -> list[Any]:
        if "$ref" in prop:
            prop = doc["components"]["schemas"][prop["$ref"].rsplit("/", 1)[-1]]
        return list(prop["enum"])

    assert list(cli.FORMATS) == enum(render["format"])
    assert [int(r) for r in cli.RESOLUTIONS.choices] == enum(render["resolution"])
    assert [int(f) for f in cli.FPS.choices] == enum(render["fps"])
    assert list(cli.PRIORITIES.choices) == enum(render["priority"])
