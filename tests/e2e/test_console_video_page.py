"""The video page in a real browser (Debian's headless Chromium, Playwright) against a real `reelfarm
serve`, at a desktop's size and a phone's 390x844: one preview area at the top that opens on the
current version's poster (drawn as the page opens when no render has one), with the page no longer
holding large empty boxes; the Versions table saying what each version changed and drawing a still
of any version; any running render watched in the player, which starts playing by itself (muted);
and downloads named with their version.

Screenshots land beside the console's others (``tests/artifacts/console/`` or ``CONSOLE_SHOTS_DIR``).
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _set_password, _shot, _sign_in, _wait_for_link, console_serve
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_MS, WORK_CEILING_SEC, hung, slide, wait_until

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
# The phone page of a new 9:16 announcement video measured 4,412 px tall, 1,703 px of it the fields
# form's controls, when it held three large boxes (the still's "Pick a time" panel, the player's "No
# finished render" panel and the fields form's "Preview of these values" panel). The rest of the
# page (all but the controls, which grow as stories gain fields) is what one preview area shrinks.
PHONE_HEIGHT_BEFORE = 4412
PHONE_CONTROLS_BEFORE = 1703
BOXES = ".still, .player-empty, .draft-box, video.player"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[tuple[str, str, httpx.Client]]:
    """A `reelfarm serve` of its own whose owner has set a password: (base, email, API client)."""
    with console_serve(tmp_path_factory.mktemp("video-page") / "data") as (base, dev_key, email, link):
        context = browser.new_context(viewport=DESKTOP)
        _set_password(context.new_page(), link)
        context.close()
        with httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {dev_key}"},
                          timeout=30) as api:
            yield base, email, api


def _page(browser: Browser, base: str, email: str, viewport: dict[str, int], **options: Any) -> tuple[Any, Page]:
    context = browser.new_context(viewport=viewport, device_scale_factor=2 if viewport == PHONE else 1, **options)
    page = context.new_page()
    _sign_in(page, base, email)
    return context, page


def _video(api: httpx.Client, **body: Any) -> dict[str, Any]:
    made = api.post("/videos", json={"storyId": "announcement", "format": "9:16", "durationSec": 6, **body})
    assert made.status_code == 201, made.text
    return dict(made.json())


def _large_boxes(page: Page) -> list[str]:
    """The visible boxes of a picture (a still, a player, an empty panel), each as a short description."""
    return list(page.evaluate("""(sel) => Array.from(document.querySelectorAll(sel))
        .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 120; })
        .map(e => e.tagName + '#' + e.id + '.' + e.className)""", BOXES))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_one_preview_area_opens_on_the_current_versions_poster(served, browser: Browser,
                                                              viewport: dict[str, int]) -> None:
    base, email, api = served
    video = _video(api, title=f"One preview {viewport['width']}")
    context, page = _page(browser, base, email, viewport)
    page.goto(f"{base}/app/videos/{video['id']}")
    expect(page.locator("#preview-box")).to_have_count(1)
    poster = page.locator("#preview-box #still-image")
    expect(poster, hung("the poster drawn as the page opened")).to_have_attribute(
        "alt", re.compile(r"^The poster of version 1"), timeout=WORK_CEILING_MS)
    page.wait_for_function("() => { const i = document.getElementById('still-image'); "
                           "return i && i.complete && i.naturalWidth > 0; }", timeout=WORK_CEILING_MS)
    _shot(page, f"80-video-page-one-preview-{'phone' if viewport == PHONE else 'desktop'}")
    assert _large_boxes(page) == ["DIV#still-frame.still ratio-9x16"], _large_boxes(page)
    height = page.evaluate("document.scrollingElement.scrollHeight")
    controls = page.evaluate("document.querySelector('.story-form').getBoundingClientRect().height")
    if viewport == PHONE:  # two large boxes fewer
        assert height - controls < PHONE_HEIGHT_BEFORE - PHONE_CONTROLS_BEFORE - 400, (height, controls)
        box = page.locator("#preview-box").bounding_box()
        assert box is not None and box["y"] < 400 and box["height"] <= 0.6 * PHONE["height"], box

    # another time: a still of the current version in the same box, in place of the poster
    slide(page.locator("#still-time"), 2.5)
    expect(page.locator("#still-image")).to_have_attribute("alt", "Still of the video at 2.5 s",
                                                          timeout=WORK_CEILING_MS)
    # values typed in the fields form are drawn in the same box, not in a second one
    page.get_by_label("Headline").fill("Typed, not saved")
    expect(page.locator("#preview-box #preview-image")).to_be_visible(timeout=WORK_CEILING_MS)
    expect(page.locator("#still-frame")).to_be_hidden()
    assert len(_large_boxes(page)) == 1, _large_boxes(page)
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_versions_say_what_changed_and_draw_a_still_of_any_version(served, browser: Browser,
                                                                   viewport: dict[str, int]) -> None:
    base, email, api = served
    video = _video(api, title=f"History {viewport['width']}", fields={"headline": "First words"})
    second = api.patch(f"/videos/{video['id']}", json={"fields": {"headline": "Second words", "theme": "dark"}})
    assert second.status_code == 200, second.text
    doc = second.json()["current_version"]["doc"]
    doc["scenes"][1]["layers"][-1]["text"] = "Edited outside the story fields"
    third = api.patch(f"/videos/{video['id']}", json={"doc": doc})
    assert third.status_code == 200, third.text
    context, page = _page(browser, base, email, viewport)
    page.goto(f"{base}/app/videos/{video['id']}#versions")
    changed = {n: page.locator(f'[data-changes="{n}"]') for n in (1, 2, 3)}
    expect(changed[1]).to_have_text("Made from the story")
    expect(changed[2].locator("li")).to_have_count(2)
    expect(changed[2].locator("li").nth(0)).to_have_text("Headline: First words → changed to Second words")
    expect(changed[2].locator("li").nth(1)).to_have_text("Theme: light → changed to dark")
    expect(changed[3]).to_contain_text("Scene 2 text:")
    expect(changed[3]).to_contain_text("Edited outside the story fields")
    _shot(page, f"81-video-versions-{'phone' if viewport == PHONE else 'desktop'}")

    # version 1 at 2.5 s, in the one preview area
    expect(page.locator("#still-image")).to_have_attribute("alt", re.compile(r"^The poster of version 3"),
                                                          timeout=WORK_CEILING_MS)
    page.locator("#still-time").evaluate("el => { el.value = 2.5; el.dispatchEvent(new Event('input')); }")
    expect(page.locator("#still-image")).to_have_attribute("alt", "Still of the video at 2.5 s",
                                                          timeout=WORK_CEILING_MS)
    page.get_by_role("button", name="Show still of version 1").click()
    still = page.locator("#preview-box #still-image")
    expect(still).to_have_attribute("alt", "Still of version 1 at 2.5 s", timeout=WORK_CEILING_MS)
    expect(page.locator("#preview-caption")).to_have_text("Version 1 at 2.5 s.")
    page.wait_for_function("() => { const i = document.getElementById('still-image'); "
                           "return i && i.complete && i.naturalWidth > 0; }", timeout=WORK_CEILING_MS)
    box = page.locator("#preview-box").bounding_box()
    assert box is not None and box["y"] + box["height"] > 0 and box["y"] < viewport["height"], box  # in view
    saved = httpx.get(page.locator("#still-download").get_attribute("href") or "", timeout=30)
    assert saved.status_code == 200 and saved.headers["Content-Disposition"].startswith(
        f'attachment; filename="History {viewport["width"]} v1 still 2.5 s.png"')
    _shot(page, f"82-video-version-1-still-{'phone' if viewport == PHONE else 'desktop'}")
    context.close()


def test_without_javascript_the_forms_still_post(served, browser: Browser) -> None:
    base, email, api = served
    video = _video(api, title="No script")
    assert api.patch(f"/videos/{video['id']}", json={"fields": {"headline": "Later"}}).status_code == 200
    context, page = _page(browser, base, email, PHONE, java_script_enabled=False)
    page.goto(f"{base}/app/videos/{video['id']}")
    expect(page.locator("#still-wait")).to_have_text("Pick a time and preview a still.")
    page.locator("#still-time").fill("2")
    page.get_by_role("button", name="Preview still", exact=True).click()
    expect(page.locator("#still-image"), hung("the still, without JavaScript")).to_have_attribute(
        "alt", "Still of the video at 2 s", timeout=WORK_CEILING_MS)
    page.get_by_role("button", name="Show still of version 1").click()
    deadline = time.monotonic() + WORK_CEILING_SEC
    while page.locator("#still-image").count() == 0 and time.monotonic() < deadline:
        time.sleep(1)
        page.reload()
    expect(page.locator("#still-image")).to_have_attribute("alt", re.compile(r"^Still of version 1 at "))
    assert len(_large_boxes(page)) == 1, _large_boxes(page)
    page.get_by_label("Headline").fill("Played without a script")
    page.get_by_role("button", name="Play preview").click()
    expect(page.locator("#preview-box #preview-image")).to_be_visible()
    expect(page.get_by_label("Headline")).to_have_value("Played without a script")
    _shot(page, "83-video-page-no-js-phone")
    context.close()


def test_any_running_render_can_be_watched_and_plays_by_itself(tmp_path, browser: Browser) -> None:
    """A second format's render, running while the first one's MP4 is in the player, is watched from
    its row's Watch control: the player switches to its stream and plays it, muted, untouched."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port, command=(sys.executable, "-m", "tests.paced"),
                                  PACED_FRAME_SEC="0.15")
    try:
        key, seen = wait_for_key(lines)
        email, link = _wait_for_link(lines, seen)
        wait_for_health(base)
        api = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        video = api.post("/videos", json={"storyId": "flash_sale", "format": "16:9", "durationSec": 8,
                                          "title": "Watch me"}).json()
        first = api.post(f"/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720, "fps": 24})
        assert first.status_code == 202, first.text
        deadline = time.monotonic() + WORK_CEILING_SEC
        while api.get(f"/renders/{first.json()['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline, hung("the first render")
            time.sleep(0.5)

        desktop = browser.new_context(viewport=DESKTOP)
        page = desktop.new_page()
        _set_password(page, link)
        page.goto(f"{base}/app/videos/{video['id']}")
        expect(page.locator("#player")).to_have_attribute("data-render", f"{first.json()['id']}:mp4")
        saved = page.get_by_role("link", name=re.compile("Download MP4"))
        expect(saved).to_have_attribute("download", "Watch me v1 16x9 720p.mp4")

        page.get_by_role("button", name="Render 1:1 at 720p").click()
        second = wait_until(lambda: next((r for r in api.get(f"/videos/{video['id']}/renders").json()["data"]
                                          if r["format"] == "1:1"), None), "the 1:1 render started")
        watch = page.locator(f"#render-{second['id']} [data-watch-render]")
        expect(watch, hung("the Watch control of the running 1:1 render")).to_be_visible(timeout=WORK_CEILING_MS)
        expect(page.locator("#player")).to_have_attribute("data-render", f"{first.json()['id']}:mp4")
        page.evaluate("window.__same_page = true")
        watch.click()
        expect(page.locator("#player")).to_have_attribute("data-render", f"{second['id']}:stream")
        page.wait_for_function("() => { const v = document.querySelector('#player video'); "
                               "return v && !v.paused && v.muted && v.currentTime > 1; }", timeout=WORK_CEILING_MS)
        assert api.get(f"/renders/{second['id']}").json()["status"] == "running", "watched after it ended"
        expect(page.locator(f"#render-{second['id']}")).to_contain_text("In the player as it renders")
        assert page.evaluate("window.__same_page") is True
        assert "play=" + second["id"] in page.url
        _shot(page, "84-watching-a-second-render")

        phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        small = phone.new_page()
        _sign_in(small, base, email)
        small.goto(f"{base}/app/videos/{video['id']}")
        if api.get(f"/renders/{second['id']}").json()["status"] == "running":
            small.locator(f"#render-{second['id']} [data-watch-render]").click()
            expect(small.locator("#player")).to_have_attribute("data-render", f"{second['id']}:stream")
            small.wait_for_function("() => { const v = document.querySelector('#player video'); "
                                    "return v && !v.paused && v.currentTime > 0.5; }", timeout=WORK_CEILING_MS)
            _shot(small, "85-watching-a-second-render-phone")

        # the MP4 takes over once the render is done, and its file is named with its version
        expect(page.locator("#player"), hung("the 1:1 MP4 in the player")).to_have_attribute(
            "data-render", f"{second['id']}:mp4", timeout=WORK_CEILING_MS)
        expect(page.locator(f"#render-{second['id']}").get_by_role("link", name=re.compile("Download MP4"))) \
            .to_have_attribute("download", "Watch me v1 1x1 720p.mp4")
        desktop.close()
        phone.close()
    finally:
        stop(process)
