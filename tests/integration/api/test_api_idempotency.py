"""`Idempotency-Key` on POST: replay of the first answer, mismatch, in-flight, 4xx stored, 5xx not
stored, lease and 24 h expiry, and concurrent identical requests creating exactly one object.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from flask import Flask, jsonify
from werkzeug.serving import make_server

from reelfarm.api.idempotency import LEASE, TTL
from reelfarm.shared.repos import idempotency as idem_repo
from tests.integration.api.support import assert_error

VIDEO = {"storyId": "announcement"}


def _key(headers: dict[str, str], key: str) -> dict[str, str]:
    return {**headers, "Idempotency-Key": key}


def _video_ids(client, tenant) -> list[str]:
    return [v["id"] for v in client.get("/api/v1/videos?limit=100", headers=tenant.headers).get_json()["data"]]


@pytest.fixture
def served(app: Flask) -> Iterator[str]:
    """The app behind a real threaded HTTP server on 127.0.0.1; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


def _parallel(count: int, send: Callable[[], httpx.Response]) -> list[httpx.Response]:
    barrier = threading.Barrier(count)

    def go() -> httpx.Response:
        barrier.wait()
        return send()
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: go(), range(count)))


# --- replay ----------------------------------------------------------------------------------------

def test_same_key_and_request_replays_the_first_answer(client, tenant, clock):
    first = client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, "create-1"))
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    clock.advance(5)
    again = client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, "create-1"))
    assert again.status_code == 201
    assert again.get_data() == first.get_data()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Content-Type"] == "application/json"
    assert again.headers["X-Request-Id"] != first.headers["X-Request-Id"]
    assert again.headers["RateLimit-Remaining"] == "598"  # a replay is still a request
    assert _video_ids(client, tenant) == [first.get_json()["id"]]


def test_key_order_and_spacing_of_the_body_do_not_matter(client, tenant):
    first = client.post("/api/v1/videos", data='{"storyId": "announcement", "format": "16:9"}',
                        content_type="application/json", headers=_key(tenant.headers, "k"))
    again = client.post("/api/v1/videos", data='{"format":"16:9","storyId":"announcement"}',
                        content_type="application/json", headers=_key(tenant.headers, "k"))
    assert again.headers["Idempotent-Replayed"] == "true" and again.get_data() == first.get_data()


def test_without_a_key_every_post_creates(client, tenant):
    for _ in range(2):
        assert client.post("/api/v1/videos", json=VIDEO, headers=tenant.headers).status_code == 201
    assert len(_video_ids(client, tenant)) == 2


def test_keys_are_scoped_to_the_workspace(client, make_tenant):
    one, two = make_tenant(), make_tenant(name="other")
    a = client.post("/api/v1/videos", json=VIDEO, headers=_key(one.headers, "shared-key"))
    b = client.post("/api/v1/videos", json=VIDEO, headers=_key(two.headers, "shared-key"))
    assert a.status_code == b.status_code == 201 and "Idempotent-Replayed" not in b.headers
    assert a.get_json()["id"] != b.get_json()["id"]


def test_a_key_expires_after_24_hours(client, tenant, clock):
    first = client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, "daily"))
    clock.advance(TTL.total_seconds() - 1)
    assert client.post("/api/v1/videos", json=VIDEO,
                       headers=_key(tenant.headers, "daily")).headers["Idempotent-Replayed"] == "true"
    clock.advance(1)
    later = client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, "daily"))
    assert later.status_code == 201 and "Idempotent-Replayed" not in later.headers
    assert later.get_json()["id"] != first.get_json()["id"]


# --- the key itself --------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["", "x" * 256, "caf\xe9", "tab\there"])
def test_a_malformed_key_is_400(client, tenant, key):
    r = client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, key))
    error = assert_error(r, 400, "validation_failed")
    assert [d["field"] for d in error["details"]] == ["Idempotency-Key"]
    assert _video_ids(client, tenant) == []


