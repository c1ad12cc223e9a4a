"""Text longer than a field allows is not cut: the console keeps what was typed and names the limit."""
from __future__ import annotations

import re
from html import unescape

from sqlalchemy import func, select, update

from reelfarm.shared.db import transaction
from reelfarm.shared.tables import jobs, videos
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.integration.console.test_console_brand_kits import _form as kit_form
from tests.integration.console.test_console_previews import _form


def test_a_title_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "flash_sale")
    page = ann.get("/app/videos/new/flash_sale").get_data(as_text=True)
    assert " maxlength=" not in page  # a browser would cut what is typed without a word

    refused = ann.post("/app/videos/new/flash_sale", data={**posted, "title": "t" * 230})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert re.search(r'data-error-for="video.title" >Title: at most 200 characters \(this has 230\)<', html)
    assert f'value="{"t" * 230}"' in html
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    saved = ann.post("/app/videos/new/flash_sale", data={**posted, "title": "t" * 200})
    assert saved.status_code == 303
    assert [v["title"] for v in services.videos.list(acme.workspace_id, 10)["data"]] == ["t" * 200]
    assert services.videos.list(other.workspace_id, 10)["data"] == []


def _beside(page: str, field_id: str) -> str:
    """The message beside the field ``field_id`` (its ``-err`` line)."""
    found = re.search(rf'id="{field_id}-err"[^>]*>([^<]*)<', unescape(page))
    assert found is not None, f"no message beside {field_id}"
    return found.group(1)


def test_a_webhook_description_or_address_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    page = ann.get("/app/webhooks").get_data(as_text=True)
    assert " maxlength=" not in page and 'data-maxlength="500"' in page
    url = "https://93.184.215.14/hook"
    typed = {"url": url, "description": "d" * 503, "events": ["render.failed", "webhook.test"]}

    refused = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"), **typed})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "wh-desc") == "Description: at most 500 characters (this has 503)"
    assert f'value="{"d" * 503}"' in html and f'value="{url}"' in html  # everything typed kept
    assert re.findall(r'name="events" value="([^"]+)" checked', html) == ["render.failed", "webhook.test"]
    long_url = "https://93.184.215.14/" + "h" * 2030
    refused = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"), "url": long_url})
    assert refused.status_code == 400
    assert _beside(refused.get_data(as_text=True), "wh-url") == "Endpoint URL: at most 2048 characters (this has 2052)"
    assert services.webhooks.list_all(acme.workspace_id) == []

    saved = ann.post("/app/webhooks", data={"csrf_token": csrf_token(ann, "/app/webhooks"),
                                            **typed, "description": "d" * 500})
    assert saved.status_code == 303
    assert [w["description"] for w in services.webhooks.list_all(acme.workspace_id)] == ["d" * 500]
    assert services.webhooks.list_all(other.workspace_id) == []


def test_a_version_note_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = _form(ann, "flash_sale")
    video_url = ann.post("/app/videos/new/flash_sale", data=posted).headers["Location"]
    video_id = video_url.rsplit("/", 1)[1]
    fields = {k: v for k, v in posted.items() if k.startswith("f.") or k == "csrf_token"}
    assert " maxlength=" not in ann.get(video_url).get_data(as_text=True)

    refused = ann.post(f"{video_url}/fields", data={**fields, "f.headline": "Changed", "note": "n" * 2010})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "note") == "Note: at most 2000 characters (this has 2010)"
    assert f'value="{"n" * 2010}"' in html and 'value="Changed"' in html
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["number"] == 1

    saved = ann.post(f"{video_url}/fields", data={**fields, "f.headline": "Changed", "note": "n" * 2000})
    assert saved.status_code == 303
    assert services.videos.get(acme.workspace_id, video_id)["current_version"]["note"] == "n" * 2000


