"""Edits that cannot undo each other: a video's `ETag` names its current version, `If-Match` on
PATCH and restore refuses a change made from an older one (412 `version_conflict`), and a PATCH that
changes nothing makes no version."""
from __future__ import annotations

import copy
import threading
import uuid
from typing import Any

import pytest

from tests.integration.api.support import assert_error
from tests.integration.api.test_api_videos import make_video_row, versions


def _patch(client, tenant, video_id: str, body: dict[str, Any], if_match: str | None = None) -> Any:
    headers = {**tenant.headers, **({"If-Match": if_match} if if_match is not None else {})}
    return client.patch(f"/api/v1/videos/{video_id}", json=body, headers=headers)


def _restore(client, tenant, video_id: str, number: int, if_match: str | None = None) -> Any:
    headers = {**tenant.headers, **({"If-Match": if_match} if if_match is not None else {})}
    return client.post(f"/api/v1/videos/{video_id}/versions/{number}/restore", headers=headers)


def _current(client, tenant, video_id: str) -> dict[str, Any]:
    return client.get(f"/api/v1/videos/{video_id}", headers=tenant.headers).get_json()


def _conflict(response: Any, now: int) -> dict[str, Any]:
    error = assert_error(response, 412, "version_conflict")
    assert error["details"] == [{"field": "If-Match", "code": "version_conflict",
                                 "message": f'the current version is {now} (ETag "v{now}")', "current_version": now}]
    assert f"current version is {now}" in error["message"] and f'If-Match: "v{now}"' in error["message"]
    assert response.headers["ETag"] == f'"v{now}"'
    return error


def test_every_answer_that_is_one_video_carries_its_current_version_as_etag(client, services, clock, tenant):
    made = client.post("/api/v1/videos", json={"storyId": "announcement", "fields": {"headline": "One"}},
                       headers=tenant.headers)
    assert made.status_code == 201 and made.headers["ETag"] == '"v1"'
    video_id = made.get_json()["id"]
    got = client.get(f"/api/v1/videos/{video_id}", headers=tenant.headers)
    assert got.headers["ETag"] == '"v1"'

    patched = _patch(client, tenant, video_id, {"fields": {"headline": "Two"}})
    assert patched.status_code == 200 and patched.get_json()["current_version"]["number"] == 2
    assert patched.headers["ETag"] == '"v2"'
    renamed = _patch(client, tenant, video_id, {"title": "Renamed"})
    assert renamed.headers["ETag"] == '"v2"'  # the tag follows the version, not the title
    restored = _restore(client, tenant, video_id, 1)
    assert restored.status_code == 200 and restored.headers["ETag"] == '"v3"'
    archived = client.delete(f"/api/v1/videos/{video_id}", headers=tenant.headers)
    assert archived.headers["ETag"] == '"v3"'
    listed = client.get("/api/v1/videos", headers=tenant.headers)
    assert "ETag" not in listed.headers

    # a video still generating has no version, so no tag; its edits are refused as before, If-Match or not
    generating = make_video_row(services, clock, tenant, status="generating", story_id="announcement", with_doc=False)
    assert "ETag" not in client.get(f"/api/v1/videos/{generating}", headers=tenant.headers).headers
    assert_error(_patch(client, tenant, generating, {"title": "x"}, '"v1"'), 409, "video_not_ready")
    assert_error(_restore(client, tenant, generating, 1, '"v1"'), 409, "video_not_ready")


def test_a_patch_made_from_an_older_version_is_412_and_saves_nothing(client, tenant, create_video):
    video = create_video(tenant, fields={"headline": "One", "cta": "Call us"})
    first = _patch(client, tenant, video["id"], {"fields": {"headline": "Tagline from tab A"}}, '"v1"')
    assert first.status_code == 200 and first.headers["ETag"] == '"v2"'

    for body in ({"fields": {"cta": "Price from tab B"}}, {"doc": video["current_version"]["doc"]},
                 {"title": "Renamed by B"}, {"fields": {"cta": "Price from tab B"}, "title": "Renamed by B"}):
        _conflict(_patch(client, tenant, video["id"], body, '"v1"'), 2)
    now = _current(client, tenant, video["id"])
    assert now["current_version"] == first.get_json()["current_version"] and now["title"] == video["title"]
    assert [v["number"] for v in versions(client, tenant, video["id"])] == [1, 2]

    fresh = _patch(client, tenant, video["id"], {"fields": {"cta": "Price from tab B"}}, '"v2"')
    assert fresh.status_code == 200 and fresh.headers["ETag"] == '"v3"'
    texts = str(fresh.get_json()["current_version"]["doc"])
    assert "Tagline from tab A" in texts and "Price from tab B" in texts


def test_a_restore_made_from_an_older_version_is_412_and_saves_nothing(client, tenant, create_video):
    video = create_video(tenant, fields={"headline": "One"})
    _patch(client, tenant, video["id"], {"fields": {"headline": "Two"}})
    _conflict(_restore(client, tenant, video["id"], 1, '"v1"'), 2)
    assert [v["number"] for v in versions(client, tenant, video["id"])] == [1, 2]
    restored = _restore(client, tenant, video["id"], 1, '"v2"')
    assert restored.status_code == 200 and restored.get_json()["current_version"]["source"] == "restore"
    assert restored.headers["ETag"] == '"v3"'
    # a missing version is 404 whatever If-Match says (preconditions come after)
    assert_error(_restore(client, tenant, video["id"], 9, '"v1"'), 404, "not_found")


