"""A story form's sound and samples in a real browser (headless Chromium, Playwright) against a real
`reelfarm serve` on the embedded default:

- the fields still holding the story's sample values are marked "sample — change it" and listed
  above the Create button, and both follow what is typed; the video made with some left as they
  are carries a ``sample_value`` warning for each (the API's version lint), and its page's fields
  form marks them;
- the soundtrack offers its fit, "Loop it to the end (the default)" chosen; Play preview plays a
  draft that has the sound (its segments decode with an audio stream that is not silent) in a
  player that is not muted by force; a 6 s sound played once under a 14 s video is saved as
  ``fit: once`` with the linter's ``sound_ends_early`` warning, and looped (the default) without one.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_console_browser import _set_password, _shot, console_serve
from tests.helpers import WORK_CEILING_MS, write_tone

DESKTOP = {"width": 1280, "height": 900}
PLAYING = "() => { const v = document.querySelector('#draft-video'); return v && v.currentTime > 1.5; }"


@pytest.fixture(scope="module")
def served(tmp_path_factory, browser):
    """(base URL, the API's client, a signed-in page) on a `reelfarm serve` of its own."""
    with console_serve(tmp_path_factory.mktemp("sound-samples") / "data") as (base, dev_key, _email, link):
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        _set_password(page, link)
        api = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {dev_key}"}, timeout=60)
        yield base, api, page
        context.close()


def _summary(page: Page) -> list[str]:
    return [t.strip() for t in page.locator("[data-sample-list] a").all_text_contents()]


def test_sample_values_are_marked_until_changed_and_warned_about_once_saved(served) -> None:
    base, api, page = served
    page.goto(f"{base}/app/videos/new/webinar?format=16:9")
    speaker = page.locator('[data-field="f.speaker"]')
    expect(speaker.locator(".sample-flag")).to_have_text("sample — change it")
    expect(page.get_by_label("Speaker", exact=True)).to_have_value("Maya Okafor")
    listed = _summary(page)
    assert listed[:3] == ["Eyebrow", "Title", "Host label"] and "Speaker" in listed, listed
    assert "Theme" not in listed and "Photo" not in listed  # settings and images are no samples
    expect(page.get_by_label("Speaker", exact=True)).to_have_attribute("aria-describedby", re.compile("fld-speaker-sample"))

    page.get_by_label("Speaker", exact=True).fill("Ada Moreau")
    page.get_by_label("Title", exact=True).fill("Pricing, plainly")
    expect(speaker.locator(".sample-flag")).to_be_hidden()
    assert "Speaker" not in _summary(page) and "Title" not in _summary(page)
    page.get_by_label("Speaker", exact=True).fill("Maya Okafor")  # typed back: marked again
    expect(speaker.locator(".sample-flag")).to_be_visible()
    page.get_by_label("Speaker", exact=True).fill("Ada Moreau")
    expect(page.locator("#sample-summary")).to_be_visible()
    _shot(page, "95-story-samples")

    page.get_by_label("Duration in seconds").fill("6")
    page.get_by_role("button", name="Create video").click()
    expect(page).to_have_url(re.compile(r"/app/videos/[0-9a-f-]{36}$"), timeout=WORK_CEILING_MS)
    video = api.get(f"/videos/{page.url.rsplit('/', 1)[1]}").json()
    warned = [w["field"] for w in video["current_version"]["lint"] if w["code"] == "sample_value"]
    assert "/fields/speaker_role" in warned and "/fields/speaker" not in warned and "/fields/title" not in warned
    # the video's own fields form marks what still holds a sample
    expect(page.locator('[data-field="f.speaker_role"] .sample-flag')).to_be_visible()
    expect(page.locator('[data-field="f.speaker"] .sample-flag')).to_be_hidden()
    # and the render buttons say so before a render goes out with them
    left = page.locator("#renders #samples-left")
    expect(left).to_contain_text("still hold the story's sample text")
    expect(left).to_contain_text("Speaker role")
    expect(left).not_to_contain_text("Speaker still")
    assert left.locator("li").count() == len(warned)
    _shot(page, "96-video-samples")


def _segment_sound(stream_url: str) -> float:
    """The RMS of the first segment's sound, read from the draft's playlist as a player reads it."""
    playlist = httpx.get(stream_url, timeout=30).text
    first = next(line for line in playlist.splitlines() if line and not line.startswith("#"))
    data = httpx.get(httpx.URL(stream_url).join(first), timeout=30).content
    with av.open(io.BytesIO(data)) as container:
        assert container.streams.audio, "the draft's segment has no audio stream"
        pcm = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(audio=0)])
    return float(np.sqrt(np.mean(np.square(pcm))))


