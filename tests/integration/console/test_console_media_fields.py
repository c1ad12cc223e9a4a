"""The media library in the console's forms, over a real database (SQLite and PostgreSQL): a story
form's image field filled by a file uploaded without JavaScript (stored in the library, its id in
the field, the video's document naming its key) or by an image picked from the library; the live
preview drawing the picked image at once; the soundtrack (a library sound, volume, fades) saved as
the ``soundtrack`` field; the brand kit's logo picked from the library or uploaded into it; refused
uploads stored nowhere; and two workspaces: B's forms never list A's images or sounds, and an id of
A's posted to B's forms is refused beside its field with nothing made.
"""
from __future__ import annotations

import base64
import io
import re
from html import unescape
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from flask.testing import FlaskClient
from PIL import Image

from tests.integration.api.test_api_assets import (  # noqa: F401 - s3_endpoint, settings: fixtures, local files or moto's S3
    mp3,
    png,
    s3_endpoint,
    settings,
)
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.integration.console.test_console_brand_kits import _form as _kit_form
from tests.integration.console.test_console_previews import _form

MAGENTA = (230, 0, 200)
STORY = "/app/videos/new/announcement"


def _upload(browser: FlaskClient, data: bytes, name: str = "x.png") -> dict:
    """An upload as the page's script sends it (one file, ``/app/media/upload.json``)."""
    made = browser.post("/app/media/upload.json", data={"file": (io.BytesIO(data), name)},
                        content_type="multipart/form-data", headers={"X-CSRF-Token": csrf_token(browser, "/app/media")})
    assert made.status_code == 201, made.get_data(as_text=True)
    return made.get_json()


def _beside(page: str, field: str) -> str:
    match = re.search(rf'<p class="error" id="[^"]*-err" data-error-for="{re.escape(field)}" >([^<]*)<', page)
    assert match, f"no problem shown beside {field}"
    return unescape(match.group(1))


def _share(png_bytes: bytes, colour: tuple[int, int, int], tolerance: int = 24) -> float:
    """The share of the image's pixels within ``tolerance`` of ``colour``."""
    pixels = np.asarray(Image.open(io.BytesIO(png_bytes)).convert("RGB"), dtype=np.int16)
    near = (np.abs(pixels - np.array(colour, dtype=np.int16)) <= tolerance).all(axis=-1)
    return float(near.mean())


def _unsigned(logo: Any) -> Any:
    """A kit's ``logo`` token without its URL's signature."""
    if isinstance(logo, dict) and isinstance(logo.get("url"), str):
        return {**logo, "url": logo["url"].split("?", 1)[0]}
    return logo


def _video_id(answer) -> str:
    assert answer.status_code == 303, answer.get_data(as_text=True)[:2000]
    return answer.headers["Location"].rsplit("/", 1)[1]


