"""The console in a real browser (Debian's headless Chromium, driven by Playwright) against a real
`reelfarm serve`: sign-in link, API keys (shown once; a reload makes none), a story video
previewed, rendered with live progress and the credits it took, played and downloaded under its
title, its render out of date once version 2 is saved and made again in one click, rendered
without JavaScript, translated, the grid's labels and thumbnails in each video's own format, a
brand extraction that fails (with and without JavaScript), the pages people and operators see,
and the refusals. Making a video from the gallery and its live preview is
``test_console_making.py``; brand kits made by hand, ``test_console_brand_kits.py``.

Screenshots of every page land in ``tests/artifacts/console/`` (CI keeps them as artifacts), or in
``CONSOLE_SHOTS_DIR`` when set. Playwright never downloads a browser here: it drives the system's
``chromium``.
"""
from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import av
import httpx
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_MS, WORK_CEILING_SEC, hung, slide

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("CONSOLE_SHOTS_DIR") or ROOT / "tests" / "artifacts" / "console")
LINK_LINE = re.compile(r"Console sign-in link for (\S+) \(works once, for a day\): (\S+)")
PASSWORD = "correct horse battery staple"


def _wait_for_link(lines: queue.Queue[str | None], seen: list[str]) -> tuple[str, str]:
    for line in seen:
        if match := LINK_LINE.search(line):
            return match.group(1), match.group(2)
    deadline = time.monotonic() + WORK_CEILING_SEC  # the server prints it as it starts; None if it dies
    while time.monotonic() < deadline:
        line = lines.get(timeout=WORK_CEILING_SEC)
        if line is None:
            break
        if match := LINK_LINE.search(line):
            return match.group(1), match.group(2)
    raise AssertionError("no console sign-in link printed")


