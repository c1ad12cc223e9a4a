"""What renders cost through the HTTP API: the Render's `cost`, and `GET /usage` summing a workspace's
renders (only its own), grouped by day or video, with bad periods in the one error envelope."""
from __future__ import annotations

import os
import time

import pytest

from tests.helpers import WORK_CEILING_SEC
from tests.integration.api.conftest import START
from tests.integration.api.support import assert_error
from tests.integration.api.test_api_renders import _video, _wait

DAY = START.date().isoformat()
ZERO = {"renders": 0, "frames_rendered": 0, "frames_reused": 0, "cpu_sec": 0.0, "gpu_sec": 0.0,
        "storage_bytes": 0, "credits": 0}
FIGURES = tuple(ZERO)


@pytest.fixture
def farm_client(services, app):
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


def _usage(client, tenant, **query):
    response = client.get("/api/v1/usage", query_string={"from": DAY, "to": DAY, **query}, headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _estimate(client, tenant, video_id, **body):
    body.setdefault("format", "9:16")
    response = client.post(f"/api/v1/videos/{video_id}/renders/estimate", json=body, headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _settled(client, tenant, render_id):
    """The render and the workspace's usage once both read the same recorded figures (the stitch's
    row is brought up to date just after the render reads as succeeded)."""
    deadline = time.monotonic() + WORK_CEILING_SEC
    while time.monotonic() < deadline:
        render = client.get(f"/api/v1/renders/{render_id}", headers=tenant.headers).get_json()
        usage = _usage(client, tenant)
        if usage["cpu_sec"] == render["cost"]["cpu_sec"]:
            return render, usage
        time.sleep(0.1)
    raise AssertionError("the render's cost and the usage never agreed")


def test_a_render_states_its_cost_and_usage_sums_only_the_callers_workspace(farm_client, make_tenant):
    ours, theirs = make_tenant(credits=3), make_tenant(credits=3, name="other")
    video = _video(farm_client, ours, format="9:16")
    before = _estimate(farm_client, ours, video["id"], resolution=720)
    assert (before["existing_render_id"], before["frames_to_render"], before["frames_reused"], before["credits"],
            before["node_kind"], before["format"]) == (None, 180, 0, 1, "cpu", "9:16")
    assert before["cpu_sec"] > 0 and before["wall_sec"] > 0 and before["basis"] in ("baseline", "measured")
    asked = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                             headers=ours.headers).get_json()
    assert asked["cost"]["frames_rendered"] == 0 and asked["cost"]["gpu_sec"] is None
    done, _ = _wait(farm_client, f"/api/v1/renders/{asked['id']}", ours.headers)
    assert done["status"] == "succeeded", done["error"]
    render, usage = _settled(farm_client, ours, asked["id"])
    cost = render["cost"]
    assert cost["frames_rendered"] == 180 and cost["frames_reused"] == 0
    assert 0 < cost["cpu_sec"] <= cost["wall_sec"] * (os.cpu_count() or 1) + 0.5
    assert cost["storage_bytes"] > render["bytes"] and cost["peak_memory_bytes"] > 0

    again = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                             headers=ours.headers).get_json()
    assert again["id"] == render["id"] and again["cost"] == cost  # the same render: nothing new ran

    same = _estimate(farm_client, ours, video["id"], resolution=720)
    assert (same["existing_render_id"], same["frames_to_render"], same["cpu_sec"], same["credits"],
            same["basis"]) == (render["id"], 0, 0.0, 0, "identical_render")
    square = _estimate(farm_client, ours, video["id"], format="1:1", resolution=720)
    assert square["basis"] == "measured" and square["sampled_frames"] >= 180 and square["credits"] == 0
    assert square["existing_render_id"] is None and square["frames_to_render"] == 180 and square["cpu_sec"] > 0
    assert_error(farm_client.post(f"/api/v1/videos/{video['id']}/renders/estimate", json={"format": "9:16"},
                                  headers=theirs.headers), 404, "not_found")

    assert usage == {"from": DAY, "to": DAY, "group_by": None, "renders": 1, "frames_rendered": 180,
                     "frames_reused": 0, "cpu_sec": cost["cpu_sec"], "gpu_sec": 0.0,
                     "storage_bytes": cost["storage_bytes"], "credits": 1, "groups": None}
    by_video = _usage(farm_client, ours, group_by="video")["groups"]
    assert by_video == [{"video_id": video["id"], **{k: usage[k] for k in FIGURES}}]
    by_day = _usage(farm_client, ours, group_by="day")["groups"]
    assert by_day == [{"day": DAY, **{k: usage[k] for k in FIGURES}}]

    assert _usage(farm_client, theirs) == {"from": DAY, "to": DAY, "group_by": None, **ZERO, "groups": None}
    assert _usage(farm_client, theirs, group_by="video")["groups"] == []
    before = _usage(farm_client, ours, **{"from": "2025-02-01", "to": "2025-02-28"})
    assert {k: before[k] for k in FIGURES} == ZERO


