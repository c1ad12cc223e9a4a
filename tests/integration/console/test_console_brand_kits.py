"""Brand kits made and edited by hand in the console, over a real database (SQLite and PostgreSQL),
two workspaces side by side: the form, every problem at once beside its field, a logo upload
checked by its content and size (a refused one stores nothing), the list's swatches by role, an
edit that a new video draws, a logo sent back by the API kept, and each kit and logo its
workspace's alone.
"""
from __future__ import annotations

import io
import re
from collections import Counter
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from flask.testing import FlaskClient
from PIL import Image

from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still
from reelfarm.renderer.tokens import COLOR_KEYS
from reelfarm.studio.brand_kits import COLOR_ROLES, MAX_LOGO_BYTES
from tests.integration.api.conftest import Tenant
from tests.integration.console.conftest import csrf_token, signed_in_owner

COLORS = {"primary": "#0B5FFF", "secondary": "#FFD23F", "accent": "#E4572E", "background": "#FFF8E7", "text": "#1B1B1B"}


def _png(width: int = 160, height: int = 80, color: tuple[int, int, int] = (200, 30, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (width, height), (*color, 255)).save(out, "PNG")
    return out.getvalue()


def _form(browser: FlaskClient, path: str, **changes: Any) -> dict[str, Any]:
    """What the form at ``path`` posts as drawn, with ``changes`` (``color_accent`` for ``color.accent``)."""
    page = browser.get(path)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    form: dict[str, Any] = {"csrf_token": csrf_token(browser, path)}
    for name, value in re.findall(r'<input id="[^"]+" name="([^"]+)"[^>]*? value="([^"]*)"', html):
        form[name] = unescape(value)
    for name, body in re.findall(r'<select id="[^"]+" name="([^"]+)"[^>]*>(.*?)</select>', html, re.DOTALL):
        form[name] = unescape(re.search(r'<option value="([^"]*)" selected', body).group(1))
    form.update({k.replace("_", ".") if k.startswith(("color_", "font_")) else k: v for k, v in changes.items()})
    return form


def _stored(settings) -> set[str]:
    root = Path(settings.data_dir) / "files"
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def _kit_named(services, tenant: Tenant, name: str) -> dict[str, Any]:
    return next(k for k in services.brand_kits.list(tenant.workspace_id) if k["name"] == name)


def test_a_kit_made_by_hand_with_a_logo_is_listed_with_its_colours_by_role(app, services, settings, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    new = ann.get("/app/brand-kits/new").get_data(as_text=True)
    assert tuple(COLOR_ROLES) == COLOR_KEYS
    for role, use in COLOR_ROLES.items():  # each colour labelled with its role and what it is for
        assert f'<label for="kit-color-{role}">{role.capitalize()} colour</label>' in new and use in new
    assert '<option value="Playfair Display"' in new and 'enctype="multipart/form-data"' in new
    form = _form(ann, "/app/brand-kits/new", name="Harbour Coffee", tagline="Roasted by the sea", radius="5",
                 font_heading_family="Playfair Display", font_heading_weight="700", font_body_family="Lato",
                 default="on", **{f"color_{role}": value.lower() for role, value in COLORS.items()})
    form["logo"] = (io.BytesIO(_png()), "harbour.png")
    made = ann.post("/app/brand-kits/new", data=form, content_type="multipart/form-data")
    assert made.status_code == 303, made.get_data(as_text=True)
    kit = _kit_named(services, tenant, "Harbour Coffee")
    assert made.headers["Location"] == f"/app/brand-kits#kit-{kit['id']}"
    assert kit["is_default"] is True and kit["source_url"] is None
    tokens = kit["tokens"]
    assert tokens["colors"] == COLORS and tokens["palette"] == list(COLORS.values())
    assert tokens["fonts"] == {"heading": {"family": "Playfair Display", "weight": 700},
                               "body": {"family": "Lato", "weight": 400}}
    assert tokens["radius"] == 0.05 and tokens["tagline"] == "Roasted by the sea"
    logo = tokens["logo"]
    assert (logo["width"], logo["height"], logo["dominant_color"]) == (160, 80, "#C81E28")
    assert [k for k in _stored(settings) if k.startswith(f"brand-kits/{kit['id']}/")] == \
        [urlsplit(logo["url"]).path.removeprefix("/files/")]
    served = ann.get(urlsplit(logo["url"]).path + "?" + urlsplit(logo["url"]).query)
    assert served.status_code == 200 and served.data.startswith(b"\x89PNG")

    listed = ann.get("/app/brand-kits").get_data(as_text=True)
    assert "The brand kit “Harbour Coffee” is saved." in listed
    card = listed[listed.index(f'id="kit-{kit["id"]}"'):]
    card = card[:card.index("</li>\n  \n  <li") if "</li>\n  \n  <li" in card else len(card)]
    for role in COLOR_KEYS:  # a swatch named by its role, its role and its value beside it
        assert f'aria-label="{role} colour {COLORS[role]}"' in card
        assert f'<span class="role">{role}</span><span class="mono small">{COLORS[role]}</span>' in card
    assert 'alt="Harbour Coffee logo"' in card and "Playfair Display" in card and "Lato" in card
    assert f'href="/app/brand-kits/{kit["id"]}/edit"' in card


def test_every_problem_is_shown_at_once_beside_its_field_and_nothing_is_stored(app, services, settings,
                                                                                 make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    before = _stored(settings)
    form = _form(ann, "/app/brand-kits/new", name=" ", color_accent="red-ish", color_text="", radius="round",
                 font_body_family="Comic Sans", font_heading_weight="950")
    form["logo"] = (io.BytesIO(b"just some words, not a picture"), "notes.txt")
    refused = ann.post("/app/brand-kits/new", data=form, content_type="multipart/form-data")
    assert refused.status_code == 400
    page = unescape(refused.get_data(as_text=True))
    expected = {
        "kit-name": "Name: give the kit a name of 1 to 200 characters",
        "kit-color-accent": "Accent colour: 'red-ish' is not a colour; use #RRGGBB",
        "kit-color-text": "Text colour: choose a colour; use #RRGGBB",
        "kit-radius": "Corner radius: give a percentage from 0 to 50 (0 is square, 2 slightly rounded)",
        "kit-font-body-family": "Body font: 'Comic Sans' is not a font the renderer ships; choose one of Inter,",
        "kit-font-heading-weight": "Heading weight: 950 is not a weight from 100 to 900",
        "kit-logo": "Logo: 'notes.txt' is not a PNG, JPEG or SVG image",
    }
    for field, message in expected.items():
        assert re.search(rf'<p class="error" id="{field}-err">{re.escape(message)}', page), field
        assert re.search(rf'id="{field}"[^>]*aria-describedby="[^"]*{field}-err"[^>]*aria-invalid="true"', page), field
    assert "7 things to fix" in page
    assert 'value="red-ish"' in page and 'value="round"' in page  # what was typed stays
    assert [k["name"] for k in services.brand_kits.list(tenant.workspace_id)] == ["Default"]
    assert _stored(settings) == before


def test_a_logo_too_large_or_unreadable_is_refused_and_stores_nothing(app, services, settings, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    before = _stored(settings)
    big = _png() + b"\0" * (MAX_LOGO_BYTES + 1)
    for data, name, message in ((big, "huge.png", "Logo: 'huge.png' is 1.1 MB; a logo may be at most 1 MB"),
                                (b"\x89PNG\r\n\x1a\n broken", "broken.png", "Logo: 'broken.png' could not be drawn"),
                                (b"", "empty.svg", "Logo: 'empty.svg' is empty")):
        form = _form(ann, "/app/brand-kits/new", name="Logo test")
        form["logo"] = (io.BytesIO(data), name)
        refused = ann.post("/app/brand-kits/new", data=form, content_type="multipart/form-data")
        assert refused.status_code == 400 and message in unescape(refused.get_data(as_text=True)), name
    edit = f"/app/brand-kits/{tenant.default_kit_id}/edit"
    form = _form(ann, edit)
    form["logo"] = (io.BytesIO(big), "huge.png")
    assert ann.post(edit, data=form, content_type="multipart/form-data").status_code == 400
    # past the API's request limit (REELFARM_MAX_BODY_BYTES, 2 MB): still beside the field, all typed kept
    form = _form(ann, edit, name="Renamed while the logo is too big", tagline="Kept as typed", radius="3")
    form["logo"] = (io.BytesIO(big * 3), "huger.png")
    refused = ann.post(edit, data=form, content_type="multipart/form-data")
    page = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400 and "Logo: 'huger.png' is 3.1 MB; a logo may be at most 1 MB" in page
    assert 'value="Renamed while the logo is too big"' in page and 'value="Kept as typed"' in page
    assert 'id="kit-radius" name="radius" type="text" inputmode="decimal" value="3"' in page
    form = _form(ann, edit)  # past what a form with a file may send (32 MB): the server's error page
    form["logo"] = (io.BytesIO(b"\0" * (33 * 1024 * 1024)), "enormous.png")
    too_big = ann.post(edit, data=form, content_type="multipart/form-data")
    assert too_big.status_code == 413 and "larger than the 32 MB this server takes in one request, so nothing " \
        "was saved" in too_big.get_data(as_text=True)
    assert [k["name"] for k in services.brand_kits.list(tenant.workspace_id)] == ["Default"]
    assert services.brand_kits.get(tenant.workspace_id, tenant.default_kit_id)["tokens"]["logo"] is None
    assert _stored(settings) == before


def test_an_edit_saves_and_a_video_made_with_the_kit_draws_its_colours(app, client, services, make_tenant):
    tenant = make_tenant(second_kit=True)
    ann = signed_in_owner(app, tenant)
    edit = f"/app/brand-kits/{tenant.other_kit_id}/edit"
    page = ann.get(edit).get_data(as_text=True)
    assert "Edit “Second”" in page and 'value="#AA0000"' in page
    form = _form(ann, edit, name="Second, edited", color_background="#12AB34", color_text="#FFFFFF",
                 color_primary="#0A2A66")
    saved = ann.post(edit, data=form, content_type="multipart/form-data")
    assert saved.status_code == 303 and saved.headers["Location"] == f"/app/brand-kits#kit-{tenant.other_kit_id}"
    kit = services.brand_kits.get(tenant.workspace_id, tenant.other_kit_id)
    assert kit["name"] == "Second, edited" and kit["is_default"] is False
    assert kit["tokens"]["colors"]["background"] == "#12AB34" and kit["tokens"]["palette"] != []

    made = client.post("/api/v1/videos", headers=tenant.headers, json={
        "storyId": "quote", "brandKitId": tenant.other_kit_id, "format": "1:1", "durationSec": 6,
        "fields": {"quote": "Edited by hand"}})
    assert made.status_code == 201, made.get_json()
    doc = made.get_json()["current_version"]["doc"]
    assert doc["brand"]["colors"] == {**kit["tokens"]["colors"]}
    pixels = render_still(doc, 1.0, RenderSpec("1:1", 360))  # a quote is set on the primary colour
    common = Counter(map(tuple, pixels[..., :3].reshape(-1, 3).tolist())).most_common(1)[0][0]
    assert "#{:02X}{:02X}{:02X}".format(*common) == "#0A2A66"
    assert np.all(pixels[2, 2, :3] == (0x0A, 0x2A, 0x66))


def test_a_kit_and_its_logo_belong_to_one_workspace(app, client, services, settings, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    form = _form(ann, "/app/brand-kits/new", name="Acme secret kit")
    form["logo"] = (io.BytesIO(_png(color=(10, 120, 60))), "acme.png")
    assert ann.post("/app/brand-kits/new", data=form, content_type="multipart/form-data").status_code == 303
    kit = _kit_named(services, acme, "Acme secret kit")
    before = _stored(settings)

    assert "Acme secret kit" not in bob.get("/app/brand-kits").get_data(as_text=True)
    assert bob.get(f"/app/brand-kits/{kit['id']}/edit").status_code == 404
    stolen = _form(bob, "/app/brand-kits/new", name="stolen", default="on")
    stolen["logo"] = (io.BytesIO(_png(color=(1, 2, 3))), "theirs.png")
    refused = bob.post(f"/app/brand-kits/{kit['id']}/edit", data=stolen, content_type="multipart/form-data")
    assert refused.status_code == 404 and "belongs to another workspace" in refused.get_data(as_text=True)
    assert services.brand_kits.get(acme.workspace_id, kit["id"]) == kit and _stored(settings) == before
    assert client.get(f"/api/v1/brand-kits/{kit['id']}", headers=other.headers).status_code == 404

    url = urlsplit(kit["tokens"]["logo"]["url"])
    assert bob.get(f"{url.path}?{url.query}").status_code == 200  # a signed URL is a capability, like a render's
    assert bob.get(url.path).status_code == 403  # without the signature the key alone opens nothing
    assert bob.get(f"{url.path}?{url.query.replace('sig=', 'sig=x')}").status_code == 403
    key = url.path.removeprefix("/files/")
    video = client.post("/api/v1/videos", headers=other.headers, json={"storyId": "quote", "durationSec": 6})
    doc = video.get_json()["current_version"]["doc"]
    doc["brand"]["logo"] = {"url": key, "key": key, "width": 160, "height": 80, "dominant_color": "#0A783C"}
    patched = client.patch(f"/api/v1/videos/{video.get_json()['id']}", headers=other.headers, json={"doc": doc})
    assert patched.status_code == 400
    assert [d["field"] for d in patched.get_json()["error"]["details"]] == ["/doc/brand/logo/key"]


def test_a_patch_that_sends_back_the_logo_it_read_keeps_the_stored_logo(app, client, services, make_tenant):
    tenant = make_tenant()
    ann = signed_in_owner(app, tenant)
    edit = f"/app/brand-kits/{tenant.default_kit_id}/edit"
    form = _form(ann, edit)
    form["logo"] = (io.BytesIO(_png()), "logo.png")
    assert ann.post(edit, data=form, content_type="multipart/form-data").status_code == 303
    read = client.get(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers).get_json()
    tokens = read["tokens"]
    tokens["colors"]["accent"] = "#00AA55"
    patched = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers,
                           json={"tokens": tokens})
    assert patched.status_code == 200
    assert urlsplit(patched.get_json()["tokens"]["logo"]["url"]).path == urlsplit(tokens["logo"]["url"]).path
    made = client.post("/api/v1/videos", headers=tenant.headers, json={"storyId": "quote", "durationSec": 6})
    assert made.get_json()["current_version"]["doc"]["assets"]["logo"]["key"].startswith(
        f"brand-kits/{tenant.default_kit_id}/logo-")
    fonts = {**tokens["fonts"], "body": {"family": "Comic Sans"}}
    unshipped = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers,
                             json={"tokens": {**tokens, "fonts": fonts}})
    assert unshipped.status_code == 200, "the API stores a family as sent; the renderer draws the closest it ships"
    assert unshipped.get_json()["tokens"]["fonts"]["body"]["family"] == "Comic Sans"
    fonts = {**tokens["fonts"], "body": {"family": "Inter", "weight": 950}}
    heavy = client.patch(f"/api/v1/brand-kits/{tenant.default_kit_id}", headers=tenant.headers,
                         json={"tokens": {**tokens, "fonts": fonts}})
    assert heavy.status_code == 400


def test_editing_removes_the_logo_and_makes_the_kit_the_default(app, services, make_tenant):
    tenant = make_tenant(second_kit=True)
    ann = signed_in_owner(app, tenant)
    edit = f"/app/brand-kits/{tenant.other_kit_id}/edit"
    form = _form(ann, edit)
    form["logo"] = (io.BytesIO(_png()), "logo.png")
    assert ann.post(edit, data=form, content_type="multipart/form-data").status_code == 303
    page = ann.get(edit).get_data(as_text=True)
    assert 'alt="Second logo, as it is now"' in page and "Remove the logo" in page
    assert ann.post(edit, data=_form(ann, edit, drop_logo="on", default="on"),
                    content_type="multipart/form-data").status_code == 303
    kit = services.brand_kits.get(tenant.workspace_id, tenant.other_kit_id)
    assert kit["tokens"]["logo"] is None and kit["is_default"] is True
    assert services.brand_kits.get(tenant.workspace_id, tenant.default_kit_id)["is_default"] is False
    assert "This is the workspace's default kit" in ann.get(edit).get_data(as_text=True)


def test_a_kit_is_deleted_from_the_list_but_not_the_default_nor_another_workspaces(app, services, make_tenant,
                                                                                  create_video):
    acme, other = make_tenant(name="acme", second_kit=True), make_tenant(name="other", second_kit=True)
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    video = create_video(acme, brandKitId=acme.other_kit_id)
    listed = ann.get("/app/brand-kits").get_data(as_text=True)
    assert f'action="/app/brand-kits/{acme.other_kit_id}/delete"' in listed
    assert f'action="/app/brand-kits/{acme.default_kit_id}/delete"' not in listed  # the default has no button

    theirs = bob.post(f"/app/brand-kits/{acme.other_kit_id}/delete", data={"csrf_token": csrf_token(bob, "/app/brand-kits")})
    assert theirs.status_code == 404
    default = ann.post(f"/app/brand-kits/{acme.default_kit_id}/delete",
                       data={"csrf_token": csrf_token(ann, "/app/brand-kits")})
    assert default.status_code == 303
    assert "the default brand kit cannot be deleted; make another kit the default first" in unescape(
        ann.get("/app/brand-kits").get_data(as_text=True))
    gone = ann.post(f"/app/brand-kits/{acme.other_kit_id}/delete", data={"csrf_token": csrf_token(ann, "/app/brand-kits")})
    assert gone.status_code == 303 and gone.headers["Location"] == "/app/brand-kits"
    assert "The brand kit “Second” is deleted; videos made with it keep their look." in unescape(
        ann.get("/app/brand-kits").get_data(as_text=True))
    assert [k["id"] for k in services.brand_kits.list(acme.workspace_id)] == [acme.default_kit_id]
    assert len(services.brand_kits.list(other.workspace_id)) == 2
    kept = services.videos.get(acme.workspace_id, video["id"])
    assert kept["current_version"]["doc"] == video["current_version"]["doc"]  # its look stays


def test_the_api_deletes_a_kit_but_not_the_default_nor_another_workspaces(client, services, make_tenant):
    acme, other = make_tenant(name="acme", second_kit=True), make_tenant(name="other", second_kit=True)
    theirs = client.delete(f"/api/v1/brand-kits/{acme.other_kit_id}", headers=other.headers)
    assert theirs.status_code == 404 and theirs.get_json()["error"]["code"] == "not_found"
    default = client.delete(f"/api/v1/brand-kits/{acme.default_kit_id}", headers=acme.headers)
    assert default.status_code == 409 and default.get_json()["error"]["code"] == "default_brand_kit"
    assert default.get_json()["error"]["message"] == (
        "the default brand kit cannot be deleted; make another kit the default first")
    gone = client.delete(f"/api/v1/brand-kits/{acme.other_kit_id}", headers=acme.headers)
    assert gone.status_code == 204 and gone.data == b""
    assert client.get(f"/api/v1/brand-kits/{acme.other_kit_id}", headers=acme.headers).status_code == 404
    assert [k["id"] for k in services.brand_kits.list(acme.workspace_id)] == [acme.default_kit_id]
    assert len(services.brand_kits.list(other.workspace_id)) == 2
