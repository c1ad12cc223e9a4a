"""The console's Media page without JavaScript, over a real database (SQLite and PostgreSQL): each
file shown by its name (or, kept without one, its kind and day), renamed by a small form, found by
a search box (``?q=``), a sound with its own player, an image's thumbnail on a checkerboard,
deleting asked first on a page of its own, a file in use not deleted and its videos named by
title, linked; the story form's library lists names too. Another workspace can do none of it to
these files, and sees neither their names nor its neighbour's video titles.
"""
from __future__ import annotations

import io
import re
from html import unescape
from urllib.parse import urlsplit

from tests.integration.api.test_api_asset_names import transparent_png
from tests.integration.api.test_api_assets import mp3, png
from tests.integration.api.test_api_renders import _video
from tests.integration.api.test_api_storage_keys import with_image
from tests.integration.console.conftest import csrf_token, signed_in_owner


def _post_files(browser, *files: tuple[bytes, str]):
    data = {"csrf_token": csrf_token(browser, "/app/media"),
            "files": [(io.BytesIO(body), name) for body, name in files]}
    return browser.post("/app/media", data=data, content_type="multipart/form-data")


def _card(html: str, asset_id: str) -> str:
    found = re.search(rf'<li class="media-item" id="asset-{asset_id}".*?</li>\s*(?=<li class="media-item"|</ul>)',
                      html, re.DOTALL)
    assert found is not None, asset_id
    return found.group(0)


def _names(html: str) -> list[str]:
    return [unescape(n) for n in re.findall(r'<p class="media-name"><strong class="break">(.*?)</strong>', html)]


def test_files_are_shown_renamed_and_found_by_name(app, services, make_tenant, clock):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    assert _post_files(ann, (transparent_png(), "Badge <clear>.png"), (mp3(2.0), "Launch jingle.mp3")).status_code == 303
    clock.advance(60)
    nameless = services.assets.upload(tenant.workspace_id, png(colour=(9, 9, 9)))  # kept without a name
    listed = {a["name"]: a for a in services.assets.list(tenant.workspace_id, 10)["data"]}
    badge, jingle = listed["Badge <clear>.png"], listed["Launch jingle.mp3"]
    html = ann.get("/app/media").get_data(as_text=True)
    shown = _names(html)  # newest first: the nameless file by its kind and day, then the two sent together
    assert shown[0] == f"Image uploaded {nameless['created_at']:%Y-%m-%d %H:%M}"
    assert sorted(shown[1:]) == ["Badge <clear>.png", "Launch jingle.mp3"]
    assert "Badge &lt;clear&gt;.png" in html  # escaped, never markup
    sound = _card(html, jingle["id"])
    player = re.search(r'<audio class="media-player" controls preload="none" src="([^"]+)"', sound)
    assert player is not None and urlsplit(unescape(player.group(1)))[2:] == urlsplit(jingle["url"])[2:]
    picture = _card(html, badge["id"])
    assert 'class="media-thumb checkered"' in picture and ".thumb.webp" in picture
    assert 'role="search"' in html and 'name="q"' in html

    # renamed by the card's small form; a name that cannot be one is refused, the old kept
    token = csrf_token(ann, "/app/media")
    done = ann.post(f"/app/media/{badge['id']}/rename", data={"csrf_token": token, "name": "Team badge.png",
                                                            "back": "/app/media?kind=image"})
    assert done.status_code == 303 and done.headers["Location"] == f"/app/media?kind=image#asset-{badge['id']}"
    assert services.assets.get(tenant.workspace_id, badge["id"])["name"] == "Team badge.png"
    refused = ann.post(f"/app/media/{badge['id']}/rename", data={"csrf_token": token, "name": "a/b"},
                       follow_redirects=True)
    assert "The name is not changed" in refused.get_data(as_text=True)
    assert services.assets.get(tenant.workspace_id, badge["id"])["name"] == "Team badge.png"

    # found by name, in any case, within a kind too; the pages keep the search
    found = ann.get("/app/media?q=TEAM").get_data(as_text=True)
    assert _names(found) == ["Team badge.png"] and 'value="TEAM"' in found
    assert _names(ann.get("/app/media?q=team&kind=audio").get_data(as_text=True)) == []
    assert "No file's name holds “zzz”." in ann.get("/app/media?q=zzz").get_data(as_text=True)

    # the story form's library lists the image by its name, the soundtrack the sound by its
    story = ann.get("/app/videos/new/announcement").get_data(as_text=True)
    assert '<span class="pick-name">Team badge.png</span>' in story
    assert f'<option value="{jingle["id"]}" >Launch jingle.mp3 · 0:02' in story


def test_deleting_asks_first_and_a_file_in_use_names_its_videos(app, client, services, make_tenant):
    a, b = make_tenant(name="a"), make_tenant(name="b")
    ann, bob = signed_in_owner(app, a), signed_in_owner(app, b)
    assert _post_files(ann, (png(colour=(1, 2, 3)), "hero.png"), (png(colour=(3, 2, 1)), "spare.png")).status_code == 303
    listed = {x["name"]: x for x in services.assets.list(a.workspace_id, 10)["data"]}
    hero, spare = listed["hero.png"], listed["spare.png"]
    video = _video(client, a, title="Spring launch")
    doc = with_image(video["current_version"]["doc"], key=hero["key"])
    assert client.patch(f"/api/v1/videos/{video['id']}", json={"doc": doc}, headers=a.headers).status_code == 200

    page = ann.get("/app/media").get_data(as_text=True)
    link = re.search(r'<a href="([^"]+)" class="media-delete"', _card(page, spare["id"]))
    assert link is not None and unescape(link.group(1)).startswith(f"/app/media/{spare['id']}/delete?back=")
    asked = ann.get(unescape(link.group(1)))
    assert asked.status_code == 200
    text = asked.get_data(as_text=True)
    assert "Delete “spare.png”?" in text and f'action="/app/media/{spare["id"]}/delete"' in text
    assert services.assets.get(a.workspace_id, spare["id"])  # asking deleted nothing
    gone = ann.post(f"/app/media/{spare['id']}/delete", data={"csrf_token": csrf_token(ann, "/app/media"),
                                                            "back": "/app/media"})
    assert gone.status_code == 303 and gone.headers["Location"] == "/app/media"
    assert "“spare.png” is deleted." in ann.get("/app/media").get_data(as_text=True)

    in_use = ann.get(f"/app/media/{hero['id']}/delete").get_data(as_text=True)
    assert "“hero.png” is in use" in in_use and "Delete the file" not in in_use
    assert f'<a href="/app/videos/{video["id"]}">Video: Spring launch</a>' in in_use
    refused = ann.post(f"/app/media/{hero['id']}/delete", data={"csrf_token": csrf_token(ann, "/app/media")})
    assert refused.status_code == 409 and "Video: Spring launch" in refused.get_data(as_text=True)
    assert services.assets.get(a.workspace_id, hero["id"])["name"] == "hero.png"

    # B: not A's file, its name, its rename, its delete, nor A's video's title
    token = csrf_token(bob, "/app/media")
    assert bob.get(f"/app/media/{hero['id']}/delete").status_code == 404
    assert bob.post(f"/app/media/{hero['id']}/delete", data={"csrf_token": token}).status_code == 404
    assert bob.post(f"/app/media/{hero['id']}/rename", data={"csrf_token": token, "name": "x.png"}).status_code == 404
    searched = bob.get("/app/media?q=hero").get_data(as_text=True)
    assert "hero.png" not in searched and "Spring launch" not in searched and _names(searched) == []
    assert services.assets.get(a.workspace_id, hero["id"])["name"] == "hero.png"
