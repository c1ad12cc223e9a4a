"""An id from another workspace is 404 on every route that takes one, and changes nothing."""
from __future__ import annotations

import pytest

from tests.integration.api.support import assert_error


@pytest.fixture
def two(make_tenant, create_video):
    """Two workspaces; the second owns a video and a second brand kit."""
    mine = make_tenant(name="mine")
    theirs = make_tenant(name="theirs", second_kit=True)
    video = create_video(theirs, fields={"headline": "Theirs"})
    return mine, theirs, video


def routes(video_id: str, kit_id: str, current_doc: dict) -> list[tuple[str, str, dict | None]]:
    return [
        ("GET", f"/api/v1/brand-kits/{kit_id}", None),
        ("PATCH", f"/api/v1/brand-kits/{kit_id}", {"name": "stolen", "is_default": True}),
        ("GET", f"/api/v1/videos/{video_id}", None),
        ("PATCH", f"/api/v1/videos/{video_id}", {"title": "stolen"}),
        ("PATCH", f"/api/v1/videos/{video_id}", {"fields": {"headline": "stolen"}}),
        ("PATCH", f"/api/v1/videos/{video_id}", {"doc": current_doc}),
        ("DELETE", f"/api/v1/videos/{video_id}", None),
        ("GET", f"/api/v1/videos/{video_id}/versions", None),
        ("GET", f"/api/v1/videos/{video_id}/versions/1", None),
        ("POST", f"/api/v1/videos/{video_id}/versions/1/restore", None),
    ]


def test_every_id_route_is_404_for_another_workspace(client, two):
    mine, theirs, video = two
    before_video = client.get(f"/api/v1/videos/{video['id']}", headers=theirs.headers).get_json()
    before_kits = client.get("/api/v1/brand-kits", headers=theirs.headers).get_json()
    for method, path, body in routes(video["id"], theirs.other_kit_id, video["current_version"]["doc"]):
        response = client.open(path, method=method, json=body, headers=mine.headers)
        error = assert_error(response, 404, "not_found", details=None)
        assert "in this workspace" in error["message"], (method, path)
    assert client.get(f"/api/v1/videos/{video['id']}", headers=theirs.headers).get_json() == before_video
    assert client.get("/api/v1/brand-kits", headers=theirs.headers).get_json() == before_kits
    assert len(client.get(f"/api/v1/videos/{video['id']}/versions", headers=theirs.headers).get_json()["data"]) == 1


def test_default_kit_of_another_workspace_is_404(client, two):
    mine, theirs, _ = two
    assert_error(client.get(f"/api/v1/brand-kits/{theirs.default_kit_id}", headers=mine.headers), 404, "not_found")


def test_creating_with_another_workspaces_brand_kit_is_404(client, two):
    mine, theirs, _ = two
    for kit_id in (theirs.default_kit_id, theirs.other_kit_id):
        response = client.post("/api/v1/videos", json={"storyId": "announcement", "brandKitId": kit_id},
                               headers=mine.headers)
        assert_error(response, 404, "not_found", details=None)
    assert client.get("/api/v1/videos", headers=mine.headers).get_json() == {"data": [], "next_cursor": None}


def test_lists_show_only_the_callers_objects(client, two):
    mine, theirs, video = two
    assert client.get("/api/v1/videos", headers=mine.headers).get_json()["data"] == []
    assert [v["id"] for v in client.get("/api/v1/videos", headers=theirs.headers).get_json()["data"]] == [video["id"]]
    kits = client.get("/api/v1/brand-kits", headers=mine.headers).get_json()["data"]
    assert [k["id"] for k in kits] == [mine.default_kit_id]


def test_a_cursor_from_another_workspace_leaks_nothing(client, two, create_video):
    mine, theirs, _ = two
    create_video(theirs)
    cursor = client.get("/api/v1/videos?limit=1", headers=theirs.headers).get_json()["next_cursor"]
    assert cursor
    response = client.get("/api/v1/videos", query_string={"cursor": cursor}, headers=mine.headers)
    assert response.status_code == 200 and response.get_json() == {"data": [], "next_cursor": None}


def test_work_on_another_workspaces_video_is_404_and_creates_nothing(client, make_tenant, create_video):
    theirs = make_tenant(name="theirs", credits=3)
    mine = make_tenant(name="mine", credits=3)
    video = create_video(theirs, fields={"headline": "Theirs"})
    attempts = [
        ("POST", f"/api/v1/videos/{video['id']}/renders", {"format": "16:9", "resolution": 720}),
        ("POST", f"/api/v1/videos/{video['id']}/stills", {"times": [1.0]}),
        ("POST", f"/api/v1/videos/{video['id']}/variants", {"formats": ["1:1"]}),
        ("POST", f"/api/v1/videos/{video['id']}/comments", {"body": "mine now", "time_sec": 1.0}),
        ("GET", f"/api/v1/videos/{video['id']}/renders", None),
        ("GET", f"/api/v1/videos/{video['id']}/comments", None),
    ]
    for method, path, body in attempts:
        assert_error(client.open(path, method=method, json=body, headers=mine.headers), 404, "not_found")
    for tenant in (theirs, mine):
        assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 3
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=theirs.headers).get_json()["data"] == []
    assert client.get(f"/api/v1/videos/{video['id']}/comments", headers=theirs.headers).get_json()["data"] == []
