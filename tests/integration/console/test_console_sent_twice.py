"""A create form sent twice (Back, then submit again; a second click) makes one thing: the second
sending goes where the first one's thing is shown. A fresh form makes another; a form refused with
its problems can be corrected and sent again; a token is its workspace's alone. On SQLite and
PostgreSQL, through the console as a browser uses it (the form's own hidden token)."""
from __future__ import annotations

import re
import threading
from typing import Any

from flask.testing import FlaskClient

from reelfarm.shared.formtokens import FormTokens
from tests.integration.console.conftest import csrf_token, signed_in_owner
from tests.integration.console.test_console_brand_kits import _form as kit_form
from tests.integration.console.test_console_previews import _form as story_form

STORY = "/app/videos/new/flash_sale"


def token_of(browser: FlaskClient, path: str) -> str:
    """The one-use token of the form on the page at ``path``, as the browser drew it."""
    page = browser.get(path)
    found = re.search(r'name="form_token" value="([^"]+)"', page.get_data(as_text=True))
    assert found is not None, f"no form token on {path}"
    return found.group(1)


def drawn_story_form(browser: FlaskClient, **fields: str) -> dict[str, str]:
    """The story form as one drawing of its page posts it: its values and that drawing's token."""
    return {**story_form(browser, "flash_sale", **fields), "form_token": token_of(browser, STORY)}


def video_ids(services: Any, workspace_id: str) -> list[str]:
    return [v["id"] for v in services.videos.list(workspace_id, 10)["data"]]


