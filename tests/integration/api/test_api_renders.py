"""Renders, stills, variants and jobs through the HTTP API, run by the embedded farm.

The app's own embedded executor renders for real (processes, x264, stream-copy concat); the
MP4s and PNGs are downloaded through the signed /files URLs and decoded.
"""
from __future__ import annotations

import io
import time
from urllib.parse import urlsplit

import av
import pytest
from PIL import Image

from reelfarm.api.services import Services
from reelfarm.app import create_app
from reelfarm.shared.config import Settings
from tests.helpers import WORK_CEILING_SEC, hung
from tests.integration.api.support import assert_error


@pytest.fixture
def farm_client(services, app):
    services.farm.start()
    yield app.test_client()
    services.farm.stop(10)


def _wait(client, path, headers, done=("succeeded", "failed", "canceled")):
    deadline = time.monotonic() + WORK_CEILING_SEC
    seen = []
    body = None
    while time.monotonic() < deadline:
        response = client.get(path, headers=headers)
        if response.status_code == 429:  # a render slowed by a loaded machine outlasts the minute's quota
            time.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        seen.append(body["progress"])
        if body["status"] in done:
            return body, seen
        time.sleep(0.1)
    raise AssertionError(hung(f"{path} finishing (last seen: {body})"))


def _download(client, url):
    parts = urlsplit(url)
    response = client.get(f"{parts.path}?{parts.query}")
    assert response.status_code == 200, response.get_json()
    return response.data


def _video(client, tenant, **body):
    body.setdefault("storyId", "announcement")
    body.setdefault("durationSec", 6)
    response = client.post("/api/v1/videos", json=body, headers=tenant.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_render_to_a_decodable_mp4_with_progress_dedup_and_one_charge(farm_client, make_tenant, tmp_path):
    tenant = make_tenant(credits=3)
    video = _video(farm_client, tenant, format="9:16")
    r = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                         headers=tenant.headers)
    assert r.status_code == 202
    render = r.get_json()
    assert render["status"] in ("queued", "running") and render["url"] is None and render["fps"] == 30
    again = farm_client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "9:16", "resolution": 720},
                             headers=tenant.headers)
    assert again.status_code == 202 and again.get_json()["id"] == render["id"]

    done, seen = _wait(farm_client, f"/api/v1/renders/{render['id']}", tenant.headers)
    assert done["status"] == "succeeded", done["error"]
    assert seen == sorted(seen) and done["progress"] == 1
    assert done["duration_sec"] == pytest.approx(6.0) and done["bytes"] > 0
    path = tmp_path / "out.mp4"
    path.write_bytes(_download(farm_client, done["url"]))
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        assert (stream.codec_context.width, stream.codec_context.height) == (720, 1280)
        assert stream.average_rate == 30
    assert frames == 180
    poster = Image.open(io.BytesIO(_download(farm_client, done["poster_url"])))
    assert poster.size == (720, 1280)

    me = farm_client.get("/api/v1/me", headers=tenant.headers).get_json()
    assert me["workspace"]["credits"] == 2  # ceil(6 / 60) = 1, charged once
    listed = farm_client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()
    assert [x["id"] for x in listed["data"]] == [render["id"]]
    finished = farm_client.post(f"/api/v1/renders/{render['id']}/cancel", headers=tenant.headers)
    assert_error(finished, 409, "conflict")


def test_stills_job_gives_signed_pngs(farm_client, tenant):
    video = _video(farm_client, tenant)
    r = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [0.5, 3], "format": "1:1"},
                         headers=tenant.headers)
    assert r.status_code == 202 and r.get_json()["kind"] == "stills" and r.get_json()["status"] == "queued"
    job, _ = _wait(farm_client, f"/api/v1/jobs/{r.get_json()['id']}", tenant.headers)
    assert job["status"] == "succeeded", job["error"]
    stills = job["result"]["stills"]
    assert [s["time"] for s in stills] == [0.5, 3]
    for still in stills:
        image = Image.open(io.BytesIO(_download(farm_client, still["url"])))
        assert image.format == "PNG" and image.size == (still["width"], still["height"]) == (1080, 1080)


