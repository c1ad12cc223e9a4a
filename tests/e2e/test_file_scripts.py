"""An SVG with script, opened by its link in a real browser (Debian's headless Chromium, driven by
Playwright) against a real `reelfarm serve`, runs nothing on the service's origin, by either of two
layers, each tested alone:

- the headers: a file written straight to storage, unsanitised, is served under ``/files/`` with a
  Content-Security-Policy (a sandbox, no script) and ``nosniff``: it draws and its script does not
  run; a video still plays in a tab of its own;
- the sanitiser: an uploaded SVG is stored without its script, so its bytes opened where no such
  header guards them (as a copy elsewhere would be) run nothing either, and still draw.

Each test first opens the scripted SVG with no header to guard it and sees its script run (the
title changes, an alert opens), so what it sees afterwards is the layer's doing.
"""
from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, Route

from reelfarm.shared.config import Settings
from reelfarm.shared.storage import make_storage
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key

SCRIPTED = (b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60" onload="alert(\'onload\')">'
            b"<title>drawing</title><script>document.title = 'ran'; alert('script')</script>"
            b'<rect width="120" height="60" fill="#0000ff"/></svg>')
ELSEWHERE = "http://copies.invalid"  # an origin Playwright answers itself: no header of ours there


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A `reelfarm serve` on local files: (base URL, the dev workspace's API key, its data dir)."""
    data_dir = tmp_path_factory.mktemp("files-e2e") / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(data_dir, port)
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(base)
        yield base, key, data_dir
    finally:
        stop(process)


def _open(browser: Browser, url: str, copies: dict[str, tuple[str, bytes]] | None = None) -> tuple[str, list[str], Page]:
    """Open ``url`` in a fresh context: (its title, the dialogs it opened, the page); ``copies``
    are ``ELSEWHERE`` paths answered with (type, bytes) and no other header."""
    context = browser.new_context(viewport={"width": 400, "height": 300})
    for path, (content_type, body) in (copies or {}).items():
        context.route(f"{ELSEWHERE}{path}", _answer(content_type, body))
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # a script would have run by now
    return page.title(), dialogs, page


def _answer(content_type: str, body: bytes) -> Callable[[Route], None]:
    return lambda route: route.fulfill(status=200, content_type=content_type, body=body)


def _drawn(page: Page) -> tuple[int, int, int]:
    """The colour shown in the middle of the drawing."""
    shot = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB"))
    return tuple(int(c) for c in shot[30, 60])  # type: ignore[return-value]


def _scripts_run_unguarded(browser: Browser) -> None:
    title, dialogs, page = _open(browser, f"{ELSEWHERE}/raw.svg", {"/raw.svg": ("image/svg+xml", SCRIPTED)})
    assert title == "ran" and set(dialogs) == {"script", "onload"}, (title, dialogs)
    page.context.close()


def _mp4() -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for i in range(25):
            frame = av.VideoFrame.from_ndarray(np.full((64, 64, 3), i * 8, np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def test_the_headers_keep_an_unsanitised_file_from_running(browser: Browser, served) -> None:
    base, _, data_dir = served
    _scripts_run_unguarded(browser)
    storage = make_storage(Settings.from_env({"REELFARM_DATA_DIR": str(data_dir), "REELFARM_PUBLIC_URL": base}))
    folder = f"assets/{uuid.uuid4()}"
    storage.put_bytes(f"{folder}/raw.svg", SCRIPTED, "image/svg+xml")  # no upload's checks: as stored before them

    title, dialogs, page = _open(browser, storage.url(f"{folder}/raw.svg", 600))
    assert (title, dialogs) == ("drawing", [])
    assert _drawn(page) == (0, 0, 255)  # still shown
    page.context.close()

    storage.put_bytes(f"{folder}/video.mp4", _mp4(), "video/mp4")
    _, dialogs, page = _open(browser, storage.url(f"{folder}/video.mp4", 600))
    page.wait_for_function("() => document.querySelector('video') && document.querySelector('video').readyState >= 1")
    assert page.evaluate("() => document.querySelector('video').videoWidth") == 64  # the player page loads it
    page.context.close()


def test_the_sanitiser_keeps_an_uploaded_file_from_running_anywhere(browser: Browser, served) -> None:
    base, key, _ = served
    _scripts_run_unguarded(browser)
    made = httpx.post(f"{base}/api/v1/assets", files={"file": ("drawing.svg", SCRIPTED, "image/svg+xml")},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert made.status_code == 201, made.text
    asset = made.json()
    stored = httpx.get(asset["url"], timeout=30).content

    # its bytes, opened where no header of ours guards them
    title, dialogs, page = _open(browser, f"{ELSEWHERE}/copy.svg", {"/copy.svg": ("image/svg+xml", stored)})
    assert (title, dialogs) == ("drawing", [])
    assert _drawn(page) == (0, 0, 255)
    page.context.close()

    # and its own link; and as an <img> on a page of the service's origin, as the console shows it, it draws
    title, dialogs, page = _open(browser, asset["url"])
    assert (title, dialogs) == ("drawing", [])
    page.context.close()
    _, dialogs, page = _open(browser, f"{base}/healthz")
    size = page.evaluate("""url => new Promise(done => { const img = new Image();
        img.onload = () => done([img.naturalWidth, img.naturalHeight]); img.onerror = () => done(null);
        img.src = url; })""", asset["url"])
    assert size == [120, 60] and dialogs == []
    page.context.close()
