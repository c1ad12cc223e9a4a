"""Making a video in the console, in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `reelfarm serve`: the gallery of stories with thumbnails grouped by
category, the story form's live preview redrawn as fields change, every problem at once beside its
field in words, the preview and the problems without JavaScript, and a translated copy whose texts
are corrected, its language named in its own words; at a desktop's size and a phone's 390x844.

Screenshots land beside the console's others (``tests/artifacts/console/`` or ``CONSOLE_SHOTS_DIR``).
"""
from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import (
    _no_sideways_scroll,
    _set_password,
    _shot,
    _sign_in,
    console_serve,
)
from tests.helpers import WORK_CEILING_MS, slide


@pytest.fixture(scope="module")
def console_server(tmp_path_factory, browser):
    """A `reelfarm serve` of its own whose owner has set a password: (base, email, API key)."""
    with console_serve(tmp_path_factory.mktemp("making") / "data") as (base, dev_key, email, link):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        _set_password(context.new_page(), link)
        context.close()
        yield base, email, dev_key


DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def _signed_in(browser: Browser, base: str, email: str, viewport: dict, **options) -> tuple:
    context = browser.new_context(viewport=viewport, device_scale_factor=2 if viewport == PHONE else 1, **options)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, base, email)
    return context, page, errors


def _thumbnails_loaded(page: Page) -> list[list[int]]:
    """Scroll each lazy thumbnail into view and wait for it; their natural sizes."""
    images = page.locator(".story-thumb img")
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
        expect(images.nth(i)).to_have_js_property("complete", True, timeout=WORK_CEILING_MS)
    return page.evaluate("() => Array.from(document.querySelectorAll('.story-thumb img'))"
                         ".map(i => [i.naturalWidth, i.naturalHeight])")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_story_gallery_with_thumbnails_grouped_by_category(browser, console_server, viewport):
    base, email, _ = console_server
    context, page, errors = _signed_in(browser, base, email, viewport)
    page.goto(f"{base}/app/videos/new")
    cards = page.locator("li.story-card")
    expect(cards).to_have_count(15)
    expect(page.locator(".story-group h3")).to_have_count(11)
    expect(page.locator(".story-group").filter(has=page.get_by_role("heading", name="Promotion")).locator(
        "li.story-card")).to_have_count(2)
    assert _thumbnails_loaded(page) == [[360, 640]] * 15
    box = page.locator(".story-thumb img").first.bounding_box()
    assert abs(box["width"] / box["height"] - 9 / 16) < 0.02, box
    product = page.locator(".story-group").filter(has=page.get_by_role("heading", name="Product")).locator("li")
    first, second = product.nth(0).bounding_box(), product.nth(1).bounding_box()
    assert first["y"] == second["y"] and first["height"] <= (430 if viewport == PHONE else 520), (first, second)
    if viewport == PHONE:
        _no_sideways_scroll(page)
        assert first["width"] < 195 and second["x"] + second["width"] <= 390, (first, second)  # two a row
    else:  # groups share rows: the page is not one long column
        rows = {box["y"] for box in (g.bounding_box() for g in page.locator(".story-group").all())}
        assert len(rows) <= 5, rows
    name = "40-gallery" if viewport == DESKTOP else "50-phone-gallery"
    _shot(page, name)
    page.get_by_label("Show in").select_option("16:9")  # applies on change, with JavaScript
    expect(page).to_have_url(re.compile(r"/app/videos/new\?format=16%3A9$|/app/videos/new\?format=16:9$"))
    assert _thumbnails_loaded(page) == [[640, 360]] * 15
    _shot(page, name + "-16x9")
    page.get_by_role("link", name="Flash sale").click()
    expect(page.get_by_label("Format")).to_have_value("16:9")  # the form opens in the format shown
    assert errors == []
    context.close()


