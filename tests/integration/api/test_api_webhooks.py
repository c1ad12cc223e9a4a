"""/webhooks: endpoints, their delivery log, redelivery and test events, with a real receiver.

Deliveries run synchronously: the sender and dispatcher enqueue on an
``InlineQueue`` whose ``drain`` runs ``reelfarm.farm.runtime.webhooks.deliver`` here. The clock starts at the real
time because ``standardwebhooks`` checks the signed timestamp against the wall clock.
"""
from __future__ import annotations

import base64
import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks import Webhook

import reelfarm.api.app as app_module
from reelfarm.farm.runtime import webhooks as delivery
from reelfarm.farm.runtime.webhooks import WebhookSender
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.studio.fetch import make_fetcher
from reelfarm.studio.webhooks import WebhookService
from tests.integration.api.support import assert_error, fields_of
from tests.integration.farm import test_webhook_delivery as hooks
from tests.integration.farm.test_webhook_delivery import InlineQueue, mine

WEBHOOK_KEYS = {"id", "url", "description", "events", "enabled", "disabled_reason", "created_at", "updated_at"}
receiver = hooks.receiver  # the real HTTP receiver on loopback, a fixture
DELIVERY_KEYS = {"id", "event_id", "event_type", "attempt", "state", "status_code", "latency_ms", "error",
                 "created_at", "next_attempt_at"}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def settings(tmp_path, db_url: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url,
                              "REELFARM_FETCH_ALLOW_PRIVATE": "1"})


@pytest.fixture
def queue(services) -> InlineQueue:
    queue = InlineQueue()
    services.webhook_sender = WebhookSender(services.engine, queue, services.clock)
    return queue


@pytest.fixture
def app(services, queue):
    return app_module.create_app(services=services)


