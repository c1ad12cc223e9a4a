"""Captions in the console, in a real browser (Debian's headless Chromium, driven by Playwright)
against a real `reelfarm serve`, at a desktop's size and a phone's 390x844: an SRT file uploaded on
the Media page is listed as Captions with its cue count, a wrong WebVTT file is refused naming its
line; in a story's form the file is picked with its style and position, and the live preview draws
its cue where it was asked (at the top, nothing changing at the foot); the video made carries the
cues; on the desktop its render links the WebVTT file it published, which holds the same cues.
"""
from __future__ import annotations

import base64
import io
import re

import httpx
import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from reelfarm.renderer.captions import Cue, parse_captions
from tests.e2e.test_console_browser import _fits, _set_password, _shot, _sign_in, console_serve
from tests.helpers import WORK_CEILING_MS, hung, slide

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SRT = (b"1\n00:00:00,500 --> 00:00:05,000\nWelcome to the second studio\n\n"
       b"2\n00:00:05,000 --> 00:00:05,900\nSee you there\n")
CUES = [Cue(0.5, 5.0, "Welcome to the second studio"), Cue(5.0, 5.9, "See you there")]
WRONG = b"WEBVTT\n\n00:00.500 --> 00:01.000\nHi\n\n00:02.000 -> 00:03.000\nThere\n"
IN_A_CUE = 3.0


@pytest.fixture(scope="module")
def console_server(tmp_path_factory, browser):
    """A `reelfarm serve` of its own whose owner has set a password: (base, email, API key)."""
    with console_serve(tmp_path_factory.mktemp("captions") / "data") as (base, dev_key, email, link):
        context = browser.new_context(viewport=DESKTOP)
        _set_password(context.new_page(), link)
        context.close()
        yield base, email, dev_key


def _no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (page.url, width)
    _fits(page)


def _preview(page: Page) -> np.ndarray:
    """The story form's live preview, once drawn, as pixels."""
    image = page.locator("#preview-image")
    expect(image).to_have_attribute("alt", f"Preview of the video at {IN_A_CUE:g} s", timeout=WORK_CEILING_MS)
    expect(image).not_to_have_class(re.compile(r"\bstale\b"), timeout=WORK_CEILING_MS)
    src = image.get_attribute("src") or ""
    assert src.startswith("data:image/png;base64,"), src[:80]
    png = base64.b64decode(src.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _media_page(page: Page, base: str, size: str) -> None:
    page.goto(f"{base}/app/media")
    files = page.get_by_label("Files")
    # each run's own bytes (a trailing blank line more on the phone): the library keeps one copy of the same bytes
    data = SRT + (b"\n" if size == "phone" else b"")
    files.set_input_files({"name": f"subs-{size}.srt", "mimeType": "application/x-subrip", "buffer": data})
    item = page.locator("li.media-item").filter(has_text=f"subs-{size}.srt")
    expect(item, hung("the uploaded captions file in the list")).to_contain_text("2 cues, to 0:06")
    expect(item.locator("[data-cues]")).to_have_text("2 cues")
    expect(item).to_contain_text("Captions ·")
    page.wait_for_load_state("domcontentloaded")  # the page reloaded with the file: its script listens again
    files.set_input_files({"name": "wrong.vtt", "mimeType": "text/vtt", "buffer": WRONG})
    refused = page.locator("[data-progress] li.error")
    expect(refused).to_contain_text("the captions file is wrong at line 6: '00:02.000 -> 00:03.000' is not a cue timing")
    expect(refused).to_contain_text("not stored")
    _no_sideways_scroll(page)
    _shot(page, f"90-media-captions-{size}")
    page.get_by_role("link", name="Captions", exact=True).click()
    expect(page.locator("li.media-item").filter(has_text="wrong.vtt")).to_have_count(0)


def _story_form(page: Page, base: str, size: str) -> str:
    """The announcement with the captions picked, at the top; the preview draws the cue there. The
    video's page URL."""
    page.goto(f"{base}/app/videos/new/announcement")
    page.get_by_label("Headline").fill(f"Captions on the {size}")
    page.get_by_label("Duration in seconds").fill("6")
    slide(page.locator("#preview-time"), IN_A_CUE)
    bare = _preview(page)
    bare_src = page.locator("#preview-image").get_attribute("src")
    # how first (no file yet: the preview stays as it is), then the file: the one change that draws the cue
    page.locator("#captions-position").select_option("top")
    page.locator("#captions-style").select_option("inverse")
    picker = page.get_by_label("Captions file")
    expect(picker.locator("option").first).to_have_text("(none)")
    picker.select_option(label=f"subs-{size}.srt · 2 cues · 0:06 · SRT")
    page.wait_for_function("(before) => { const i = document.getElementById('preview-image'); "
                           "return i && i.src !== before && !i.classList.contains('stale'); }",
                           arg=bare_src, timeout=WORK_CEILING_MS)
    shown = _preview(page)
    changed = np.abs(shown - bare).max(axis=2) > 48
    height = changed.shape[0]
    assert changed[: height // 3].mean() > 0.01, "the cue is drawn at the top"
    assert changed[height // 2:].mean() < 0.001, "nothing changes at the foot"
    _no_sideways_scroll(page)
    page.locator("#captions").scroll_into_view_if_needed()
    _shot(page, f"91-story-captions-{size}")
    page.get_by_role("button", name="Create video").click()
    expect(page.get_by_role("heading", name=f"Captions on the {size}")).to_be_visible()
    return page.url


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_captions_uploaded_picked_and_published(browser: Browser, console_server, size):
    base, email, dev_key = console_server
    context = browser.new_context(viewport=DESKTOP if size == "desktop" else PHONE,
                                  **({"is_mobile": True, "has_touch": True} if size == "phone" else {}))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, base, email)
    _media_page(page, base, size)
    video_url = _story_form(page, base, size)

    video_id = re.search(r"/app/videos/([0-9a-f-]{36})", video_url).group(1)
    headers = {"Authorization": f"Bearer {dev_key}"}
    doc = httpx.get(f"{base}/api/v1/videos/{video_id}", headers=headers, timeout=10).json()["current_version"]["doc"]
    assert doc["captions"] == {"cues": [c.as_dict() for c in CUES], "style": "inverse", "position": "top",
                               "size": "medium"}
    expect(page.get_by_label("Captions file")).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))
    expect(page.locator("#captions-position")).to_have_value("top")
    _no_sideways_scroll(page)

    if size == "desktop":  # one render, with its WebVTT file linked once it is done
        page.get_by_role("button", name="Render 9:16 at 720p").click()
        link = page.get_by_role("link", name=re.compile(r"^Captions \(WebVTT\)"))
        expect(link, hung("the render's captions link")).to_be_visible(timeout=WORK_CEILING_MS)
        expect(link).to_have_attribute("download", "Captions on the desktop v1 9x16 720p.vtt")
        served = httpx.get(link.get_attribute("href"), timeout=30)
        assert served.status_code == 200 and served.headers["Content-Type"].startswith("text/vtt")
        assert served.headers["Content-Disposition"].startswith(
            'attachment; filename="Captions on the desktop v1 9x16 720p.vtt"')
        assert parse_captions(served.content) == CUES
        _shot(page, "92-video-captions-link")
    assert errors == []
    context.close()
