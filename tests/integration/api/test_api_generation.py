"""Endpoint 1 (brand extraction jobs), endpoint 4 without a story (generation from a brief),
`locales` in endpoint 10 (translated copies) and GET /locales, through the HTTP API.

The queued tasks are run in this process by calling them, as a worker would."""
from __future__ import annotations

from typing import Any

from reelfarm.farm.runtime.studio_tasks import generate_video
from tests.integration.api.support import assert_error, fields_of

BRIEF = ("Join our spring webinar on Tuesday 14 May at 18:00 CET with Dana Levi, our head of design. "
         "Register at example.com/webinar")


def test_a_brief_gives_201_generating_with_its_job_then_ready(client, tenant):
    r = client.post("/api/v1/videos", json={"brief": BRIEF, "format": "9:16", "durationSec": 12},
                    headers=tenant.headers)
    assert r.status_code == 201, r.get_json()
    video = r.get_json()
    assert (video["status"], video["current_version"], video["story_id"]) == ("generating", None, None)
    job = video["job"]
    assert (job["kind"], job["status"], job["stage"], job["progress"], job["result"]) == (
        "generate", "queued", None, 0, None)
    assert client.get(f"/api/v1/videos/{video['id']}", headers=tenant.headers).get_json()["job"]["id"] == job["id"]
    r = client.patch(f"/api/v1/videos/{video['id']}", json={"title": "x"}, headers=tenant.headers)
    assert_error(r, 409, "video_not_ready")
    assert_error(client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16"},
                             headers=tenant.headers), 409, "video_not_ready")

    generate_video(job["id"])

    done = client.get(f"/api/v1/jobs/{job['id']}", headers=tenant.headers).get_json()
    assert (done["status"], done["stage"], done["progress"]) == ("succeeded", "save", 1.0)
    ready = client.get(f"/api/v1/videos/{video['id']}", headers=tenant.headers).get_json()
    assert done["result"] == {"video_id": video["id"], "version_id": ready["current_version"]["id"]}
    assert (ready["status"], ready["job"], ready["story_id"], ready["default_format"]) == (
        "ready", None, "webinar", "9:16")
    assert ready["current_version"]["source"] == "generate" and ready["duration_sec"] == 12
    assert ready["current_version"]["doc"]["duration"] == 12


def test_a_refused_brief_is_400_and_creates_nothing(client, tenant):
    r = client.post("/api/v1/videos", json={"brief": "Big news. Shut the fuck up you worthless idiots."},
                    headers=tenant.headers)
    error = assert_error(r, 400, "validation_failed")
    assert fields_of(error) == [("/brief", "moderation_rejected")]
    assert "sentence 2" in error["details"][0]["message"]
    assert client.get("/api/v1/videos", headers=tenant.headers).get_json()["data"] == []


def test_an_unknown_brand_kit_is_404_and_creates_nothing(client, tenant):
    r = client.post("/api/v1/videos", json={"brief": BRIEF, "brandKitId": "00000000-0000-4000-8000-000000000000"},
                    headers=tenant.headers)
    assert_error(r, 404, "not_found")
    assert client.get("/api/v1/videos", headers=tenant.headers).get_json()["data"] == []


def test_brand_extract_queues_a_job_and_refuses_bad_urls(client, tenant):
    r = client.post("/api/v1/brand/extract", json={"url": "example.com"}, headers=tenant.headers)
    assert r.status_code == 202
    job = r.get_json()
    assert (job["kind"], job["status"], job["stage"], job["progress"]) == ("brand_extract", "queued", None, 0)
    for bad in ("ftp://example.com/", "https://", "http://exa mple.com/"):
        error = assert_error(client.post("/api/v1/brand/extract", json={"url": bad}, headers=tenant.headers),
                             400, "validation_failed")
        assert fields_of(error) == [("/url", "invalid")]
    error = assert_error(client.post("/api/v1/brand/extract", json={}, headers=tenant.headers), 400,
                         "validation_failed")
    assert fields_of(error)[0][0] == "/url"


def test_locales_list_what_the_engines_do(client, tenant):
    r = client.get("/api/v1/locales", headers=tenant.headers)
    assert r.status_code == 200
    body = r.get_json()
    assert body["source"] == "en"
    spanish = next(loc for loc in body["data"] if loc["code"] == "es")
    assert spanish == {"code": "es", "name": "Spanish", "direction": "ltr", "engines": ["apertium"]}
    assert [loc["code"] for loc in body["data"]] == sorted(loc["code"] for loc in body["data"])
    assert_error(client.get("/api/v1/locales?source=e1", headers=tenant.headers), 400, "validation_failed")


def _ready_video(client, tenant) -> dict[str, Any]:
    r = client.post("/api/v1/videos", json={"storyId": "hiring", "fields": {"role": "Backend engineer"}},
                    headers=tenant.headers)
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def test_variants_with_locales_make_draft_copies_that_become_ready(client, make_tenant):
    tenant = make_tenant(credits=2)
    video = _ready_video(client, tenant)
    r = client.post(f"/api/v1/videos/{video['id']}/variants", json={"formats": ["16:9"], "locales": ["es"],
                                                                    "resolution": 720}, headers=tenant.headers)
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    assert [x["video_id"] for x in body["renders"]] == [video["id"]]
    [copy] = body["translations"]
    assert (copy["status"], copy["locale"], copy["source_video_id"], copy["current_version"]) == (
        "draft", "es", video["id"], None)
    assert (copy["job"]["kind"], copy["job"]["status"]) == ("generate", "queued")

    generate_video(copy["job"]["id"])

    ready = client.get(f"/api/v1/videos/{copy['id']}", headers=tenant.headers).get_json()
    assert (ready["status"], ready["job"], ready["current_version"]["source"]) == ("ready", None, "translate")
    assert ready["current_version"]["doc"]["locale"] == "es"
    assert ready["current_version"]["doc"] != video["current_version"]["doc"]


def test_unsupported_locales_are_400_before_anything_is_rendered(client, make_tenant):
    tenant = make_tenant(credits=2)
    video = _ready_video(client, tenant)
    r = client.post(f"/api/v1/videos/{video['id']}/variants", json={"formats": ["16:9"], "locales": ["xx", "es-"]},
                    headers=tenant.headers)
    error = assert_error(r, 400, "validation_failed")
    assert fields_of(error) == [("/locales/0", "unsupported_locale"), ("/locales/1", "invalid_locale")]
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"] == []
    assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 2