def _preview_src(page: Page) -> str:
    return page.locator("#preview-image").get_attribute("src") or ""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_live_preview_redraws_as_fields_change(browser, console_server, viewport):
    base, email, _ = console_server
    context, page, errors = _signed_in(browser, base, email, viewport)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/preview") else None)
    page.goto(f"{base}/app/videos/new/flash_sale")
    first = page.locator("#preview-image")
    expect(first).to_have_js_property("complete", True)
    assert first.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [360, 640]  # the kept thumbnail at first
    swatch_fill = page.locator('svg[data-swatch-for="fld-badge_color"] [data-swatch-fill]')
    expect(swatch_fill).to_be_hidden()  # empty: the "brand colour" stripe, not black
    expect(page.locator(".color-pick")).to_be_visible()
    expect(page.get_by_label("Badge colour", exact=True)).to_have_attribute("placeholder", "brand colour")

    page.get_by_label("Badge colour", exact=True).press_sequentially("#FF0000", delay=40)
    expect(swatch_fill).to_have_attribute("fill", "#FF0000")
    expect(swatch_fill).to_be_visible()
    expect(page.locator('svg[data-swatch-for="fld-badge_color"] [data-swatch-empty]')).to_be_hidden()
    expect(first).to_have_attribute("src", re.compile(r"^data:image/png;base64,"), timeout=WORK_CEILING_MS)
    page.wait_for_timeout(600)
    assert 1 <= len(asked) <= 2, asked  # debounced: seven keystrokes, one or two draws
    assert first.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [540, 960]
    red = first.evaluate("""i => { const c = document.createElement('canvas'); c.width = i.naturalWidth;
        c.height = i.naturalHeight; const x = c.getContext('2d'); x.drawImage(i, 0, 0);
        const d = x.getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let p = 0; p < d.length; p += 4) { if (d[p] > 230 && d[p + 1] < 30 && d[p + 2] < 30) n++; }
        return n / (c.width * c.height); }""")
    assert red > 0.05, red  # the badge is drawn in the colour typed, before anything is saved
    _shot(page, "41-live-preview" if viewport == DESKTOP else "51-phone-live-preview")

    before = _preview_src(page)
    page.get_by_label("Discount").fill("60% OFF")
    expect(first).not_to_have_attribute("src", before, timeout=WORK_CEILING_MS)
    before = _preview_src(page)
    page.get_by_label("Format").select_option("16:9")
    expect(first).not_to_have_attribute("src", before, timeout=WORK_CEILING_MS)
    page.wait_for_function("() => document.getElementById('preview-image').naturalWidth === 960")
    expect(page.locator("#preview-frame")).to_have_class(re.compile(r"\bratio-16x9\b"))
    before = _preview_src(page)
    slide(page.locator("#preview-time"), 7.5)
    expect(page.locator("#preview-time-out")).to_have_text("7.5")
    expect(first).to_have_attribute("alt", "Preview of the video at 7.5 s", timeout=WORK_CEILING_MS)
    assert _preview_src(page) != before
    _shot(page, "42-live-preview-16x9" if viewport == DESKTOP else "52-phone-live-preview-16x9")
    if viewport == PHONE:
        _no_sideways_scroll(page)
    assert errors == []
    context.close()


PROBLEMS = {
    "fld-badge_color-err": "Badge colour: 'red-ish' is not a colour; use #RRGGBB",
    "fld-headline-err": "Headline: fill this in",
    "v-duration-err": "Duration: 'abc' is not a number; use 6 to 60 seconds",
    "fld-discount-err": "Discount: fill this in",
}


def _type_problems(page: Page) -> None:
    page.get_by_label("Badge colour", exact=True).fill("red-ish")
    page.get_by_label("Headline").fill("")
    page.get_by_label("Discount").fill("")
    page.get_by_label("Duration in seconds").fill("abc")


def _problems_shown(page: Page) -> None:
    for error_id, start in PROBLEMS.items():
        expect(page.locator(f"#{error_id}")).to_be_visible()
        expect(page.locator(f"#{error_id}")).to_contain_text(start)
    expect(page.locator("#problem-summary")).to_contain_text("4 values need a change")
    expect(page.locator("#problem-summary li")).to_have_count(4)
    expect(page.get_by_label("Badge colour", exact=True)).to_have_attribute("aria-invalid", "true")
    assert "'color'" not in page.locator("main").inner_text()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_problem_at_once_beside_its_field(browser, console_server, viewport):
    base, email, _ = console_server
    context, page, errors = _signed_in(browser, base, email, viewport)
    page.goto(f"{base}/app/videos/new/flash_sale")
    _type_problems(page)
    _problems_shown(page)  # live, as the preview is asked for
    expect(page.locator("#preview-state")).to_have_text("The preview waits for the values the messages name.")
    _shot(page, "43-problems-live" if viewport == DESKTOP else "53-phone-problems-live")
    page.get_by_role("button", name="Create video").click()  # the server says the same, and saves nothing
    expect(page.get_by_role("heading", name="Flash sale")).to_be_visible()
    _problems_shown(page)
    expect(page.get_by_label("Badge colour", exact=True)).to_have_value("red-ish")
    _shot(page, "44-problems-after-create" if viewport == DESKTOP else "54-phone-problems-after-create")
    page.get_by_label("Badge colour", exact=True).fill("")
    page.get_by_label("Headline").fill("Fixed")
    page.get_by_label("Discount").fill("30% OFF")
    page.get_by_label("Duration in seconds").fill("8")
    expect(page.locator("#problem-summary")).to_be_hidden(timeout=WORK_CEILING_MS)
    expect(page.locator("#fld-badge_color-err")).to_be_hidden()
    if viewport == PHONE:
        _no_sideways_scroll(page)
    assert errors == []
    context.close()


