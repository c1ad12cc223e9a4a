"""A render watched in the console while it renders (Debian's headless Chromium, Playwright), against a
real `reelfarm serve` on the embedded default whose chunks are paced (``tests/paced.py``) so the
render is still running when the first seconds play.

At desktop and at phone size the video page's player plays the render's HLS stream (through the
pinned hls.js: Chromium plays no HLS itself) past 2 s while the render's status is still
``running``; once it succeeds the page switches to the MP4 without starting over.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import SHOTS, _set_password, _sign_in, _wait_for_link
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_MS

FRAME_SEC = "0.1"  # a 30 s video at 24 fps draws for about 40 s on two task processes


def current_time(page: Page) -> float:
    return float(page.evaluate("() => document.querySelector('#player video').currentTime"))


def test_the_console_plays_a_render_while_it_renders(tmp_path: Path, browser: Browser) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port, command=(sys.executable, "-m", "tests.paced"),
                                  PACED_FRAME_SEC=FRAME_SEC)
    try:
        key, seen = wait_for_key(lines)
        email, link = _wait_for_link(lines, seen)
        wait_for_health(base)
        api = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        video = api.post("/videos", json={"storyId": "flash_sale", "format": "16:9", "durationSec": 30}).json()
        desktop = browser.new_context(viewport={"width": 1280, "height": 900})
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        pages = []
        for context in (desktop, phone):
            page = context.new_page()
            if not pages:
                _set_password(page, link)
            else:
                _sign_in(page, base, email)
            pages.append(page)
        render = api.post(f"/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720, "fps": 24})
        assert render.status_code == 202, render.text
        render_id = render.json()["id"]

        def state() -> dict[str, Any]:
            return dict(api.get(f"/renders/{render_id}").json())

        for page in pages:
            page.goto(f"{base}/app/videos/{video['id']}")
        for page in pages:
            expect(page.locator("#player video[data-stream]")).to_be_attached(timeout=WORK_CEILING_MS)
            page.wait_for_function("() => document.querySelector('#player video').readyState >= 2", timeout=WORK_CEILING_MS)
            page.evaluate("() => document.querySelector('#player video').play()")
        for page in pages:
            page.wait_for_function("() => document.querySelector('#player video[data-stream]')"
                                   " && document.querySelector('#player video').currentTime > 2", timeout=WORK_CEILING_MS)
            assert state()["status"] == "running", "the stream played after the render ended"
        SHOTS.mkdir(parents=True, exist_ok=True)
        pages[0].screenshot(path=str(SHOTS / "60-watching-a-render.png"), full_page=True)
        pages[1].screenshot(path=str(SHOTS / "61-watching-a-render-phone.png"), full_page=True)

        for page in pages:  # the MP4 takes over, from where the stream was
            expect(page.locator("#player")).to_have_attribute("data-render", f"{render_id}:mp4", timeout=WORK_CEILING_MS)
            page.wait_for_function("() => document.querySelector('#player video').currentTime > 2", timeout=WORK_CEILING_MS)
        assert state()["status"] == "succeeded"
        assert current_time(pages[0]) > 2
        desktop.close()
        phone.close()
    finally:
        stop(process)
