"""Play preview (``reelfarm.farm.services.drafts``) over a real database (SQLite and PostgreSQL): a
draft of a story form's unsaved values, its chunks run here one by one, out of order, so its
playlist is read at known moments.

- the draft's playlist (parsed by ``m3u8``) lists the unbroken run of stored segments from the
  first, and ends once every chunk is stored; its segments decode (PyAV) at 360p, 15 fps, with
  the draft's frame count; nothing is saved, charged, listed among renders or sent as an event;
- the draft's chunks wait in the render queue as low-priority work;
- another workspace can read neither its state, nor its playlist, nor its segments;
- at most three drafts per workspace, and a byte bound; the retention round deletes expired ones;
- an existing video's fields form has the live still and Play preview of unsaved values.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import av
import m3u8
import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import Image
from sqlalchemy import func, select

from reelfarm.farm.runtime import draft_tasks, retention
from reelfarm.farm.services import drafts
from reelfarm.shared import storage_keys
from reelfarm.shared.repos import drafts as drafts_repo
from reelfarm.shared.tables import event_outbox, queued_tasks, renders, versions, videos
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.integration.console.test_console_previews import _form

JSON = {"Accept": "application/json"}


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | changes
    return urlunsplit(parts._replace(query=urlencode(query)))


def start_draft(browser: FlaskClient, **fields: str) -> dict[str, Any]:
    posted = _form(browser, "flash_sale", format="16:9", duration="6", **fields)
    answer = browser.post("/app/videos/new/flash_sale/draft", data=posted, headers=JSON)
    assert answer.status_code == 202, answer.get_data(as_text=True)
    return dict(answer.get_json())


def state(browser: FlaskClient, draft: dict[str, Any]) -> dict[str, Any]:
    answer = browser.get(draft["status_url"])
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return dict(answer.get_json())


def playlist(client: FlaskClient, url: str) -> m3u8.M3U8:
    answer = client.get(path_of(url))
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.mimetype == "application/vnd.apple.mpegurl"
    return m3u8.loads(answer.get_data(as_text=True))


def run_all(draft: dict[str, Any]) -> None:
    for index in range(draft["chunks"]):
        draft_tasks.draw_draft_chunk(draft["id"], index)


def count(services: Any, table: Any, workspace_id: str) -> int:
    with services.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)
                                .where(table.c.workspace_id == workspace_id)).scalar_one())


def test_a_draft_of_unsaved_values_streams_at_360p_and_is_never_a_render(app, services, client, make_tenant,
                                                                         tmp_path: Path) -> None:
    acme = make_tenant(name="acme", credits=3)
    ann = signed_in_owner(app, acme)
    draft = start_draft(ann, **{"f.badge_color": "#FF0000"})
    assert draft["status"] == "queued" and draft["resolution"] == 360 and draft["fps"] == 15
    assert draft["chunks"] >= 3 and not draft["playable"]
    with services.engine.connect() as conn:  # low-priority work in the workspace's line of the render queue
        queued = conn.execute(select(queued_tasks).where(queued_tasks.c.render_id == draft["id"])).all()
    assert len(queued) == draft["chunks"]
    assert {(t.queue, t.priority, t.workspace_id) for t in queued} == {("render", "low", acme.workspace_id)}

    assert playlist(client, draft["stream_url"]).segments == []
    draft_tasks.draw_draft_chunk(draft["id"], 1)  # finished out of order: it waits for the first
    assert not state(ann, draft)["playable"] and playlist(client, draft["stream_url"]).segments == []
    draft_tasks.draw_draft_chunk(draft["id"], 0)
    early = playlist(client, draft["stream_url"])
    assert state(ann, draft)["playable"] and state(ann, draft)["status"] == "running"
    assert early.playlist_type == "event" and not early.is_endlist and len(early.segments) == 2
    assert early.start is not None and early.start.time_offset == 0
    for index in range(2, draft["chunks"]):
        draft_tasks.draw_draft_chunk(draft["id"], index)
    final = playlist(client, draft["stream_url"])
    assert state(ann, draft)["status"] == "succeeded"
    assert final.is_endlist and len(final.segments) == draft["chunks"]
    assert all(s.duration <= final.target_duration for s in final.segments)
    assert round(sum(s.duration for s in final.segments) * 15) == 90

    frames = 0
    for index, segment in enumerate(final.segments):
        assert urlsplit(segment.uri).path.endswith(f"/drafts/{acme.workspace_id}/{draft['id']}/seg{index}.ts")
        got = client.get(path_of(segment.uri))
        assert got.status_code == 200 and got.mimetype == "video/mp2t"
        (tmp_path / f"seg{index}.ts").write_bytes(got.data)
        with av.open(str(tmp_path / f"seg{index}.ts")) as container:
            decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        assert decoded and all(f.shape == (360, 640, 3) for f in decoded)
        frames += len(decoded)
        if index == 0:  # the badge, in the colour typed and never saved
            red = (np.abs(decoded[-1].reshape(-1, 3).astype(int) - (255, 0, 0)).sum(axis=1) < 90).mean()
            assert red > 0.01
    assert frames == 90

    # nothing saved, charged, rendered or announced
    assert services.videos.list(acme.workspace_id, 10)["data"] == []
    assert count(services, videos, acme.workspace_id) == 0
    assert count(services, renders, acme.workspace_id) == 0
    assert count(services, event_outbox, acme.workspace_id) == 0
    assert ann.application.extensions["reelfarm"].accounts.workspace(acme.workspace_id).credits == 3


def test_another_workspace_reads_neither_the_draft_nor_its_playlist_nor_its_segments(app, services, client,
                                                                                   make_tenant) -> None:
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    mine, theirs = start_draft(ann), start_draft(bob)
    draft_tasks.draw_draft_chunk(mine["id"], 0)
    draft_tasks.draw_draft_chunk(theirs["id"], 0)
    segment = playlist(client, mine["stream_url"]).segments[0].uri
    their_segment = playlist(client, theirs["stream_url"]).segments[0].uri
    assert client.get(path_of(segment)).status_code == 200

    assert bob.get(mine["status_url"]).status_code == 404
    assert bob.get(mine["status_url"], headers=JSON).get_json()["error"]["status"] == 404
    assert client.get(path_of(theirs["stream_url"]).replace(theirs["id"], mine["id"])).status_code == 403
    assert client.get(path_of(with_query(mine["stream_url"], sig="A" * 43))).status_code == 403
    later = str(int(parse_qs(urlsplit(mine["stream_url"]).query)["expires"][0]) + 600)
    assert client.get(path_of(with_query(mine["stream_url"], expires=later))).status_code == 403
    # a segment's link opens its own file only
    mine_key = urlsplit(segment).path
    assert client.get(urlsplit(their_segment).path.replace(urlsplit(their_segment).path, mine_key) + "?" +
                      urlsplit(their_segment).query).status_code == 403
    assert client.get(path_of(with_query(segment, sig="A" * 43))).status_code == 403
    assert client.get("/app/drafts/not-a-draft.m3u8").status_code == 404
    # and a draft is drawn from its own workspace's objects only
    assert f"drafts/{acme.workspace_id}/" in segment and f"drafts/{other.workspace_id}/" in their_segment


def test_a_workspace_keeps_three_drafts_within_its_bytes_and_retention_deletes_expired_ones(app, services, client,
                                                                                           clock,
                                                                                           make_tenant) -> None:
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    theirs = start_draft(bob)
    made = []
    for _ in range(3):
        made.append(start_draft(ann))
        clock.advance(1)
    draft_tasks.draw_draft_chunk(made[0]["id"], 0)
    first_key = storage_keys.draft_segment_key(acme.workspace_id, made[0]["id"], 0)
    assert services.storage.exists(first_key)
    fourth = start_draft(ann)  # the oldest goes: its row, its waiting chunks, its files
    assert ann.get(made[0]["status_url"]).status_code == 404
    assert not services.storage.exists(first_key)
    assert client.get(path_of(made[0]["stream_url"])).status_code == 404
    draft_tasks.draw_draft_chunk(made[0]["id"], 1)  # a chunk of it that ran anyway stores nothing
    assert not services.storage.exists(storage_keys.draft_segment_key(acme.workspace_id, made[0]["id"], 1))
    with services.engine.connect() as conn:
        waiting = conn.execute(select(queued_tasks.c.status).where(queued_tasks.c.render_id == made[0]["id"])).all()
        kept = [d.id for d in drafts_repo.workspace_drafts(conn, acme.workspace_id)]
    assert {w.status for w in waiting} == {"canceled"}
    assert kept == [made[1]["id"], made[2]["id"], fourth["id"]]
    assert state(bob, theirs)["status"] == "queued"  # another workspace's draft is not counted

    # bytes: a segment that takes the workspace over its bound deletes its oldest other drafts
    run_all(made[1])
    with services.engine.connect() as conn:
        second = drafts_repo.find_draft(conn, made[1]["id"])
        newest = drafts_repo.find_draft(conn, fourth["id"])
    assert second is not None and newest is not None and second.bytes > 0
    bounds = drafts.DraftBounds(bytes=second.bytes + 100)
    assert drafts.segment_stored(services.engine, services.storage, newest, 200, bounds)
    assert ann.get(made[1]["status_url"]).status_code == 404
    assert not services.storage.exists(storage_keys.draft_segment_key(acme.workspace_id, made[1]["id"], 0))
    with services.engine.connect() as conn:
        newest = drafts_repo.find_draft(conn, fourth["id"])
    assert newest is not None
    draft_tasks.draw_draft_chunk(fourth["id"], 0)
    fourth_key = storage_keys.draft_segment_key(acme.workspace_id, fourth["id"], 0)
    assert services.storage.exists(fourth_key)
    assert not drafts.segment_stored(services.engine, services.storage, newest, second.bytes + 1, bounds)
    failed = state(ann, fourth)  # alone past the bound: it fails, and nothing of it is kept
    assert failed["status"] == "failed" and "more room" in failed["error"] and failed["bytes"] == 0
    assert not services.storage.exists(fourth_key)
    assert playlist(client, fourth["stream_url"]).is_endlist

    # the retention round deletes drafts past their ten minutes, rows and files
    draft_tasks.draw_draft_chunk(made[2]["id"], 0)
    third_key = storage_keys.draft_segment_key(acme.workspace_id, made[2]["id"], 0)
    assert services.storage.exists(third_key)
    clock.advance(drafts.DraftBounds().ttl_sec + 1)
    assert ann.get(made[2]["status_url"]).status_code == 404  # expired: no longer shown
    purged = retention.purge()
    assert purged.drafts >= 2  # acme's third, the other workspace's (and, on PostgreSQL, other tests')
    assert not services.storage.exists(third_key)
    with services.engine.connect() as conn:
        assert drafts_repo.workspace_drafts(conn, acme.workspace_id) == []
        assert drafts_repo.workspace_drafts(conn, other.workspace_id) == []


def test_an_existing_video_has_a_live_still_and_play_preview_of_its_unsaved_fields(app, services, client, clock,
                                                                                 make_tenant, create_video):
    acme, other = make_tenant(name="acme", credits=2), make_tenant(name="other")
    made = create_video(acme, storyId="flash_sale", format="16:9")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    page = ann.get(f"/app/videos/{made['id']}").get_data(as_text=True)
    assert f'data-preview-url="/app/videos/{made["id"]}/fields/preview"' in page and "Play preview" in page
    posted = _form(ann, "flash_sale")
    fields = {k: v for k, v in posted.items() if k.startswith("f.")}
    token = csrf_token(ann, f"/app/videos/{made['id']}")
    base = {**fields, "csrf_token": token, "preview_time": "2", "f.badge_color": "#FF0000"}

    still = ann.post(f"/app/videos/{made['id']}/fields/preview", data=base)
    assert still.status_code == 200 and still.mimetype == "image/png"
    assert Image.open(io.BytesIO(still.data)).size == (960, 540)
    wrong = ann.post(f"/app/videos/{made['id']}/fields/preview", data={**base, "f.badge_color": "red"})
    assert wrong.status_code == 400 and "f.badge_color" in wrong.get_json()["problems"]
    assert bob.post(f"/app/videos/{made['id']}/fields/preview",
                    data={**base, "csrf_token": csrf_token(bob, "/app/settings")}).status_code == 404

    started = ann.post(f"/app/videos/{made['id']}/draft", data=base, headers=JSON)
    assert started.status_code == 202, started.get_data(as_text=True)
    draft = started.get_json()
    run_all(draft)
    assert playlist(client, draft["stream_url"]).is_endlist
    with services.engine.connect() as conn:
        saved = conn.execute(select(func.count()).select_from(versions)
                             .where(versions.c.video_id == made["id"])).scalar_one()
    assert saved == 1 and services.renders.list_for_video(acme.workspace_id, made["id"]) == []
    assert services.accounts.workspace(acme.workspace_id).credits == 2

    # without JavaScript: the button posts the form; the page shows the still and the draft's player and link
    answer = ann.post(f"/app/videos/{made['id']}/draft", data={**base, "play": "1"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and 'id="preview-image" src="data:image/png;base64,' in html
    assert 'data-draft-status="/app/drafts/' in html and "/app/drafts/" in html and ".m3u8?expires=" in html


@pytest.mark.parametrize("story", ["flash_sale", "quote"])
def test_the_story_form_without_javascript_answers_with_the_still_and_the_draft(app, services, make_tenant,
                                                                               story) -> None:
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, story, format="16:9")
    answer = ann.post(f"/app/videos/new/{story}/draft", data={**posted, "play": "1"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and 'id="preview-image" src="data:image/png;base64,' in html
    assert 'data-draft-status="/app/drafts/' in html and "<noscript><video" in html
    refused = ann.post(f"/app/videos/new/{story}/draft", data={**posted, "duration": "9999"}, headers=JSON)
    assert refused.status_code == 400 and "video.duration_sec" in refused.get_json()["problems"]
    with services.engine.connect() as conn:
        assert len(drafts_repo.workspace_drafts(conn, acme.workspace_id)) == 1  # the refused one made none