def test_the_soundtrack_fits_the_video_and_play_preview_has_its_sound(served, tmp_path: Path) -> None:
    base, api, page = served
    wav = write_tone(tmp_path / "six.wav", 6.0).read_bytes()
    sound = api.post("/assets", files={"file": ("six.wav", wav, "audio/wav")})
    assert sound.status_code == 201, sound.text
    sound_id = sound.json()["id"]

    page.goto(f"{base}/app/videos/new/announcement?format=16:9")
    expect(page.get_by_label("Loop it to the end (the default)")).to_be_checked()
    expect(page.locator("#soundtrack-fit-help")).to_contain_text("fades out over the video's last second")
    page.get_by_label("Sound", exact=True).select_option(sound_id)
    page.get_by_label("Duration in seconds").fill("14")
    page.get_by_label("Headline", exact=True).fill("Our studio, with music")
    expect(page.locator("#draft-video")).not_to_have_attribute("muted", "")

    with page.expect_response(lambda r: ".m3u8" in r.url, timeout=WORK_CEILING_MS) as played:
        page.get_by_role("button", name="Play preview").click()
    page.wait_for_function(PLAYING, timeout=WORK_CEILING_MS)
    state = page.locator("#draft-state").text_content() or ""
    assert state.startswith("Playing the preview"), state
    muted = page.evaluate("() => document.querySelector('#draft-video').muted")
    assert muted is ("muted by the browser" in state), (muted, state)  # muted only where the browser says so
    assert _segment_sound(played.value.url) > 0.2  # the tone, at full level from the start
    _shot(page, "97-soundtrack-fit")

    page.get_by_label("Play it once, then silence").check()
    page.get_by_role("button", name="Create video").click()
    expect(page).to_have_url(re.compile(r"/app/videos/[0-9a-f-]{36}$"), timeout=WORK_CEILING_MS)
    version = api.get(f"/videos/{page.url.rsplit('/', 1)[1]}").json()["current_version"]
    assert version["doc"]["audio"][0]["fit"] == "once"
    [early] = [w for w in version["lint"] if w["code"] == "sound_ends_early"]
    assert early["message"].startswith("the sound ends at 6.0 s, 8.0 s before the video")
    # the video's own fields form shows the fit it has, keeps it through a save, and changes it
    video_url = page.url
    expect(page.get_by_label("Play it once, then silence")).to_be_checked()
    page.get_by_label("Headline", exact=True).fill("Our studio, with music, again")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 2")
    kept = api.get(f"/videos/{video_url.rsplit('/', 1)[1]}").json()["current_version"]
    assert kept["doc"]["audio"][0]["fit"] == "once"
    page.get_by_label("Loop it to the end (the default)").check()
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".flash-ok")).to_contain_text("Saved as version 3")
    changed = api.get(f"/videos/{video_url.rsplit('/', 1)[1]}").json()["current_version"]
    assert changed["doc"]["audio"][0]["fit"] == "loop"

    page.goto(f"{base}/app/videos/new/announcement?format=16:9")
    page.get_by_label("Sound", exact=True).select_option(sound_id)
    page.get_by_label("Duration in seconds").fill("14")
    page.get_by_role("button", name="Create video").click()
    expect(page).to_have_url(re.compile(r"/app/videos/[0-9a-f-]{36}$"), timeout=WORK_CEILING_MS)
    looped = api.get(f"/videos/{page.url.rsplit('/', 1)[1]}").json()["current_version"]
    assert looped["doc"]["audio"][0]["fit"] == "loop"
    assert not [w for w in looped["lint"] if w["code"] == "sound_ends_early"]