def test_a_text_or_its_note_over_its_limit_is_named_not_cut(app, services, make_tenant, create_video):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    original = create_video(acme, storyId="flash_sale", title="Spring sale")
    copy_ = create_video(acme, storyId="flash_sale", title="Spring sale (es)", fields={"kicker": "Centellea venta"})
    with transaction(services.engine) as conn:
        conn.execute(update(videos).where(videos.c.id == copy_["id"]).values(
            source_video_id=original["id"], locale="es", story_id=None))
    page = unescape(ann.get(f"/app/videos/{copy_['id']}").get_data(as_text=True))
    assert " maxlength=" not in page
    found = re.search(r'<input id="text-(\d+)" name="t\.\d+" value="Centellea venta" data-maxlength="(\d+)"', page)
    index, limit = found.group(1), int(found.group(2))
    token = csrf_token(ann, f"/app/videos/{copy_['id']}")

    refused = ann.post(f"/app/videos/{copy_['id']}/texts", data={
        "csrf_token": token, "version": "1", f"t.{index}": "v" * (limit + 4), "note": "n" * 2001})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "texts-note") == "Note: at most 2000 characters (this has 2001)"
    assert _beside(html, f"text-{index}").endswith(f": at most {limit} characters (this has {limit + 4})")
    assert f'value="{"n" * 2001}"' in html and f'value="{"v" * (limit + 4)}"' in html
    assert services.videos.get(acme.workspace_id, copy_["id"])["current_version"]["number"] == 1

    saved = ann.post(f"/app/videos/{copy_['id']}/texts", data={
        "csrf_token": token, "version": "1", f"t.{index}": "Venta", "note": "n" * 2000})
    assert saved.status_code == 303
    assert services.videos.get(acme.workspace_id, copy_["id"])["current_version"]["note"] == "n" * 2000
    assert services.videos.list(other.workspace_id, 10)["data"] == []


def test_a_brief_its_website_or_title_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    assert " maxlength=" not in ann.get("/app/videos/new").get_data(as_text=True)
    site = "https://acme.example/" + "p" * 2030
    typed = {"brief": "b" * 5005, "url": site, "title": "t" * 201, "format": "1:1", "duration": "12",
             "brand_kit_id": ""}

    refused = ann.post("/app/videos/brief", data={"csrf_token": csrf_token(ann, "/app/videos/new"), **typed})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "brief") == "Brief: at most 5000 characters (this has 5005)"
    assert _beside(html, "brief-url") == "Website: at most 2048 characters (this has 2051)"
    assert _beside(html, "v-title") == "Title: at most 200 characters (this has 201)"
    assert f'>{"b" * 5005}</textarea>' in html and f'value="{site}"' in html and f'value="{"t" * 201}"' in html
    assert re.search(r'<option value="1:1"[^>]*selected', html)
    assert services.videos.list(acme.workspace_id, 10)["data"] == []

    saved = ann.post("/app/videos/brief", data={"csrf_token": csrf_token(ann, "/app/videos/new"), **typed,
                                                "brief": "b " * 2500, "url": "", "title": "t" * 200})
    assert saved.status_code == 303
    assert [v["title"] for v in services.videos.list(acme.workspace_id, 10)["data"]] == ["t" * 200]
    assert services.videos.list(other.workspace_id, 10)["data"] == []


def test_an_extraction_address_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann = signed_in_owner(app, acme)
    assert " maxlength=" not in ann.get("/app/brand-kits").get_data(as_text=True)
    site = "https://acme.example/" + "p" * 2028

    refused = ann.post("/app/brand-kits/extract", data={"csrf_token": csrf_token(ann, "/app/brand-kits"), "url": site})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "extract-url") == "Website address: at most 2048 characters (this has 2049)"
    assert f'value="{site}"' in html
    assert _jobs(services, acme.workspace_id) == 0

    asked = ann.post("/app/brand-kits/extract", data={"csrf_token": csrf_token(ann, "/app/brand-kits"),
                                                      "url": site[:-1]})
    assert asked.status_code == 303
    assert (_jobs(services, acme.workspace_id), _jobs(services, other.workspace_id)) == (1, 0)


def _jobs(services, workspace_id: str) -> int:
    with services.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(jobs).where(jobs.c.workspace_id == workspace_id)).scalar()


def test_an_api_key_name_over_its_limit_is_named_not_cut(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    assert " maxlength=" not in ann.get("/app/settings").get_data(as_text=True)
    refused = ann.post("/app/settings/keys", data={"csrf_token": csrf_token(ann, "/app/settings"),
                                                   "name": "k" * 230, "expires": ""})
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "key-name") == "Name: at most 200 characters (this has 230)"
    assert f'value="{"k" * 230}"' in html


def test_a_kit_colour_typed_too_long_is_kept_and_named(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    assert " maxlength=" not in ann.get("/app/brand-kits/new").get_data(as_text=True)
    form = kit_form(ann, "/app/brand-kits/new", name="Orange", color_accent="orange-ish")
    refused = ann.post("/app/brand-kits/new", data=form, content_type="multipart/form-data")
    html = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 400
    assert _beside(html, "kit-color-accent") == "Accent colour: 'orange-ish' is not a colour; use #RRGGBB"
    assert 'value="orange-ish"' in html
    assert [k["name"] for k in services.brand_kits.list(acme.workspace_id)] == ["Default"]
