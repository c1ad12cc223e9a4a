"""The console's services over a real database (SQLite and PostgreSQL), two workspaces side by side:
API keys (``Services.api_keys``), people and passwords (``Services.accounts``) and the read-only
lists (``Services.read_models``) each show and change one workspace's rows only.
"""
from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from sqlalchemy import update

from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.tables import videos
from tests.integration.api.support import failed_render
from tests.integration.console.conftest import PASSWORD


def _email(name: str) -> str:
    return f"{name}-{secrets.token_hex(4)}@example.com"  # the PostgreSQL database is shared by the session


def test_api_keys_are_made_listed_and_revoked_in_their_own_workspace(services, client, clock, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    keys = services.api_keys
    clock.advance(1)
    record, key = keys.create(acme.workspace_id, "ci", timedelta(days=30))
    assert key.startswith("rf_live_") and key.startswith(record.prefix) and key not in str(record)
    assert record.workspace_id == acme.workspace_id and record.expires_at == clock.now() + timedelta(days=30)
    clock.advance(1)
    assert keys.create(acme.workspace_id, "forever")[0].expires_at is None

    assert [k.name for k in keys.list(acme.workspace_id)] == ["test key", "ci", "forever"]
    assert [k.id for k in keys.list(other.workspace_id)] == [other.key_id]
    assert keys.get(acme.workspace_id, record.id) == record
    with pytest.raises(NotFound):
        keys.get(other.workspace_id, record.id)
    with pytest.raises(NotFound):
        keys.revoke(other.workspace_id, record.id)
    assert keys.get(acme.workspace_id, record.id).revoked_at is None
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"}).status_code == 200

    revoked = keys.revoke(acme.workspace_id, record.id)
    assert revoked.revoked_at == clock.now()
    clock.advance(60)
    assert keys.revoke(acme.workspace_id, record.id).revoked_at == revoked.revoked_at  # the first time stays
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    assert client.get("/api/v1/me", headers=other.headers).status_code == 200
    assert all(k.revoked_at is None for k in keys.list(other.workspace_id))


def test_people_and_passwords_stay_in_their_workspace(services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    accounts = services.accounts
    ann_email, bob_email = _email("ann"), _email("bob")
    ann = accounts.create_user(acme.workspace_id, ann_email, role="owner", public_url="http://x")
    bob = accounts.create_user(other.workspace_id, bob_email, public_url="http://x")
    for made in (ann, bob):
        accounts.use_link(made.link.rsplit("/", 1)[1], PASSWORD)

    assert [u.email for u in accounts.people(acme.workspace_id)] == [ann_email]
    assert [u.email for u in accounts.people(other.workspace_id)] == [bob_email]
    assert accounts.workspace(acme.workspace_id).id == acme.workspace_id
    assert accounts.get(ann.user.id).workspace_id == acme.workspace_id
    with pytest.raises(NotFound):
        accounts.workspace("00000000-0000-0000-0000-000000000000")

    with pytest.raises(NotFound):
        accounts.change_password(other.workspace_id, ann.user.id, PASSWORD, "another long password")
    assert accounts.sign_in(ann_email, PASSWORD, "10.0.0.1").id == ann.user.id  # unchanged
    changed = accounts.change_password(acme.workspace_id, ann.user.id, PASSWORD, "another long password")
    assert changed.id == ann.user.id
    assert accounts.sign_in(ann_email, "another long password", "10.0.0.1").id == ann.user.id
    assert accounts.sign_in(bob_email, PASSWORD, "10.0.0.1").id == bob.user.id


def test_read_models_show_a_workspace_only_its_own_rows(services, clock, make_tenant, create_video):
    acme, other = make_tenant(name="acme", credits=100), make_tenant(name="other", credits=7)
    ours, theirs = create_video(acme, title="Ours"), create_video(other, title="Theirs")
    copy = create_video(acme, title="Unsere")
    version_id = services.videos.get(acme.workspace_id, ours["id"])["current_version"]["id"]
    with transaction(services.engine) as conn:
        conn.execute(update(videos).where(videos.c.id == copy["id"]).values(source_video_id=ours["id"], locale="de"))
        job = jobs_repo.create_job(conn, clock, workspace_id=acme.workspace_id, kind="stills", params={
            "format": ours["default_format"], "version_id": version_id}, video_id=ours["id"])
        jobs_repo.start_job(conn, clock, job.id, "stills")
        jobs_repo.finish_job(conn, clock, job.id, {"stills": [{"key": "stills/ours-first.png"}]})
    reads = services.read_models

    assert [(r["delta"], r["reason"]) for r in reads.ledger(acme.workspace_id)] == [(100, "initial_grant")]
    assert [(r["delta"], r["reason"]) for r in reads.ledger(other.workspace_id)] == [(7, "initial_grant")]

    assert [c["id"] for c in reads.translations(acme.workspace_id, ours["id"])] == [copy["id"]]
    assert reads.translations(other.workspace_id, ours["id"]) == []

    assert reads.current_fields(acme.workspace_id, ours["id"]) is not None
    assert reads.current_fields(other.workspace_id, ours["id"]) is None
    assert reads.current_fields(other.workspace_id, theirs["id"]) is not None

    latest = reads.latest_job(acme.workspace_id, ours["id"], "stills")
    assert latest["id"] == job.id and latest["version_id"] == version_id
    assert reads.latest_job(other.workspace_id, ours["id"], "stills") is None

    still = reads.pictures(acme.workspace_id, [ours["id"], theirs["id"]])
    assert list(still) == [ours["id"]] and "stills/ours-first.png" in still[ours["id"]]
    assert reads.pictures(other.workspace_id, [ours["id"]]) == {}
    assert reads.pictures(acme.workspace_id, []) == {}

    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=acme.workspace_id, video_id=ours["id"], version_id=version_id, format=ours["default_format"],
            resolution=720, fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        renders_repo.complete_render(conn, clock, render.id, url_key="renders/ours.mp4",
                                     poster_key="renders/ours-poster.jpg", size=1, duration_sec=1.0)
    poster = reads.pictures(acme.workspace_id, [ours["id"]])
    assert "renders/ours-poster.jpg" in poster[ours["id"]]  # a render's poster before a still
    assert reads.pictures(other.workspace_id, [ours["id"]]) == {}


def test_failed_renders_are_the_farms_across_workspaces(services, clock, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    failed, start = [], clock.now()
    for tenant in (acme, other):
        failed.append(failed_render(services, clock, tenant, create_video))
    shown = {r["id"]: r for r in services.read_models.failed_renders(since=start, limit=1000)}
    assert set(failed) <= set(shown) and {shown[i]["error"] for i in failed} == {"encoder crashed"}


def test_origins_name_a_first_versions_source_and_an_original_of_the_same_workspace(services, make_tenant,
                                                                                    create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ours, copy, theirs = create_video(acme, title="Ours"), create_video(acme, title="Copia"), create_video(other)
    services.videos.update(acme.workspace_id, copy["id"], title="Copia")  # a rename makes no version
    with transaction(services.engine) as conn:
        conn.execute(update(videos).where(videos.c.id == copy["id"]).values(source_video_id=ours["id"], locale="es"))
        conn.execute(update(videos).where(videos.c.id == theirs["id"]).values(source_video_id=ours["id"]))
    reads = services.read_models
    found = reads.origins(acme.workspace_id, [ours["id"], copy["id"], theirs["id"]])
    assert found == {ours["id"]: {"source": "story", "original_title": None},
                     copy["id"]: {"source": "story", "original_title": "Ours"}}
    assert reads.origins(other.workspace_id, [theirs["id"]]) == {theirs["id"]: {"source": "story",
                                                                                "original_title": None}}
    assert reads.origins(other.workspace_id, [ours["id"]]) == {} and reads.origins(acme.workspace_id, []) == {}


def _render(services, clock, tenant, video_id: str, version_id: str, fmt: str, poster: str) -> None:
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video_id, version_id=version_id, format=fmt, resolution=720,
            fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        renders_repo.complete_render(conn, clock, render.id, url_key=f"renders/{poster}.mp4",
                                     poster_key=f"renders/{poster}.jpg", size=1, duration_sec=1.0)
    clock.advance(1)


def _still(services, clock, tenant, video_id: str, version_id: str, fmt: str, name: str) -> None:
    with transaction(services.engine) as conn:
        job = jobs_repo.create_job(conn, clock, workspace_id=tenant.workspace_id, kind="stills",
                                   params={"format": fmt, "version_id": version_id}, video_id=video_id)
        jobs_repo.start_job(conn, clock, job.id, "stills")
        jobs_repo.finish_job(conn, clock, job.id, {"stills": [{"key": f"stills/{name}.png"}]})
    clock.advance(1)


def test_pictures_are_in_the_videos_own_format_the_current_versions_first(services, clock, make_tenant,
                                                                          create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    tall = create_video(acme, format="9:16")
    first = services.videos.get(acme.workspace_id, tall["id"])["current_version"]["id"]
    reads = services.read_models
    assert reads.pictures(acme.workspace_id, [tall["id"]]) == {}  # the grid draws a box of its own

    _render(services, clock, acme, tall["id"], first, "16:9", "wide-v1")
    _still(services, clock, acme, tall["id"], first, "16:9", "wide-still-v1")
    assert reads.pictures(acme.workspace_id, [tall["id"]]) == {}  # never another format's picture

    _still(services, clock, acme, tall["id"], first, "9:16", "tall-still-v1")
    assert "stills/tall-still-v1.png" in reads.pictures(acme.workspace_id, [tall["id"]])[tall["id"]]
    _render(services, clock, acme, tall["id"], first, "9:16", "tall-v1")
    assert "renders/tall-v1.jpg" in reads.pictures(acme.workspace_id, [tall["id"]])[tall["id"]]

    services.videos.update(acme.workspace_id, tall["id"], fields={"headline": "Version two"})
    second = services.videos.get(acme.workspace_id, tall["id"])["current_version"]["id"]
    assert second != first
    _render(services, clock, acme, tall["id"], second, "16:9", "wide-v2")
    assert "renders/tall-v1.jpg" in reads.pictures(acme.workspace_id, [tall["id"]])[tall["id"]]
    _still(services, clock, acme, tall["id"], second, "9:16", "tall-still-v2")
    assert "stills/tall-still-v2.png" in reads.pictures(acme.workspace_id, [tall["id"]])[tall["id"]]
    _render(services, clock, acme, tall["id"], second, "9:16", "tall-v2")
    assert "renders/tall-v2.jpg" in reads.pictures(acme.workspace_id, [tall["id"]])[tall["id"]]

    assert reads.pictures(other.workspace_id, [tall["id"]]) == {}
    theirs = create_video(other, format="9:16")
    version = services.videos.get(other.workspace_id, theirs["id"])["current_version"]["id"]
    _render(services, clock, other, theirs["id"], version, "9:16", "theirs")
    assert list(reads.pictures(acme.workspace_id, [tall["id"], theirs["id"]])) == [tall["id"]]
    assert list(reads.pictures(other.workspace_id, [tall["id"], theirs["id"]])) == [theirs["id"]]
