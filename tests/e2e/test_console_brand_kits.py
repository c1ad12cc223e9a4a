"""Brand kits made by hand in a real browser (Debian's headless Chromium, driven by Playwright)
against a real `reelfarm serve`: a kit created with a logo upload and made the default, its
swatches listed by role, an edit refused with its problems beside their fields and then saved;
the same without JavaScript (an SVG logo), and the form and list at a phone's 390x844.

Screenshots land beside the console's others (``tests/artifacts/console/`` or ``CONSOLE_SHOTS_DIR``).
"""
from __future__ import annotations

import re
from pathlib import Path

import httpx
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from reelfarm.renderer.tokens import COLOR_KEYS
from tests.e2e.test_console_browser import (
    _no_sideways_scroll,
    _set_password,
    _shot,
    _sign_in,
    console_serve,
)

ROLES = COLOR_KEYS
SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">'
       b'<rect width="120" height="40" rx="8" fill="#2E7D32"/><circle cx="20" cy="20" r="10" fill="#fff"/></svg>')


def _png_logo(path: Path) -> Path:
    image = Image.new("RGBA", (240, 120), (0, 0, 0, 0))
    image.paste((11, 95, 255, 255), (20, 20, 220, 100))
    image.save(path, "PNG")
    return path


def test_brand_kits_made_by_hand_in_a_browser(tmp_path, browser):
    with console_serve(tmp_path / "data") as (base, dev_key, email, link):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        _set_password(page, link)
        _create_with_a_logo(page, base, _png_logo(tmp_path / "harbour.png"))
        _edit_refused_then_saved(page, base, dev_key)
        context.close()
        _without_javascript(browser, base, email, tmp_path)
        _phone(browser, base, email)


def _fill_colour(page: Page, role: str, value: str) -> None:
    page.get_by_label(f"{role.capitalize()} colour", exact=True).fill(value)


def _kit_card(page: Page, name: str):
    return page.locator("li.kit").filter(has=page.get_by_role("heading", name=re.compile(re.escape(name))))


def _create_with_a_logo(page: Page, base: str, logo: Path) -> None:
    page.goto(f"{base}/app/brand-kits")
    page.get_by_role("link", name="New brand kit").click()
    expect(page.get_by_role("heading", name="New brand kit")).to_be_visible()
    for role in ROLES:  # each colour labelled by its role, with a picker beside its hex
        expect(page.get_by_label(f"{role.capitalize()} colour", exact=True)).to_be_visible()
        expect(page.get_by_label(f"Pick the {role} colour")).to_be_visible()
    _shot(page, "40-brand-kit-new")
    page.get_by_role("textbox", name="Name (required)").fill("Harbour Coffee")
    page.get_by_label("Tagline").fill("Roasted by the sea")
    for role, value in zip(ROLES, ("#0B5FFF", "#FFD23F", "#E4572E", "#FFF8E7", "#1B1B1B"), strict=True):
        _fill_colour(page, role, value)
    page.get_by_label("Pick the accent colour").fill("#e4572e")  # the picker follows its hex field
    page.get_by_label("Heading font").select_option("Playfair Display")
    page.get_by_label("Heading weight").select_option("700")
    page.get_by_label("Body font").select_option("Lato")
    page.get_by_label("Logo file").set_input_files(str(logo))
    page.get_by_label("Make it the default kit").check()
    page.get_by_role("button", name="Create kit").click()
    expect(page.locator(".flash-ok")).to_have_text("The brand kit “Harbour Coffee” is saved.")
    card = _kit_card(page, "Harbour Coffee")
    expect(card.get_by_text("default", exact=True)).to_be_visible()
    for role, value in zip(ROLES, ("#0B5FFF", "#FFD23F", "#E4572E", "#FFF8E7", "#1B1B1B"), strict=True):
        expect(card.get_by_role("img", name=f"{role} colour {value}")).to_be_visible()
        expect(card.locator("ul.colors li").filter(has_text=value)).to_contain_text(role)
    logo = card.get_by_role("img", name="Harbour Coffee logo")
    expect(logo).to_be_visible()
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
    assert logo.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [240, 120]
    expect(card).to_contain_text("Playfair Display")
    expect(card).to_contain_text("Lato")
    card.scroll_into_view_if_needed()
    _shot(page, "41-brand-kits-made-by-hand")