def _admin(data_dir: Path, port: int, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env.update(REELFARM_DATA_DIR=str(data_dir), REELFARM_PUBLIC_URL=f"http://127.0.0.1:{port}")
    done = subprocess.run([sys.executable, "-m", "reelfarm", "admin", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=WORK_CEILING_SEC, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _set_password(page: Page, link: str) -> None:
    page.goto(link)
    expect(page.get_by_role("heading", name="Set your password")).to_be_visible()
    page.get_by_label("New password", exact=True).fill(PASSWORD)
    page.get_by_label("New password again").fill(PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.get_by_role("heading", name="Videos")).to_be_visible()


@contextlib.contextmanager
def console_serve(data_dir: Path) -> Iterator[tuple[str, str, str, str]]:
    """A `reelfarm serve` of its own, healthy: (base URL, dev API key, owner's email, sign-in link)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(data_dir, port)
    try:
        dev_key, seen = wait_for_key(lines)
        email, link = _wait_for_link(lines, seen)
        wait_for_health(base)
        yield base, dev_key, email, link
    finally:
        stop(process)


def test_console_in_a_browser(tmp_path, browser):
    data_dir = tmp_path / "data"
    with console_serve(data_dir) as (base, dev_key, email, link):
        port = int(base.rsplit(":", 1)[1])
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        page = context.new_page()
        _sign_in_by_link_then_password(page, base, email, link)
        _api_keys(page, base)
        _credentials_do_not_cross(context, base, dev_key)
        video_url = _story_video(page, base, tmp_path)
        _without_javascript(browser, base, email, video_url)
        _translated_copy(page, base, video_url)
        _brand_extraction_fails(page, base)
        _brand_extraction_fails_without_javascript(browser, base, email)
        _other_pages(page, base)
        _csrf_refused(context, base, video_url)
        _member_and_other_workspace(browser, base, data_dir, port, dev_key)
        _narrow(browser, base, email, video_url)
        _phone(browser, base, email, video_url)
        context.close()


def _sign_in_by_link_then_password(page: Page, base: str, email: str, link: str) -> None:
    page.goto(link)
    _shot(page, "01-set-password")
    _set_password(page, link)
    _shot(page, "02-videos-empty")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto(link)  # a used link no longer works
    expect(page.get_by_role("heading", name="This link no longer works")).to_be_visible()
    page.goto(f"{base}/app/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("The email or password is not right.")
    _shot(page, "03-sign-in-refused")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Videos")).to_be_visible()


def _api_keys(page: Page, base: str) -> None:
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Name").fill("browser key")
    page.get_by_label("Expires").select_option("30")
    page.get_by_role("button", name="Create key").click()
    shown = page.locator("#new-key")
    expect(shown).to_have_value(re.compile(r"^rf_live_[0-9A-Za-z]{38}$"))
    key = shown.input_value()
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    assert page.url.endswith("/app/settings#keys")  # the form post was answered with a redirect
    _shot(page, "04-settings-new-key")
    page.reload()  # shows nothing again and makes no second key
    expect(page.locator("#new-key")).to_have_count(0)
    expect(page.get_by_role("row").filter(has_text="browser key")).to_have_count(1)
    assert key not in page.content()
    me = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert me.status_code == 200 and me.json()["workspace"]["name"] == "dev"
    page.goto(f"{base}/app/settings")  # shown once: a reload shows only its prefix
    assert key not in page.content() and key[:12] in page.content()
    row = page.get_by_role("row").filter(has_text="browser key")
    expect(row).to_contain_text("active")
    row.get_by_role("link", name=re.compile("Revoke")).click()
    expect(page.get_by_role("heading", name=re.compile("Revoke the key"))).to_be_visible()
    _shot(page, "05-revoke-confirm")
    page.get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("row").filter(has_text="browser key")).to_contain_text("revoked")
    refused = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    _shot(page, "06-settings")


def _credentials_do_not_cross(context, base: str, dev_key: str) -> None:
    cookie = next(c for c in context.cookies() if c["name"] == "reelfarm_session")
    jar = {"reelfarm_session": cookie["value"]}
    as_api = httpx.get(f"{base}/api/v1/me", cookies=jar, timeout=10)
    assert as_api.status_code == 401 and as_api.headers["Content-Type"] == "application/json"
    with_key = httpx.get(f"{base}/app/videos", headers={"Authorization": f"Bearer {dev_key}"}, timeout=10)
    assert with_key.status_code == 302 and with_key.headers["Location"].startswith("/app/sign-in")
    assert httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {dev_key}"}, timeout=10).status_code == 200


def _story_video(page: Page, base: str, tmp_path: Path) -> str:
    page.goto(f"{base}/app/videos/new")
    _shot(page, "07-new-video")
    page.get_by_role("link", name="Announcement").click()
    expect(page.get_by_label("Headline")).to_have_value("We're opening our second studio")
    _shot(page, "08-story-form")
    page.get_by_label("Headline").fill("Hello from the browser")
    page.get_by_label("Theme").select_option("dark")
    page.get_by_label("Format").select_option("9:16")
    page.get_by_label("Duration in seconds").fill("6")
    page.get_by_role("button", name="Create video").click()
    expect(page.get_by_role("heading", name="Hello from the browser")).to_be_visible()
    video_url = page.url

    slide(page.locator("#still-time"), 2.5)
    still = page.locator("#still-image")
    # drawn by the embedded farm's task processes, which get a core only when nothing else wants it
    expect(still, hung("the still at 2.5 s")).to_have_attribute("alt", "Still of the video at 2.5 s",
                                                                timeout=WORK_CEILING_MS)
    page.wait_for_function("() => { const i = document.getElementById('still-image'); "
                           "return i && i.complete && i.naturalWidth === 1080 && i.naturalHeight === 1920; }",
                           timeout=WORK_CEILING_MS)
    _shot(page, "09-video-still")
    still_href = page.locator("#still-download").get_attribute("href")
    still = httpx.get(still_href, timeout=30)
    assert still.status_code == 200 and still.headers["Content-Disposition"].startswith(
        'attachment; filename="Hello from the browser v1 still 2.5 s.png";')

    page.evaluate("""() => { window.__seen = []; const list = document.getElementById('render-list');
        new MutationObserver(() => document.querySelectorAll('[data-render-percent]').forEach(
            s => window.__seen.push(s.textContent))).observe(list, {subtree: true, childList: true, characterData: true}); }""")
    credits = _credits(page)
    page.evaluate("window.__same_page = true")
    page.get_by_role("button", name="Render 9:16 at 720p").click()
    expect(page.locator("[data-render-progress]"), hung("the render's progress")).to_be_visible(timeout=WORK_CEILING_MS)
    expect(page.locator("#ws-credits")).to_contain_text(f" {credits - 1} credits")  # charged, shown at once
    expect(page.locator("#render-list [data-render-version]")).to_have_text("version 1")
    _shot(page, "10-render-progress")
    player = page.locator("#player video")
    # the MP4's player (while it rendered, the player may have shown its stream: test_console_stream.py)
    expect(page.locator("#player"), hung("the rendered MP4 in the player")).to_have_attribute(
        "data-render", re.compile(r":mp4$"), timeout=WORK_CEILING_MS)
    expect(player).to_be_visible()
    seen = page.evaluate("window.__seen")
    assert "100%" in seen, seen
    percents = [int(s.rstrip("%")) for s in seen]
    assert percents == sorted(percents), percents
    expect(page.locator("#player")).to_contain_text("Playing version 1 · 9:16 · 720p")
    expect(page.locator("#video-status")).to_have_text("ready")
    assert page.evaluate("window.__same_page") is True  # no reload along the way

    page.evaluate("() => { const v = document.querySelector('#player video'); v.muted = true; return v.play(); }")
    page.wait_for_function("() => { const v = document.querySelector('#player video'); "
                           "return v.readyState >= 2 && v.currentTime > 0.3; }", timeout=WORK_CEILING_MS)
    _shot(page, "11-video-rendered")

    with page.expect_download() as download:
        page.get_by_role("link", name=re.compile("Download MP4")).click()
    assert download.value.suggested_filename == "Hello from the browser v1 9x16 720p.mp4"
    target = tmp_path / "downloaded.mp4"
    download.value.save_as(target)
    href = page.get_by_role("link", name=re.compile("Download MP4")).get_attribute("href")
    named = httpx.get(href, timeout=30)
    assert named.status_code == 200 and named.headers["Content-Disposition"] == (
        'attachment; filename="Hello from the browser v1 9x16 720p.mp4"; '
        "filename*=UTF-8''Hello%20from%20the%20browser%20v1%209x16%20720p.mp4")
    played = httpx.get(page.locator("#player video").get_attribute("src"), headers={"Range": "bytes=0-1"})
    assert played.status_code == 206 and played.headers["Content-Disposition"].startswith("inline")
    assert httpx.get(href.replace("expires=", "expires=1"), timeout=10).status_code == 403
    with av.open(str(target)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(video=0))
        assert (stream.codec_context.width, stream.codec_context.height) == (720, 1280)
    assert frames == 6 * 30

    page.get_by_label("Headline").fill("Hello again")
    page.get_by_label("Note for the history").fill("second take")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 2")
    expect(page.locator("#versions")).to_contain_text("second take")
    _renders_follow_the_version(page)
    page.goto(f"{base}/app/videos")
    expect(page.locator(".tile img")).to_have_count(1)
    _shot(page, "13-videos-grid")
    return video_url


def _credits(page: Page) -> int:
    return int(re.search(r"(\d+) credits?", page.locator("#ws-credits").inner_text()).group(1))


def _renders_follow_the_version(page: Page) -> None:
    """After version 2 is saved, the version-1 render is out of date and the player waits for one
    of version 2, made with one click in the same format; the credits it takes show at once."""
    expect(page.locator("#player video")).to_have_count(0)
    expect(page.locator("#player")).to_contain_text("No finished render of version 2 yet")
    # version 1's still is not shown as version 2: version 2's poster is drawn as the page opens
    expect(page.locator("#still-image"), hung("version 2's poster")).to_have_attribute(
        "alt", re.compile(r"^The poster of version 2"), timeout=WORK_CEILING_MS)
    expect(page.locator("#render-list")).to_contain_text("No renders of version 2 yet")
    older = page.locator("#older-renders .render")
    expect(older).to_have_count(1)
    expect(older.locator("[data-render-version]")).to_have_text("version 1, out of date")
    expect(older.get_by_role("link", name=re.compile("Download MP4"))).to_be_visible()
    _shot(page, "12-video-versions")
    credits = _credits(page)
    page.evaluate("window.__same_page = true")
    older.get_by_role("button", name="Render version 2 in 9:16 720p").click()
    current = page.locator("#render-list .render")
    expect(current.locator("[data-render-version]"), hung("version 2's render in the list")).to_have_text(
        "version 2", timeout=WORK_CEILING_MS)
    expect(page.locator("#ws-credits")).to_contain_text(f" {credits - 1} credits")
    expect(page.locator("#player"), hung("version 2's render in the player")).to_contain_text(
        "Playing version 2 · 9:16 · 720p", timeout=WORK_CEILING_MS)
    expect(page.locator("#player video")).to_be_visible()
    expect(older).to_contain_text("Version 2 has its own 9:16 720p render above")
    assert page.evaluate("window.__same_page") is True
    _shot(page, "12b-video-version-2-rendered")


def _sign_in(page: Page, base: str, email: str) -> None:
    page.goto(f"{base}/app/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Videos")).to_be_visible()


def _without_javascript(browser: Browser, base: str, email: str, video_url: str) -> None:
    """A render started without JavaScript: the page refreshes itself (a real reload, though the
    post left an anchor in the address) until the render has succeeded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(video_url)
    page.get_by_role("button", name="Render 1:1 at 720p").click()
    expect(page.locator(".flash-ok")).to_contain_text("Rendering 1:1 at 720p")
    assert page.url.endswith("#renders")
    item = page.locator(".render").filter(has_text="1:1 · 720p")
    _shot(page, "23-no-js-render-running")
    expect(item.locator("[data-render-version]")).to_have_text("version 2")
    expect(item.locator("[data-render-status]"), hung("the 1:1 render, without JavaScript")).to_have_text(
        "succeeded", timeout=WORK_CEILING_MS)
    assert re.search(r"\?refresh=\d+#renders$", page.url), page.url  # reloaded by the meta refresh
    expect(item.get_by_role("link", name=re.compile("Download MP4"))).to_be_visible()
    # the player keeps the video's own format (9:16); the 1:1 render is one click away
    expect(page.locator("#player")).to_contain_text("Playing version 2 · 9:16 · 720p")
    item.get_by_role("link", name=re.compile("^Play 1:1 720p")).click()
    expect(page.locator("#player")).to_contain_text("Playing version 2 · 1:1 · 720p")
    expect(page.locator("#older-renders [data-render-version]")).to_have_text("version 1, out of date")
    _shot(page, "24-no-js-render-done")
    context.close()


def _translated_copy(page: Page, base: str, video_url: str) -> None:
    page.goto(video_url)
    page.get_by_label("Language").select_option("es")
    page.get_by_role("button", name="Translate").click()
    copy = page.locator("#copy-list li").filter(has_text="Hello from the browser (es)")
    expect(copy.locator("[data-copy-status]"), hung("the Spanish copy")).to_have_text("ready", timeout=WORK_CEILING_MS)
    page.goto(f"{base}/app/videos")
    tile = page.locator(".tile").filter(has_text="Hello from the browser (es)")
    expect(tile.locator("[data-origin]")).to_have_text("Spanish copy of “Hello from the browser”")
    original = page.locator(".tile").filter(has=page.get_by_role("link", name="Hello from the browser", exact=True))
    expect(original.locator("[data-origin]")).to_have_text("Announcement")
    # thumbnails in the video's own 9:16, though its latest render is 1:1; the copy's unrendered box too
    picture = original.locator(".thumb img")
    expect(picture).to_have_js_property("complete", True)
    assert picture.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [720, 1280]
    for shown in (original, tile):
        box = shown.locator(".thumb").bounding_box()
        assert box is not None and abs(box["width"] / box["height"] - 9 / 16) < 0.01, box
    expect(tile.locator(".thumb-empty")).to_have_text("9:16")
    _shot(page, "25-videos-grid-with-copy")


def _brand_extraction_fails(page: Page, base: str) -> None:
    """A job that fails at once shows its error, the job staying in the address; so does one the
    page was drawn for while it ran, whether the first check finds it ended or still running."""
    page.goto(f"{base}/app/brand-kits")
    page.get_by_label("Website address").fill("http://127.0.0.1:9/")
    page.get_by_role("button", name="Extract").click()
    error = page.locator("#extract-job .flash-error")
    expect(error, hung("the extraction job's failure")).to_contain_text("loopback", timeout=WORK_CEILING_MS)
    expect(error).to_contain_text("The brand could not be extracted")
    match = re.search(r"/app/brand-kits\?job=([0-9a-f-]{36})", page.url)
    assert match, page.url
    _shot(page, "26-brand-extract-failed")
    job_url = f"{base}/app/brand-kits?job={match.group(1)}"
    job = page.request.get(f"{base}/app/jobs/{match.group(1)}.json").json()
    assert job["status"] == "failed"

    def drawn_while_running(route) -> None:
        html = route.fetch().text().replace('data-job-status="failed"', 'data-job-status="running"')
        route.fulfill(body=html.replace("The brand could not be extracted", "(not yet)"),
                      headers={"Content-Type": "text/html; charset=utf-8"})

    for first_check in ("failed", "running"):
        page.route(re.compile(r".*/app/brand-kits\?job=.*"), drawn_while_running, times=1)
        if first_check == "running":
            page.route(re.compile(r".*/app/jobs/.*\.json"),
                       lambda route: route.fulfill(json={**job, "status": "running"}), times=1)
        page.goto(job_url)
        expect(error, hung(f"the failed job, first checked {first_check}")).to_contain_text(
            "The brand could not be extracted", timeout=WORK_CEILING_MS)
        expect(error).to_contain_text("loopback")
        assert page.url.startswith(job_url), page.url
        page.unroute_all()


def _brand_extraction_fails_without_javascript(browser: Browser, base: str, email: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/brand-kits")
    page.get_by_label("Website address").fill("http://127.0.0.1:9/")
    page.get_by_role("button", name="Extract").click()
    expect(page.locator("#extract-job .flash-error"), hung("the extraction job's failure, without JavaScript")
           ).to_contain_text("loopback", timeout=WORK_CEILING_MS)
    assert re.search(r"/app/brand-kits\?job=[0-9a-f-]{36}", page.url), page.url
    _shot(page, "27-brand-extract-failed-no-js")
    context.close()


def _other_pages(page: Page, base: str) -> None:
    page.goto(f"{base}/app/brand-kits")
    expect(page.get_by_role("heading", name=re.compile("Default"))).to_be_visible()
    _shot(page, "14-brand-kits")
    page.goto(f"{base}/app/webhooks")
    page.get_by_label("Endpoint URL").fill("https://hooks.example.com/reelfarm")
    page.get_by_label("render.completed").check()
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.locator("#new-secret")).to_have_value(re.compile(r"^whsec_"))
    _shot(page, "15-webhooks")
    page.get_by_role("link", name="https://hooks.example.com/reelfarm").click()
    page.get_by_role("button", name="Send test event").click()
    expect(page.locator(".flash-ok")).to_contain_text("webhook.test")
    expect(page.locator("tbody"), hung("the test event's delivery")).to_contain_text("webhook.test",
                                                                                     timeout=WORK_CEILING_MS)
    _shot(page, "16-webhook-deliveries")
    page.goto(f"{base}/app/farm")
    expect(page.get_by_role("heading", name="Nodes")).to_be_visible()
    expect(page.locator("body")).to_contain_text("this server (embedded)")
    _shot(page, "17-farm")


def _csrf_refused(context, base: str, video_url: str) -> None:
    refused = context.request.post(f"{base}/app/settings/keys", form={"name": "sneaky", "expires": ""})
    assert refused.status == 403 and "Not allowed" in refused.text()
    forged = context.request.post(f"{video_url}/renders", form={"format": "1:1", "resolution": "720",
                                                                 "csrf_token": "not-the-token"})
    assert forged.status == 403


def _member_and_other_workspace(browser: Browser, base: str, data_dir: Path, port: int, dev_key: str) -> None:
    workspace = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {dev_key}"}, timeout=10)
    link = _admin(data_dir, port, "create-user", "member@example.com", "--workspace", workspace.json()["workspace"]["id"])
    other_ws = _admin(data_dir, port, "create-workspace", "Other", "--plan", "pro")
    other_key = _admin(data_dir, port, "create-key", other_ws, "--name", "other")
    theirs = httpx.post(f"{base}/api/v1/videos", headers={"Authorization": f"Bearer {other_key}"},
                        json={"storyId": "quote", "durationSec": 6}, timeout=30)
    assert theirs.status_code == 201, theirs.text
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    _set_password(page, link)
    expect(page.get_by_role("link", name="Farm", exact=True)).to_have_count(0)
    response = page.goto(f"{base}/app/farm")
    assert response is not None and response.status == 403
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    _shot(page, "18-member-farm-refused")
    response = page.goto(f"{base}/app/videos/{theirs.json()['id']}")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    _shot(page, "19-other-workspace-not-found")
    context.close()


def _narrow(browser: Browser, base: str, email: str, video_url: str) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2)
    page = context.new_page()
    _sign_in(page, base, email)
    _shot(page, "20-narrow-videos")
    page.goto(video_url)
    _shot(page, "21-narrow-video")
    _fits(page)
    page.goto(f"{base}/app/settings")
    _shot(page, "22-narrow-settings")
    _fits(page)
    context.close()


def _phone(browser: Browser, base: str, email: str, video_url: str) -> None:
    """At 390x844 (a phone): the header is one row whose menu opens from a <details>, the video cards
    are compact, tables are stacked rows with every control on screen, and no page scrolls sideways."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = context.new_page()
    _sign_in(page, base, email)
    header = page.locator("header.top")
    assert header.bounding_box()["height"] <= 80, header.bounding_box()
    expect(page.get_by_role("link", name="Settings")).to_be_hidden()
    tiles = page.locator("li.tile")
    assert tiles.count() >= 1
    for i in range(tiles.count()):
        box = tiles.nth(i).bounding_box()
        assert box["height"] <= 360 and box["x"] + box["width"] <= 390, box
    _no_sideways_scroll(page)
    _shot(page, "30-phone-videos")
    page.get_by_text("Menu", exact=True).click()
    expect(page.get_by_role("link", name="Settings")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    _no_sideways_scroll(page)
    _shot(page, "31-phone-menu-open")
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    assert header.bounding_box()["height"] <= 80  # the menu is closed again on the next page
    page.get_by_label("Name").fill("phone key")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#new-key")).to_be_visible()
    revoke = page.get_by_role("row").filter(has_text="phone key").get_by_role("link", name=re.compile("^Revoke"))
    revoke.scroll_into_view_if_needed()
    box = revoke.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    _no_sideways_scroll(page)
    _shot(page, "32-phone-settings")
    page.goto(video_url)
    _no_sideways_scroll(page)
    _shot(page, "33-phone-video")
    for path, name in (("/app/webhooks", "34-phone-webhooks"), ("/app/brand-kits", "35-phone-brand-kits"),
                       ("/app/farm", "36-phone-farm")):
        page.goto(base + path)
        _no_sideways_scroll(page)
        _shot(page, name)
    page.goto(f"{base}/app/webhooks")
    page.get_by_role("link", name="https://hooks.example.com/reelfarm").click()
    redeliver = page.get_by_role("button", name=re.compile("^Redeliver")).first
    box = redeliver.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390, box
    _no_sideways_scroll(page)
    _shot(page, "37-phone-webhook")
    context.close()


def _no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 390, (page.url, width)
    _fits(page)


def _fits(page: Page) -> None:
    """Nothing on the page is wider than the screen (tables scroll inside their own box)."""
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
        .filter(e => !e.closest('.table-wrap') && e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert wide == [], wide
