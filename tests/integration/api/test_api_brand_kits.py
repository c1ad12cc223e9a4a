"""GET /brand-kits, GET and PATCH /brand-kits/{id}."""
from __future__ import annotations

import copy
import uuid

from reelfarm.renderer.tokens import NEUTRAL_BRAND
from tests.integration.api.support import assert_error, fields_of

KIT_KEYS = {"id", "name", "source_url", "is_default", "tokens", "created_at", "updated_at"}


def test_list_has_the_default_kit_first(client, make_tenant):
    tenant = make_tenant(second_kit=True)
    response = client.get("/api/v1/brand-kits", headers=tenant.headers)
    assert response.status_code == 200
    body = response.get_json()
    assert list(body) == ["data"]
    kits = body["data"]
    assert [k["id"] for k in kits] == [tenant.default_kit_id, tenant.other_kit_id]
    assert all(set(k) == KIT_KEYS for k in kits)
    default, other = kits
    assert default["is_default"] is True and other["is_default"] is False
    assert default["name"] == "Default" and default["source_url"] is None
    assert default["tokens"] == NEUTRAL_BRAND
    assert default["created_at"] == "2025-03-01T09:00:00+00:00"
    assert other["source_url"] == "https://example.com"


def test_get_one(client, tenant):
    response = client.get(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers)
    assert response.status_code == 200
    kit = response.get_json()
    assert set(kit) == KIT_KEYS
    assert kit["id"] == tenant.default_kit_id and kit["tokens"] == NEUTRAL_BRAND


def test_get_missing_is_404(client, tenant):
    error = assert_error(client.get(f"/api/v1/brand-kits/{uuid.uuid4()}", headers=tenant.headers),
                         404, "not_found", details=None)
    assert "brand kit" in error["message"]


def test_rename(client, clock, tenant):
    clock.advance(60)
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"name": "House style"},
                            headers=tenant.headers)
    assert response.status_code == 200
    kit = response.get_json()
    assert kit["name"] == "House style" and kit["is_default"] is True and kit["tokens"] == NEUTRAL_BRAND
    assert kit["updated_at"] == "2025-03-01T09:01:00+00:00" and kit["created_at"] == "2025-03-01T09:00:00+00:00"
    again = client.get(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers).get_json()
    assert again == kit


def test_replace_tokens(client, tenant):
    tokens = copy.deepcopy(NEUTRAL_BRAND)
    tokens["colors"]["primary"] = "#123456"
    tokens["palette"] = ["#123456", "#ABCDEF"]
    tokens["fonts"]["heading"] = {"family": "Poppins", "weight": 700}
    tokens["tagline"] = "Made with care"
    tokens["radius"] = 0.1
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"tokens": tokens},
                            headers=tenant.headers)
    assert response.status_code == 200
    assert response.get_json()["tokens"] == tokens
    listed = client.get("/api/v1/brand-kits", headers=tenant.headers).get_json()["data"]
    assert listed[0]["tokens"] == tokens


def test_invalid_tokens_list_every_problem_per_field(client, tenant):
    tokens = copy.deepcopy(NEUTRAL_BRAND)
    tokens["colors"]["primary"] = "red"
    del tokens["colors"]["text"]
    tokens["palette"] = ["#FFFFFF", "blue"]
    tokens["radius"] = 3
    tokens["fonts"]["body"]["weight"] = 1000
    tokens["extra"] = True
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"tokens": tokens, "name": ""},
                            headers=tenant.headers)
    error = assert_error(response, 400, "validation_failed")
    assert sorted(fields_of(error)) == sorted([
        ("/name", "invalid_length"),
        ("/tokens/colors/primary", "invalid"),
        ("/tokens/colors/text", "required"),
        ("/tokens/palette/1", "invalid"),
        ("/tokens/radius", "out_of_range"),
        ("/tokens/fonts/body/weight", "out_of_range"),
        ("/tokens/extra", "unknown_field"),
    ])
    assert all(d["message"] for d in error["details"])
    unchanged = client.get(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers).get_json()
    assert unchanged["tokens"] == NEUTRAL_BRAND and unchanged["name"] == "Default"


def test_make_another_kit_the_default(client, make_tenant):
    tenant = make_tenant(second_kit=True)
    response = client.patch(f"/api/v1/brand-kits/{tenant.other_kit_id}", json={"is_default": True},
                            headers=tenant.headers)
    assert response.status_code == 200
    assert response.get_json()["is_default"] is True
    kits = client.get("/api/v1/brand-kits", headers=tenant.headers).get_json()["data"]
    assert [(k["id"], k["is_default"]) for k in kits] == [(tenant.other_kit_id, True),
                                                          (tenant.default_kit_id, False)]


def test_unsetting_the_default_is_refused(client, tenant):
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"is_default": False},
                            headers=tenant.headers)
    error = assert_error(response, 400, "validation_failed")
    assert fields_of(error) == [("/is_default", "invalid")]


def test_unknown_body_field_is_refused(client, tenant):
    response = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"colour": "#000000"},
                            headers=tenant.headers)
    error = assert_error(response, 400, "validation_failed")
    assert fields_of(error) == [("/colour", "unknown_field")]


def test_patch_missing_is_404(client, tenant):
    assert_error(client.patch(f"/api/v1/brand-kits/{uuid.uuid4()}", json={"name": "x"}, headers=tenant.headers),
                 404, "not_found", details=None)


def test_another_workspaces_kit_is_404(client, make_tenant):
    mine, theirs = make_tenant(), make_tenant(second_kit=True, name="other")
    for kit_id in (theirs.default_kit_id, theirs.other_kit_id):
        assert_error(client.get(f"/api/v1/brand-kits/{kit_id}", headers=mine.headers), 404, "not_found")
        assert_error(client.patch(f"/api/v1/brand-kits/{kit_id}", json={"name": "stolen", "is_default": True},
                                  headers=mine.headers), 404, "not_found")
    assert [k["id"] for k in client.get("/api/v1/brand-kits", headers=mine.headers).get_json()["data"]] == [
        mine.default_kit_id]
    theirs_now = client.get("/api/v1/brand-kits", headers=theirs.headers).get_json()["data"]
    assert [(k["id"], k["name"], k["is_default"]) for k in theirs_now] == [
        (theirs.default_kit_id, "Default", True), (theirs.other_kit_id, "Second", False)]


def test_patch_without_a_body_or_with_an_empty_one_is_400(client, tenant):
    kit_id = tenant.default_kit_id
    for kwargs in ({}, {"json": {}}):
        response = client.patch(f"/api/v1/brand-kits/{kit_id}", headers=tenant.headers, **kwargs)
        error = assert_error(response, 400, "validation_failed")
        assert error["details"][0]["code"] == "empty_update"