def create_webhook(client, tenant, url: str, **body: Any) -> dict[str, Any]:
    response = client.post("/api/v1/webhooks", json={"url": url, **body}, headers=tenant.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def deliveries(client, tenant, webhook_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/webhooks/{webhook_id}/deliveries", headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    assert list(response.get_json()) == ["data"]
    return sorted(response.get_json()["data"], key=lambda d: (d["created_at"], d["attempt"]))


def run_outbox(services, queue: InlineQueue, *webhook_ids: str) -> list[Any]:
    """Dispatch the outbox and send what it queued for these endpoints (the PostgreSQL
    database is shared by the session; other tests' rows are left alone)."""
    delivery.dispatch_pending(queue, services.farm.context)
    return send(services, queue, *webhook_ids)


def send(services, queue: InlineQueue, *webhook_ids: str) -> list[Any]:
    mine(services.engine, queue, *webhook_ids)
    return queue.drain()


# -- endpoints ------------------------------------------------------------------------------------

def test_create_shows_the_secret_once(client, tenant, receiver):
    response = client.post("/api/v1/webhooks", headers=tenant.headers,
                           json={"url": receiver.url, "events": ["comment.created"], "description": "CI"})
    assert response.status_code == 201
    created = response.get_json()
    assert set(created) == WEBHOOK_KEYS | {"secret"}
    assert uuid.UUID(created["id"])
    assert (created["url"], created["events"], created["description"], created["enabled"],
            created["disabled_reason"]) == (receiver.url, ["comment.created"], "CI", True, None)
    secret = created["secret"]
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) >= 24
    Webhook(secret)  # the library takes it as is

    listed = client.get("/api/v1/webhooks", headers=tenant.headers)
    one = client.get(f"/api/v1/webhooks/{created['id']}", headers=tenant.headers)
    patched = client.patch(f"/api/v1/webhooks/{created['id']}", json={"description": "x"}, headers=tenant.headers)
    for response in (listed, one, patched):
        assert response.status_code == 200
        assert secret not in response.get_data(as_text=True) and secret[6:] not in response.get_data(as_text=True)
    assert listed.get_json() == {"data": [{k: v for k, v in created.items() if k != "secret"}]}
    assert set(one.get_json()) == WEBHOOK_KEYS
    another = create_webhook(client, tenant, receiver.url)
    assert another["secret"] != secret
    assert another["events"] == []  # every kind


def test_urls_to_private_addresses_are_refused_when_saved(client, services, tenant, monkeypatch):
    """A loopback, private or link-local address is refused when it is saved (created or changed),
    not only at delivery (where the SSRF guard checks again: DNS answers change); a public one,
    or a host that does not resolve yet, is saved."""
    strict = dataclasses.replace(services.settings, fetch_allow_private=False)
    monkeypatch.setattr(services, "webhooks", WebhookService(services.engine, services.clock, make_fetcher(strict)))
    error = assert_error(client.post("/api/v1/webhooks", json={"url": "http://[::1]:8080/x"}, headers=tenant.headers),
                         400, "validation_failed")
    assert fields_of(error) == [("/url", "invalid")]  # IPv6 literals are outside the published pattern
    for url in ("http://127.0.0.1/", "http://10.0.0.1/hook", "https://0x7f000001/", "http://169.254.169.254/latest",
                "http://localhost:8080/hook"):
        error = assert_error(client.post("/api/v1/webhooks", json={"url": url}, headers=tenant.headers),
                             400, "validation_failed")
        assert [d["field"] for d in error["details"]] == ["/url"], url
        assert "public internet addresses only" in error["details"][0]["message"], error
    saved = client.post("/api/v1/webhooks", json={"url": "https://93.184.215.14/hook"}, headers=tenant.headers)
    assert saved.status_code == 201
    later = client.post("/api/v1/webhooks", json={"url": "https://hooks.orbit.invalid/in"}, headers=tenant.headers)
    assert later.status_code == 201  # does not resolve now: every delivery checks again
    changed = client.patch(f"/api/v1/webhooks/{saved.get_json()['id']}", json={"url": "http://192.168.1.20/hook"},
                           headers=tenant.headers)
    assert [d["field"] for d in assert_error(changed, 400, "validation_failed")["details"]] == ["/url"]


def test_invalid_bodies_are_400(client, tenant):
    cases = [({"url": "ftp://example.com/x"}, [("/url", "invalid")]),
             ({"url": "example.com/hook"}, [("/url", "invalid")]),
             ({"url": "https://example.com/hook\n"}, [("/url", "invalid")]),
             ({}, [("/url", "required")]),
             ({"url": "https://93.184.215.14/", "events": ["video.exploded"]}, [("/events/0", "invalid_choice")]),
             ({"url": "https://93.184.215.14/", "secret": "mine"}, [("/secret", "unknown_field")])]
    for body, expected in cases:
        response = client.post("/api/v1/webhooks", json=body, headers=tenant.headers)
        assert fields_of(assert_error(response, 400, "validation_failed")) == expected, body


def test_patch_and_delete(client, tenant, receiver, clock):
    created = create_webhook(client, tenant, receiver.url)
    clock.advance(5)
    response = client.patch(f"/api/v1/webhooks/{created['id']}", headers=tenant.headers,
                            json={"url": receiver.url + "?v=2", "events": ["render.failed", "render.failed"],
                                  "description": "renders", "enabled": False})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["url"], body["events"], body["description"], body["enabled"], body["disabled_reason"]) == \
        (receiver.url + "?v=2", ["render.failed"], "renders", False, "disabled through the API")
    assert body["updated_at"] > body["created_at"]
    body = client.patch(f"/api/v1/webhooks/{created['id']}", json={"enabled": True, "events": None},
                        headers=tenant.headers).get_json()
    assert (body["enabled"], body["disabled_reason"], body["events"]) == (True, None, [])

    response = client.delete(f"/api/v1/webhooks/{created['id']}", headers=tenant.headers)
    assert response.status_code == 204 and response.data == b""
    assert_error(client.get(f"/api/v1/webhooks/{created['id']}", headers=tenant.headers), 404, "not_found")
    assert_error(client.delete(f"/api/v1/webhooks/{created['id']}", headers=tenant.headers), 404, "not_found")


