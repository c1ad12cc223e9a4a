"""The usage page and each render's cost in a real browser, on a desktop and a phone: reached from
the menu, the workspace's own totals (never those of another workspace rendering on the same
server) as ``GET /usage`` gives them, a period chosen with the date fields, and the video page's
cost line beside its render."""
from __future__ import annotations

import re
import time
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _admin, _no_sideways_scroll, _set_password, _shot, _sign_in, console_serve
from tests.helpers import WORK_CEILING_SEC


def _rendered(api: httpx.Client, story: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A 6 s video of ``story`` rendered at 9:16 720p, and the render once its cost is settled (the
    stitch's row is written just after the render reads as succeeded)."""
    video = api.post("/videos", json={"storyId": story, "format": "9:16", "durationSec": 6})
    assert video.status_code == 201, video.text
    asked = api.post(f"/videos/{video.json()['id']}/renders", json={"format": "9:16", "resolution": 720})
    assert asked.status_code in (200, 202), asked.text
    deadline = time.monotonic() + WORK_CEILING_SEC
    while time.monotonic() < deadline:
        render = api.get(f"/renders/{asked.json()['id']}").json()
        assert render["status"] not in ("failed", "canceled"), render
        if render["status"] == "succeeded" and api.get("/usage").json()["cpu_sec"] == render["cost"]["cpu_sec"]:
            return video.json(), render
        time.sleep(0.5)
    raise AssertionError(f"the {story} render did not settle")


def _totals(page: Page) -> dict[str, str]:
    return {name: page.locator(f'[data-usage="{name}"]').inner_text() for name in
            ("renders", "frames_rendered", "frames_reused", "credits")}


def test_usage_and_render_costs_in_a_browser(tmp_path, browser: Browser) -> None:
    data_dir = tmp_path / "data"
    with console_serve(data_dir) as (base, dev_key, email, link):
        port = int(base.rsplit(":", 1)[1])
        ours = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {dev_key}"}, timeout=60)
        other_ws = _admin(data_dir, port, "create-workspace", "Other", "--plan", "pro", "--credits", "5")
        theirs = httpx.Client(base_url=f"{base}/api/v1", timeout=60, headers={
            "Authorization": f"Bearer {_admin(data_dir, port, 'create-key', other_ws, '--name', 'other')}"})
        _rendered(theirs, "flash_sale")
        video, render = _rendered(ours, "quote")
        usage = ours.get("/usage").json()
        assert (usage["renders"], usage["frames_rendered"]) == (1, 180)  # theirs is not in it

        desktop = browser.new_context(viewport={"width": 1280, "height": 900})
        page = desktop.new_page()
        _set_password(page, link)
        page.get_by_role("link", name="Usage").click()
        expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible()
        assert _totals(page) == {"renders": "1", "frames_rendered": "180", "frames_reused": "0",
                                 "credits": str(usage["credits"])}
        expect(page.locator("#usage-days tbody tr")).to_have_count(1)
        expect(page.locator("#usage-saved")).to_have_text("No frame was reused in this period.")
        _shot(page, "40-usage")

        today = usage["to"]
        page.get_by_label("First day").fill(today)
        page.get_by_label("Last day").fill(today)
        page.get_by_role("button", name="Show").click()
        expect(page).to_have_url(re.compile(rf"/app/usage\?from={today}&to={today}$"))
        expect(page.locator("#usage-period")).to_contain_text(f"{today} to {today} (UTC)")
        expect(page.locator("#usage-days tbody tr")).to_have_attribute("data-day", today)

        page.goto(f"{base}/app/videos/{video['id']}")
        line = page.locator(f"#render-{render['id']} [data-render-cost]")
        expect(line).to_contain_text("180 frames rendered, 0 reused")
        expect(line.locator('[data-cost="cpu"]')).to_have_text(re.compile(r"^\d+\.\d s$"))
        _shot(page, "41-video-render-cost")
        desktop.close()

        phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
        page = phone.new_page()
        _sign_in(page, base, email)
        page.get_by_text("Menu", exact=True).click()
        page.get_by_role("link", name="Usage").click()
        expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible()
        _no_sideways_scroll(page)
        _shot(page, "42-phone-usage")
        page.goto(f"{base}/app/videos/{video['id']}")
        expect(page.locator(f"#render-{render['id']} [data-render-cost]")).to_be_visible()
        _no_sideways_scroll(page)
        _shot(page, "43-phone-video-render-cost")
        phone.close()
