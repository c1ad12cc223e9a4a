"""Play preview in a browser (Debian's headless Chromium, Playwright) against a real `reelfarm serve`
on the embedded default, whose executor draws the draft's chunks.

At desktop and at phone size, on a new video's story form and on an existing video's fields form:
change the badge colour, click Play preview, and the draft of the unsaved values plays (through
the pinned hls.js: Chromium plays no HLS itself), its ``currentTime`` advancing; on the video page
a value changed again shows its still in the same preview area; nothing is saved and no credit is used.
"""
from __future__ import annotations

from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import SHOTS, _set_password, _sign_in, _wait_for_link
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_MS

PLAYING = "() => { const v = document.querySelector('#draft-video'); return v && v.currentTime > 1.5; }"


def play_preview(page: Page, colour: str) -> None:
    """Change the badge colour, click Play preview, and see the draft play past 1.5 s."""
    page.locator("#fld-badge_color").fill(colour)
    page.get_by_role("button", name="Play preview").click()
    expect(page.locator("#draft-box")).to_be_visible()
    page.wait_for_function(PLAYING, timeout=WORK_CEILING_MS)
    state = page.locator("#draft-state").text_content() or ""
    assert "Playing the preview" in state, state


def test_play_preview_plays_a_draft_of_unsaved_values(tmp_path: Path, browser: Browser) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port)
    try:
        key, seen = wait_for_key(lines)
        email, link = _wait_for_link(lines, seen)
        wait_for_health(base)
        api = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        video = api.post("/videos", json={"storyId": "flash_sale", "format": "16:9", "durationSec": 8}).json()
        credits = api.get("/me").json()["workspace"]["credits"]
        desktop = browser.new_context(viewport={"width": 1280, "height": 900})
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        pages: list[Page] = []
        for context in (desktop, phone):
            page = context.new_page()
            if not pages:
                _set_password(page, link)
            else:
                _sign_in(page, base, email)
            pages.append(page)

        SHOTS.mkdir(parents=True, exist_ok=True)
        for page, name in zip(pages, ("desktop", "phone"), strict=True):
            page.goto(f"{base}/app/videos/new/flash_sale?format=16:9")
            play_preview(page, "#FF0000")
            page.screenshot(path=str(SHOTS / f"70-play-preview-{name}.png"), full_page=True)
        for page, colour in zip(pages, ("#00AA00", "#0000FF"), strict=True):
            page.goto(f"{base}/app/videos/{video['id']}")
            play_preview(page, colour)
            # the live still of the unsaved values, changed again, takes the draft's place in the
            # video page's one preview area
            page.locator("#fld-badge_color").fill("#FFAA00")
            expect(page.locator("#edit-preview #preview-image")).to_be_visible(timeout=WORK_CEILING_MS)
            expect(page.locator("#draft-box")).to_be_hidden()

        assert [v["id"] for v in api.get("/videos").json()["data"]] == [video["id"]]
        assert len(api.get(f"/videos/{video['id']}/versions").json()["data"]) == 1
        assert api.get(f"/videos/{video['id']}/renders").json()["data"] == []
        assert api.get("/me").json()["workspace"]["credits"] == credits
        desktop.close()
        phone.close()
    finally:
        stop(process)