def test_another_workspaces_webhooks_are_404(client, services, queue, tenant, make_tenant, receiver):
    mine_ = create_webhook(client, tenant, receiver.url)
    test = client.post(f"/api/v1/webhooks/{mine_['id']}/test", headers=tenant.headers).get_json()
    other = make_tenant(name="other")
    base = f"/api/v1/webhooks/{mine_['id']}"
    for method, path, body in (("get", base, None), ("patch", base, {"description": "x"}), ("delete", base, None),
                               ("get", base + "/deliveries", None), ("post", base + "/test", None),
                               ("post", f"{base}/deliveries/{test['id']}/redeliver", None)):
        response = getattr(client, method)(path, json=body, headers=other.headers)
        error = assert_error(response, 404, "not_found")
        assert error["message"] == "No such webhook in this workspace."
    assert client.get("/api/v1/webhooks", headers=other.headers).get_json() == {"data": []}
    for path in ("/api/v1/webhooks/not-a-uuid", f"/api/v1/webhooks/{uuid.uuid4()}"):
        assert_error(client.get(path, headers=tenant.headers), 404, "not_found")
    response = client.post(f"{base}/deliveries/{uuid.uuid4()}/redeliver", headers=tenant.headers)
    assert assert_error(response, 404, "not_found")["message"] == "No such delivery in this workspace."
    assert client.get(base, headers=tenant.headers).status_code == 200  # untouched


# -- delivery -----------------------------------------------------------------------------------

def test_a_comment_reaches_the_receiver_once_per_event(client, services, queue, tenant, make_tenant, create_video,
                                                       receiver, clock):
    hook = create_webhook(client, tenant, receiver.url)
    video = create_video(tenant)
    comment = client.post(f"/api/v1/videos/{video['id']}/comments", json={"body": "Nice"},
                          headers=tenant.headers).get_json()
    clock.advance(1)  # the outbox is ordered by time; events of one instant have no order
    assert client.delete(f"/api/v1/comments/{comment['id']}", headers=tenant.headers).status_code == 204
    outsider = make_tenant(name="outsider")  # its events never reach this workspace's endpoint
    create_video(outsider)

    assert run_outbox(services, queue, hook["id"]) == ["succeeded", "succeeded"]
    assert run_outbox(services, queue, hook["id"]) == []
    delivery.dispatch_due(queue, services.farm.context)
    assert send(services, queue, hook["id"]) == []

    bodies = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in receiver.requests]
    assert [b["type"] for b in bodies] == ["comment.created", "comment.deleted"]
    assert [r.headers["webhook-id"] for r in receiver.requests] == [b["id"] for b in bodies]
    assert len({b["id"] for b in bodies}) == 2
    assert all(b["workspace_id"] == tenant.workspace_id for b in bodies)
    assert bodies[0]["data"] == {"comment": comment}
    log = deliveries(client, tenant, hook["id"])
    assert [set(d) for d in log] == [DELIVERY_KEYS] * 2
    assert sorted((d["event_id"], d["event_type"], d["attempt"], d["state"], d["status_code"]) for d in log) == \
        sorted([(bodies[0]["id"], "comment.created", 1, "succeeded", 200),
                (bodies[1]["id"], "comment.deleted", 1, "succeeded", 200)])


def test_a_500_is_retried_with_the_same_webhook_id_and_both_attempts_are_logged(client, services, queue, tenant,
                                                                                 create_video, receiver, clock):
    hook = create_webhook(client, tenant, receiver.url, events=["comment.created"])
    video = create_video(tenant)
    client.post(f"/api/v1/videos/{video['id']}/comments", json={"body": "x"}, headers=tenant.headers)
    receiver.statuses = [500]
    assert run_outbox(services, queue, hook["id"]) == ["failed"]
    first, retry = deliveries(client, tenant, hook["id"])
    assert (first["attempt"], first["state"], first["status_code"], first["error"]) == \
        (1, "failed", 500, "the endpoint answered 500")
    assert (retry["attempt"], retry["state"], retry["status_code"], retry["latency_ms"]) == (2, "pending", None, None)
    assert first["next_attempt_at"] == retry["next_attempt_at"]
    due = datetime.fromisoformat(retry["next_attempt_at"])
    assert 4.5 <= (due - clock.now()).total_seconds() <= 5.5

    clock.advance(6)
    delivery.dispatch_due(queue, services.farm.context)
    assert send(services, queue, hook["id"]) == ["succeeded"]
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert len(ids) == 2 and ids[0] == ids[1] == first["event_id"]
    for request in receiver.requests:
        Webhook(hook["secret"]).verify(request.body, request.headers)
    log = deliveries(client, tenant, hook["id"])
    assert [(d["attempt"], d["state"], d["status_code"]) for d in log] == [(1, "failed", 500), (2, "succeeded", 200)]
    assert all(isinstance(d["latency_ms"], int) and d["latency_ms"] >= 0 for d in log)


