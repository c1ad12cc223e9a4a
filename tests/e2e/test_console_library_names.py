"""The media library's names in a real browser (Debian's headless Chromium, driven by Playwright)
against a real `reelfarm serve`: files picked in the Media page keep their names on the cards, a
refusal names an image's pixels and the page offers one link to the library however the files
went; a transparent image's thumbnail shows a checkerboard through it; a sound plays in the page;
a file is renamed and found by its name; deleting asks in a dialog (and without JavaScript on a
page of its own); a file in use names its video by title, linked; the story form's library lists
images by name.
"""
from __future__ import annotations

import io
import math
import re
import struct
import wave

import httpx
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_console_browser import _set_password, _shot, _sign_in, console_serve
from tests.integration.api.test_api_asset_names import transparent_png
from tests.integration.api.test_api_assets import huge_png
from tests.integration.api.test_api_storage_keys import with_image


def _wav(seconds: float = 1.5, rate: int = 22050, silent: bool = False) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(rate)
        count = int(rate * seconds)
        sound.writeframes(b"\0\0" * count if silent else
                          b"".join(struct.pack("<h", int(8000 * math.sin(i / 8))) for i in range(count)))
    return out.getvalue()


def _card(page: Page, name: str):
    return page.locator(".media-item").filter(has=page.locator(".media-name", has_text=name))


def _upload_named_files(page: Page, base: str) -> None:
    """Files picked twice, the second time while the first are still on their way (a long sound
    first), and the Upload button pressed too: each file goes once, and one link follows them all."""
    page.goto(f"{base}/app/media")
    files = page.get_by_label("Files")
    files.set_input_files([
        {"name": "Long silence.wav", "mimeType": "audio/wav", "buffer": _wav(300, rate=16000, silent=True)},
        {"name": "huge poster.png", "mimeType": "image/png", "buffer": huge_png(12_000, 9_000)}])
    files.set_input_files([
        {"name": "Badge (clear).png", "mimeType": "image/png", "buffer": transparent_png()},
        {"name": "Launch jingle.wav", "mimeType": "audio/wav", "buffer": _wav()},
        {"name": "notes.png", "mimeType": "image/png", "buffer": b"notes, not a picture"}])
    page.get_by_role("button", name="Upload").click()
    refused = page.locator(".upload-progress li.error")
    expect(refused.filter(has_text="huge poster.png")).to_contain_text(
        "12000×9000 pixels (108 million), more than the 40 million pixels allowed")
    links = page.get_by_role("link", name="Show the library with what was uploaded")
    expect(links).to_have_count(1)
    expect(page.locator(".upload-progress li")).to_have_count(6)  # five files, then the one link
    expect(page.locator(".upload-progress li").last).to_have_text("Show the library with what was uploaded")
    page.wait_for_timeout(300)
    expect(links).to_have_count(1)  # and no second one comes later
    _shot(page, "90-library-upload-refused")
    links.click()
    expect(page.locator(".media-name")).to_have_count(3)


