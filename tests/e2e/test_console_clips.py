"""Clips in the console, in a real browser (Debian's headless Chromium, driven by Playwright)
against a real `reelfarm serve`: a clip made with PyAV is uploaded on the Media page (by its script,
with its progress; and without JavaScript, by the plain form), chosen by its poster in a story's
video field, and the video made names it in its document; on the video's page the clip plays in a
``<video>`` element from the server's own file URL, its start control scrubs it and saves the start
into the document (``trim_start`` wherever the clip plays), and the start outlives a save of the
fields. Another workspace's clip id posted to the story form or the fields form is refused beside
the field; its start cannot be set.

Kept small: 6-second videos and no renders (a library clip rendered frame by frame is
``tests/integration/api/test_api_footage_render.py``).
"""
from __future__ import annotations

import io
import re
from fractions import Fraction

import av
import httpx
import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _admin, _fits, _set_password, _shot, _sign_in, console_serve
from tests.helpers import WORK_CEILING_MS, slide

DESKTOP = {"width": 1280, "height": 900}
VIDEO_PAGE = re.compile(r"/app/videos/([0-9a-f-]{36})")
CLIP_SEC = 3.0
IN_THE_CLIP = 2.0  # seconds: the product launch's showcase (1.4 to 2.8 s of a 6-second video), where the clip plays


def _clip(seed: int, seconds: float = CLIP_SEC, fps: int = 10, size: tuple[int, int] = (320, 180)) -> bytes:
    """An H.264 MP4 whose picture turns from one colour to another as it plays, with a white bar
    moving across it (so a frame tells its time); ``seed`` makes each run's clip bytes its own."""
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)
        frames = int(seconds * fps)
        for i in range(frames):
            share = i / max(1, frames - 1)
            picture = np.empty((size[1], size[0], 3), np.uint8)
            picture[:] = (round(230 * (1 - share)), 60 + seed % 100, round(230 * share))
            x = round(share * (size[0] - 24))
            picture[:, x:x + 24] = 255
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    """A `reelfarm serve` of its own whose owner has set a password, and a second workspace's key:
    (base, email, API key, data folder, the other workspace's key)."""
    data_dir = tmp_path_factory.mktemp("clips") / "data"
    with console_serve(data_dir) as (base, dev_key, email, link):
        port = int(base.rsplit(":", 1)[1])
        other_ws = _admin(data_dir, port, "create-workspace", "Other", "--plan", "pro")
        other_key = _admin(data_dir, port, "create-key", other_ws, "--name", "other")
        context = browser.new_context(viewport=DESKTOP)
        _set_password(context.new_page(), link)
        context.close()
        yield base, email, dev_key, other_key


def _api(base: str, key: str, path: str) -> dict:
    answer = httpx.get(f"{base}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _newest_video_asset(base: str, key: str) -> dict:
    listed = _api(base, key, "/assets?kind=video")["data"]
    assert listed, "no video in the library"
    return listed[0]


def _places(doc: dict, name: str) -> list[dict]:
    """Every layer and scene background of ``doc`` that plays its asset ``name``."""
    found = []
    for scene in doc["scenes"]:
        if (scene.get("background") or {}).get("asset") == name:
            found.append(scene["background"])
        stack = list(scene.get("layers") or [])
        while stack:
            layer = stack.pop()
            stack.extend(layer.get("children") or [])
            if layer.get("type") == "video" and layer.get("asset") == name:
                found.append(layer)
    return found


def _upload_with_progress(page: Page, base: str, clip: bytes) -> None:
    page.goto(f"{base}/app/media")
    expect(page.get_by_role("heading", name="Upload images, sounds, videos and captions")).to_be_visible()
    page.get_by_label("Files").set_input_files({"name": "harbour.mp4", "mimeType": "video/mp4", "buffer": clip})
    # every file went in: the page reloads itself and lists the clip by its poster
    item = page.locator('.media-item[data-kind="video"]').first
    expect(item).to_be_visible()
    expect(item).to_contain_text("320×180")
    poster = item.locator("img")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=poster.element_handle())