def test_the_longest_and_oddest_printable_keys_are_accepted(client, tenant):
    for key in ("x" * 255, "a b~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"):
        assert client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, key)).status_code == 201


# --- mismatch and in flight ------------------------------------------------------------------------

def test_same_key_with_another_body_or_path_is_422(client, tenant, create_video):
    video = create_video(tenant)
    client.post("/api/v1/videos", json=VIDEO, headers=_key(tenant.headers, "k1"))
    r = client.post("/api/v1/videos", json={**VIDEO, "title": "Other"}, headers=_key(tenant.headers, "k1"))
    assert_error(r, 422, "idempotency_key_mismatch")
    r = client.post(f"/api/v1/videos/{video['id']}/renders", json=VIDEO, headers=_key(tenant.headers, "k1"))
    assert_error(r, 422, "idempotency_key_mismatch")
    assert len(_video_ids(client, tenant)) == 2
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"] == []


def test_a_key_held_by_a_running_request_is_409_until_its_lease_ends(client, tenant, services, clock):
    path = "/api/v1/videos"
    body_hash = _hash_of(VIDEO)
    claim = idem_repo.claim_key(services.engine, tenant.workspace_id, "busy",
                                idem_repo.Fingerprint("POST", path, body_hash), clock.now(), LEASE, TTL)
    assert claim.claimed
    r = client.post(path, json=VIDEO, headers=_key(tenant.headers, "busy"))
    assert_error(r, 409, "idempotency_key_in_use")
    assert r.headers["Retry-After"] == "1"
    r = client.post(path, json={**VIDEO, "title": "x"}, headers=_key(tenant.headers, "busy"))
    assert_error(r, 422, "idempotency_key_mismatch")
    clock.advance(LEASE.total_seconds())  # the first request died: its lease ran out
    r = client.post(path, json=VIDEO, headers=_key(tenant.headers, "busy"))
    assert r.status_code == 201 and "Idempotent-Replayed" not in r.headers
    assert client.post(path, json=VIDEO, headers=_key(tenant.headers, "busy")).headers["Idempotent-Replayed"] == "true"


def test_a_request_executing_now_makes_the_same_key_409(app, client, tenant):
    entered, release = threading.Event(), threading.Event()

    def slow() -> Any:
        entered.set()
        release.wait(10)
        return jsonify({"done": True}), 201
    app.add_url_rule("/api/v1/test-slow", "test_slow", slow, methods=["POST"])
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(client.post, "/api/v1/test-slow", json={}, headers=_key(tenant.headers, "slow"))
        assert entered.wait(10)
        r = client.post("/api/v1/test-slow", json={}, headers=_key(tenant.headers, "slow"))
        assert_error(r, 409, "idempotency_key_in_use")
        release.set()
        assert first.result(10).status_code == 201
    r = client.post("/api/v1/test-slow", json={}, headers=_key(tenant.headers, "slow"))
    assert r.status_code == 201 and r.get_json() == {"done": True} and r.headers["Idempotent-Replayed"] == "true"


# --- which answers are stored ----------------------------------------------------------------------

def test_4xx_answers_are_stored_and_replayed(client, make_tenant, services, clock):
    tenant = make_tenant(credits=0)
    bad = client.post("/api/v1/videos", json={"storyId": "no-such-story"}, headers=_key(tenant.headers, "bad"))
    assert_error(bad, 400, "validation_failed")
    again = client.post("/api/v1/videos", json={"storyId": "no-such-story"}, headers=_key(tenant.headers, "bad"))
    assert again.status_code == 400 and again.get_data() == bad.get_data()
    assert again.headers["Idempotent-Replayed"] == "true"

    video = client.post("/api/v1/videos", json=VIDEO, headers=tenant.headers).get_json()
    render = f"/api/v1/videos/{video['id']}/renders"
    poor = client.post(render, json={"format": "16:9"}, headers=_key(tenant.headers, "render"))
    assert_error(poor, 402, "insufficient_credits")
    from reelfarm.shared.db import transaction
    from reelfarm.shared.repos import workspaces as ws_repo
    with transaction(services.engine) as conn:
        ws_repo.add_credits(conn, clock, workspace_id=tenant.workspace_id, delta=5, reason="test")
    replay = client.post(render, json={"format": "16:9"}, headers=_key(tenant.headers, "render"))
    assert replay.status_code == 402 and replay.get_data() == poor.get_data()
    assert client.get(render, headers=tenant.headers).get_json()["data"] == []