def test_stills_bounds_are_validated(client, tenant):
    video = _video(client, tenant)
    r = client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [1, -1]}, headers=tenant.headers)
    assert_error(r, 400, "validation_failed")
    assert [d["field"] for d in r.get_json()["error"]["details"]] == ["/times/1"]
    r = client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [1, 99, 100]}, headers=tenant.headers)
    error = assert_error(r, 409, "conflict")  # valid times, but this video is shorter
    assert "99, 100 s lie past the end" in error["message"]
    r = client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": []}, headers=tenant.headers)
    assert_error(r, 400, "validation_failed")


def test_no_credits_gives_402_and_creates_nothing(client, make_tenant):
    tenant = make_tenant(credits=0)
    video = _video(client, tenant)
    r = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9"}, headers=tenant.headers)
    assert_error(r, 402, "insufficient_credits")
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"] == []


def test_variants_render_several_formats_and_gate_locales(client, make_tenant):
    tenant = make_tenant(credits=5)
    video = _video(client, tenant)
    r = client.post(f"/api/v1/videos/{video['id']}/variants", json={"formats": ["16:9", "1:1"], "resolution": 720},
                    headers=tenant.headers)
    assert r.status_code == 202
    body = r.get_json()
    assert [x["format"] for x in body["renders"]] == ["16:9", "1:1"] and body["translations"] == []
    assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 4
    crypto = make_tenant(plan="crypto_pro", credits=5)
    video = _video(client, crypto)
    r = client.post(f"/api/v1/videos/{video['id']}/variants", json={"formats": ["16:9"], "locales": ["de"]},
                    headers=crypto.headers)
    assert_error(r, 403, "plan_feature_unavailable")


def test_cancel_a_queued_render_refunds(client, make_tenant):
    tenant = make_tenant(credits=1)
    video = _video(client, tenant)
    render = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9"},
                         headers=tenant.headers).get_json()
    r = client.post(f"/api/v1/renders/{render['id']}/cancel", headers=tenant.headers)
    assert r.status_code == 200 and r.get_json()["status"] == "canceled"
    assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 1


def test_archived_video_cannot_render(client, make_tenant):
    tenant = make_tenant(credits=1)
    video = _video(client, tenant)
    client.delete(f"/api/v1/videos/{video['id']}", headers=tenant.headers)
    r = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9"}, headers=tenant.headers)
    assert_error(r, 409, "conflict")


def test_render_and_job_ids_are_scoped_to_the_workspace(client, make_tenant):
    owner, other = make_tenant(credits=1), make_tenant(credits=1, name="other")
    video = _video(client, owner)
    render = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9"},
                         headers=owner.headers).get_json()
    job = client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [1]}, headers=owner.headers).get_json()
    for path in (f"/api/v1/renders/{render['id']}", f"/api/v1/jobs/{job['id']}"):
        assert_error(client.get(path, headers=other.headers), 404, "not_found")
        assert_error(client.post(f"{path}/cancel", headers=other.headers), 404, "not_found")
    assert_error(client.get("/api/v1/renders/not-a-uuid", headers=owner.headers), 404, "not_found")


def test_queue_down_gives_503_and_leaves_nothing(tmp_path, db_url, make_tenant, client):
    tenant = make_tenant(credits=2)
    video = _video(client, tenant)
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "down"), "REELFARM_DATABASE_URL": db_url,
                                  "REELFARM_REDIS_URL": "redis://127.0.0.1:1/0"})
    down = create_app(services=Services.from_settings(settings)).test_client()
    r = down.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9"}, headers=tenant.headers)
    assert_error(r, 503, "unavailable")
    assert client.get(f"/api/v1/videos/{video['id']}/renders", headers=tenant.headers).get_json()["data"] == []
    assert client.get("/api/v1/me", headers=tenant.headers).get_json()["workspace"]["credits"] == 2
    assert_error(down.get("/healthz"), 503, "unavailable")