def test_410_disables_the_endpoint(client, services, queue, tenant, receiver):
    hook = create_webhook(client, tenant, receiver.url)
    receiver.statuses = [410]
    test = client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=tenant.headers)
    assert test.status_code == 202
    assert send(services, queue, hook["id"]) == ["failed"]
    body = client.get(f"/api/v1/webhooks/{hook['id']}", headers=tenant.headers).get_json()
    assert body["enabled"] is False
    assert body["disabled_reason"].startswith("answered 410 Gone to event evt_")
    [attempt] = deliveries(client, tenant, hook["id"])
    assert (attempt["state"], attempt["status_code"], attempt["next_attempt_at"]) == ("failed", 410, None)
    response = client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=tenant.headers)
    assert assert_error(response, 409, "conflict")
    response = client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{attempt['id']}/redeliver",
                           headers=tenant.headers)
    assert_error(response, 409, "conflict")


def test_test_event_goes_to_that_endpoint_only_and_redeliver_resends_it(client, services, queue, tenant, receiver):
    hook = create_webhook(client, tenant, receiver.url + "?one")
    other = create_webhook(client, tenant, receiver.url + "?two")
    response = client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=tenant.headers)
    assert response.status_code == 202
    queued = response.get_json()
    assert set(queued) == DELIVERY_KEYS
    assert (queued["event_type"], queued["attempt"], queued["state"], queued["status_code"]) == \
        ("webhook.test", 1, "pending", None)
    assert queued["event_id"].startswith("evt_")
    assert send(services, queue, hook["id"], other["id"]) == ["succeeded"]
    assert run_outbox(services, queue, hook["id"], other["id"]) == []  # the outbox row is already dispatched

    [request] = receiver.requests
    assert request.path == "/hook?one"
    body = Webhook(hook["secret"]).verify(request.body, request.headers)
    assert (body["id"], body["type"], body["data"]) == \
        (queued["event_id"], "webhook.test", {"webhook": {"id": hook["id"], "url": receiver.url + "?one"}})

    response = client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{queued['id']}/redeliver",
                           headers=tenant.headers)
    assert response.status_code == 202
    again = response.get_json()
    assert (again["event_id"], again["attempt"], again["state"]) == (queued["event_id"], 2, "pending")
    assert again["id"] != queued["id"]
    assert send(services, queue, hook["id"]) == ["succeeded"]
    assert [r.headers["webhook-id"] for r in receiver.requests] == [queued["event_id"]] * 2
    assert deliveries(client, tenant, other["id"]) == []
    log = deliveries(client, tenant, hook["id"])
    assert [(d["attempt"], d["state"]) for d in log] == [(1, "succeeded"), (2, "succeeded")]


def test_the_operations_are_documented(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    paths = spec["paths"]
    assert set(paths["/api/v1/webhooks"]) >= {"get", "post"}
    assert set(paths["/api/v1/webhooks/{webhook_id}"]) >= {"get", "patch", "delete"}
    assert "202" in paths["/api/v1/webhooks/{webhook_id}/test"]["post"]["responses"]
    assert "202" in paths["/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"]["post"]["responses"]
    assert "secret" not in spec["components"]["schemas"]["Webhook"]["properties"]
    assert "secret" in spec["components"]["schemas"]["WebhookCreated"]["properties"]


def test_the_document_with_webhooks_is_valid_openapi_3_1(client):
    from openapi_spec_validator import validate

    validate(client.get("/api/v1/openapi.json").get_json())
