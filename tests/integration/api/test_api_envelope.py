"""The one error envelope and the request id, for Flask's own errors as much as for ours."""
from __future__ import annotations

import re
import uuid

import pytest

from reelfarm.app import create_app
from tests.integration.api.support import REQUEST_ID, assert_error

BIG = 2 * 1024 * 1024 + 1


def test_unknown_path_is_404_in_the_envelope(client):
    response = client.get("/api/v1/no-such-thing")
    error = assert_error(response, 404, "not_found", details=None)
    assert re.match(REQUEST_ID, error["request_id"])


def test_unknown_path_outside_the_api_is_404_in_the_envelope(client):
    assert_error(client.get("/nope"), 404, "not_found", details=None)


def test_wrong_method_is_405_with_allow(client, tenant):
    response = client.delete("/api/v1/stories", headers=tenant.headers)
    assert_error(response, 405, "method_not_allowed", details=None)
    assert {m.strip() for m in response.headers["Allow"].split(",")} >= {"GET"}
    assert "DELETE" not in response.headers["Allow"]


def test_wrong_method_without_a_key_is_still_405(client):
    assert_error(client.put("/api/v1/videos"), 405, "method_not_allowed", details=None)


def test_malformed_json_is_400_with_details(client, tenant):
    response = client.post("/api/v1/videos", data='{"storyId": ', headers={**tenant.headers,
                                                                           "Content-Type": "application/json"})
    error = assert_error(response, 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("", "invalid_json")]


def test_malformed_json_on_patch_is_400(client, tenant):
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", data="{nope",
                            headers={**tenant.headers, "Content-Type": "application/json"})
    error = assert_error(response, 400, "validation_failed")
    assert error["details"][0]["code"] == "invalid_json"


BODY_ROUTES = [
    ("POST", "/api/v1/videos"),
    ("PATCH", "/api/v1/videos/{video}"),
    ("PATCH", "/api/v1/brand-kits/{kit}"),
    ("POST", "/api/v1/videos/{video}/versions/1/restore"),
]


def _path(template, tenant, video):
    return template.format(video=video, kit=tenant.default_kit_id)


@pytest.mark.parametrize(("method", "template"), BODY_ROUTES, ids=[f"{m} {p}" for m, p in BODY_ROUTES])
def test_wrong_content_type_is_415(client, tenant, method, template):
    for content_type in ("application/x-www-form-urlencoded", "text/plain"):
        response = client.open(_path(template, tenant, uuid.uuid4()), method=method, data='{"title": "x"}',
                               headers={**tenant.headers, "Content-Type": content_type})
        assert_error(response, 415, "unsupported_media_type", details=None)


@pytest.mark.parametrize(("method", "template"), BODY_ROUTES, ids=[f"{m} {p}" for m, p in BODY_ROUTES])
def test_body_over_2_mb_is_413(client, tenant, create_video, method, template):
    video = create_video(tenant)["id"] if "{video}" in template else None
    body = b'{"title": "' + b"x" * BIG + b'"}'
    response = client.open(_path(template, tenant, video), method=method, data=body,
                           headers={**tenant.headers, "Content-Type": "application/json"})
    assert_error(response, 413, "payload_too_large", details=None)


def test_a_body_just_under_the_limit_is_read(client, tenant):
    body = b'{"name": "' + b"x" * (BIG - 100) + b'"}'
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", data=body,
                            headers={**tenant.headers, "Content-Type": "application/json"})
    error = assert_error(response, 400, "validation_failed")
    assert [(d["field"], d["code"]) for d in error["details"]] == [("/name", "invalid_length")]


def test_restore_refuses_unknown_body_fields(client, tenant, create_video):
    video = create_video(tenant)
    response = client.post(f"/api/v1/videos/{video['id']}/versions/1/restore", json={"number": 1, "note": ""},
                           headers=tenant.headers)
    error = assert_error(response, 400, "validation_failed")
    assert sorted((d["field"], d["code"]) for d in error["details"]) == [("/note", "invalid_length"),
                                                                         ("/number", "unknown_field")]
    ok = client.post(f"/api/v1/videos/{video['id']}/versions/1/restore", json={}, headers=tenant.headers)
    assert ok.status_code == 200 and ok.get_json()["current_version"]["number"] == 2
    assert ok.get_json()["current_version"]["note"] == "restored version 1"
    noted = client.post(f"/api/v1/videos/{video['id']}/versions/1/restore", json={"note": "the approved cut"},
                        headers=tenant.headers)
    assert noted.status_code == 200
    assert (noted.get_json()["current_version"]["number"], noted.get_json()["current_version"]["note"],
            noted.get_json()["current_version"]["source"]) == (3, "the approved cut", "restore")
    bare = client.post(f"/api/v1/videos/{video['id']}/versions/1/restore", headers=tenant.headers)
    assert bare.status_code == 200 and bare.get_json()["current_version"]["number"] == 4


def test_wrong_method_on_an_id_route_is_405(client, tenant):
    for method, path in (("PUT", f"/api/v1/videos/{uuid.uuid4()}"), ("PUT", f"/api/v1/brand-kits/{uuid.uuid4()}"),
                         ("GET", f"/api/v1/videos/{uuid.uuid4()}/versions/1/restore"), ("POST", "/api/v1/me")):
        assert_error(client.open(path, method=method, headers=tenant.headers), 405, "method_not_allowed")


def test_unexpected_exception_is_500_without_a_trace(services, tenant):
    app = create_app(services=services)

    def explode():
        raise RuntimeError("secret internals: /etc/passwd line 42")

    app.add_url_rule("/api/v1/explode", "explode", explode)
    response = app.test_client().get("/api/v1/explode", headers=tenant.headers)
    assert_error(response, 500, "internal_error", details=None)
    text = response.get_data(as_text=True)
    for leak in ("RuntimeError", "secret internals", "Traceback", "File \"", "explode"):
        assert leak not in text


def test_every_response_carries_the_request_id(client, tenant):
    responses = [
        client.get("/healthz"),
        client.get("/api/v1/openapi.json"),
        client.get("/api/v1/me", headers=tenant.headers),
        client.get("/api/v1/me"),
        client.get("/nope"),
        client.delete("/api/v1/me", headers=tenant.headers),
    ]
    ids = [r.headers["X-Request-Id"] for r in responses]
    assert all(re.match(REQUEST_ID, i) for i in ids)
    assert len(set(ids)) == len(ids)
    for response in responses:
        if response.status_code >= 400:
            assert response.get_json()["error"]["request_id"] == response.headers["X-Request-Id"]


def test_a_safe_client_request_id_is_echoed(client, tenant):
    sent = "client-Trace_01:abc.DEF-" + "9" * 104  # 128 characters
    assert len(sent) == 128
    ok = client.get("/api/v1/me", headers={**tenant.headers, "X-Request-Id": sent})
    assert ok.status_code == 200 and ok.headers["X-Request-Id"] == sent
    failed = client.get("/api/v1/videos/unknown", headers={**tenant.headers, "X-Request-Id": "abc-123"})
    error = assert_error(failed, 404, "not_found")
    assert error["request_id"] == "abc-123"


def test_unsafe_or_long_request_ids_are_replaced(client, tenant):
    for sent in ("a b", "<script>", "x" * 129, "id\"quote", "semi;colon"):
        response = client.get("/api/v1/nope", headers={**tenant.headers, "X-Request-Id": sent})
        error = assert_error(response, 404, "not_found")
        assert error["request_id"] != sent
        assert re.match(REQUEST_ID, error["request_id"])
