"""The console's smaller promises in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `reelfarm serve`: text longer than a field allows (a story field, a
title, a webhook's description, a brief) is kept and the limit named, not cut; leaving a form with unsaved edits asks first; on a phone the story form's preview
stays in view while typing (and folds away); the farm page refreshes by script, with no meta
refresh; a logo over its limit is named beside its field before anything is sent, what was typed kept.
"""
from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _set_password, _shot, _sign_in, console_serve


def test_the_consoles_smaller_promises_in_a_browser(tmp_path, browser: Browser):
    with console_serve(tmp_path / "data") as (base, _key, email, link):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        _set_password(page, link)
        _nothing_is_cut(page, base)
        _unsaved_edits_ask_first(page, base)
        _farm_refreshes_by_script(page, base)
        _oversized_logo(page, base)
        context.close()
        _phone_preview_stays_in_view(browser, base, email)


def _nothing_is_cut(page: Page, base: str) -> None:
    page.goto(f"{base}/app/videos/new/flash_sale")
    colour = page.get_by_label("Badge colour", exact=True)
    colour.fill("orange-ish")
    expect(colour).to_have_value("orange-ish")  # no maxlength: the browser keeps what was typed
    title = page.get_by_label(re.compile("^Title"))
    title.fill("t" * 230)
    expect(title).to_have_value("t" * 230)
    headline = page.get_by_label(re.compile("^Headline"))
    headline.fill("x" * 130)
    expect(headline).to_have_value("x" * 130)
    page.get_by_role("button", name="Create video").click()
    expect(page.locator('[data-error-for="f.badge_color"]')).to_contain_text("'orange-ish' is not a colour")
    expect(page.locator('[data-error-for="f.headline"]')).to_contain_text("at most")
    expect(page.locator('[data-error-for="f.headline"]')).to_contain_text("(this has 130)")
    expect(page.locator('[data-error-for="video.title"]')).to_have_text("Title: at most 200 characters (this has 230)")
    _shot(page, "60-limits-named")
    page.goto(f"{base}/app/webhooks")
    page.get_by_label("Endpoint URL").fill("https://93.184.215.14/hook")
    page.get_by_label(re.compile("^Description")).fill("d" * 503)
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.locator("#wh-desc-err")).to_have_text("Description: at most 500 characters (this has 503)")
    expect(page.get_by_label(re.compile("^Description"))).to_have_value("d" * 503)
    page.goto(f"{base}/app/videos/new")
    page.get_by_label("Brief", exact=True).fill("b" * 5005)
    page.get_by_role("button", name="Write the video").click()
    expect(page.locator("#brief-err")).to_have_text("Brief: at most 5000 characters (this has 5005)")
    expect(page.get_by_label("Brief", exact=True)).to_have_value("b" * 5005)


def _unsaved_edits_ask_first(page: Page, base: str) -> None:
    page.goto(f"{base}/app/videos/new/flash_sale")
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.get_by_label(re.compile("^Headline")).fill("Half-typed headline")
    page.get_by_role("link", name="Videos", exact=True).first.click()
    expect(page.get_by_label(re.compile("^Headline"))).to_have_value("Half-typed headline")  # still here
    assert asked == ["beforeunload"]
    page.remove_listener("dialog", dismiss)
    page.goto(f"{base}/app/brand-kits")  # untouched form pages leave without asking
    page.goto(f"{base}/app/videos/new/flash_sale")
    page.goto(f"{base}/app/videos")
    expect(page.get_by_role("heading", name="Videos")).to_be_visible()


def _farm_refreshes_by_script(page: Page, base: str) -> None:
    page.goto(f"{base}/app/farm")
    expect(page.get_by_role("heading", name="Nodes")).to_be_visible()
    assert page.locator('meta[http-equiv="refresh"]').count() == 0  # inside <noscript>: inert with script
    page.evaluate("window.stillTheSamePage = true")
    with page.expect_response(re.compile(r"/app/farm$"), timeout=12_000) as fetched:
        pass
    assert fetched.value.status == 200
    assert page.evaluate("window.stillTheSamePage") is True  # refreshed in place, not reloaded
    expect(page.get_by_role("heading", name="Nodes")).to_be_visible()


def _oversized_logo(page: Page, base: str) -> None:
    page.goto(f"{base}/app/brand-kits/new")
    page.get_by_label("Name").fill("Orbit Labs")
    page.get_by_label("Logo file").set_input_files(
        {"name": "huge.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n" + b"\0" * (3 * 1024 * 1024)})
    expect(page.locator("#kit-logo-size-err")).to_have_text(
        "Logo: the file is larger than the 1 MB a logo may be; choose a smaller one.")
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.get_by_role("button", name="Create kit").click()
    expect(page.get_by_label("Logo file")).to_be_focused()
    expect(page.get_by_label("Name")).to_have_value("Orbit Labs")
    assert posts == []  # nothing was sent
    _shot(page, "61-logo-too-large")


def _phone_preview_stays_in_view(browser: Browser, base: str, email: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/videos/new/flash_sale")
    preview = page.locator("#preview-frame")
    last = page.locator(".story-form input[type=text], .story-form textarea").last
    last.scroll_into_view_if_needed()
    last.fill("typed far down the form")
    box = preview.bounding_box()
    assert box is not None and box["y"] >= -1 and box["y"] + box["height"] <= 844, box  # still on screen
    assert page.evaluate("window.scrollY") > 300, "the form scrolled"
    field = last.bounding_box()
    assert field is not None and field["y"] >= box["y"] + box["height"] - 1, (field, box)  # not under it
    _shot(page, "62-phone-preview-in-view")
    page.get_by_role("button", name="Hide the pane at the top").click()
    expect(preview).to_be_hidden()
    page.get_by_role("button", name="Show the pane at the top").click()
    expect(preview).to_be_visible()
    context.close()
