"""The Media page in a real browser (Debian's headless Chromium, driven by Playwright) against a
real `reelfarm serve`: an image picked in the file input is sent by the page's script with its
progress, and the list shows its thumbnail (loaded, not broken); a file that is no image or sound
is refused beside the upload, nothing stored; at desktop and at phone size, with no sideways scroll.
"""
from __future__ import annotations

import io
import re

from PIL import Image
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _set_password, _shot, _sign_in, console_serve


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (640, 360)) -> bytes:
    out = io.BytesIO()
    image = Image.new("RGB", size, colour)
    for x in range(0, size[0], 40):  # stripes, so the thumbnail is plainly this picture
        image.paste((255, 255, 255), (x, 0, x + 12, size[1]))
    image.save(out, "PNG")
    return out.getvalue()


def _upload_and_see_thumbnail(page: Page, base: str, name: str, colour: tuple[int, int, int], shot: str) -> None:
    page.goto(f"{base}/app/media")
    expect(page.get_by_role("heading", name="Media")).to_be_visible()
    before = page.locator(".media-item img").count()
    page.get_by_label("Files").set_input_files(
        [{"name": name, "mimeType": "image/png", "buffer": _png(colour)},
         {"name": "notes.png", "mimeType": "image/png", "buffer": b"these are notes, not a picture"}])
    refused = page.locator(".upload-progress li.error")
    expect(refused).to_contain_text("notes.png")  # the script names the refusal beside the upload
    expect(refused).to_contain_text("not stored")
    expect(page.locator(".upload-progress progress").first).to_have_attribute("value", "100")
    page.get_by_role("link", name="Show the library with what was uploaded").click()
    thumbs = page.locator(".media-item img")
    expect(thumbs).to_have_count(before + 1)
    newest = thumbs.first
    expect(newest).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=newest.element_handle())
    assert newest.evaluate("img => img.naturalWidth") == 320  # the 320-pixel JPEG thumbnail, not the original
    expect(page.locator(".media-item").first).to_contain_text("640×360")
    expect(page.locator(".media-item").first).to_contain_text("Not used yet")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "sideways scroll"
    _shot(page, shot)


def test_an_image_picked_in_the_media_page_shows_its_thumbnail(tmp_path, browser: Browser):
    with console_serve(tmp_path / "data") as (base, _key, email, link):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        _set_password(page, link)
        page.get_by_role("link", name="Media", exact=True).first.click()
        expect(page).to_have_url(re.compile(r"/app/media$"))
        _upload_and_see_thumbnail(page, base, "harbour.png", (20, 90, 160), "80-media-desktop")
        context.close()
        phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        page = phone.new_page()
        _sign_in(page, base, email)
        _upload_and_see_thumbnail(page, base, "sunset.png", (200, 80, 20), "81-media-phone")
        expect(page.locator(".media-item")).to_have_count(2)
        phone.close()