def test_5xx_answers_are_not_stored_and_the_key_may_be_retried(app, client, tenant):
    calls: list[int] = []

    def flaky() -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return jsonify({"call": len(calls)}), 201
    app.add_url_rule("/api/v1/test-flaky", "test_flaky", flaky, methods=["POST"])
    failed = client.post("/api/v1/test-flaky", json={"a": 1}, headers=_key(tenant.headers, "retry-me"))
    assert_error(failed, 500, "internal_error")
    ok = client.post("/api/v1/test-flaky", json={"a": 1}, headers=_key(tenant.headers, "retry-me"))
    assert ok.status_code == 201 and ok.get_json() == {"call": 2} and "Idempotent-Replayed" not in ok.headers
    replay = client.post("/api/v1/test-flaky", json={"a": 1}, headers=_key(tenant.headers, "retry-me"))
    assert replay.get_json() == {"call": 2} and replay.headers["Idempotent-Replayed"] == "true"
    assert len(calls) == 2


# --- concurrency: a real threaded server -----------------------------------------------------------

def test_twenty_parallel_identical_creates_make_one_video(served, client, tenant):
    headers = _key(tenant.headers, "parallel-create")
    with httpx.Client(base_url=served, timeout=60) as http:
        responses = _parallel(20, lambda: http.post("/api/v1/videos", json=VIDEO, headers=headers))
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {201, 409} and 201 in statuses, statuses
    created = [r for r in responses if r.status_code == 201]
    assert len({r.content for r in created}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") != "true" for r in created) == 1
    for r in responses:
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "idempotency_key_in_use"
    assert _video_ids(client, tenant) == [created[0].json()["id"]]


def test_twenty_parallel_identical_renders_charge_once(served, client, make_tenant):
    tenant = make_tenant(credits=5)
    video = client.post("/api/v1/videos", json=VIDEO, headers=tenant.headers).get_json()
    path = f"/api/v1/videos/{video['id']}/renders"
    headers = _key(tenant.headers, "parallel-render")
    with httpx.Client(base_url=served, timeout=60) as http:
        responses = _parallel(20, lambda: http.post(path, json={"format": "16:9"}, headers=headers))
    statuses = {r.status_code for r in responses}
    assert statuses <= {202, 409} and 202 in statuses, statuses
    assert len({r.content for r in responses if r.status_code == 202}) == 1
    renders = client.get(path, headers=tenant.headers).get_json()["data"]
    assert len(renders) == 1
    assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 4


# --- documentation ---------------------------------------------------------------------------------

def test_openapi_documents_the_key_and_its_errors_on_every_post(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    posts = [(path, item["post"]) for path, item in spec["paths"].items() if "post" in item]
    assert len(posts) >= 5
    for path, op in posts:
        names = [p["name"] for p in op.get("parameters", []) if p["in"] == "header"]
        # a restore also takes the version it was made from (If-Match); no other POST does
        expected = ["Idempotency-Key", "If-Match"] if path.endswith("/restore") else ["Idempotency-Key"]
        assert names == expected, path
        assert {"400", "409", "422", "429"} <= set(op["responses"]), path
        assert "idempotency_key_in_use" in op["responses"]["409"]["description"], path
    assert "Idempotency-Key" not in str(spec["paths"]["/api/v1/videos"]["get"])


def _hash_of(body: dict[str, Any]) -> str:
    import json

    from reelfarm.api.idempotency import _body_hash

    return _body_hash(json.dumps(body).encode())