def test_a_clip_uploaded_picked_started_and_previewed(browser: Browser, server):
    base, email, dev_key, _other = server
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, base, email)

    # the Media page's script shows the upload's progress; the request it makes is watched
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    _upload_with_progress(page, base, _clip(1))
    assert any(u.endswith("/app/media/upload.json") for u in sent), sent
    asset = _newest_video_asset(base, dev_key)
    assert (asset["width"], asset["height"], asset["duration_sec"]) == (320, 180, pytest.approx(CLIP_SEC, abs=0.11))

    # the story form offers the library's clips by poster and length, and "No clip"
    page.goto(f"{base}/app/videos/new/product_launch")
    page.get_by_label("Product name").fill("Harbour Lamp")
    page.get_by_label("Duration in seconds").fill("6")
    field = page.locator("fieldset#fld-clip")
    expect(field.get_by_role("radio", name="No clip")).to_be_checked()
    choice = field.locator(f'input[type=radio][value="{asset["id"]}"]')
    expect(field.locator(f'label[for="{choice.get_attribute("id")}"]')).to_contain_text("3 s · 320×180")
    field.locator(f'label[for="{choice.get_attribute("id")}"]').click()
    expect(choice).to_be_checked()
    # the live preview draws the values with the clip, in the scene that shows it
    slide(page.locator("#preview-time"), IN_THE_CLIP)
    preview = page.locator("#preview-image")
    expect(preview).to_have_attribute("alt", f"Preview of the video at {IN_THE_CLIP:g} s", timeout=WORK_CEILING_MS)
    expect(preview).not_to_have_class(re.compile(r"\bstale\b"), timeout=WORK_CEILING_MS)
    page.wait_for_function("() => { const i = document.getElementById('preview-image'); "
                           "return i && i.complete && i.naturalWidth > 0; }", timeout=WORK_CEILING_MS)
    _fits(page)
    _shot(page, "90-story-clip-picked")
    page.get_by_role("button", name="Create video").click()
    expect(page.get_by_role("heading", name="Product launch", level=1)).to_be_visible()
    video_id = VIDEO_PAGE.search(page.url).group(1)

    video = _api(base, dev_key, f"/videos/{video_id}")
    doc = video["current_version"]["doc"]
    assert doc["assets"]["clip"] == {"type": "video", "key": asset["key"]}  # the upload, named by its key
    assert [p.get("trim_start", 0) for p in _places(doc, "clip")] == [0]

    # the video page plays the clip from the server's file URL; the start control scrubs it
    clips = page.locator("#clips")
    expect(clips.get_by_role("heading", name="Product clip")).to_be_visible()
    player = clips.locator("video[data-clip-video]")
    assert player.get_attribute("src").startswith(asset["url"].split("#")[0][:40])
    page.wait_for_function("v => v.readyState >= 1 && v.duration > 2.5", arg=player.element_handle())
    start = clips.get_by_label(re.compile(r"^Start"))
    expect(start).to_have_attribute("max", "2.9")
    slide(start, 1.5)
    page.wait_for_function("v => Math.abs(v.currentTime - 1.5) < 0.01", arg=player.element_handle())
    expect(clips.locator("output")).to_have_text("1.5")
    clips.get_by_role("button", name="Save start").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 2: clip starts at 1.5 s")
    doc = _api(base, dev_key, f"/videos/{video_id}")["current_version"]["doc"]
    assert [p["trim_start"] for p in _places(doc, "clip")] == [1.5]
    expect(clips.get_by_label(re.compile(r"^Start"))).to_have_value("1.5")
    page.wait_for_function("v => v.readyState >= 2 && !v.seeking", arg=player.element_handle())
    _fits(page)
    _shot(page, "91-video-clip-start")

    # the fields form still holds the story's values, and saving them keeps the start
    fields = page.locator("#fields")
    expect(fields.get_by_label("Product name")).to_have_value("Harbour Lamp")
    expect(fields.locator(f'input[name="f.clip"][value="{asset["id"]}"]')).to_be_checked()
    fields.get_by_label("Product name").fill("Harbour Lamp II")
    fields.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 4")
    video = _api(base, dev_key, f"/videos/{video_id}")
    doc = video["current_version"]["doc"]
    assert [p["trim_start"] for p in _places(doc, "clip")] == [1.5]
    assert "Harbour Lamp II" in str(doc["scenes"][0])
    assert errors == []
    context.close()