def _edit_refused_then_saved(page: Page, base: str, dev_key: str) -> None:
    card = _kit_card(page, "Harbour Coffee")
    card.get_by_role("link", name=re.compile("^Edit")).click()
    expect(page.get_by_role("heading", name="Edit “Harbour Coffee”")).to_be_visible()
    expect(page.get_by_role("img", name="Harbour Coffee logo, as it is now")).to_be_visible()
    _fill_colour(page, "accent", "red-ish")
    page.get_by_label("Corner radius").fill("80")
    page.get_by_role("button", name="Save kit").click()
    expect(page.locator("#kit-color-accent-err")).to_have_text("Accent colour: 'red-ish' is not a colour; use #RRGGBB")
    expect(page.locator("#kit-radius-err")).to_have_text(
        "Corner radius: give a percentage from 0 to 50 (0 is square, 2 slightly rounded)")
    expect(page.get_by_role("alert")).to_contain_text("2 things to fix")
    expect(page.get_by_label("Accent colour", exact=True)).to_have_attribute("aria-invalid", "true")
    _shot(page, "42-brand-kit-edit-refused")
    _fill_colour(page, "accent", "#00A86B")
    page.get_by_label("Corner radius").fill("10")  # percent of the short side
    page.get_by_role("button", name="Save kit").click()
    card = _kit_card(page, "Harbour Coffee")
    expect(card.get_by_role("img", name="accent colour #00A86B")).to_be_visible()
    kits = httpx.get(f"{base}/api/v1/brand-kits", headers={"Authorization": f"Bearer {dev_key}"}, timeout=10).json()
    kit = next(k for k in kits["data"] if k["name"] == "Harbour Coffee")
    assert kit["is_default"] and kit["tokens"]["colors"]["accent"] == "#00A86B" and kit["tokens"]["radius"] == 0.1
    assert kit["tokens"]["palette"] == ["#0B5FFF", "#FFD23F", "#00A86B", "#FFF8E7", "#1B1B1B"]  # made of its colours
    assert kit["tokens"]["logo"]["width"] == 240 and kit["tokens"]["logo"]["dominant_color"] == "#0B5FFF"
    video = httpx.post(f"{base}/api/v1/videos", headers={"Authorization": f"Bearer {dev_key}"}, timeout=30,
                       json={"storyId": "quote", "durationSec": 6})
    doc = video.json()["current_version"]["doc"]  # made with the default kit: its colours and its logo
    assert doc["brand"]["colors"]["accent"] == "#00A86B" and doc["assets"]["logo"]["key"].startswith("brand-kits/")


def _without_javascript(chromium: Browser, base: str, email: str, tmp_path: Path) -> None:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/brand-kits/new")
    expect(page.get_by_label("Pick the accent colour")).to_be_hidden()  # the hex field alone, with a swatch
    page.get_by_role("textbox", name="Name (required)").fill("Green Grocer")
    _fill_colour(page, "primary", "2e7d32")  # the # may be left out
    logo = tmp_path / "grocer.svg"
    logo.write_bytes(SVG)
    page.get_by_label("Logo file").set_input_files(str(logo))
    page.get_by_role("button", name="Create kit").click()
    card = _kit_card(page, "Green Grocer")
    expect(card.get_by_role("img", name="primary colour #2E7D32")).to_be_visible()
    expect(card.get_by_role("img", name="Green Grocer logo")).to_be_visible()
    _shot(page, "43-brand-kits-no-js")
    card.get_by_role("link", name=re.compile("^Edit")).click()
    page.get_by_role("textbox", name="Name (required)").fill("")
    page.get_by_role("button", name="Save kit").click()
    expect(page.locator("#kit-name-err")).to_have_text("Name: give the kit a name of 1 to 200 characters")
    _shot(page, "44-brand-kit-edit-refused-no-js")
    page.get_by_role("textbox", name="Name (required)").fill("Green Grocer & Sons")
    page.get_by_label("Remove the logo").check()
    page.get_by_role("button", name="Save kit").click()
    card = _kit_card(page, "Green Grocer & Sons")
    expect(card.get_by_role("img", name="Green Grocer & Sons logo")).to_have_count(0)
    context.close()


def _phone(chromium: Browser, base: str, email: str) -> None:
    context = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = context.new_page()
    _sign_in(page, base, email)
    page.goto(f"{base}/app/brand-kits")
    expect(page.get_by_role("link", name="New brand kit")).to_be_visible()
    _no_sideways_scroll(page)
    _shot(page, "45-phone-brand-kits")
    page.get_by_role("link", name="New brand kit").click()
    _fill_colour(page, "text", "black")
    page.get_by_role("button", name="Create kit").click()
    expect(page.locator("#kit-color-text-err")).to_have_text("Text colour: 'black' is not a colour; use #RRGGBB")
    for field in ("Name (required)", "Text colour", "Heading font", "Corner radius", "Logo file"):
        box = page.get_by_label(field, exact=field.endswith(("colour", ")"))).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (field, box)
    _no_sideways_scroll(page)
    _shot(page, "46-phone-brand-kit-form")
    context.close()