def test_preview_and_problems_without_javascript(browser, console_server):
    base, email, _ = console_server
    context, page, _ = _signed_in(browser, base, email, DESKTOP, java_script_enabled=False)
    page.goto(f"{base}/app/videos/new?format=1:1")
    expect(page.get_by_role("button", name="Show")).to_be_visible()
    assert _thumbnails_loaded(page) == [[360, 360]] * 15
    page.get_by_role("link", name="Flash sale").click()
    expect(page.locator(".color-pick")).to_be_hidden()  # the picker needs JavaScript
    page.get_by_label("Badge colour", exact=True).fill("#00AA00")
    page.get_by_label("Discount").fill("70% OFF")
    page.locator("#preview-time").fill("2")
    page.get_by_role("button", name="Preview", exact=True).click()
    image = page.locator("#preview-image")
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    assert image.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [540, 540]
    expect(image).to_have_attribute("alt", "Preview of the video at 2 s")
    expect(page.get_by_label("Discount")).to_have_value("70% OFF")  # nothing saved; the values stay
    expect(page.locator('svg[data-swatch-for="fld-badge_color"] [data-swatch-fill]')).to_have_attribute(
        "fill", "#00AA00")
    _shot(page, "45-no-js-preview")
    _type_problems(page)
    page.get_by_role("button", name="Preview", exact=True).click()
    _problems_shown(page)
    expect(page.locator("#preview-wait")).to_be_visible()
    _shot(page, "46-no-js-problems")
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_translated_copy_is_corrected_and_languages_have_names(browser, console_server, viewport):
    base, email, dev_key = console_server
    made = httpx.post(f"{base}/api/v1/videos", headers={"Authorization": f"Bearer {dev_key}"}, timeout=30,
                      json={"storyId": "flash_sale", "title": f"Flash {viewport['width']}", "format": "9:16",
                            "durationSec": 6})
    assert made.status_code == 201, made.text
    context, page, errors = _signed_in(browser, base, email, viewport)
    page.goto(f"{base}/app/videos/{made.json()['id']}")
    menu = page.get_by_label("Language")
    options = menu.locator("option").all_inner_texts()
    assert "Español (es)" in options and all(re.search(r"\(\w[\w-]*\)$", o) for o in options), options
    menu.select_option(label="Español (es)")
    page.get_by_role("button", name="Translate").click()
    expect(page.locator(".flash-ok")).to_contain_text("Translating into Español (es)")
    copy = page.locator("#copy-list li").first
    expect(copy.locator("[data-copy-language]")).to_have_text("Español (es)")
    expect(copy.locator("[data-copy-status]")).to_have_text("ready", timeout=WORK_CEILING_MS)
    copy.get_by_role("link").click()
    expect(page.locator("[data-language]")).to_have_text("Español (es)")
    texts = page.locator("#texts")
    expect(texts.get_by_role("heading", name="Texts")).to_be_visible()
    kicker = texts.get_by_label(re.compile(r"^Scene 1 · kicker"))
    translated = kicker.input_value()
    assert translated and translated != "Flash sale", translated
    kicker.fill("Venta relámpago")
    texts.get_by_label("Note for the history").fill("better words")
    _shot(page, "47-copy-texts" if viewport == DESKTOP else "55-phone-copy-texts")
    texts.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 2")
    expect(page.locator("#versions")).to_contain_text("better words")
    expect(page.locator("#texts").get_by_label(re.compile(r"^Scene 1 · kicker"))).to_have_value("Venta relámpago")
    copy_id = page.url.split("/app/videos/")[1].split("?")[0].split("#")[0]
    shown = httpx.get(f"{base}/api/v1/videos/{copy_id}", headers={"Authorization": f"Bearer {dev_key}"}, timeout=10)
    doc = shown.json()["current_version"]["doc"]
    assert doc["scenes"][0]["layers"][[l["id"] for l in doc["scenes"][0]["layers"]].index("badge.kicker")][
        "text"] == "Venta relámpago"
    slide(page.locator("#still-time"), 1.5)
    expect(page.locator("#still-image")).to_have_attribute("alt", "Still of the video at 1.5 s", timeout=WORK_CEILING_MS)
    page.wait_for_function("() => { const i = document.getElementById('still-image'); return i && i.complete "
                           "&& i.naturalWidth > 0; }", timeout=WORK_CEILING_MS)
    _shot(page, "48-copy-corrected" if viewport == DESKTOP else "56-phone-copy-corrected")
    if viewport == PHONE:
        _no_sideways_scroll(page)
    assert errors == []
    context.close()