def test_a_file_uploaded_in_the_story_form_without_javascript_is_stored_and_named_by_the_video(
        app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    page = ann.get(STORY).get_data(as_text=True)
    assert 'enctype="multipart/form-data"' in page
    assert 'name="upload.image" type="file"' in page and 'name="pick.image" value="" checked' in page
    assert "No images in the library yet" in page
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio", "preview_time": "5"})

    # the Preview button without JavaScript: the file is stored, its id fills the field, the still shows it
    previewed = ann.post(STORY, data={**posted, "preview": "1", "upload.image": (io.BytesIO(png((320, 240), MAGENTA)),
                                                                                "studio.png")},
                         content_type="multipart/form-data")
    assert previewed.status_code == 200
    [asset] = services.assets.list(acme.workspace_id, 10)["data"]
    assert asset["kind"] == "image" and (asset["width"], asset["height"]) == (320, 240)
    html = previewed.get_data(as_text=True)
    assert f'name="f.image" type="text" inputmode="url" value="{asset["id"]}"' in html
    assert 'alt="The library image chosen, 320×240"' in html  # its thumbnail beside the field
    assert f'name="pick.image" value="{asset["id"]}"' in html  # and it is listed to choose
    still = re.search(r'<img id="preview-image" src="data:image/png;base64,([^"]+)"', html).group(1)
    assert _share(base64.b64decode(still), MAGENTA) > 0.02  # the still draws the uploaded picture

    # saved with a new file: stored too, and the video's document names its key
    made = ann.post(STORY, data={**posted, "upload.image": (io.BytesIO(png((300, 200), (10, 200, 40))), "b.png")},
                    content_type="multipart/form-data")
    video = services.videos.get(acme.workspace_id, _video_id(made))
    second = next(a for a in services.assets.list(acme.workspace_id, 10)["data"] if a["id"] != asset["id"])
    assert services.read_models.current_fields(acme.workspace_id, video["id"])["image"] == second["id"]
    assert video["current_version"]["doc"]["assets"]["image"] == {"type": "image", "key": second["key"]}


def test_an_image_picked_from_the_library_fills_the_field_and_the_live_preview_draws_it(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    picture = _upload(ann, png((320, 240), MAGENTA))
    page = ann.get(STORY).get_data(as_text=True)
    assert f'name="pick.image" value="{picture["id"]}"' in page
    shown = unescape(re.search(rf'value="{picture["id"]}" data-pick-for="fld-image"><label [^>]*><img src="([^"]+)"',
                               page).group(1))
    # the same thumbnail, signed afresh for the page (S3 signs with the second the URL is made in)
    assert urlsplit(shown).path == urlsplit(picture["thumbnail_url"]).path and urlsplit(shown).query
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio", "preview_time": "5"})
    # the live preview (the script's post): a picked image is drawn at once; without one, a plain design
    plain = ann.post(f"{STORY}/preview", data=posted)
    drawn = ann.post(f"{STORY}/preview", data={**posted, "pick.image": picture["id"]})
    assert plain.status_code == drawn.status_code == 200 and drawn.mimetype == "image/png"
    assert _share(drawn.data, MAGENTA) > 0.02 and _share(plain.data, MAGENTA) < 0.001
    # the script also puts the id in the field itself: the same still
    assert ann.post(f"{STORY}/preview", data={**posted, "f.image": picture["id"]}).data == drawn.data
    # saved without JavaScript: the picked image wins over what the field held
    made = ann.post(STORY, data={**posted, "f.image": "", "pick.image": picture["id"]})
    video = services.videos.get(acme.workspace_id, _video_id(made))
    assert video["current_version"]["doc"]["assets"]["image"] == {"type": "image", "key": picture["key"]}
    assert services.assets.used_by(acme.workspace_id, [picture["id"]])[picture["id"]]["videos"] == [video["id"]]


def test_the_soundtrack_is_saved_as_the_stories_soundtrack_field(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    sound = _upload(ann, mp3(3.0), "jingle.mp3")
    picture = _upload(ann, png(colour=(1, 2, 3)))
    page = ann.get(STORY).get_data(as_text=True)
    assert f'<option value="{sound["id"]}" >jingle.mp3 · 0:03 · MPEG' in page  # by the file's name
    assert f'<option value="{picture["id"]}"' not in page  # only sounds in the soundtrack's list
    assert f'name="pick.image" value="{sound["id"]}"' not in page  # only images beside an image field
    posted = _form(ann, "announcement", **{"f.headline": "With music"})
    refused = ann.post(STORY, data={**posted, "soundtrack.asset_id": sound["id"], "soundtrack.volume": "150",
                                    "soundtrack.fade_in": "soon", "soundtrack.fade_out": "31"})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert _beside(html, "soundtrack.volume") == "Volume: use 0 to 100%"
    assert _beside(html, "soundtrack.fade_in") == "Fade in: 'soon' is not a number"
    assert _beside(html, "soundtrack.fade_out") == "Fade out: use 0 to 30 seconds"
    assert 'href="#soundtrack-volume"' in html and 'value="150"' in html  # linked from the summary, kept as typed
    assert f'<option value="{sound["id"]}" selected>' in html
    # an image's id is no sound
    wrong = ann.post(STORY, data={**posted, "soundtrack.asset_id": picture["id"]})
    assert wrong.status_code == 400
    assert _beside(wrong.get_data(as_text=True), "soundtrack.asset_id").startswith(
        "Soundtrack: no sound of this workspace's media library has the id")
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    made = ann.post(STORY, data={**posted, "soundtrack.asset_id": sound["id"], "soundtrack.volume": "60",
                                 "soundtrack.fade_in": "1", "soundtrack.fade_out": "2.5"})
    video_id = _video_id(made)
    version = services.videos.get(acme.workspace_id, video_id)["current_version"]
    assert services.read_models.current_fields(acme.workspace_id, video_id)["soundtrack"] == {"asset_id": sound["id"], "volume": 0.6, "fade_in_sec": 1.0,
                                               "fade_out_sec": 2.5}
    assert version["doc"]["assets"]["soundtrack"] == {"type": "audio", "key": sound["key"]}
    assert version["doc"]["audio"] == [{"asset": "soundtrack", "start": 0, "volume": 0.6, "fade_in": 1.0,
                                        "fade_out": 2.5, "fit": "loop"}]  # the default fit
    # no sound chosen: no soundtrack, whatever the volume says
    none = ann.post(STORY, data={**posted, "soundtrack.asset_id": "", "soundtrack.volume": "150"})
    assert "soundtrack" not in services.read_models.current_fields(acme.workspace_id, _video_id(none))


def test_a_refused_upload_is_named_beside_its_field_and_stores_nothing(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio"})
    for data, name, reason in ((b"%PDF-1.4 a document", "flyer.png", "not stored: "),
                               (mp3(1.0), "song.png", "this file is a sound, not an image")):
        refused = ann.post(STORY, data={**posted, "upload.image": (io.BytesIO(data), name)},
                           content_type="multipart/form-data")
        assert refused.status_code == 400
        message = _beside(refused.get_data(as_text=True), "f.image")
        assert message.startswith(f"Image: the file '{name}' is not stored: ") and reason in message, message
    # the script's upload from an image field refuses a sound the same way
    sound = ann.post("/app/media/upload.json?kind=image", data={"file": (io.BytesIO(mp3(1.0)), "song.mp3")},
                     content_type="multipart/form-data", headers={"X-CSRF-Token": csrf_token(ann, "/app/media")})
    assert sound.status_code == 400 and sound.get_json()["error"]["message"] == "this file is a sound, not an image"
    assert services.assets.list(acme.workspace_id, 10)["data"] == []
    assert services.storage.list_keys(f"assets/{acme.workspace_id}") == []
    assert services.videos.list(acme.workspace_id, 10)["data"] == []


def test_one_workspaces_forms_neither_list_nor_accept_anothers_assets(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    picture = _upload(ann, png((320, 240), MAGENTA))
    sound = _upload(ann, mp3(2.0), "a.mp3")
    own = _upload(bob, png((100, 100), (0, 90, 200)))
    for page in (bob.get(STORY).get_data(as_text=True),
                 bob.get(f"/app/brand-kits/{other.default_kit_id}/edit").get_data(as_text=True),
                 bob.get("/app/brand-kits/new").get_data(as_text=True)):
        assert own["id"] in page  # B's own image is listed
        for asset in (picture, sound):
            assert asset["id"] not in page and asset["key"] not in page
        assert picture["thumbnail_url"].split("?")[0] not in page

    posted = _form(bob, "announcement", **{"f.headline": "Not ours"})
    for extra, field in (({"f.image": picture["id"]}, "f.image"), ({"pick.image": picture["id"]}, "f.image"),
                         ({"soundtrack.asset_id": sound["id"]}, "soundtrack.asset_id")):
        refused = bob.post(STORY, data={**posted, **extra})
        assert refused.status_code == 400, extra
        message = _beside(refused.get_data(as_text=True), field)
        assert "of this workspace's media library has the id" in message, message
        for path in (f"{STORY}/preview", f"{STORY}/draft"):  # the live preview and the played draft: refused too
            answer = bob.post(path, data={**posted, **extra}, headers={"Accept": "application/json"})
            assert answer.status_code == 400 and field in answer.get_json()["problems"], (path, extra)
    assert services.videos.list(other.workspace_id, 10)["data"] == []

    # the brand kit's logo: A's image refused beside the logo; no kit made, B's kit unchanged
    def kits() -> list[Any]:  # a stored logo's URL is signed afresh at each read (S3: for the second it is read in)
        return [{**kit, "tokens": {**kit["tokens"], "logo": _unsigned(kit["tokens"].get("logo"))}}
                for kit in services.brand_kits.list(other.workspace_id)]

    before = kits()
    new = bob.post("/app/brand-kits/new", data=_kit_form(bob, "/app/brand-kits/new", name="Theirs",
                                                          logo_asset_id=picture["id"]))
    edit = f"/app/brand-kits/{other.default_kit_id}/edit"
    changed = bob.post(edit, data=_kit_form(bob, edit, name="Renamed", logo_asset_id=picture["id"]))
    for refused in (new, changed):
        assert refused.status_code == 400
        assert re.search(r'<p class="error" id="kit-logo-err">Logo: no image of this workspace&#39;s media library '
                         r"has the id", refused.get_data(as_text=True))
    assert kits() == before
    assert [a["id"] for a in services.assets.list(other.workspace_id, 10)["data"]] == [own["id"]]
    assert {a["id"] for a in services.assets.list(acme.workspace_id, 10)["data"]} == {picture["id"], sound["id"]}


def test_a_brand_kits_logo_is_picked_from_the_library_or_uploaded_into_it(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    picture = _upload(ann, png((160, 80), (200, 30, 40)))
    form = ann.get("/app/brand-kits/new").get_data(as_text=True)
    assert f'name="logo_asset_id" value="{picture["id"]}"' in form and 'data-library-upload="logo_asset_id"' in form
    made = ann.post("/app/brand-kits/new", data=_kit_form(ann, "/app/brand-kits/new", name="Picked",
                                                          logo_asset_id=picture["id"]))
    assert made.status_code == 303
    kit = next(k for k in services.brand_kits.list(acme.workspace_id) if k["name"] == "Picked")
    assert (kit["tokens"]["logo"]["width"], kit["tokens"]["logo"]["height"]) == (160, 80)
    assert kit["tokens"]["logo"]["dominant_color"] == "#C81E28"

    # editing: a library image replaces the logo
    edit = f"/app/brand-kits/{acme.default_kit_id}/edit"
    other_picture = _upload(ann, png((120, 120), (10, 120, 60)))
    assert ann.post(edit, data=_kit_form(ann, edit, logo_asset_id=other_picture["id"])).status_code == 303
    assert services.brand_kits.get(acme.workspace_id, acme.default_kit_id)["tokens"]["logo"]["dominant_color"] == \
        "#0A783C"

    # a file posted without JavaScript is the kit's logo and goes to the library too
    data = _kit_form(ann, "/app/brand-kits/new", name="Uploaded")
    data["logo"] = (io.BytesIO(png((200, 100), (20, 40, 220))), "mark.png")
    assert ann.post("/app/brand-kits/new", data=data, content_type="multipart/form-data").status_code == 303
    kit = next(k for k in services.brand_kits.list(acme.workspace_id) if k["name"] == "Uploaded")
    assert (kit["tokens"]["logo"]["width"], kit["tokens"]["logo"]["height"]) == (200, 100)
    stored = [a for a in services.assets.list(acme.workspace_id, 10)["data"] if (a["width"], a["height"]) == (200, 100)]
    assert len(stored) == 1
    # a kit refused for another reason stores its file nowhere
    data = _kit_form(ann, "/app/brand-kits/new", name="")
    data["logo"] = (io.BytesIO(png((90, 90), (5, 5, 5))), "never.png")
    assert ann.post("/app/brand-kits/new", data=data, content_type="multipart/form-data").status_code == 400
    assert len(services.assets.list(acme.workspace_id, 10)["data"]) == 3


def test_a_videos_fields_form_changes_its_image_and_soundtrack_from_the_library(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    picture = _upload(ann, png((320, 240), MAGENTA))
    sound = _upload(ann, mp3(2.0), "a.mp3")
    posted = _form(ann, "announcement", **{"f.headline": "Our second studio"})
    video_id = _video_id(ann.post(STORY, data={**posted, "pick.image": picture["id"],
                                               "soundtrack.asset_id": sound["id"], "soundtrack.volume": "50"}))
    page = ann.get(f"/app/videos/{video_id}").get_data(as_text=True)
    assert 'alt="The library image chosen, 320×240"' in page and f'<option value="{sound["id"]}" selected>' in page
    assert 'id="soundtrack-volume" name="soundtrack.volume" type="number" min="0" max="100" step="1" value="50"' in page
    fields = {k: v for k, v in posted.items() if k.startswith("f.") or k == "csrf_token"}
    fields.update({"f.image": picture["id"], "soundtrack.asset_id": sound["id"], "soundtrack.volume": "50"})

    # a new file uploaded without JavaScript: stored, and the new version names it; the soundtrack kept
    saved = ann.post(f"/app/videos/{video_id}/fields", content_type="multipart/form-data",
                     data={**fields, "upload.image": (io.BytesIO(png((200, 200), (0, 160, 90))), "green.png")})
    assert saved.status_code == 303
    green = next(a for a in services.assets.list(acme.workspace_id, 10)["data"] if a["width"] == 200)
    doc = services.videos.get(acme.workspace_id, video_id)["current_version"]["doc"]
    assert doc["assets"]["image"] == {"type": "image", "key": green["key"]}
    assert doc["assets"]["soundtrack"] == {"type": "audio", "key": sound["key"]}
    assert doc["audio"][0]["volume"] == 0.5

    # "(none)" as the sound removes the soundtrack
    removed = ann.post(f"/app/videos/{video_id}/fields", data={**fields, "f.image": green["id"],
                                                                "soundtrack.asset_id": ""})
    assert removed.status_code == 303
    version = services.videos.get(acme.workspace_id, video_id)["current_version"]
    assert version["number"] == 3 and "soundtrack" not in version["doc"]["assets"] and not version["doc"].get("audio")
    assert services.read_models.current_fields(acme.workspace_id, video_id)["soundtrack"] is None

    # another workspace's ids, posted to a video of B's: refused beside their fields, no new version
    theirs = _video_id(bob.post(STORY, data=_form(bob, "announcement", **{"f.headline": "Theirs"})))
    page = bob.get(f"/app/videos/{theirs}").get_data(as_text=True)
    assert picture["id"] not in page and sound["id"] not in page and green["id"] not in page
    token = csrf_token(bob, f"/app/videos/{theirs}")
    for extra, field in (({"f.image": picture["id"]}, "f.image"), ({"pick.image": green["id"]}, "f.image"),
                         ({"soundtrack.asset_id": sound["id"]}, "soundtrack.asset_id")):
        refused = bob.post(f"/app/videos/{theirs}/fields", data={**fields, "csrf_token": token, "f.image": "",
                                                                 "soundtrack.asset_id": "", **extra})
        assert refused.status_code == 400, extra
        assert "of this workspace's media library has the id" in _beside(refused.get_data(as_text=True), field)
        preview = bob.post(f"/app/videos/{theirs}/fields/preview", data={**fields, "csrf_token": token,
                                                                          "f.image": "", "soundtrack.asset_id": "",
                                                                          **extra})
        assert preview.status_code == 400 and field in preview.get_json()["problems"]
    assert services.videos.get(other.workspace_id, theirs)["current_version"]["number"] == 1
