"""``GET /api/v1/stories/{id}``: one built-in story with its fields' JSON Schema, exactly as the list
gives it; an id no story has is 404 ``not_found`` (never the create-video 400 ``unknown_story``),
with the request id; the OpenAPI document describes it. SQLite and PostgreSQL."""
from __future__ import annotations

from tests.integration.api.support import assert_error


def test_one_story_is_the_lists_entry(client, tenant):
    listed = client.get("/api/v1/stories", headers=tenant.headers).get_json()["data"]
    for story in listed[:3]:
        response = client.get(f"/api/v1/stories/{story['id']}", headers=tenant.headers)
        assert response.status_code == 200 and response.get_json() == story
        assert response.headers["X-Request-Id"].startswith("req_")


def test_an_unknown_story_is_404_with_the_request_id(client, tenant):
    for missing in ("nope", "x" * 101):
        response = client.get(f"/api/v1/stories/{missing}", headers=tenant.headers)
        error = assert_error(response, 404, "not_found", details=None)
        assert error["request_id"] == response.headers["X-Request-Id"]
    assert client.get("/api/v1/stories/quote").status_code == 401  # a key, as for the list


def test_the_openapi_document_describes_it(client):
    document = client.get("/api/v1/openapi.json").get_json()
    operation = document["paths"]["/api/v1/stories/{story_id}"]["get"]
    assert operation["operationId"] == "getStory" and operation["summary"] == "Get a story"
    assert {"200", "404", "401"} <= set(operation["responses"])