def test_signed_file_urls_are_bound_to_their_object_and_expire(farm_client, tenant, clock):
    video = _video(farm_client, tenant)
    job = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [1, 2]},
                           headers=tenant.headers).get_json()
    done, _ = _wait(farm_client, f"/api/v1/jobs/{job['id']}", tenant.headers)
    first, second = (urlsplit(s["url"]) for s in done["result"]["stills"])
    assert farm_client.get(f"{first.path}?{first.query}").status_code == 200
    # The signature of one still does not open another, and a changed expiry is refused.
    swapped = farm_client.get(f"{second.path}?{first.query}")
    assert_error(swapped, 403, "forbidden")
    query = first.query.replace("expires=", "expires=9")
    assert_error(farm_client.get(f"{first.path}?{query}"), 403, "forbidden")
    clock.advance(11 * 60)  # stills are signed for 10 minutes
    assert_error(farm_client.get(f"{first.path}?{first.query}"), 403, "forbidden")


def test_file_urls_lead_to_the_address_the_request_reached_unless_a_public_url_is_set(
        farm_client, tenant, settings, clock):
    video = _video(farm_client, tenant)
    job = farm_client.post(f"/api/v1/videos/{video['id']}/stills", json={"times": [1]},
                           headers=tenant.headers).get_json()
    _wait(farm_client, f"/api/v1/jobs/{job['id']}", tenant.headers)
    assert not settings.public_url_configured
    for host in ("videos.lan:8123", "127.0.0.1:5123", "localhost"):
        answer = farm_client.get(f"/api/v1/jobs/{job['id']}", headers={**tenant.headers, "Host": host}).get_json()
        url = urlsplit(answer["result"]["stills"][0]["url"])
        assert (url.scheme, url.netloc) == ("http", host)
        assert farm_client.get(f"{url.path}?{url.query}").status_code == 200, "the same signature, any host"
    configured = Settings.from_env({"REELFARM_DATA_DIR": str(settings.data_dir),
                                    "REELFARM_DATABASE_URL": settings.database_url,
                                    "REELFARM_PUBLIC_URL": "https://videos.example.com"})
    services = Services.from_settings(configured, clock=clock)
    try:
        public = create_app(services=services).test_client()
        answer = public.get(f"/api/v1/jobs/{job['id']}", headers={**tenant.headers, "Host": "videos.lan:8123"})
        assert answer.get_json()["result"]["stills"][0]["url"].startswith("https://videos.example.com/files/")
    finally:
        services.engine.dispose()


def test_a_render_waiting_says_where_it_stands_and_its_priority_is_checked(client, make_tenant):
    """With the farm not started, renders wait: each says how many frames of the farm are ahead of it
    (another workspace's earlier render counts, its own low render yields); a bad priority is a 400."""
    first, second = make_tenant(credits=10), make_tenant(credits=10)
    a = _video(client, first)
    b, c = _video(client, second), _video(client, second, title="Batch")
    refused = client.post(f"/api/v1/videos/{a['id']}/renders", json={"format": "16:9", "priority": "urgent"},
                          headers=first.headers)
    assert_error(refused, 400, "validation_failed")
    assert "/priority" in str(refused.get_json()["error"]["details"])

    ahead = client.post(f"/api/v1/videos/{a['id']}/renders", json={"format": "16:9", "resolution": 720},
                        headers=first.headers).get_json()
    low = client.post(f"/api/v1/videos/{c['id']}/renders", json={"format": "16:9", "resolution": 720,
                                                                  "priority": "low"}, headers=second.headers)
    normal = client.post(f"/api/v1/videos/{b['id']}/renders", json={"format": "16:9", "resolution": 720},
                         headers=second.headers)
    assert low.status_code == normal.status_code == 202
    low, normal = low.get_json(), normal.get_json()
    assert (ahead["priority"], low["priority"], normal["priority"]) == ("normal", "low", "normal")
    assert ahead["queue"]["frames_ahead"] >= 0 and ahead["queue"]["chunks_waiting"] >= 1
    low = client.get(f"/api/v1/renders/{low['id']}", headers=second.headers).get_json()
    normal = client.get(f"/api/v1/renders/{normal['id']}", headers=second.headers).get_json()
    # the second workspace's normal render goes before its low one, whatever the turn of the first
    assert normal["queue"]["frames_ahead"] < low["queue"]["frames_ahead"]
    # nothing of one workspace's render is readable by the other
    assert_error(client.get(f"/api/v1/renders/{ahead['id']}", headers=second.headers), 404, "not_found")
