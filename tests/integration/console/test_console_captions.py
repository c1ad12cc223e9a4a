"""Captions in the console, over a real database (SQLite and PostgreSQL): SRT and WebVTT files
uploaded on the Media page (listed as Captions with their cue count and length, a wrong one refused
naming its line, nothing of it stored), picked in a story's form with their style, position and size
(saved as the ``captions`` field, the document carrying the cues, the live preview drawing them), changed
or removed in a video's fields form, a finished render's WebVTT file linked from the video page; and
two workspaces: B's forms never list A's captions files, and A's id posted to B's forms is refused
beside the captions with nothing made.
"""
from __future__ import annotations

import io
import re
import secrets
from html import unescape
from urllib.parse import urlsplit

import numpy as np
from flask.testing import FlaskClient
from PIL import Image

from reelfarm.farm.services.captions import publish_captions
from reelfarm.renderer.captions import Cue, parse_captions
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from tests.integration.api.test_api_assets import mp3
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.integration.console.test_console_media_fields import _beside, _upload, _video_id
from tests.integration.console.test_console_previews import _form

STORY = "/app/videos/new/announcement"
SRT = (b"1\r\n00:00:00,500 --> 00:00:05,500\r\nWelcome to the second studio\r\n\r\n"
       b"2\r\n00:00:05,500 --> 00:00:07,250\r\nSee you there\r\n")
CUES = [Cue(0.5, 5.5, "Welcome to the second studio"), Cue(5.5, 7.25, "See you there")]
WRONG = b"WEBVTT\n\n00:00.500 --> 00:01.000\nHi\n\n00:02.000 -> 00:03.000\nThere\n"
WRONG_SAYS = ("the captions file is wrong at line 6: '00:02.000 -> 00:03.000' is not a cue timing "
              "(HH:MM:SS.mmm or MM:SS.mmm --> HH:MM:SS.mmm or MM:SS.mmm)")


def _media(browser: FlaskClient, **files: bytes):
    """The Media page's form posted without JavaScript, with ``files`` by name."""
    return browser.post("/app/media", content_type="multipart/form-data", data={
        "csrf_token": csrf_token(browser, "/app/media"),
        "files": [(io.BytesIO(data), name) for name, data in files.items()]})


