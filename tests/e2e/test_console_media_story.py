"""An image uploaded into a story form, in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `reelfarm serve`, at a desktop's size and a phone's 390x844, with and
without JavaScript: the file picked in the image field's upload goes to the media library and its
id fills the field (by the page's script at once, or by the server when the form is posted), and
with JavaScript an address typed sets it aside until it is chosen in the library again; the
form's preview draws the picture; the video made names the upload's key in its document; and a
still of it, drawn by the farm, shows the picture (a solid colour of its own, found in the PNG).

Kept small: the shortest duration (6 s) and stills rather than renders (a render with an uploaded
image and a soundtrack is ``tests/integration/api/test_api_story_uploads.py``).
"""
from __future__ import annotations

import base64
import io
import re

import httpx
import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _fits, _set_password, _shot, _sign_in, console_serve
from tests.helpers import WORK_CEILING_MS, slide

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
IN_THE_PICTURE = 3.2  # seconds: the announcement's second scene (the one with the image) of a 6-second video
# a colour of each run's own, so that a still can only show it if it drew that run's upload
COLOURS = {("desktop", True): (230, 0, 200), ("phone", True): (0, 200, 220),
           ("desktop", False): (250, 140, 0), ("phone", False): (120, 0, 240)}


@pytest.fixture(scope="module")
def console_server(tmp_path_factory, browser):
    """A `reelfarm serve` of its own whose owner has set a password: (base, email, API key)."""
    with console_serve(tmp_path_factory.mktemp("media-story") / "data") as (base, dev_key, email, link):
        context = browser.new_context(viewport=DESKTOP)
        _set_password(context.new_page(), link)
        context.close()
        yield base, email, dev_key


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (480, 360), colour).save(out, "PNG")
    return out.getvalue()


def _share(png: bytes, colour: tuple[int, int, int], tolerance: int = 24) -> float:
    """The share of the picture's pixels within ``tolerance`` of ``colour``."""
    image = Image.open(io.BytesIO(png)).convert("RGB").resize((270, 480))
    pixels = list(image.getdata())
    return sum(1 for p in pixels if all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True))) / len(pixels)


def _no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (page.url, width)
    _fits(page)


def _preview_png(page: Page) -> bytes:
    src = page.locator("#preview-image").get_attribute("src") or ""
    assert src.startswith("data:image/png;base64,"), src[:80]
    return base64.b64decode(src.split(",", 1)[1])


def _upload_in_the_form(page: Page, base: str, colour: tuple[int, int, int], name: str, javascript: bool) -> str:
    """Fill the announcement with an uploaded image and see the preview draw it; the asset's id."""
    page.goto(f"{base}/app/videos/new/announcement")
    page.get_by_label("Headline").fill(f"Our studio in {name}")
    page.get_by_label("Duration in seconds").fill("6")
    upload = page.get_by_label("Upload image")
    expect(upload).to_have_attribute("type", "file")
    upload.set_input_files({"name": f"{name}.png", "mimeType": "image/png", "buffer": _png(colour)})
    field = page.get_by_label("Image", exact=True)
    if javascript:  # sent at once by the page's script; its id in the field, its thumbnail beside it
        expect(page.locator("#fld-image-upload-state")).to_have_text(f"{name}.png is in the library and chosen.")
        expect(field).to_have_value(UUID)
        expect(page.locator('[data-current-for="fld-image"] img')).to_be_visible()
        picked = page.locator("#fld-image").input_value()
        expect(page.locator(f'input[name="pick.image"][value="{picked}"]')).to_be_checked()
        # an address typed sets the library aside; choosing the image in the library brings it back
        field.fill("https://example.com/another.png")
        expect(page.locator("#fld-image-pick-keep")).to_be_checked()
        expect(page.locator('[data-current-for="fld-image"] img')).to_be_hidden()
        page.locator(f'label[for="pick-image-{picked}"]').click()
        expect(field).to_have_value(picked)
        expect(page.locator('[data-current-for="fld-image"] img')).to_be_visible()
        slide(page.locator("#preview-time"), IN_THE_PICTURE)
        image = page.locator("#preview-image")
        expect(image).to_have_attribute("alt", f"Preview of the video at {IN_THE_PICTURE} s", timeout=WORK_CEILING_MS)
        expect(image).not_to_have_class(re.compile(r"\bstale\b"), timeout=WORK_CEILING_MS)
    else:  # posted with the form (the Preview button): stored by the server, the field filled
        page.locator("#preview-time").fill(str(IN_THE_PICTURE))
        page.get_by_role("button", name="Preview", exact=True).click()
        expect(field).to_have_value(UUID)
        expect(page.locator('[data-current-for="fld-image"] img')).to_be_visible()
        expect(page.locator("#preview-image")).to_have_attribute("alt", f"Preview of the video at {IN_THE_PICTURE} s")
        expect(page.get_by_label("Headline")).to_have_value(f"Our studio in {name}")  # nothing typed is lost
    assert _share(_preview_png(page), colour) > 0.02, "the preview does not draw the uploaded picture"
    return field.input_value()


def _still(page: Page, javascript: bool) -> bytes:
    """A still of the video in its picture's scene, drawn by the farm: its PNG."""
    if javascript:
        slide(page.locator("#still-time"), IN_THE_PICTURE)
    else:
        page.locator("#still-time").fill(str(IN_THE_PICTURE))
        page.get_by_role("button", name="Preview still").click()
    still = page.locator("#still-image")
    expect(still).to_have_attribute("alt", f"Still of the video at {IN_THE_PICTURE:g} s", timeout=WORK_CEILING_MS)
    if javascript:
        page.wait_for_function("() => { const i = document.getElementById('still-image'); "
                               "return i && i.complete && i.naturalWidth > 0; }", timeout=WORK_CEILING_MS)
    answer = httpx.get(still.evaluate("i => i.src"), timeout=30)
    assert answer.status_code == 200 and answer.content[:8] == b"\x89PNG\r\n\x1a\n"
    return answer.content


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_an_image_uploaded_into_a_story_is_drawn_in_its_video(browser: Browser, console_server, size, javascript):
    base, email, dev_key = console_server
    viewport = DESKTOP if size == "desktop" else PHONE
    colour = COLOURS[(size, javascript)]
    name = f"{size}-{'js' if javascript else 'no-js'}"
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript,
                                  **({"is_mobile": True, "has_touch": True} if size == "phone" else {}))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _sign_in(page, base, email)

    asset_id = _upload_in_the_form(page, base, colour, name, javascript)
    _no_sideways_scroll(page)
    _shot(page, f"82-story-upload-{name}")
    page.get_by_role("button", name="Create video").click()
    expect(page.get_by_role("heading", name=f"Our studio in {name}")).to_be_visible()
    video_id = re.search(r"/app/videos/([0-9a-f-]{36})", page.url).group(1)

    headers = {"Authorization": f"Bearer {dev_key}"}
    asset = httpx.get(f"{base}/api/v1/assets/{asset_id}", headers=headers, timeout=10).json()
    assert (asset["kind"], asset["width"], asset["height"]) == ("image", 480, 360)
    doc = httpx.get(f"{base}/api/v1/videos/{video_id}", headers=headers, timeout=10).json()["current_version"]["doc"]
    assert doc["assets"]["image"] == {"type": "image", "key": asset["key"]}  # the upload, named by its key

    still = _still(page, javascript)
    assert _share(still, colour) > 0.02, "the still does not show the uploaded picture"
    _no_sideways_scroll(page)
    _shot(page, f"83-story-upload-video-{name}")
    assert errors == []
    context.close()