@pytest.mark.parametrize(("if_match", "lands"), [
    ("*", True),
    ('"v1", "v2"', True),
    ('"v2" , "v9"', True),
    ('  "v1","v2" ', True),
    ('W/"v2"', False),  # weak comparison is not allowed for If-Match
    ('"v02"', False),
    ('"v1"', False),
    ('"abc"', False),
    ('"v1", W/"v2"', False),
])
def test_if_match_is_any_or_a_list_of_strong_tags(client, tenant, create_video, if_match, lands):
    video = create_video(tenant, fields={"headline": "One"})
    _patch(client, tenant, video["id"], {"fields": {"headline": "Two"}})
    response = _patch(client, tenant, video["id"], {"fields": {"headline": "Three"}}, if_match)
    if lands:
        assert response.status_code == 200 and response.headers["ETag"] == '"v3"'
    else:
        _conflict(response, 2)
        assert len(versions(client, tenant, video["id"])) == 2


@pytest.mark.parametrize("if_match", ["v2", '"v2', 'W/v2', '"v2" "v3"', '*, "v2"', ",", "   ", '"v1",,"v2"', '"v2",',
                                      '"é"', '"v2"' + ', "v3"' * 300])
def test_an_if_match_that_is_not_a_list_of_tags_is_400_on_the_header(client, tenant, create_video, if_match):
    video = create_video(tenant)
    for response in (_patch(client, tenant, video["id"], {"title": "x"}, if_match),
                     _restore(client, tenant, video["id"], 1, if_match)):
        error = assert_error(response, 400, "validation_failed")
        assert [(d["field"], d["code"]) for d in error["details"]] == [("If-Match", "invalid")]
    assert _current(client, tenant, video["id"])["title"] == video["title"]
    assert len(versions(client, tenant, video["id"])) == 1


def test_a_patch_that_changes_nothing_makes_no_version(client, clock, tenant, create_video):
    video = create_video(tenant, fields={"headline": "One", "cta": "Call us"})
    doc = video["current_version"]["doc"]
    for body in ({"fields": {"headline": "One"}}, {"fields": {}}, {"fields": {"headline": "One"}, "note": "why"},
                 {"doc": copy.deepcopy(doc)}, {"doc": copy.deepcopy(doc), "note": "again"}):
        response = _patch(client, tenant, video["id"], body, '"v1"')
        assert response.status_code == 200, body
        assert response.get_json()["current_version"] == video["current_version"], body
        assert response.headers["ETag"] == '"v1"'
    renamed = _patch(client, tenant, video["id"], {"fields": {"cta": "Call us"}, "title": "Same values"})
    assert renamed.status_code == 200 and renamed.get_json()["title"] == "Same values"
    assert renamed.get_json()["current_version"] == video["current_version"]
    assert len(versions(client, tenant, video["id"])) == 1
    changed = _patch(client, tenant, video["id"], {"fields": {"cta": "Call us today"}}, '"v1"')
    assert changed.get_json()["current_version"]["number"] == 2


def test_a_doc_equal_to_the_current_one_after_a_hand_edit_makes_no_version(client, tenant, create_video):
    video = create_video(tenant)
    doc = copy.deepcopy(video["current_version"]["doc"])
    doc["title"] = "edited by hand"
    assert _patch(client, tenant, video["id"], {"doc": doc}).get_json()["current_version"]["number"] == 2
    again = _patch(client, tenant, video["id"], {"doc": doc, "note": "the same again"})
    assert again.status_code == 200 and again.get_json()["current_version"]["number"] == 2
    assert [v["note"] for v in versions(client, tenant, video["id"])] == [None, None]


def test_patches_sent_at_once_with_the_same_if_match_save_exactly_one_version(app, tenant, create_video):
    video = create_video(tenant)
    changes = {"kicker": "Kicker two", "headline": "Headline two", "body": "Body two", "cta": "Cta two"}
    start = threading.Barrier(len(changes))
    answers: dict[str, Any] = {}

    def patch(name: str, value: str) -> None:
        client = app.test_client()
        start.wait()
        answers[name] = _patch(client, tenant, video["id"], {"fields": {name: value}}, '"v1"')

    threads = [threading.Thread(target=patch, args=item) for item in changes.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    landed = [name for name, response in answers.items() if response.status_code == 200]
    assert len(landed) == 1, {name: r.status_code for name, r in answers.items()}
    for name, response in answers.items():
        if name not in landed:
            _conflict(response, 2)
    client = app.test_client()
    assert [v["number"] for v in versions(client, tenant, video["id"])] == [1, 2]
    assert changes[landed[0]] in str(_current(client, tenant, video["id"])["current_version"]["doc"])


def test_an_etag_of_another_workspaces_video_changes_nothing_there(client, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    video = create_video(acme)
    tag = client.get(f"/api/v1/videos/{video['id']}", headers=acme.headers).headers["ETag"]
    for if_match in (tag, "*", '"v2"'):
        assert_error(_patch(client, other, video["id"], {"title": "Taken"}, if_match), 404, "not_found", details=None)
        assert_error(_restore(client, other, video["id"], 1, if_match), 404, "not_found", details=None)
    assert_error(_patch(client, other, str(uuid.uuid4()), {"title": "x"}, tag), 404, "not_found")
    now = _current(client, acme, video["id"])
    assert now["title"] == video["title"] and len(versions(client, acme, video["id"])) == 1