def test_a_bad_period_is_refused_in_the_error_envelope(client, tenant):
    def asked(**query):
        return client.get("/api/v1/usage", query_string=query, headers=tenant.headers)

    assert_error(asked(**{"from": "yesterday"}), 400, "validation_failed")
    assert_error(asked(to="2025-02-30"), 400, "validation_failed")
    assert_error(asked(group_by="week"), 400, "validation_failed")
    late = assert_error(asked(**{"from": "2025-03-02", "to": "2025-03-01"}), 400, "validation_failed")
    assert [d["field"] for d in late["details"]] == ["/from"]
    assert_error(asked(**{"from": "2023-01-01", "to": "2025-03-01"}), 400, "validation_failed")
    assert asked().get_json()["to"] == DAY  # by default the 30 days to today
    assert asked().get_json()["from"] == "2025-01-31"


def test_usage_needs_a_key(client):
    assert_error(client.get("/api/v1/usage"), 401, "unauthorized")


def test_an_estimate_subtracts_the_segments_the_workspace_keeps_and_only_its_own(farm_client, make_tenant):
    ours, theirs = make_tenant(credits=5), make_tenant(credits=5, name="other")
    video = _video(farm_client, ours, format="9:16")
    asked = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                             headers=ours.headers).get_json()
    assert _wait(farm_client, f"/api/v1/renders/{asked['id']}", ours.headers)[0]["status"] == "succeeded"
    whole = _estimate(farm_client, ours, video["id"], resolution=720, fps=24)  # nothing kept at 24 fps
    doc = video["current_version"]["doc"]
    doc["scenes"][-1]["layers"][-1]["text"] = "Now with a new last line"
    assert farm_client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc},
                             headers=ours.headers).status_code == 200
    edited = _estimate(farm_client, ours, video["id"], resolution=720)
    assert edited["existing_render_id"] is None and edited["frames_reused"] > 0
    assert edited["frames_to_render"] + edited["frames_reused"] == 180 and edited["frames_to_render"] > 0
    again = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                             headers=ours.headers).get_json()
    assert again["reused_frames"] == edited["frames_reused"]  # what the farm's reuse then copied
    assert whole["frames_reused"] == 0 and whole["frames_to_render"] == 144

    # their copy of the same document finds none of our segments
    copy = _video(farm_client, theirs, format="9:16")
    assert farm_client.patch(f"/api/v1/videos/{copy['id']}", json={"doc": doc},
                             headers=theirs.headers).status_code == 200
    theirs_estimate = _estimate(farm_client, theirs, copy["id"], resolution=720)
    assert (theirs_estimate["frames_reused"], theirs_estimate["frames_to_render"]) == (0, 180)


def test_variants_get_one_estimate_for_all_their_renders(farm_client, make_tenant):
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="9:16")
    response = farm_client.post(f"/api/v1/videos/{video['id']}/variants/estimate",
                                json={"formats": ["9:16", "1:1", "9:16"], "resolution": 720}, headers=tenant.headers)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert [r["format"] for r in body["renders"]] == ["9:16", "1:1"]
    assert body["frames_to_render"] == 360 and body["credits"] == 1
    assert [r["credits"] for r in body["renders"]] == [1, 0]
    assert body["cpu_sec"] == pytest.approx(sum(r["cpu_sec"] for r in body["renders"]), abs=0.02)
    assert_error(farm_client.post(f"/api/v1/videos/{video['id']}/variants/estimate", json={"formats": []},
                                  headers=tenant.headers), 400, "validation_failed")
