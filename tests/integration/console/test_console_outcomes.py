"""What the console shows after an action, over a real database (SQLite and PostgreSQL), two
workspaces side by side: secrets shown once after a redirect (a reload makes nothing), a brand
extraction's outcome, a page that refreshes itself without JavaScript, downloads named after the
video, renders by version, and how each video in the grid was made.
"""
from __future__ import annotations

import re
import secrets
import time
import zlib
from html import unescape
from urllib.parse import urlsplit

import pytest
from flask.testing import FlaskClient
from itsdangerous import base64_decode
from sqlalchemy import update

from reelfarm.shared.db import transaction
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import versions, videos
from tests.helpers import WORK_CEILING_SEC, hung
from tests.integration.api.conftest import Tenant
from tests.integration.console.conftest import csrf_token, signed_in_owner


def _shown(page: str, field: str) -> str | None:
    match = re.search(rf'id="{field}" type="text" readonly value="([^"]+)"', page)
    return unescape(match.group(1)) if match else None


def _session_cookie(browser: FlaskClient) -> str:
    return browser.get_cookie("reelfarm_session", path="/app").value


def test_a_new_key_is_shown_once_after_a_redirect_and_a_reload_makes_nothing(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    before = len(services.api_keys.list(acme.workspace_id))
    made = ann.post("/app/settings/keys", data={"csrf_token": csrf_token(ann, "/app/settings"), "name": "ci",
                                                "expires": "30"})
    assert made.status_code == 303 and made.headers["Location"] == "/app/settings#keys"
    assert "rf_live_" not in made.get_data(as_text=True)
    page = ann.get("/app/settings").get_data(as_text=True)
    key = _shown(page, "new-key")
    assert key is not None and key.startswith("rf_live_") and "Your new key “ci”" in page
    assert len(services.api_keys.list(acme.workspace_id)) == before + 1
    assert [k.name for k in services.api_keys.list(other.workspace_id)] == ["test key"]

    for _ in range(2):  # a reload: nothing shown, nothing made
        again = ann.get("/app/settings").get_data(as_text=True)
        assert _shown(again, "new-key") is None and key not in again and key[:12] in again
    assert len(services.api_keys.list(acme.workspace_id)) == before + 1
    bob = signed_in_owner(app, other)
    assert key[:12] not in bob.get("/app/settings").get_data(as_text=True)


def _cookie_payload(browser: FlaskClient) -> bytes:
    """What the session cookie carries (signed, not encrypted: anyone holding it can read this)."""
    value = _session_cookie(browser)
    raw = base64_decode(value.lstrip(".").split(".")[0])
    return zlib.decompress(raw) if value.startswith(".") else raw


def test_a_secret_crosses_the_redirect_encrypted_and_is_gone_once_shown(app, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    ann.post("/app/settings/keys", data={"csrf_token": csrf_token(ann, "/app/settings"), "name": "ci", "expires": ""})
    in_flight = _cookie_payload(ann)
    key = _shown(ann.get("/app/settings").get_data(as_text=True), "new-key")
    assert key is not None
    assert b'"once"' in in_flight and key[8:20].encode() not in in_flight
    assert b'"once"' not in _cookie_payload(ann)
    assert _shown(ann.get("/app/settings").get_data(as_text=True), "new-key") is None


def test_a_webhook_secret_and_an_invitation_link_are_shown_once_too(app, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    made = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"),
                                           "url": "https://hooks.example.com/a"})
    assert made.status_code == 303 and made.headers["Location"] == "/app/webhooks"
    page = ann.get("/app/webhooks").get_data(as_text=True)
    secret = _shown(page, "new-secret")
    assert secret is not None and secret.startswith("whsec_") and "https://hooks.example.com/a" in page
    again = ann.get("/app/webhooks").get_data(as_text=True)
    assert secret not in again and _shown(again, "new-secret") is None
    assert len(services.webhooks.list_all(tenant.workspace_id)) == 1

    email = f"new-{secrets.token_hex(4)}@example.com"
    invited = ann.post("/app/settings/people", data={"csrf_token": csrf_token(ann, "/app/settings"), "email": email})
    assert invited.status_code == 303 and invited.headers["Location"] == "/app/settings#people"
    link = _shown(ann.get("/app/settings").get_data(as_text=True), "new-link")
    assert link is not None and "/app/sign-in/link/" in link
    assert link not in ann.get("/app/settings").get_data(as_text=True)
    assert [p.email for p in services.accounts.people(tenant.workspace_id)].count(email) == 1


def _wait_job(browser: FlaskClient, job_id: str) -> dict:
    deadline = time.monotonic() + WORK_CEILING_SEC
    while time.monotonic() < deadline:
        job = browser.get(f"/app/jobs/{job_id}.json").get_json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.1)
    raise AssertionError(hung(f"job {job_id} ending"))


