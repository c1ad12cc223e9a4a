"""GET /stories, GET /me, /healthz and the OpenAPI document."""
from __future__ import annotations

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.shared import keys
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.studio.stories import list_stories
from tests.integration.api.support import assert_error

STORY_KEYS = {"id", "name", "category", "description", "default_duration_sec", "fields"}
HTTP_METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}


def test_stories_list_every_story_with_a_json_schema_of_its_fields(client, tenant):
    response = client.get("/api/v1/stories", headers=tenant.headers)
    assert response.status_code == 200
    body = response.get_json()
    assert list(body) == ["data"]
    stories = body["data"]
    assert [s["id"] for s in stories] == [s.id for s in list_stories()]
    for story in stories:
        assert set(story) == STORY_KEYS
        assert story["default_duration_sec"] >= 6
        schema = story["fields"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema.get("required", [])) <= set(schema["properties"])
        assert schema["properties"]["soundtrack"]["properties"]["asset_id"]["type"] == "string"
        for name, prop in schema["properties"].items():
            assert {"type", "title", "default"} <= set(prop), (story["id"], name)
        defaults = {name: prop["default"] for name, prop in schema["properties"].items()
                    if prop["default"] is not None}
        assert not list(Draft202012Validator(schema).iter_errors(defaults)), story["id"]


def test_me(client, make_tenant):
    tenant = make_tenant(plan="agency", credits=42, name="Agency & Co")
    response = client.get("/api/v1/me", headers=tenant.headers)
    assert response.status_code == 200
    assert response.get_json() == {
        "workspace": {"id": tenant.workspace_id, "name": "Agency & Co", "plan": "agency", "credits": 42},
        "rate_limit": {"limit": 3000, "window_sec": 60, "policy": "3000;w=60"},
        "api_key": {"id": tenant.key_id, "prefix": keys.key_prefix(tenant.key)},
        "library": {"used_bytes": 0, "limit_bytes": 100 * 1024**3},  # agency: 100 GiB
    }


def test_healthz_needs_no_key(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.get_json() == {"status": "ok", "checks": {"database": "ok", "queue": "ok"}}


def test_openapi_document_needs_no_key_and_is_valid_openapi_3_1(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    spec = response.get_json()
    assert spec["openapi"].startswith("3.1")
    validate(spec)
    assert spec["components"]["securitySchemes"]["bearerAuth"]["type"] == "http"
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert spec["security"] == [{"bearerAuth": []}]
    videodoc = spec["components"]["schemas"]["VideoDoc"]
    assert videodoc["type"] == "object" and "scenes" in videodoc["properties"]
    version = spec["components"]["schemas"]["Version"]
    assert version["properties"]["doc"]["$ref"] == "#/components/schemas/VideoDoc"
    assert spec["paths"]["/healthz"]["get"]["security"] == []


def test_every_api_operation_documents_401(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    operations = [(path, method, op) for path, item in spec["paths"].items() if path.startswith("/api/v1/")
                  for method, op in item.items() if method in HTTP_METHODS]
    documented = {(path, method) for path, method, _ in operations}
    assert {("/api/v1/videos", "post"), ("/api/v1/videos/{video_id}", "patch"), ("/api/v1/stories", "get"),
            ("/api/v1/brand-kits/{kit_id}", "patch"), ("/api/v1/me", "get"),
            ("/api/v1/videos/{video_id}/versions/{number}/restore", "post")} <= documented
    for path, method, op in operations:
        assert "401" in op["responses"], (method, path)
        assert op["responses"]["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorEnvelope"}, (method, path)
        assert op.get("summary"), (method, path)


def test_healthz_is_503_when_the_database_is_down(tmp_path):
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path),
                                  "REELFARM_DATABASE_URL": "postgresql+psycopg2://nobody@127.0.0.1:1/none"})
    services = Services.from_settings(settings, clock=FixedClock(), run_migrations=False)
    try:
        response = create_app(services=services).test_client().get("/healthz")
    finally:
        services.engine.dispose()
    error = assert_error(response, 503, "unavailable", details=None)
    assert "database" in error["message"]
    assert "127.0.0.1" not in error["message"] and "nobody" not in error["message"]
