"""Input that JSON or URLs allow but a database cannot hold: a 400 or 404, never a 500.

PostgreSQL refuses NUL characters in text and JSONB; no backend can encode a lone surrogate;
NaN and Infinity are not JSON (RFC 8259) though Python's parser accepts them.
"""
from __future__ import annotations

import base64
import json

import pytest

from reelfarm.api.jsonbody import MAX_DEPTH
from tests.integration.api.support import assert_error, fields_of

NUL_TITLE = '{"storyId": "announcement", "title": "a\\u0000b"}'
SURROGATE_FIELD = '{"storyId": "announcement", "fields": {"headline": "a\\ud800b"}}'
NUL_KEY = '{"storyId": "announcement", "fields": {"head\\u0000line": "x"}}'
NAN_DURATION = '{"storyId": "announcement", "durationSec": NaN}'


def post_raw(client, tenant, path, raw, method="POST"):
    return client.open(path, method=method, data=raw, headers={**tenant.headers, "Content-Type": "application/json"})


@pytest.mark.parametrize(("raw", "expected"), [
    (NUL_TITLE, [("/title", "invalid_character")]),
    (SURROGATE_FIELD, [("/fields/headline", "invalid_character")]),
    (NUL_KEY, [("/fields/head\x00line", "invalid_character")]),
    (NAN_DURATION, [("/durationSec", "not_finite")]),
], ids=["nul", "surrogate", "nul-key", "nan"])
def test_create_refuses_unstorable_values(client, tenant, raw, expected):
    error = assert_error(post_raw(client, tenant, "/api/v1/videos", raw), 400, "validation_failed")
    assert fields_of(error) == expected
    assert client.get("/api/v1/videos", headers=tenant.headers).get_json()["data"] == []


def test_patch_refuses_a_doc_with_nan_or_infinity(client, tenant, create_video):
    video = create_video(tenant)
    doc = video["current_version"]["doc"]
    raw = json.dumps({"doc": {**doc, "duration": "DURATION"}}).replace('"DURATION"', "NaN")
    raw = raw.replace('"fps": 30', '"fps": Infinity')
    error = assert_error(post_raw(client, tenant, f"/api/v1/videos/{video['id']}", raw, "PATCH"),
                         400, "validation_failed")
    assert sorted(fields_of(error)) == [("/doc/duration", "not_finite"), ("/doc/fps", "not_finite")]
    response = client.get(f"/api/v1/videos/{video['id']}/versions", headers=tenant.headers)
    assert len(response.get_json()["data"]) == 1


def test_patch_refuses_nul_in_fields_and_brand_kit_names(client, tenant, create_video):
    video = create_video(tenant)
    error = assert_error(client.patch(f"/api/v1/videos/{video['id']}", json={"fields": {"headline": "a\x00"}},
                                      headers=tenant.headers), 400, "validation_failed")
    assert fields_of(error) == [("/fields/headline", "invalid_character")]
    error = assert_error(client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", json={"name": "a\x00"},
                                      headers=tenant.headers), 400, "validation_failed")
    assert fields_of(error) == [("/name", "invalid_character")]


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/v1/videos/{bad}"),
    ("PATCH", "/api/v1/videos/{bad}"),
    ("DELETE", "/api/v1/videos/{bad}"),
    ("GET", "/api/v1/videos/{bad}/versions"),
    ("GET", "/api/v1/videos/{bad}/versions/1"),
    ("POST", "/api/v1/videos/{bad}/versions/1/restore"),
    ("GET", "/api/v1/brand-kits/{bad}"),
    ("PATCH", "/api/v1/brand-kits/{bad}"),
])
def test_ids_that_are_not_uuids_are_404(client, tenant, method, path):
    body = {"title": "x"} if method == "PATCH" and "videos" in path else {"name": "x"} if method == "PATCH" else None
    for bad in ("a%00b", "not-a-uuid", "x" * 300):
        response = client.open(path.format(bad=bad), method=method, json=body, headers=tenant.headers)
        assert_error(response, 404, "not_found", details=None)


