"""Images and audio given by http(s) URL: imported once per render, before any chunk, through the
SSRF guard; renders and stills draw them; what the user must fix fails the render with a refund.

The assets are served by a real HTTP server on loopback that counts what it is asked for.
"""

from __future__ import annotations

import io
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image
from sqlalchemy import select

from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.assets import BRAND_LOGO, remote_assets
from reelfarm.farm.services.progress import RedisProgress
from reelfarm.shared.db import make_engine
from reelfarm.shared.storage_keys import imported_key, render_prefix
from reelfarm.shared.tables import queued_tasks
from reelfarm.studio.fetch import SafeFetcher
from tests.helpers import write_tone
from tests.integration.farm.conftest import Farm, build_farm, make_doc, studio_for_tests, work_burst
from tests.integration.farm.test_render_embedded import assert_video, local_file, wait_for

MAGENTA = (255, 0, 255)


@dataclass
class AssetServer:
    """Routes ``path -> [(status, content type, body), ...]``: answered in turn, the last one repeated."""

    base: str
    routes: dict[str, list[tuple[int, str, bytes]]]
    hits: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


def _png(color: tuple[int, int, int], size: int = 64) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), color).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AssetServer]:
    tone = write_tone(tmp_path / "tone.wav", 3.0).read_bytes()
    routes: dict[str, list[tuple[int, str, bytes]]] = {
        "/photo.png": [(200, "image/png", _png(MAGENTA))],
        "/tone.wav": [(200, "audio/wav", tone)],
        "/page.html": [(200, "text/html", b"<html><body>not an image</body></html>")],
        "/fake.png": [(200, "image/png", b"these bytes are not a PNG")],
        "/flaky.png": [(503, "text/plain", b"busy"), (200, "image/png", _png(MAGENTA))],
    }
    state = AssetServer("", routes)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with lock:
                state.hits[self.path] += 1
                answers = routes.get(self.path, [(404, "text/plain", b"not found")])
                status, content_type, body = answers[min(state.hits[self.path], len(answers)) - 1]
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def remote_doc(image_url: str, audio_url: str | None = None) -> dict[str, Any]:
    """The shared test document with a picture (top right of the first scene) given by URL."""
    doc = make_doc(6)
    doc["assets"] = {"photo": {"type": "image", "url": image_url}}
    doc["scenes"][0]["layers"].append({"id": "pic", "type": "image", "asset": "photo", "x": 0.8, "y": 0.3,
                                       "w": 0.2, "h": 0.3, "fit": "cover"})
    if audio_url:
        doc["assets"]["music"] = {"type": "audio", "url": audio_url}
        doc["audio"] = [{"asset": "music", "start": 1.0, "volume": 0.8}]
    return doc


def picture_color(frame: np.ndarray) -> tuple[int, int, int]:
    """The mean colour of a small patch at the picture's centre (x 0.8, y 0.3)."""
    h, w = frame.shape[:2]
    y, x = int(0.3 * h), int(0.8 * w)
    patch = frame[y - 3:y + 4, x - 3:x + 4].reshape(-1, 3).mean(axis=0)
    return (int(patch[0]), int(patch[1]), int(patch[2]))