def _transparent_thumbnail_over_a_checkerboard(page: Page) -> None:
    card = _card(page, "Badge (clear).png")
    thumb = card.locator(".media-thumb img")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumb.element_handle())
    assert thumb.evaluate("img => img.naturalWidth") == 320
    assert "linear-gradient" in thumb.evaluate("el => getComputedStyle(el).backgroundImage")  # behind the picture alone
    shot = Image.open(io.BytesIO(thumb.screenshot())).convert("RGB")
    width, height = shot.size
    left = shot.getpixel((width // 5, height // 2))
    assert left[0] > 180 and left[1] < 90, left  # the opaque half: red
    seen = {shot.getpixel((x, height // 2)) for x in range(width * 3 // 5, width - 2)}
    assert any(min(p) > 245 for p in seen) and any(200 < p[0] < 235 and p[0] == p[1] - 3 for p in seen), seen


def _a_sound_plays_in_the_page(page: Page) -> None:
    player = _card(page, "Launch jingle.wav").locator("audio")
    expect(player).to_have_attribute("controls", "")
    expect(player).to_have_attribute("preload", "none")
    seconds = player.evaluate("""a => new Promise((done, failed) => {
        a.addEventListener("loadedmetadata", () => done(a.duration), { once: true });
        a.addEventListener("error", () => failed(new Error("the sound did not load")), { once: true });
        a.load();
    })""")
    assert abs(seconds - 1.5) < 0.05, seconds
    assert player.evaluate("a => a.play().then(() => !a.paused, () => 'blocked')") in (True, "blocked")


def _rename_and_search(page: Page) -> None:
    card = _card(page, "Badge (clear).png")
    card.get_by_text("Rename", exact=True).click()
    card.get_by_label("New name").fill("Team badge.png")
    card.get_by_role("button", name="Save name").click()
    expect(page.locator(".flash-ok")).to_contain_text("Renamed to “Team badge.png”.")
    expect(_card(page, "Team badge.png")).to_have_count(1)
    page.get_by_label("Search by name").fill("BADGE")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".media-name")).to_have_text(["Team badge.png"])
    assert "q=BADGE" in page.url
    _shot(page, "91-library-searched")
    page.get_by_role("link", name="Show all").click()
    expect(page.locator(".media-name")).to_have_count(3)
    _shot(page, "92-library-named")


def _in_use_names_the_video(page: Page, base: str, key: str) -> None:
    api = {"Authorization": f"Bearer {key}"}
    badge = httpx.get(f"{base}/api/v1/assets?q=team", headers=api, timeout=10).json()["data"][0]
    video = httpx.post(f"{base}/api/v1/videos", headers=api, json={"storyId": "quote", "durationSec": 6,
                                                                     "title": "Spring launch"}, timeout=30).json()
    doc = with_image(video["current_version"]["doc"], key=badge["key"])
    assert httpx.patch(f"{base}/api/v1/videos/{video['id']}", json={"doc": doc}, headers=api, timeout=30).status_code == 200
    page.goto(f"{base}/app/media")
    card = _card(page, "Team badge.png")
    expect(card.get_by_role("link", name="Video: Spring launch")).to_have_attribute("href", f"/app/videos/{video['id']}")
    card.get_by_role("link", name="Delete…").click()  # in use: no dialog, the page says why
    expect(page.get_by_role("heading", name="“Team badge.png” is in use")).to_be_visible()
    expect(page.get_by_role("button", name="Delete the file")).to_have_count(0)
    page.get_by_role("link", name="Video: Spring launch").click()
    expect(page).to_have_url(re.compile(f"/app/videos/{video['id']}"))


def _delete_asks_in_a_dialog(page: Page, base: str) -> None:
    page.goto(f"{base}/app/media")
    card = _card(page, "Launch jingle.wav")
    card.get_by_role("link", name="Delete…").click()
    dialog = page.locator("dialog[data-delete-dialog]")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("“Launch jingle.wav” will be deleted")
    _shot(page, "93-library-delete-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(card).to_have_count(1)  # nothing deleted by asking
    card.get_by_role("link", name="Delete…").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator(".flash-ok")).to_contain_text("“Launch jingle.wav” is deleted.")
    expect(_card(page, "Launch jingle.wav")).to_have_count(0)
    expect(page.locator(".media-name")).to_have_count(2)


def _without_javascript(browser: Browser, base: str, email: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/media")
    page.get_by_label("Files").set_input_files([{"name": "spare sound.wav", "mimeType": "audio/wav",
                                                 "buffer": _wav(0.5)}])
    page.get_by_role("button", name="Upload").click()
    card = _card(page, "spare sound.wav")
    card.get_by_text("Rename", exact=True).click()
    card.get_by_label("New name").fill("Spare (old).wav")
    card.get_by_role("button", name="Save name").click()
    expect(page.locator(".flash-ok")).to_contain_text("Renamed to “Spare (old).wav”.")
    _card(page, "Spare (old).wav").get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", name="Delete “Spare (old).wav”?")).to_be_visible()
    _shot(page, "94-library-delete-page")
    page.get_by_role("button", name="Delete the file").click()
    expect(page.locator(".flash-ok")).to_contain_text("“Spare (old).wav” is deleted.")
    expect(_card(page, "Spare (old).wav")).to_have_count(0)
    expect(page.locator(".media-name")).to_have_count(2)
    context.close()


def _story_form_lists_names(page: Page, base: str) -> None:
    page.goto(f"{base}/app/videos/new/announcement")
    details = page.locator("details.library-pick").first
    if not details.evaluate("d => d.open"):
        details.locator("summary").click()
    expect(details.locator(".pick-name")).to_have_text(["Team badge.png"])
    _shot(page, "95-library-picker-names")


def test_library_files_keep_their_names(tmp_path, browser: Browser):
    with console_serve(tmp_path / "data") as (base, key, email, link):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        _set_password(page, link)
        _upload_named_files(page, base)
        _transparent_thumbnail_over_a_checkerboard(page)
        _a_sound_plays_in_the_page(page)
        _rename_and_search(page)
        _in_use_names_the_video(page, base, key)
        _delete_asks_in_a_dialog(page, base)
        _without_javascript(browser, base, email)
        _story_form_lists_names(page, base)
        context.close()