def test_a_cursor_with_a_nul_is_400(client, tenant):
    cursor = base64.urlsafe_b64encode(json.dumps(["2025-01-01T00:00:00+00:00", "a\x00"]).encode()).decode()
    error = assert_error(client.get("/api/v1/videos", query_string={"cursor": cursor}, headers=tenant.headers),
                         400, "validation_failed")
    assert fields_of(error) == [("cursor", "invalid")]


@pytest.mark.parametrize("number", ["0", "434935175632327802880"])
def test_out_of_range_version_numbers_are_404(client, tenant, create_video, number):
    video = create_video(tenant)
    for method, path in (("get", f"/api/v1/videos/{video['id']}/versions/{number}"),
                         ("post", f"/api/v1/videos/{video['id']}/versions/{number}/restore")):
        response = getattr(client, method)(path, headers=tenant.headers)
        assert_error(response, 404, "not_found")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 990, 100_000])
@pytest.mark.parametrize("method,path", [("POST", "/api/v1/videos"), ("PATCH", "/api/v1/videos/{video}"),
                                         ("POST", "/api/v1/webhooks"), ("PATCH", "/api/v1/brand-kits/{kit}")])
def test_json_nested_too_deep_is_a_400_everywhere(client, tenant, create_video, depth, method, path):
    video = create_video(tenant)
    raw = '{"storyId": "announcement", "fields": {"headline": ' + _nested(depth) + '}}'
    response = post_raw(client, tenant, path.format(video=video["id"], kit=tenant.default_kit_id), raw, method)
    error = assert_error(response, 400, "validation_failed")
    assert {d["code"] for d in error["details"]} == {"too_deep"}
    assert str(MAX_DEPTH) in error["details"][0]["message"]
    assert len(client.get("/api/v1/videos", headers=tenant.headers).get_json()["data"]) == 1


def test_json_as_deep_as_allowed_is_read(client, tenant):
    # MAX_DEPTH levels in all: the body object, "fields", then arrays to the limit
    raw = '{"storyId": "announcement", "fields": {"headline": ' + _nested(MAX_DEPTH - 2) + '}}'
    error = assert_error(post_raw(client, tenant, "/api/v1/videos", raw), 400, "validation_failed")
    assert "too_deep" not in {d["code"] for d in error["details"]}  # refused for its type, not its depth


def test_duplicate_keys_are_refused_by_pointer(client, tenant, create_video):
    raw = '{"storyId": "announcement", "storyId": "flash_sale", "fields": {"headline": "a", "headline": "b"}}'
    error = assert_error(post_raw(client, tenant, "/api/v1/videos", raw), 400, "validation_failed")
    assert fields_of(error) == [("/storyId", "duplicate_key"), ("/fields/headline", "duplicate_key")]
    assert client.get("/api/v1/videos", headers=tenant.headers).get_json()["data"] == []
    video = create_video(tenant)
    doc = json.dumps(video["current_version"]["doc"])
    doubled = doc.replace('"version": 1', '"version": 1, "version": 1', 1)
    raw = '{"doc": ' + doubled + ', "note": "x", "note": "y"}'
    error = assert_error(post_raw(client, tenant, f"/api/v1/videos/{video['id']}", raw, "PATCH"), 400, "validation_failed")
    assert sorted(fields_of(error)) == [("/doc/version", "duplicate_key"), ("/note", "duplicate_key")]


@pytest.mark.parametrize("raw,where", [('{"storyId": "announcement",}', "line 1 column 28"),
                                       ('{"storyId"\n: }', "line 2 column 3"), (b'{"a": "\xff"}', "UTF-8")])
def test_malformed_json_says_where(client, tenant, raw, where):
    error = assert_error(post_raw(client, tenant, "/api/v1/videos", raw), 400, "validation_failed")
    assert fields_of(error) == [("", "invalid_json")] and where in error["details"][0]["message"]
