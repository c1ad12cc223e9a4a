"""POST/GET /videos/{id}/comments and DELETE /comments/{id}, with their outbox events."""
from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import select

from reelfarm.shared.tables import comments, event_outbox
from reelfarm.studio import comments as comments_resource
from tests.integration.api.support import assert_error, fields_of

COMMENT_KEYS = {"id", "video_id", "body", "time_sec", "author", "created_at"}


def events(services, tenant) -> list[tuple[str, dict[str, Any]]]:
    """The workspace's outbox, oldest first, as (type, payload)."""
    with services.engine.connect() as conn:
        rows = conn.execute(select(event_outbox.c.type, event_outbox.c.payload, event_outbox.c.id)
                            .where(event_outbox.c.workspace_id == tenant.workspace_id)
                            .order_by(event_outbox.c.created_at, event_outbox.c.type)).all()
    assert all(row.id.startswith("evt_") for row in rows)
    return [(row.type, row.payload) for row in rows]


def post_comment(client, tenant, video_id: str, **body: Any):
    return client.post(f"/api/v1/videos/{video_id}/comments", json=body, headers=tenant.headers)


def listed(client, tenant, video_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/videos/{video_id}/comments", headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    assert list(response.get_json()) == ["data"]
    return response.get_json()["data"]


def test_create_returns_the_comment_and_writes_its_event(client, services, tenant, create_video):
    video = create_video(tenant)
    response = post_comment(client, tenant, video["id"], body="Tighten the intro", time_sec=1.5, author="Ana")
    assert response.status_code == 201
    comment = response.get_json()
    assert set(comment) == COMMENT_KEYS
    assert uuid.UUID(comment["id"])
    assert (comment["video_id"], comment["body"], comment["time_sec"], comment["author"]) == \
        (video["id"], "Tighten the intro", 1.5, "Ana")
    assert comment["created_at"].startswith("2025-03-01T09:00:")
    assert events(services, tenant) == [("comment.created", {"comment": comment})]


def test_optional_fields_default_to_null(client, services, tenant, create_video):
    video = create_video(tenant)
    response = post_comment(client, tenant, video["id"], body="x")
    assert response.status_code == 201
    comment = response.get_json()
    assert comment["time_sec"] is None and comment["author"] is None
    assert events(services, tenant) == [("comment.created", {"comment": comment})]


def test_time_at_both_ends_of_the_video_is_accepted(client, tenant, create_video):
    video = create_video(tenant)
    duration = video["duration_sec"]
    assert post_comment(client, tenant, video["id"], body="start", time_sec=0).status_code == 201
    assert post_comment(client, tenant, video["id"], body="end", time_sec=duration).status_code == 201


def test_list_is_oldest_first(client, clock, tenant, create_video):
    video = create_video(tenant)
    made = []
    for text in ("first", "second", "third"):
        made.append(post_comment(client, tenant, video["id"], body=text).get_json())
        clock.advance(1)
    assert listed(client, tenant, video["id"]) == made


def test_list_of_a_video_without_comments_is_empty(client, tenant, create_video):
    video = create_video(tenant)
    assert listed(client, tenant, video["id"]) == []


def test_list_is_per_video(client, tenant, create_video):
    one, two = create_video(tenant), create_video(tenant)
    mine = post_comment(client, tenant, one["id"], body="on one").get_json()
    post_comment(client, tenant, two["id"], body="on two")
    assert listed(client, tenant, one["id"]) == [mine]


def test_delete_hides_the_comment_and_writes_its_event(client, services, clock, tenant, create_video):
    video = create_video(tenant)
    kept = post_comment(client, tenant, video["id"], body="keep").get_json()
    clock.advance(1)
    gone = post_comment(client, tenant, video["id"], body="drop").get_json()
    clock.advance(1)
    response = client.delete(f"/api/v1/comments/{gone['id']}", headers=tenant.headers)
    assert response.status_code == 204
    assert response.get_data() == b""
    assert listed(client, tenant, video["id"]) == [kept]
    assert events(services, tenant) == [("comment.created", {"comment": kept}),
                                        ("comment.created", {"comment": gone}),
                                        ("comment.deleted", {"comment": gone})]
    with services.engine.connect() as conn:
        deleted_at = conn.execute(select(comments.c.deleted_at).where(comments.c.id == gone["id"])).scalar_one()
    assert deleted_at == clock.now()  # soft: the row stays, marked


def test_second_delete_is_404_and_writes_no_event(client, services, tenant, create_video):
    video = create_video(tenant)
    comment = post_comment(client, tenant, video["id"], body="once").get_json()
    assert client.delete(f"/api/v1/comments/{comment['id']}", headers=tenant.headers).status_code == 204
    before = events(services, tenant)
    response = client.delete(f"/api/v1/comments/{comment['id']}", headers=tenant.headers)
    error = assert_error(response, 404, "not_found", None)
    assert error["message"] == "No such comment in this workspace."
    assert events(services, tenant) == before


@pytest.mark.parametrize("comment_id", ["0b6f3a52-94c1-4d7e-8a35-5f2d1c9e7a40", "not-a-uuid", "x" * 300])
def test_delete_of_unknown_comment_is_404(client, services, tenant, comment_id):
    response = client.delete(f"/api/v1/comments/{comment_id}", headers=tenant.headers)
    assert_error(response, 404, "not_found", None)
    assert events(services, tenant) == []


def test_other_workspaces_see_nothing(client, services, make_tenant, create_video):
    owner, stranger = make_tenant(), make_tenant(name="other")
    video = create_video(owner)
    comment = post_comment(client, owner, video["id"], body="private").get_json()
    assert_error(post_comment(client, stranger, video["id"], body="hi"), 404, "not_found", None)
    assert_error(client.get(f"/api/v1/videos/{video['id']}/comments", headers=stranger.headers),
                 404, "not_found", None)
    assert_error(client.delete(f"/api/v1/comments/{comment['id']}", headers=stranger.headers),
                 404, "not_found", None)
    assert events(services, stranger) == []
    assert listed(client, owner, video["id"]) == [comment]  # untouched
    assert [t for t, _ in events(services, owner)] == ["comment.created"]


def test_unknown_video_is_404(client, services, tenant):
    missing = str(uuid.uuid4())
    assert_error(post_comment(client, tenant, missing, body="hi"), 404, "not_found", None)
    assert_error(client.get(f"/api/v1/videos/{missing}/comments", headers=tenant.headers), 404, "not_found", None)
    assert events(services, tenant) == []


@pytest.mark.parametrize("body, expected", [
    ({}, [("/body", "required")]),
    ({"body": ""}, [("/body", "invalid_length")]),
    ({"body": "x" * 5001}, [("/body", "invalid_length")]),
    ({"body": 5}, [("/body", "invalid_type")]),
    ({"body": "ok", "time_sec": -0.5}, [("/time_sec", "too_small")]),
    ({"body": "ok", "time_sec": "soon"}, [("/time_sec", "invalid_type")]),
    ({"body": "ok", "author": ""}, [("/author", "invalid_length")]),
    ({"body": "ok", "author": "a" * 201}, [("/author", "invalid_length")]),
    ({"body": "ok", "video_id": "x"}, [("/video_id", "unknown_field")]),
    ({"body": "bad\x00byte"}, [("/body", "invalid_character")]),
])
def test_invalid_bodies_are_400_with_pointers(client, services, tenant, create_video, body, expected):
    video = create_video(tenant)
    response = client.post(f"/api/v1/videos/{video['id']}/comments", json=body, headers=tenant.headers)
    error = assert_error(response, 400, "validation_failed")
    assert fields_of(error) == expected
    assert events(services, tenant) == []


def test_time_past_the_end_is_409(client, services, tenant, create_video):
    video = create_video(tenant)  # the same time suits a longer video: a conflict with this one
    response = post_comment(client, tenant, video["id"], body="late", time_sec=video["duration_sec"] + 0.01)
    error = assert_error(response, 409, "conflict")
    assert "past the end of the video" in error["message"]
    assert listed(client, tenant, video["id"]) == []
    assert events(services, tenant) == []


def test_body_of_5000_characters_is_accepted(client, tenant, create_video):
    video = create_video(tenant)
    response = post_comment(client, tenant, video["id"], body="é" * 5000, author="b" * 200)
    assert response.status_code == 201
    assert response.get_json()["body"] == "é" * 5000


def test_failed_event_write_rolls_back_the_comment(client, services, tenant, create_video, monkeypatch):
    """The comment and its event are one transaction: when the event cannot be written, neither is."""
    video = create_video(tenant)

    def broken(*_: Any, **__: Any) -> str:
        raise RuntimeError("outbox unavailable")
    monkeypatch.setattr(comments_resource, "add_event", broken)
    response = post_comment(client, tenant, video["id"], body="lost?")
    assert_error(response, 500, "internal_error", None)
    with services.engine.connect() as conn:
        assert conn.execute(select(comments.c.id).where(comments.c.video_id == video["id"])).all() == []


def test_failed_event_write_keeps_the_comment_undeleted(client, services, tenant, create_video, monkeypatch):
    video = create_video(tenant)
    comment = post_comment(client, tenant, video["id"], body="stays").get_json()

    def broken(*_: Any, **__: Any) -> str:
        raise RuntimeError("outbox unavailable")
    monkeypatch.setattr(comments_resource, "add_event", broken)
    assert_error(client.delete(f"/api/v1/comments/{comment['id']}", headers=tenant.headers),
                 500, "internal_error", None)
    assert listed(client, tenant, video["id"]) == [comment]


def test_operations_are_in_the_openapi_document(client):
    spec = client.get("/api/v1/openapi.json").get_json()
    post = spec["paths"]["/api/v1/videos/{video_id}/comments"]["post"]
    assert set(post["responses"]) >= {"201", "400", "401", "403", "404", "413", "415", "500"}
    delete = spec["paths"]["/api/v1/comments/{comment_id}"]["delete"]
    assert set(delete["responses"]) >= {"204", "401", "403", "404", "500"}
    assert post["summary"] == "Comment on a video" and delete["summary"] == "Delete a comment"