def test_the_same_story_form_sent_twice_makes_one_video_and_a_fresh_form_another(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    page = ann.get(STORY)
    assert page.headers["Cache-Control"] == "private, no-cache"  # Back brings this form back, token and all
    posted = drawn_story_form(ann, title="Spring sale")

    first = ann.post(STORY, data=posted)
    again = ann.post(STORY, data=posted)
    changed = ann.post(STORY, data={**posted, "title": "Spring sale, again"})  # Back, an edit, Create

    assert first.status_code == again.status_code == changed.status_code == 303
    assert again.headers["Location"] == changed.headers["Location"] == first.headers["Location"]
    (made,) = video_ids(services, acme.workspace_id)
    assert first.headers["Location"] == f"/app/videos/{made}"
    assert "This form was sent already; here is what it made." in ann.get(again.headers["Location"]).get_data(
        as_text=True)

    fresh = ann.post(STORY, data=drawn_story_form(ann, title="Spring sale"))
    assert fresh.status_code == 303 and fresh.headers["Location"] != first.headers["Location"]
    assert len(video_ids(services, acme.workspace_id)) == 2


def test_a_form_refused_with_its_problems_is_corrected_and_sent_again(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = drawn_story_form(ann)

    refused = ann.post(STORY, data={**posted, "title": "t" * 230})
    assert refused.status_code == 400
    assert f'name="form_token" value="{posted["form_token"]}"' in refused.get_data(as_text=True)  # the same form
    previewed = ann.post(STORY, data={**posted, "preview": "1"})
    assert previewed.status_code == 200 and f'value="{posted["form_token"]}"' in previewed.get_data(as_text=True)
    assert video_ids(services, acme.workspace_id) == []

    saved = ann.post(STORY, data=posted)
    assert saved.status_code == 303
    assert ann.post(STORY, data=posted).headers["Location"] == saved.headers["Location"]
    assert len(video_ids(services, acme.workspace_id)) == 1


def test_a_token_is_its_workspaces_alone(app, services, make_tenant):
    acme, other = make_tenant(name="acme"), make_tenant(name="other")
    ann, bob = signed_in_owner(app, acme), signed_in_owner(app, other)
    posted = drawn_story_form(ann)

    made_in_acme = ann.post(STORY, data=posted).headers["Location"]
    sent_in_other = bob.post(STORY, data={**posted, "csrf_token": csrf_token(bob, STORY)})

    assert sent_in_other.status_code == 303 and sent_in_other.headers["Location"] != made_in_acme
    assert video_ids(services, acme.workspace_id) == [made_in_acme.rsplit("/", 1)[1]]
    assert video_ids(services, other.workspace_id) == [sent_in_other.headers["Location"].rsplit("/", 1)[1]]
    assert ann.post(STORY, data=posted).headers["Location"] == made_in_acme  # each workspace: its own first


def test_the_brief_form_sent_twice_makes_one_video(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    assert ann.get("/app/videos/new").headers["Cache-Control"] == "private, no-cache"
    posted = {"csrf_token": csrf_token(ann, "/app/videos/new"), "form_token": token_of(ann, "/app/videos/new"),
              "brief": "Flash sale: 40% off all jackets until Sunday.", "url": "", "title": "", "format": "9:16",
              "duration": "", "brand_kit_id": ""}

    first, again = ann.post("/app/videos/brief", data=posted), ann.post("/app/videos/brief", data=posted)

    assert first.status_code == again.status_code == 303
    assert again.headers["Location"] == first.headers["Location"]
    assert len(video_ids(services, acme.workspace_id)) == 1


def test_the_new_brand_kit_form_sent_twice_makes_one_kit(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    kits_before = len(services.brand_kits.list(acme.workspace_id))
    posted = {**kit_form(ann, "/app/brand-kits/new", name="Harbour Coffee"),
              "form_token": token_of(ann, "/app/brand-kits/new")}

    first = ann.post("/app/brand-kits/new", data=posted, content_type="multipart/form-data")
    again = ann.post("/app/brand-kits/new", data=posted, content_type="multipart/form-data")

    assert first.status_code == again.status_code == 303, first.get_data(as_text=True)
    assert again.headers["Location"] == first.headers["Location"]
    assert [k["name"] for k in services.brand_kits.list(acme.workspace_id)].count("Harbour Coffee") == 1
    assert len(services.brand_kits.list(acme.workspace_id)) == kits_before + 1


def test_the_webhook_form_sent_twice_makes_one_endpoint_and_shows_its_secret(app, services, make_tenant):
    acme = make_tenant(name="acme")
    ann = signed_in_owner(app, acme)
    posted = {"csrf_token": csrf_token(ann, "/app/webhooks"), "form_token": token_of(ann, "/app/webhooks"),
              "url": "https://93.184.215.14/hook", "events": ["render.failed"]}
    assert ann.get("/app/webhooks").headers["Cache-Control"] == "no-store"  # it shows a secret once: never kept

    first = ann.post("/app/webhooks", data=posted)
    shown = ann.get(first.headers["Location"]).get_data(as_text=True)
    again = ann.post("/app/webhooks", data=posted)  # the browser never saw the first answer (a second click)
    shown_again = ann.get(again.headers["Location"]).get_data(as_text=True)

    assert again.headers["Location"] == first.headers["Location"]
    assert len(services.webhooks.list_all(acme.workspace_id)) == 1
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", shown)
    assert secret is not None and secret.group(0) in shown_again


def test_a_second_sending_waits_for_the_first_and_goes_where_it_went(services, make_tenant):
    acme = make_tenant(name="acme")
    tokens = FormTokens(services.engine, services.clock, wait_sec=10)
    started, release = threading.Event(), threading.Event()
    answers: list[Any] = []

    def first() -> None:
        with tokens.sending(acme.workspace_id, STORY, "a-token") as sent:
            assert sent.before is None
            started.set()
            release.wait(10)  # making the video takes a while
            sent.made("/app/videos/made-once")

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(10)
    threading.Timer(0.5, release.set).start()
    with tokens.sending(acme.workspace_id, STORY, "a-token") as second:
        answers.append(second.before)
    thread.join(10)

    (before,) = answers
    assert before is not None and before.page == "/app/videos/made-once"
    with tokens.sending(acme.workspace_id, "/app/videos/brief", "a-token") as other_form:
        assert other_form.before is not None and other_form.before.page is None  # another form's token: refused