def test_without_javascript_and_another_workspaces_clip(browser: Browser, server):
    base, email, dev_key, other_key = server
    theirs = httpx.post(f"{base}/api/v1/assets", headers={"Authorization": f"Bearer {other_key}"},
                        files={"file": ("theirs.mp4", _clip(7), "video/mp4")}, timeout=60)
    assert theirs.status_code == 201, theirs.text
    foreign = theirs.json()["id"]

    plain = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = plain.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/media")
    page.get_by_label("Files").set_input_files({"name": "pier.mp4", "mimeType": "video/mp4", "buffer": _clip(2)})
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".flash-ok")).to_contain_text("1 file uploaded.")
    mine = _newest_video_asset(base, dev_key)

    page.goto(f"{base}/app/videos/new/announcement")
    page.get_by_label("Duration in seconds").fill("6")
    field = page.locator("fieldset#fld-background_video")
    field.locator(f'input[type=radio][value="{mine["id"]}"]').check()
    page.get_by_role("button", name="Create video").click()
    expect(page.locator("#clips").get_by_role("heading", name="Background video")).to_be_visible()
    video_id = VIDEO_PAGE.search(page.url).group(1)
    doc = _api(base, dev_key, f"/videos/{video_id}")["current_version"]["doc"]
    assert doc["assets"]["background"] == {"type": "video", "key": mine["key"]}
    assert len(_places(doc, "background")) == 2  # the opening and the closing scene

    # a start past the clip's end, posted by hand, is refused beside the control
    clips = page.locator("#clips")
    start = clips.get_by_label(re.compile(r"^Start"))
    start.fill("0.5")
    clips.get_by_role("button", name="Save start").click()
    expect(page.locator(".flash-ok")).to_contain_text("clip starts at 0.5 s")
    doc = _api(base, dev_key, f"/videos/{video_id}")["current_version"]["doc"]
    assert [p["trim_start"] for p in _places(doc, "background")] == [0.5, 0.5]
    token = page.locator('#clips input[name="csrf_token"]').first.input_value()
    action = page.locator("#clips form").first.get_attribute("action")
    late = plain.request.post(f"{base}{action}", form={"csrf_token": token, "start": "3.5", "version": "2"})
    assert late.status == 400 and "Start: use 0 to 2.9 seconds (the clip is 3 s long)" in late.text()
    theirs_start = plain.request.post(f"{base}/app/videos/{video_id}/clips/{foreign}/start",
                                      form={"csrf_token": token, "start": "1"})
    assert theirs_start.status == 404
    plain.close()

    # another workspace's clip id, put in a video field's choice, is refused beside the field
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/videos/new/testimonial")
    page.get_by_label("Duration in seconds").fill("6")
    radio = page.locator(f'fieldset#fld-clip input[type=radio][value="{mine["id"]}"]')
    radio.evaluate("(el, id) => { el.value = id; el.checked = true; }", foreign)
    page.get_by_role("button", name="Create video").click()
    error = page.locator('[data-error-for="f.clip"]')
    expect(error).to_contain_text(f"Testimonial clip: no video of this workspace's media library has the id {foreign}")
    expect(page.locator(f'fieldset#fld-clip input[value="{foreign}"]')).to_be_checked()
    assert "not a video of this library" in page.locator("fieldset#fld-clip").inner_text()
    _shot(page, "92-story-clip-refused")
    before = len(_api(base, dev_key, "/videos")["data"])

    page.goto(f"{base}/app/videos/{video_id}")
    radio = page.locator(f'#fields input[name="f.background_video"][value="{mine["id"]}"]')
    radio.evaluate("(el, id) => { el.value = id; el.checked = true; }", foreign)
    page.locator("#fields").get_by_role("button", name="Save as a new version").click()
    expect(page.locator('[data-error-for="f.background_video"]')).to_contain_text(
        "no video of this workspace's media library has the id")
    assert len(_api(base, dev_key, "/videos")["data"]) == before
    assert len(_api(base, dev_key, f"/videos/{video_id}/versions")["data"]) == 2
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the clip and its control fit
    page.goto(f"{base}/app/videos/{video_id}#clips")
    expect(page.locator("#clips video")).to_be_visible()
    _fits(page)
    _shot(page, "93-video-clip-phone")
    context.close()