def test_captions_files_are_uploaded_listed_and_a_wrong_one_named_by_its_line(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    page = ann.get("/app/media").get_data(as_text=True)
    assert "Upload images, sounds, videos and captions" in page and "SRT or WebVTT captions files" in page
    assert ".srt,.vtt,text/vtt" in page
    assert 'href="/app/media?kind=captions"' in page

    stored = _media(ann, **{"subs.srt": SRT})
    assert stored.status_code == 303
    vtt = _upload(ann, b"WEBVTT\n\n00:01.000 --> 01:02.400\nA long one\n", "talk.vtt")
    assert (vtt["kind"], vtt["cues"], vtt["duration_sec"]) == ("captions", 1, 62.4)
    listed = unescape(ann.get("/app/media?kind=captions").get_data(as_text=True))
    items = re.findall(r'<li class="media-item" id="asset-[^"]+" data-kind="([^"]+)">.*?<strong class="break">'
                       r'([^<]+)</strong>.*?<p class="small">([^<]+)<span data-cues>([^<]+)</span>([^<]+)<br>',
                       listed, re.DOTALL)
    assert sorted((kind, name, " ".join(f"{a}{b}{c}".split())) for kind, name, a, b, c in items) == [
        ("captions", "subs.srt", f"Captions · {len(SRT)} bytes · 2 cues, to 0:07"),
        ("captions", "talk.vtt", "Captions · 43 bytes · 1 cue, to 1:02")], listed
    assert '<span class="sound-icon" aria-hidden="true">CC</span>' in listed
    assert "No file's name holds “nothing-like-it” among the captions." in unescape(
        ann.get("/app/media?kind=captions&q=nothing-like-it").get_data(as_text=True))

    # a wrong file, beside a good one: refused naming the line, the good one stored
    refused = _media(ann, **{"wrong.vtt": WRONG, "more.srt": SRT.replace(b"See you", b"Meet us")})
    assert refused.status_code == 200  # one stored, one not
    errors = unescape(re.search(r'<ul class="upload-errors">(.*?)</ul>', refused.get_data(as_text=True), re.DOTALL).group(1))
    assert errors == f'<li><span class="mono">wrong.vtt</span>: {WRONG_SAYS}</li>'
    alone = _media(ann, **{"wrong.vtt": WRONG})
    assert alone.status_code == 400 and 'role="alert"' in alone.get_data(as_text=True)
    by_script = ann.post("/app/media/upload.json", data={"file": (io.BytesIO(WRONG), "wrong.vtt")},
                         content_type="multipart/form-data", headers={"X-CSRF-Token": csrf_token(ann, "/app/media")})
    assert by_script.status_code == 400 and by_script.get_json()["error"]["message"] == WRONG_SAYS
    names = sorted(a["name"] for a in services.assets.list(acme.workspace_id, 10, None, "captions")["data"])
    assert names == ["more.srt", "subs.srt", "talk.vtt"], "nothing of the wrong file is stored"


def _still(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def test_a_captions_file_is_picked_in_the_story_form_with_its_style(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    subs = _upload(ann, SRT, "subs.srt")
    sound = _upload(ann, mp3(2.0), "jingle.mp3")
    page = unescape(ann.get(STORY).get_data(as_text=True))
    assert f'<option value="{subs["id"]}" >subs.srt · 2 cues · 0:07 · SRT</option>' in page
    assert re.search(rf'<select id="captions-asset_id" name="captions.asset_id"[^>]*>\s*<option value="">\(none\)'
                     rf'</option>\s*<option value="{subs["id"]}"', page)
    assert f'<option value="{sound["id"]}" >subs' not in page and page.count(f'value="{sound["id"]}"') == 1  # the soundtrack's list only
    assert '<option value="box" selected>Box in the text colour</option>' in page
    for part in ("style", "position", "size"):
        assert f'<select id="captions-{part}" name="captions.{part}"' in page

    posted = _form(ann, "announcement", **{"f.headline": "Our second studio", "preview_time": "3"})
    # the live preview draws the cue at 3 s: the still differs from the one without captions at the safe area's foot
    bare = ann.post(f"{STORY}/preview", data=posted)
    shown = ann.post(f"{STORY}/preview", data={**posted, "captions.asset_id": subs["id"], "captions.size": "large"})
    assert bare.status_code == shown.status_code == 200, shown.get_data(as_text=True)[:500]
    a, b = _still(shown.data), _still(bare.data)
    height = a.shape[0]
    changed = np.abs(a - b).max(axis=2) > 48
    assert changed[int(height * 0.7):].mean() > 0.01, "the cue is drawn near the foot"
    assert changed[: int(height * 0.5)].mean() < 0.001, "nothing changes above it"

    refused = ann.post(STORY, data={**posted, "captions.asset_id": subs["id"], "captions.style": "loud",
                                    "captions.position": "middle"})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert _beside(html, "captions.style") == "Caption style: choose box, inverse or primary"
    assert _beside(html, "captions.position") == "Caption position: choose bottom or top"
    assert 'href="#captions-style"' in html and f'<option value="{subs["id"]}" selected>' in html
    wrong = ann.post(STORY, data={**posted, "captions.asset_id": sound["id"]})
    assert wrong.status_code == 400
    assert _beside(wrong.get_data(as_text=True), "captions.asset_id") == (
        f"Captions: no captions file of this workspace's media library has the id {sound['id']}; upload the "
        "captions file or choose one from the library")
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    made = ann.post(STORY, data={**posted, "captions.asset_id": subs["id"], "captions.style": "inverse",
                                 "captions.position": "top", "captions.size": "large"})
    video_id = _video_id(made)
    fields = services.read_models.current_fields(acme.workspace_id, video_id)
    assert fields["captions"] == {"asset_id": subs["id"], "style": "inverse", "position": "top", "size": "large"}
    doc = services.videos.get(acme.workspace_id, video_id)["current_version"]["doc"]
    assert doc["captions"] == {"cues": [c.as_dict() for c in CUES], "style": "inverse", "position": "top",
                               "size": "large"}
    none = ann.post(STORY, data={**posted, "captions.asset_id": "", "captions.style": "loud"})
    assert "captions" not in services.videos.get(acme.workspace_id, _video_id(none))["current_version"]["doc"]


def _finished(services, clock, tenant, video_id: str) -> str:
    """A succeeded render of the video's current version with the WebVTT file its stitch publishes."""
    version = services.videos.get(tenant.workspace_id, video_id)["current_version"]
    key = f"renders/{secrets.token_hex(8)}"
    services.storage.put_bytes(f"{key}/video.mp4", b"not really an mp4", "video/mp4")
    with transaction(services.engine) as conn:
        render = renders_repo.insert_render(conn, clock, renders_repo.NewRender(
            workspace_id=tenant.workspace_id, video_id=video_id, version_id=version["id"], format="9:16",
            resolution=720, fps=30, dedup_hash=secrets.token_hex(32), frames=1, chunks=1))
        captions_key = publish_captions(services.storage, render.id, version["doc"])
        renders_repo.complete_render(conn, clock, render.id, url_key=f"{key}/video.mp4", poster_key=None, size=17,
                                     duration_sec=8.0, captions_key=captions_key)
    clock.advance(1)
    return render.id


def test_a_videos_fields_form_changes_the_captions_and_its_page_links_the_renders_file(
        app, services, clock, make_tenant):
    acme = make_tenant(name="acme", credits=5)
    ann = signed_in_owner(app, acme)
    subs = _upload(ann, SRT, "subs.srt")
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio"})
    video_id = _video_id(ann.post(STORY, data={**posted, "captions.asset_id": subs["id"], "captions.size": "small"}))
    page = unescape(ann.get(f"/app/videos/{video_id}").get_data(as_text=True))
    assert f'<option value="{subs["id"]}" selected>' in page and '<option value="small" selected>Small</option>' in page
    assert "Captions (WebVTT)" not in page  # no render yet

    render_id = _finished(services, clock, acme, video_id)
    page = unescape(ann.get(f"/app/videos/{video_id}").get_data(as_text=True))
    link = re.search(rf'<li class="render" id="render-{render_id}".*?<p class="small render-captions" '
                     r'data-render-captions><a href="([^"]+)" download="([^"]+)">Captions \(WebVTT\)', page, re.DOTALL)
    assert link is not None, page
    assert link.group(2) == "Our second studio v1 9x16 720p.vtt"
    url = urlsplit(link.group(1))
    served = ann.get(f"{url.path}?{url.query}")
    assert served.status_code == 200 and served.headers["Content-Type"].startswith("text/vtt")
    assert "attachment" in served.headers.get("Content-Disposition", "")
    assert parse_captions(served.data) == CUES

    fields = {k: v for k, v in posted.items() if k.startswith("f.") or k == "csrf_token"}
    fields["csrf_token"] = csrf_token(ann, f"/app/videos/{video_id}")
    moved = ann.post(f"/app/videos/{video_id}/fields", data={**fields, "captions.asset_id": subs["id"],
                                                              "captions.position": "top"})
    assert moved.status_code == 303
    assert services.read_models.current_fields(acme.workspace_id, video_id)["captions"] == {
        "asset_id": subs["id"], "position": "top"}
    removed = ann.post(f"/app/videos/{video_id}/fields", data={**fields, "captions.asset_id": ""})
    assert removed.status_code == 303
    version = services.videos.get(acme.workspace_id, video_id)["current_version"]
    assert version["number"] == 3 and "captions" not in version["doc"]
    assert services.read_models.current_fields(acme.workspace_id, video_id)["captions"] is None


def test_one_workspaces_forms_neither_list_nor_accept_anothers_captions(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    theirs = _upload(ann, SRT, "secret-launch.srt")
    own = _upload(bob, SRT.replace(b"second studio", b"new shop"), "ours.srt")
    for page in (bob.get(STORY).get_data(as_text=True), bob.get("/app/media").get_data(as_text=True),
                 bob.get("/app/media?kind=captions").get_data(as_text=True)):
        assert own["id"] in page
        assert theirs["id"] not in page and "secret-launch" not in page and theirs["key"] not in page

    posted = _form(bob, "announcement", **{"f.headline": "Not ours"})
    forged = {"captions.asset_id": theirs["id"]}
    refused = bob.post(STORY, data={**posted, **forged})
    assert refused.status_code == 400
    assert _beside(refused.get_data(as_text=True), "captions.asset_id").startswith(
        "Captions: no captions file of this workspace's media library has the id")
    for path in (f"{STORY}/preview", f"{STORY}/draft"):
        answer = bob.post(path, data={**posted, **forged}, headers={"Accept": "application/json"})
        assert answer.status_code == 400 and "captions.asset_id" in answer.get_json()["problems"], path
    assert services.videos.list(other.workspace_id, 10)["data"] == []

    mine = _video_id(bob.post(STORY, data={**posted, "captions.asset_id": own["id"]}))
    page = bob.get(f"/app/videos/{mine}").get_data(as_text=True)
    assert theirs["id"] not in page
    fields = {k: v for k, v in posted.items() if k.startswith("f.")}
    fields["csrf_token"] = csrf_token(bob, f"/app/videos/{mine}")
    saved = bob.post(f"/app/videos/{mine}/fields", data={**fields, **forged})
    assert saved.status_code == 400
    assert "of this workspace's media library has the id" in _beside(saved.get_data(as_text=True), "captions.asset_id")
    preview = bob.post(f"/app/videos/{mine}/fields/preview", data={**fields, **forged})
    assert preview.status_code == 400 and "captions.asset_id" in preview.get_json()["problems"]
    version = services.videos.get(other.workspace_id, mine)["current_version"]
    assert version["number"] == 1
    assert [c["text"] for c in version["doc"]["captions"]["cues"]] == ["Welcome to the new shop", "See you there"]