@pytest.mark.own_database  # it starts the embedded farm
def test_a_failed_brand_extraction_shows_its_error_and_keeps_its_job_in_the_address(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    services.farm.start()
    try:
        asked = ann.post("/app/brand-kits/extract", data={"csrf_token": csrf_token(ann, "/app/brand-kits"),
                                                          "url": "http://127.0.0.1:9/"})
        assert asked.status_code == 303
        target = urlsplit(asked.headers["Location"])
        job_id = re.fullmatch(r"job=([0-9a-f-]{36})", target.query).group(1)
        assert target.path == "/app/brand-kits" and target.fragment == "extract"
        job = _wait_job(ann, job_id)
    finally:
        services.farm.stop(10)
    assert job["status"] == "failed" and "loopback" in job["error"]
    page = ann.get(f"/app/brand-kits?job={job_id}").get_data(as_text=True)
    assert "The brand could not be extracted" in page and unescape(page).count(job["error"]) == 1
    assert 'data-job-status="failed"' in page and 'http-equiv="refresh"' not in page
    assert f'data-job-done="/app/brand-kits?job={job_id}#extract"' in page
    assert bob.get(f"/app/brand-kits?job={job_id}").status_code == 404
    assert bob.get(f"/app/jobs/{job_id}.json").status_code == 404


def test_a_finished_extraction_shows_the_new_kit_and_a_queued_one_refreshes_to_itself(app, services, clock,
                                                                                      make_tenant):
    tenant = make_tenant(second_kit=True)
    ann = signed_in_owner(app, tenant)
    with transaction(services.engine) as conn:
        done = jobs_repo.create_job(conn, clock, workspace_id=tenant.workspace_id, kind="brand_extract",
                                    params={"url": "https://example.com"})
        jobs_repo.start_job(conn, clock, done.id, "fetch")
        jobs_repo.finish_job(conn, clock, done.id, {"brand_kit_id": tenant.other_kit_id})
        waiting = jobs_repo.create_job(conn, clock, workspace_id=tenant.workspace_id, kind="brand_extract",
                                       params={"url": "https://example.com"})
    page = ann.get(f"/app/brand-kits?job={done.id}").get_data(as_text=True)
    assert "Done: the kit" in page and f'href="#kit-{tenant.other_kit_id}">“Second”' in page
    assert f'id="kit-{tenant.other_kit_id}"' in page and "kit-new" in page
    queued = ann.get(f"/app/brand-kits?job={waiting.id}").get_data(as_text=True)
    assert (f'<noscript><meta http-equiv="refresh" content="2; url=/app/brand-kits?job={waiting.id}&amp;refresh=1'
            '#extract"></noscript>') in queued
    later = ann.get(f"/app/brand-kits?job={waiting.id}&refresh=1").get_data(as_text=True)
    assert f"url=/app/brand-kits?job={waiting.id}&amp;refresh=2#extract" in later


def test_a_render_in_flight_refreshes_the_page_to_a_new_address_at_its_anchor(app, services, make_tenant,
                                                                              create_video):
    tenant = make_tenant(credits=10)
    ann = signed_in_owner(app, tenant)
    video = create_video(tenant)
    started = ann.post(f"/app/videos/{video['id']}/renders", data={
        "csrf_token": csrf_token(ann, "/app/settings"), "format": "9:16", "resolution": "720"})
    assert started.status_code == 303 and started.headers["Location"].endswith("#renders")
    page = ann.get(f"/app/videos/{video['id']}").get_data(as_text=True)
    assert f'content="3; url=/app/videos/{video["id"]}?refresh=1#renders"' in page
    again = ann.get(f"/app/videos/{video['id']}?refresh=1").get_data(as_text=True)
    assert f'url=/app/videos/{video["id"]}?refresh=2#renders' in again
    # the farm is not started here: the render waits, and the page says where it stands
    assert re.search(r"Waiting for the farm: [\d,]+ frames ahead", page)
    state = ann.get(f"/app/videos/{video['id']}/status.json").get_json()
    assert state["renders"][0]["queue"]["chunks_waiting"] >= 1


def _local(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _succeeded_render(services, clock, tenant: Tenant, video_id: str, fmt: str = "9:16") -> str:
    version_id = services.videos.get(tenant.workspace_id, video_id)["current_version"]["id"]
    key = f"renders/{secrets.token_hex(8)}/video.mp4"
    services.storage.put_bytes(key, b"not really an mp4", "video/mp4")
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video_id, version_id=version_id, format=fmt,
            resolution=720, fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        renders_repo.complete_render(conn, clock, render.id, url_key=key, poster_key=None, size=17,
                                     duration_sec=1.0)
    return render.id


def test_the_download_button_saves_the_file_under_the_videos_title(app, services, clock, make_tenant,
                                                                    create_video):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    video = create_video(tenant, title="Oferta de café / primavera")
    _succeeded_render(services, clock, tenant, video["id"])
    page = ann.get(f"/app/videos/{video['id']}").get_data(as_text=True)
    href = unescape(re.search(r'<a href="([^"]+)" download="[^"]*" class="button small">Download MP4', page).group(1))
    assert "download=1" in href and "name=" in href
    saved = ann.get(_local(href))
    assert saved.status_code == 200 and saved.data == b"not really an mp4"
    assert saved.headers["Content-Disposition"] == (
        'attachment; filename="Oferta de cafe - primavera v1 9x16 720p.mp4"; '
        "filename*=UTF-8''Oferta%20de%20caf%C3%A9%20-%20primavera%20v1%209x16%20720p.mp4")
    player = re.search(r'<video [^>]*src="([^"]+)"', page).group(1)
    assert "download" not in player
    inline = ann.get(_local(unescape(player)))
    assert inline.headers["Content-Disposition"].startswith("inline")
    # version 2's MP4 is not saved under version 1's name
    services.videos.update(tenant.workspace_id, video["id"], fields={"headline": "Second take"})
    _succeeded_render(services, clock, tenant, video["id"])
    page = ann.get(f"/app/videos/{video['id']}").get_data(as_text=True)
    names = re.findall(r'download="([^"]*)" class="button small">Download MP4', page)
    assert sorted(unescape(n) for n in names) == ["Oferta de café - primavera v1 9x16 720p.mp4",
                                                  "Oferta de café - primavera v2 9x16 720p.mp4"]


def test_the_grid_says_how_each_video_was_made(app, services, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    story = create_video(acme, title="Spring sale")
    copy = create_video(acme, title="Spring sale (es)")
    brief = create_video(acme, title="Written for us")
    theirs = create_video(other, title="Their copy")
    with transaction(services.engine) as conn:
        conn.execute(update(videos).where(videos.c.id == copy["id"]).values(source_video_id=story["id"], locale="es"))
        conn.execute(update(versions).where(versions.c.video_id == copy["id"]).values(source="translate"))
        conn.execute(update(versions).where(versions.c.video_id == brief["id"]).values(source="generate"))
        conn.execute(update(videos).where(videos.c.id == theirs["id"]).values(source_video_id=story["id"], locale="de"))
    grid = unescape(ann.get("/app/videos").get_data(as_text=True))
    labels = dict(re.findall(r'<span class="tile-title">([^<]+)</span>.*?data-origin>([^<]+)</p>', grid, re.DOTALL))
    assert labels == {"Spring sale": "Announcement", "Spring sale (es)": "Spanish copy of “Spring sale”",
                      "Written for us": "From a brief"}
    bob = signed_in_owner(app, other)
    theirs_label = dict(re.findall(r'<span class="tile-title">([^<]+)</span>.*?data-origin>([^<]+)</p>',
                                   unescape(bob.get("/app/videos").get_data(as_text=True)), re.DOTALL))
    assert theirs_label == {"Their copy": "German copy"}  # another workspace's title is never read


def test_renders_belong_to_versions_and_an_older_one_offers_the_current_version(app, services, clock, make_tenant,
                                                                               create_video):
    acme, other = make_tenant(name="acme", credits=10), make_tenant(name="other", credits=10)
    ann = signed_in_owner(app, acme)
    video = create_video(acme, title="Teaser", format="9:16")
    first = _succeeded_render(services, clock, acme, video["id"])
    first_version = services.videos.get(acme.workspace_id, video["id"])["current_version"]["id"]
    with transaction(services.engine) as conn:
        still = jobs_repo.create_job(conn, clock, workspace_id=acme.workspace_id, kind="stills", video_id=video["id"],
                                     params={"format": "9:16", "version_id": first_version})
        jobs_repo.start_job(conn, clock, still.id, "stills")
        jobs_repo.finish_job(conn, clock, still.id, {"stills": [{"key": "stills/v1.png", "time": 1.0,
                                                                 "width": 1080, "height": 1920}]})
    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    assert f'id="player" class="player-box" data-render="{first}:mp4"' in page
    assert "Playing version 1 · 9:16 · 720p" in page and "stills/v1.png" in page

    services.videos.update(acme.workspace_id, video["id"], fields={"headline": "Second take"})
    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    assert 'id="player" class="player-box" data-render=""' in page
    assert "No finished render of version 2 yet." in page and "version 1, out of date" in page
    assert "Render version 2 in 9:16 720p" in page and "stills/v1.png" not in page
    older = page[page.index('id="older-renders"'):]
    assert f'id="render-{first}"' in older and "Download MP4" in older

    made = ann.post(f"/app/videos/{video['id']}/renders", data={"csrf_token": csrf_token(ann, "/app/settings"),
                                                                 "format": "9:16", "resolution": "720"})
    assert made.status_code == 303
    newest = next(r for r in services.renders.list_for_video(acme.workspace_id, video["id"]) if r["id"] != first)
    second_version = services.videos.get(acme.workspace_id, video["id"])["current_version"]["id"]
    assert newest["version_id"] == second_version and newest["status"] == "queued"
    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    current = page[page.index('id="render-list"'):page.index('id="older-renders"')]
    assert f'id="render-{newest["id"]}"' in current and "version 2" in current
    assert "Version 2 has its own 9:16 720p render above." in page and "Render version 2 in" not in page
    assert re.search(r'id="ws-credits">acme · 9 credits<', page)  # version 2's first render is charged

    bob = signed_in_owner(app, other)
    refused = bob.post(f"/app/videos/{video['id']}/renders", data={"csrf_token": csrf_token(bob, "/app/settings"),
                                                                  "format": "9:16", "resolution": "720"})
    assert refused.status_code == 404
    assert len(services.renders.list_for_video(acme.workspace_id, video["id"])) == 2
