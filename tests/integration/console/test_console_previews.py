"""Making a video in the console, over a real database (SQLite and PostgreSQL), two workspaces side
by side: the gallery's thumbnails (drawn on first request with the workspace's default kit, kept
in its own storage, served again without drawing, drawn again when the kit changes, never another
workspace's), the story form's live preview (a PNG of unsaved values, or every problem at once in
words), and the corrected texts of a translated copy.
"""
from __future__ import annotations

import copy
import io
import re
from html import unescape

import numpy as np
from flask.testing import FlaskClient
from PIL import Image
from sqlalchemy import update

from reelfarm.renderer.raster import encode_png
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.storage_keys import story_thumbnail_key as thumbnail_key
from reelfarm.shared.tables import videos
from reelfarm.studio.stories import NEUTRAL_BRAND, list_stories
from tests.integration.api.conftest import Tenant
from tests.integration.console.conftest import csrf_token, signed_in_owner


def _image(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def _recolour(services, clock, tenant: Tenant, colour: str) -> None:
    """Every colour role of the tenant's default kit set to ``colour``."""
    tokens = copy.deepcopy(NEUTRAL_BRAND)
    tokens["colors"] = {role: colour for role in tokens["colors"]}
    with transaction(services.engine) as conn:
        kits_repo.update_brand_kit(conn, clock, tenant.workspace_id, tenant.default_kit_id, tokens=tokens)


def _thumbnail_urls(page: str) -> dict[str, str]:
    return {story: unescape(url) for story, url in re.findall(
        r'data-story="([a-z_]+)">\s*<a [^>]*>\s*<span class="story-thumb[^"]*">\s*<img src="([^"]+)"', page)}


def test_the_gallery_groups_every_story_and_draws_nothing_until_a_thumbnail_is_asked_for(app, services,
                                                                                         make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    page = ann.get("/app/videos/new?format=16:9").get_data(as_text=True)
    urls = _thumbnail_urls(page)
    assert set(urls) == {s.id for s in list_stories()}
    categories = {s.category.replace("_", " ").capitalize() for s in list_stories()}
    assert set(re.findall(r'<h3 id="cat-\d+">([^<]+)</h3>', page)) == categories
    assert all("format=16:9" in url and "v=" in url for url in urls.values())
    assert page.count('loading="lazy"') == len(urls)
    assert not any(services.storage.exists(thumbnail_key(acme.workspace_id, s.id, "16:9")) for s in list_stories())
    assert "/app/videos/new/flash_sale?format=16:9" in page  # the story's form opens in the format shown


def test_a_thumbnail_is_drawn_once_kept_per_workspace_and_drawn_again_when_the_kit_changes(app, services, clock,
                                                                                           make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    _recolour(services, clock, other, "#0A7A2F")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    url = _thumbnail_urls(ann.get("/app/videos/new").get_data(as_text=True))["quote"]
    first = ann.get(url)
    assert first.status_code == 200 and first.mimetype == "image/png"
    assert _image(first.data).size == (360, 640)
    assert first.headers["Cache-Control"] == "private, max-age=86400"
    tag = first.headers["ETag"].strip('"')
    assert f"v={tag}" in url
    key = thumbnail_key(acme.workspace_id, "quote", "9:16")
    assert services.storage.get_bytes(key).endswith(first.data)

    # served from storage: what is kept there is what comes back (nothing is drawn again)
    marker = encode_png(np.full((4, 4, 4), 255, dtype=np.uint8))
    services.storage.put_bytes(key, f"reelfarm-thumbnail {tag}\n".encode() + marker, "application/octet-stream")
    assert ann.get(url).data == marker
    assert ann.get(url, headers={"If-None-Match": f'"{tag}"'}).status_code == 304

    # the other workspace's thumbnail of the same story is its own: its kit's colours, its own key
    theirs = bob.get(url.replace(tag, "x"))
    assert theirs.status_code == 200 and theirs.data not in (marker, first.data)
    assert theirs.headers["Cache-Control"] == "private, no-cache"  # an old tag is not kept
    assert services.storage.exists(thumbnail_key(other.workspace_id, "quote", "9:16"))
    green = np.asarray(_image(theirs.data)).reshape(-1, 3)
    assert ((abs(green.astype(int) - (10, 122, 47)).sum(axis=1)) < 30).mean() > 0.3

    # a changed default kit: a new tag, drawn again into the same key (one per story and format)
    _recolour(services, clock, acme, "#7A0A2F")
    new_url = _thumbnail_urls(ann.get("/app/videos/new").get_data(as_text=True))["quote"]
    assert new_url != url
    again = ann.get(new_url)
    assert again.status_code == 200 and again.data != marker and again.headers["ETag"].strip('"') != tag
    assert services.storage.get_bytes(key).endswith(again.data)


def test_thumbnails_refuse_unknown_stories_formats_and_strangers(app, make_tenant):
    ann = signed_in_owner(app, make_tenant())
    assert ann.get("/app/stories/nope/thumbnail.png").status_code == 404
    assert ann.get("/app/stories/quote/thumbnail.png?format=2:1").status_code == 404
    signed_out = app.test_client().get("/app/stories/quote/thumbnail.png")
    assert signed_out.status_code == 302 and "/app/sign-in" in signed_out.headers["Location"]


def _form(browser: FlaskClient, story: str, **fields: str) -> dict[str, str]:
    """The story form as a browser would post it unchanged, with ``fields`` (``f.name``) replaced."""
    page = browser.get(f"/app/videos/new/{story}").get_data(as_text=True)
    posted = {name: unescape(value) for name, value in re.findall(
        r'<input id="[^"]*" name="([^"]+)" type="text" value="([^"]*)"', page)}
    posted.update({name: unescape(value) for name, value in re.findall(
        r'<textarea id="[^"]*" name="([^"]+)"[^>]*>([^<]*)</textarea>', page)})
    posted.update({"csrf_token": csrf_token(browser, f"/app/videos/new/{story}"), "format": "9:16", "duration": "",
                   "title": "", "brand_kit_id": "", "f.theme": "light", "preview_time": "2"})
    posted.update(fields)
    return posted


def test_the_preview_draws_unsaved_values_in_the_chosen_format_and_saves_nothing(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "flash_sale", format="16:9")
    before = services.videos.list(acme.workspace_id, 10)["data"]
    plain = ann.post("/app/videos/new/flash_sale/preview", data=posted, headers={"X-CSRF-Token": posted["csrf_token"]})
    assert plain.status_code == 200 and plain.mimetype == "image/png"
    assert _image(plain.data).size == (960, 540)
    red = ann.post("/app/videos/new/flash_sale/preview", data={**posted, "f.badge_color": "#FF0000"})
    drawn = np.asarray(_image(red.data)).reshape(-1, 3).astype(int)
    assert ((abs(drawn - (255, 0, 0)).sum(axis=1)) < 40).mean() > 0.02  # the badge, in the colour typed
    assert red.data != plain.data
    later = ann.post("/app/videos/new/flash_sale/preview", data={**posted, "f.badge_color": "#FF0000",
                                                                 "preview_time": "7.5"})
    assert later.data != red.data  # the outro, at the time chosen
    assert services.videos.list(acme.workspace_id, 10)["data"] == before

    # without JavaScript: the Preview button posts the form and the page shows the still
    page = ann.post("/app/videos/new/flash_sale", data={**posted, "preview": "1"})
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'id="preview-image" src="data:image/png;base64,' in html
    assert services.videos.list(acme.workspace_id, 10)["data"] == before
    assert ann.post("/app/videos/new/flash_sale/preview", data={**posted, "csrf_token": "x"}).status_code == 403


def test_every_problem_is_reported_at_once_in_words_beside_its_field(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "flash_sale", **{"f.badge_color": "red-ish", "f.headline": "x" * 130, "duration": "abc",
                                         "f.discount": ""})
    answer = ann.post("/app/videos/new/flash_sale/preview", data=posted)
    assert answer.status_code == 400
    problems = answer.get_json()["problems"]
    assert problems["f.badge_color"].startswith("Badge colour: 'red-ish' is not a colour; use #RRGGBB")
    assert problems["video.duration_sec"] == "Duration: 'abc' is not a number; use 6 to 60 seconds"
    assert re.fullmatch(r"Headline: at most \d+ characters \(this has 130\)", problems["f.headline"])
    assert problems["f.discount"] == "Discount: fill this in"
    assert len(problems) == 4

    page = ann.post("/app/videos/new/flash_sale", data=posted)  # Create: the same problems, each by its field
    html = unescape(page.get_data(as_text=True))
    assert page.status_code == 400 and "4 values need a change" in html
    for name, message in problems.items():
        assert re.search(rf'data-error-for="{re.escape(name)}" >{re.escape(message)}</p>', html), name
    assert 'value="red-ish"' in html and 'value="abc"' in html  # what was typed stays
    assert services.videos.list(acme.workspace_id, 10)["data"] == []


def test_a_preview_cannot_use_another_workspaces_kit(app, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other", second_kit=True)
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "quote", brand_kit_id=other.other_kit_id)
    answer = ann.post("/app/videos/new/quote/preview", data=posted)
    assert answer.status_code == 400 and answer.mimetype == "application/json"
    assert answer.get_json()["problems"] == {
        "video.brand_kit_id": "Brand kit: that kit is not one of this workspace's; choose one from the list"}


def _texts(html: str) -> dict[str, str]:
    found = dict(re.findall(r'<label for="text-\d+">([^<]+?)(?: <span[^>]*>[^<]*</span>)?</label>\s*'
                            r'<(?:input|textarea) id="text-(\d+)"', html))
    return {label: index for label, index in found.items()}


def test_a_translated_copy_has_its_texts_corrected_as_a_new_version(app, services, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    original = create_video(acme, storyId="flash_sale", title="Spring sale")
    copy_ = create_video(acme, storyId="flash_sale", title="Spring sale (es)", fields={"kicker": "Centellea venta"})
    with transaction(services.engine) as conn:
        conn.execute(update(videos).where(videos.c.id == copy_["id"]).values(
            source_video_id=original["id"], locale="es", story_id=None))
    page = unescape(ann.get(f"/app/videos/{copy_['id']}").get_data(as_text=True))
    assert 'id="texts-h">Texts<' in page and 'id="fields-h"' not in page
    assert "<span data-language>Español (es)</span>" in page
    index = re.search(r'<input id="text-(\d+)" name="t\.\d+" value="Centellea venta"', page).group(1)
    token = csrf_token(ann, f"/app/videos/{copy_['id']}")

    refused = ann.post(f"/app/videos/{copy_['id']}/texts", data={"csrf_token": token, "version": "1",
                                                                 f"t.{index}": " ", "t.0": "y" * 2001})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert "write a text; it cannot be empty" in html and "Title: at most 200 characters (this has 2001)" in html
    assert services.videos.get(acme.workspace_id, copy_["id"])["current_version"]["number"] == 1

    theirs = bob.post(f"/app/videos/{copy_['id']}/texts", data={"csrf_token": csrf_token(bob, "/app/settings"),
                                                                "version": "1", f"t.{index}": "Robado"})
    assert theirs.status_code == 404  # another workspace's video is not there for them
    saved = ann.post(f"/app/videos/{copy_['id']}/texts", data={"csrf_token": token, "version": "1",
                                                               f"t.{index}": "Venta relámpago", "note": "fix"})
    assert saved.status_code == 303 and saved.headers["Location"].endswith("#versions")
    video = services.videos.get(acme.workspace_id, copy_["id"])
    assert video["current_version"]["number"] == 2 and video["current_version"]["note"] == "fix"
    texts = [layer["text"] for scene in video["current_version"]["doc"]["scenes"] for layer in scene["layers"]
             if layer.get("type") == "text"]
    assert "Venta relámpago" in texts and "Centellea venta" not in texts
    stale = ann.post(f"/app/videos/{copy_['id']}/texts", data={"csrf_token": token, "version": "1",
                                                               f"t.{index}": "Otra"})
    assert stale.status_code == 302  # refused with a message on the page: it changed since version 1
    assert "changed while the page was open" in unescape(ann.get(stale.headers["Location"]).get_data(as_text=True))
    assert services.videos.get(acme.workspace_id, copy_["id"])["current_version"]["number"] == 2


def test_the_language_menu_names_each_language_in_its_own_words(app, make_tenant, create_video):
    acme = make_tenant(name="acme", plan="pro")
    ann = signed_in_owner(app, acme)
    video = create_video(acme, title="Spring sale")
    page = unescape(ann.get(f"/app/videos/{video['id']}").get_data(as_text=True))
    options = re.findall(r'<option value="([a-zA-Z-]+)">([^<]+)</option>', page.split('id="locale"', 1)[1])
    assert options  # Apertium's English-Spanish pair is installed with the test system (scripts/setup-system.sh)
    assert all(name.endswith(f"({tag})") and name != tag for tag, name in options)
    assert ("es", "Español (es)") in options