def first_frame(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


def is_magenta(color: tuple[int, int, int]) -> bool:
    return all(abs(c - m) <= 40 for c, m in zip(color, MAGENTA))


def finish(farm: Farm, workspace: str, render_id: str) -> dict[str, Any]:
    return wait_for(lambda: (r := farm.renders.get(workspace, render_id))["status"] in ("succeeded", "failed") and r)


def test_remote_assets_are_found_in_a_raw_document() -> None:
    doc = {"assets": {"a": {"type": "image", "url": "https://cdn.example/a.png"},
                      "b": {"type": "image", "key": "assets/b.png", "url": "https://cdn.example/b.png"},
                      "c": {"type": "image", "url": "file:///etc/passwd"},
                      "d": {"type": "audio", "url": "HTTP://cdn.example/d.mp3"}},
           "brand": {"logo": {"url": "https://cdn.example/logo.svg"}}}
    assert remote_assets(doc) == {"a": ("image", "https://cdn.example/a.png"),
                                  "d": ("audio", "HTTP://cdn.example/d.mp3"),
                                  BRAND_LOGO: ("image", "https://cdn.example/logo.svg")}
    assert remote_assets({"brand": {"logo": {"url": "https://x/l.png", "key": "brand-kits/k/logo.png"}}}) == {}
    assert imported_key("renders/r", "photo") != imported_key("renders/r", BRAND_LOGO)
    assert imported_key("renders/r", BRAND_LOGO).startswith("renders/r/assets/")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_picture_and_music_at_urls_render_fetched_once(embedded: Farm, server: AssetServer) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, remote_doc(server.url("/photo.png"), server.url("/tone.wav")))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finish(embedded, workspace, render["id"])

    assert done["status"] == "succeeded", done["error"]
    mp4 = local_file(embedded.storage, done["url"])
    assert_video(mp4, 320, 180, 30, 180, audio=True)
    assert is_magenta(picture_color(first_frame(mp4)))
    poster = np.asarray(Image.open(local_file(embedded.storage, done["poster_url"])).convert("RGB"))
    assert poster.shape[:2] == (180, 320)
    # four chunks and a stitch drew them, yet each was fetched once, by the import task
    assert server.hits == Counter({"/photo.png": 1, "/tone.wav": 1})
    with embedded.engine.connect() as conn:
        tasks = dict(conn.execute(select(queued_tasks.c.id, queued_tasks.c.status)).all())
    assert tasks[f"render-{render['id']}-assets"] == "succeeded"
    # assets, four chunks (scene one's first second, the rest of it, the crossfade, the rest of scene two), stitch
    assert len(tasks) == 6
    for asset_id in ("photo", "music"):  # the imported copies went with the segments
        assert not embedded.storage.exists(imported_key(render_prefix(render["id"]), asset_id))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_stills_draw_a_picture_at_a_url(embedded: Farm, server: AssetServer) -> None:
    workspace = embedded.workspace()
    video = embedded.video(workspace, remote_doc(server.url("/photo.png")))
    job = embedded.jobs.request_stills(workspace, video, [1.0], "16:9", resolution=180)
    embedded.queue.start()  # type: ignore[attr-defined]
    done = wait_for(lambda: (j := embedded.jobs.get(workspace, job["id"]))["status"] in ("succeeded", "failed") and j)

    assert done["status"] == "succeeded", done["error"]
    still = np.asarray(Image.open(local_file(embedded.storage, done["result"]["stills"][0]["url"])).convert("RGB"))
    assert is_magenta(picture_color(still))
    assert server.hits["/photo.png"] == 1
    assert not embedded.storage.exists(imported_key(f"jobs/{job['id']}", "photo"))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("path", "message"), [
    ("/missing.png", "answered 404"),
    ("/page.html", "content type 'text/html'"),
    ("/fake.png", "did not send a PNG, JPEG, WebP, GIF, BMP or SVG image"),
])
def test_an_asset_the_user_must_fix_fails_the_render_at_once_with_a_refund(
        embedded: Farm, server: AssetServer, path: str, message: str) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, remote_doc(server.url(path)))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    assert embedded.balance(workspace) == 4
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finish(embedded, workspace, render["id"])

    assert done["status"] == "failed"
    assert "asset 'photo'" in done["error"] and message in done["error"], done["error"]
    assert "fix or replace the asset" in done["error"] and "refunded" in done["error"]
    assert server.hits[path] == 1  # no retries: fetching again cannot help
    assert embedded.balance(workspace) == 5


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_body_over_the_fetch_cap_fails_at_once(make_embedded: Any, server: AssetServer) -> None:
    farm = make_embedded()
    studio = studio_for_tests()
    studio.asset_fetcher = SafeFetcher(allow_private=True, max_bytes=100)  # the PNG is larger
    capped = build_farm(farm.engine, farm.storage, farm.clock, farm.progress, farm.queue, studio=studio)
    workspace = capped.workspace()
    video = capped.video(workspace, remote_doc(server.url("/photo.png")))
    render = capped.renders.request(workspace, video, "16:9", resolution=180)
    capped.queue.start()  # type: ignore[attr-defined]
    done = finish(capped, workspace, render["id"])

    assert done["status"] == "failed"
    assert "asset 'photo' could not be fetched" in done["error"] and "more than the 100 allowed" in done["error"], done["error"]
    assert server.hits["/photo.png"] == 1  # no retries: fetching again cannot help


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_server_error_is_retried(embedded: Farm, server: AssetServer) -> None:
    workspace = embedded.workspace()
    video = embedded.video(workspace, remote_doc(server.url("/flaky.png")))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    embedded.queue.start()  # type: ignore[attr-defined]
    done = finish(embedded, workspace, render["id"])

    assert done["status"] == "succeeded", done["error"]
    assert server.hits["/flaky.png"] == 2
    assert is_magenta(picture_color(first_frame(local_file(embedded.storage, done["url"]))))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_private_addresses_are_refused_without_a_request(make_embedded: Any, server: AssetServer) -> None:
    farm = make_embedded()
    guarded = build_farm(farm.engine, farm.storage, farm.clock, farm.progress, farm.queue,
                         studio=studio_for_tests(REELFARM_FETCH_ALLOW_PRIVATE="0"))
    workspace = guarded.workspace()
    video = guarded.video(workspace, remote_doc(server.url("/photo.png")))
    render = guarded.renders.request(workspace, video, "16:9", resolution=180)
    guarded.queue.start()  # type: ignore[attr-defined]
    done = finish(guarded, workspace, render["id"])

    assert done["status"] == "failed"
    assert "asset 'photo'" in done["error"] and "127.0.0.1" in done["error"], done["error"]
    assert server.hits == Counter()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_rq_imports_on_the_jobs_queue_before_the_chunks(db_url: str, storage: Any, clock: Any, redis: Any,
                                                        namespace: str, server: AssetServer) -> None:
    engine = make_engine(db_url)
    try:
        queue = RQQueue(redis, namespace=namespace, retry_intervals=(0,))
        farm = build_farm(engine, storage, clock, RedisProgress(redis, prefix=f"reelfarm:{namespace}progress:"), queue)
        workspace = farm.workspace()
        video = farm.video(workspace, remote_doc(server.url("/photo.png")))
        render = farm.renders.request(workspace, video, "1:1", resolution=180)
        work_burst(redis, namespace, ("render",))  # a render-only node: the chunks wait for the import
        assert farm.renders.get(workspace, render["id"])["status"] == "queued"
        assert server.hits == Counter()
        work_burst(redis, namespace, ("jobs", "render"))
        done = farm.renders.get(workspace, render["id"])
        assert done["status"] == "succeeded", done["error"]
        assert is_magenta(picture_color(first_frame(local_file(storage, done["url"]))))
        assert server.hits["/photo.png"] == 1
    finally:
        engine.dispose()
