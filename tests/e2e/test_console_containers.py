"""The video page renders a GIF or a WebM as well as an MP4: a container chosen beside each
format's buttons, the render listed and downloaded as what it is (the GIF under its own name and
extension, never put in the video player)."""
from __future__ import annotations

import io
import re

import av
import httpx
from playwright.sync_api import Browser, expect

from tests.e2e.test_console_browser import _set_password, _shot, console_serve
from tests.helpers import WORK_CEILING_MS

DESKTOP = {"width": 1280, "height": 900}


def test_a_gif_is_chosen_rendered_listed_and_downloaded_as_a_gif(tmp_path, browser: Browser) -> None:
    with console_serve(tmp_path / "data") as (base, dev_key, _email, link):
        context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
        page = context.new_page()
        _set_password(page, link)
        api = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {dev_key}"}, timeout=60)
        video = api.post("/videos", json={"storyId": "flash_sale", "format": "1:1", "durationSec": 6,
                                          "fields": {"discount": "30% off"}}).json()
        page.goto(f"{base}/app/videos/{video['id']}")
        row = page.locator("form[data-render-form]").filter(has=page.get_by_label("Render 1:1 as"))
        row.get_by_label("Render 1:1 as").select_option("gif")
        row.get_by_role("button", name="Render 1:1 at 4K").click()  # a GIF is made at 720p at most
        listed = page.locator("#renders li.render").filter(has_text="GIF")
        expect(listed).to_contain_text("1:1 · 720p")
        download = listed.get_by_role("link", name=re.compile("^Download GIF"))
        expect(download).to_be_visible(timeout=WORK_CEILING_MS)
        _shot(page, "98-gif-render")
        with page.expect_download() as saved:
            download.click()
        assert saved.value.suggested_filename.endswith(" v1 1x1 720p.gif"), saved.value.suggested_filename
        body = httpx.get(download.get_attribute("href") or "", timeout=60)
        assert body.headers["content-type"] == "image/gif" and body.content[:6] in (b"GIF87a", b"GIF89a")
        with av.open(io.BytesIO(body.content)) as gif:
            stream = gif.streams.video[0]
            assert (stream.width, stream.height) == (720, 720)
        expect(page.locator("#player video")).to_have_count(0)  # no player for a GIF
        expect(listed.get_by_role("link", name=re.compile("^Play"))).to_have_count(0)
        [render] = api.get(f"/videos/{video['id']}/renders").json()["data"]
        assert (render["container"], render["resolution"]) == ("gif", 720)
        context.close()
