"""The Python SDK against a real ``reelfarm serve``: a story video rendered, downloaded and decoded;
a brief video waited for; answers lost on the way back retried under one Idempotency-Key, making
one video, one render and one charge; the media library: an upload streamed with its progress,
listed, fetched from an address, kept while a version names it, deleted.

``Served`` (one server, a second workspace and admin commands) and ``image_site`` (a loopback server
of a PNG) are shared by the CLI and MCP tests. The servers these tests start may fetch from loopback
(``REELFARM_FETCH_ALLOW_PRIVATE=1``), as adding an asset from an address must reach ``image_site``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import av
import httpx
import pytest
from PIL import Image

from reelfarm.client import AssetInUseError, Client, Retry, ValidationError
from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key
from tests.helpers import WORK_CEILING_SEC
from tests.integration.api.test_api_storage_keys import with_image

ROOT = Path(__file__).resolve().parents[2]


class Served:
    """A ``reelfarm serve`` on a fresh data dir, its dev key, and its admin commands."""

    def __init__(self, root: Path, **env: str) -> None:
        self.root, self.port = root, free_port()
        self.env = {"REELFARM_DATA_DIR": str(root / "data"), **env}
        self.base = f"http://127.0.0.1:{self.port}"
        self.process, self.lines = start_server(root / "data", self.port, **env)
        self.key, _ = wait_for_key(self.lines)
        wait_for_health(self.base)

    def admin(self, *args: str) -> Any:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        env.update(self.env, REELFARM_PUBLIC_URL=self.base)
        done = subprocess.run([sys.executable, "-m", "reelfarm", "admin", *args, "--json"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def workspace_key(self, name: str, plan: str = "pro", credits: int = 50) -> tuple[str, str, str]:
        """A new workspace and key: (workspace id, key id, key)."""
        ws = self.admin("create-workspace", name, "--plan", plan, "--credits", str(credits))
        key = self.admin("create-key", ws["id"], "--name", f"{name}-key")
        return ws["id"], key["id"], key["key"]

    def client(self, key: str | None = None, **kwargs: Any) -> Client:
        return Client(api_key=key or self.key, base_url=self.base, **kwargs)

    def close(self) -> None:
        stop(self.process)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    made = Served(tmp_path_factory.mktemp("sdk"), REELFARM_FETCH_ALLOW_PRIVATE="1")
    yield made
    made.close()


def png_bytes(size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (200, 30, 90)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


@contextlib.contextmanager
def image_site(body: bytes) -> Iterator[str]:
    """A loopback HTTP server answering ``/photo.png`` with ``body`` (404 elsewhere); its root URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            found = self.path == "/photo.png"
            answer = body if found else b"not found"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "image/png" if found else "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def frames_of(path: Path) -> tuple[int, int, int]:
    """(width, height, decoded frames) of an MP4."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return stream.codec_context.width, stream.codec_context.height, sum(1 for _ in container.decode(video=0))


def test_a_story_video_is_rendered_downloaded_and_decodes(served: Served, tmp_path: Path) -> None:
    with served.client() as rf:
        story = rf.stories.get("quote")
        assert story.fields["properties"]["quote"]["type"] == "string"
        credits = rf.me().credits
        video = rf.videos.create(story_id="quote", fields={"quote": "Ship it, then polish"}, format="9:16",
                                 duration_sec=6)
        assert (video.status, video.default_format, video.current_version.number) == ("ready", "9:16", 1)
        seen: list[float] = []
        render = rf.render_video(video.id, resolution=720, on_progress=lambda r: seen.append(r.progress))
        assert render.status == "succeeded" and render.format == "9:16" and render.url
        assert seen[-1] == 1.0 and seen == sorted(seen)
        got: list[tuple[int, int | None]] = []
        path = rf.renders.download(render, tmp_path / "quote.mp4", on_progress=lambda n, total: got.append((n, total)))
        assert got[-1] == (path.stat().st_size, path.stat().st_size) == (render.bytes, render.bytes)
        assert frames_of(path) == (720, 1280, 6 * 30)
        assert rf.me().credits == credits - 1
        assert next(v.id for v in rf.videos.list(page_size=1)) == video.id


def test_a_brief_video_is_waited_for(served: Served) -> None:
    with served.client() as rf:
        video = rf.videos.create(brief="Our spring sale: every plan 20% off until Friday", duration_sec=8)
        assert video.status == "generating" and video.job is not None
        states: list[str] = []
        ready = rf.videos.wait(video.id, timeout=WORK_CEILING_SEC, on_progress=lambda v: states.append(v.status))
        assert ready.status == "ready" and ready.current_version.source == "generate"
        job = rf.jobs.wait(video.job.id, timeout=5)
        assert job.status == "succeeded" and job.result["video_id"] == video.id
        assert states[-1] == "ready"


def test_api_errors_carry_the_envelope(served: Served) -> None:
    from reelfarm.client import APIError

    with served.client() as rf, pytest.raises(APIError) as caught:
        rf.videos.create(story_id="quote", fields={"nope": 1})
    error = caught.value
    assert (error.status, error.code) == (400, "validation_failed")
    assert error.request_id.startswith("req_") and any(d["field"] == "/fields/nope" for d in error.details)


def test_errors_are_typed_by_status_and_say_why(served: Served, tmp_path: Path) -> None:
    from reelfarm.client import (
        APIConnectionError,
        APIError,
        AuthenticationError,
        NotFoundError,
        ValidationError,
    )

    with served.client() as rf:
        with pytest.raises(ValidationError) as invalid:
            rf.videos.create(story_id="quote", fields={"nope": 1})
        assert "/fields/nope" in str(invalid.value), str(invalid.value)  # the reason, not "see details"
        with pytest.raises(NotFoundError):
            rf.stories.get("no_such_story")
        with pytest.raises(NotFoundError) as missing:
            rf.videos.get("00000000-0000-4000-8000-000000000000")
        assert isinstance(missing.value, APIError) and missing.value.status == 404
        unreachable = f"http://127.0.0.1:{free_port()}/files/renders/x/video.mp4?expires=1&sig=secret"
        with pytest.raises(APIConnectionError) as refused:
            rf.download(unreachable, tmp_path / "x.mp4")
        assert "127.0.0.1" in str(refused.value) and "sig=" not in str(refused.value)
        assert not (tmp_path / "x.mp4.part").exists()
    with served.client("rf_live_" + "x" * 38) as stranger, pytest.raises(AuthenticationError):
        stranger.me()


class LosingTransport(httpx.HTTPTransport):
    """The network losing answers: the first POST to a path reaches the server, its answer never arrives."""

    def __init__(self, lose: set[str]) -> None:
        super().__init__()
        self.lose, self.sent = set(lose), []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.sent.append((request.method, request.url.path, request.headers.get("Idempotency-Key"), response))
        if request.method == "POST" and request.url.path in self.lose:
            self.lose.discard(request.url.path)
            response.read()
            response.close()
            raise httpx.ReadError("connection reset before the answer arrived", request=request)
        return response


def test_a_lost_answer_is_retried_once_under_one_key_one_video_one_render_one_charge(served: Served) -> None:
    _, _, key = served.workspace_key("idempotent", credits=10)
    transport = LosingTransport({"/api/v1/videos"})
    http = httpx.Client(base_url=served.base, transport=transport, timeout=30,
                        headers={"Authorization": f"Bearer {key}"})
    with served.client(key, http=http, retry=Retry(backoff=0.1)) as rf:
        video = rf.videos.create(story_id="quote", fields={"quote": "Once"}, duration_sec=6)
        transport.lose.add(f"/api/v1/videos/{video.id}/renders")
        render = rf.render_video(video.id, format="1:1", resolution=720)
        assert render.status == "succeeded"
        assert [v.id for v in rf.videos.list()] == [video.id]
        assert [r.id for r in rf.videos.renders(video.id)] == [render.id]
        assert rf.me().credits == 9
    posts = [(path, idem, response) for method, path, idem, response in transport.sent if method == "POST"]
    for path in ("/api/v1/videos", f"/api/v1/videos/{video.id}/renders"):
        tries = [(idem, response) for p, idem, response in posts if p == path]
        assert len(tries) == 2 and tries[0][0] == tries[1][0] and tries[0][0]
        assert tries[1][1].headers.get("Idempotent-Replayed") == "true"


def test_a_callers_own_idempotency_key_makes_one_video(served: Served) -> None:
    _, _, key = served.workspace_key("own-key", credits=5)
    with served.client(key) as rf:
        first = rf.videos.create(story_id="quote", fields={"quote": "Once only"}, idempotency_key="order-1234")
        again = rf.videos.create(story_id="quote", fields={"quote": "Once only"}, idempotency_key="order-1234")
        other = rf.videos.create(story_id="quote", fields={"quote": "Once only"})
        assert first.id == again.id != other.id
        assert sorted(v.id for v in rf.videos.list()) == sorted([first.id, other.id])


def test_a_translated_copy_is_waited_for_until_it_is_translated(served: Served) -> None:
    with served.client() as rf:
        video = rf.videos.create(story_id="quote", fields={"quote": "Join our team in Berlin"}, duration_sec=6)
        variants = rf.videos.variants(video.id, ["1:1"], locales=["es"], resolution=720)
        [copy] = variants.translations
        assert (copy.status, copy.current_version, copy.job is not None) == ("draft", None, True)
        stages: list[str | None] = []
        ready = rf.videos.wait(copy.id, timeout=WORK_CEILING_SEC, on_progress=lambda v: stages.append(v.job and v.job.stage))
        assert ready.status == "ready" and ready.locale == "es" and ready.source_video_id == video.id
        assert ready.current_version is not None and ready.current_version.source == "translate"
        assert rf.videos.version(copy.id, ready.current_version.number).doc["locale"] == "es"
        assert stages[-1] is None and len(stages) >= 1


def test_a_key_reused_for_another_request_is_a_typed_error(served: Served) -> None:
    from reelfarm.client import APIStatusError, IdempotencyMismatchError

    with served.client() as rf:
        rf.videos.create(story_id="quote", fields={"quote": "One request"}, idempotency_key="reused-1")
        with pytest.raises(IdempotencyMismatchError) as reused:
            rf.videos.create(story_id="quote", fields={"quote": "Another request"}, idempotency_key="reused-1")
    assert isinstance(reused.value, APIStatusError)
    assert (reused.value.status, reused.value.code) == (422, "idempotency_key_mismatch")
    assert reused.value.request_id.startswith("req_")


def test_the_media_library_uploads_lists_fetches_and_deletes(served: Served, tmp_path: Path) -> None:
    _, _, key = served.workspace_key("library")
    path = tmp_path / "photo.png"
    path.write_bytes(png_bytes((300, 200)))
    size = path.stat().st_size
    with served.client(key) as rf:
        told: list[tuple[int, int | None]] = []
        image = rf.assets.upload(path, on_progress=lambda sent, total: told.append((sent, total)))
        assert (image.kind, image.content_type, image.width, image.height, image.bytes) == ("image", "image/png", 300,
                                                                                            200, size)
        assert told[0] == (0, size) and told[-1] == (size, size)
        assert rf.fetch_bytes(image.url) == path.read_bytes()
        with path.open("rb") as handle:
            assert rf.assets.upload(handle).id == image.id  # the same bytes: the one asset
        with image_site(png_bytes(colour=(0, 90, 200))) as site:
            fetched = rf.assets.from_url(f"{site}/photo.png")
            with pytest.raises(ValidationError) as missing:
                rf.assets.from_url(f"{site}/gone.png")
        assert (fetched.width, fetched.height) == (64, 48) and fetched.id != image.id
        assert missing.value.details[0]["field"] == "/url" and missing.value.details[0]["code"] == "unreachable"
        assert [a.id for a in rf.assets.list(kind="image", page_size=1)] == [fetched.id, image.id]
        assert list(rf.assets.list(kind="audio")) == []
        video = rf.videos.create(story_id="quote", fields={"quote": "With a picture"}, format="1:1", duration_sec=6)
        doc = with_image(video.current_version.doc, key=image.key)
        rf.videos.update(video.id, doc=doc)
        with pytest.raises(AssetInUseError) as in_use:
            rf.assets.delete(image.id)
        assert video.id in in_use.value.message
        assert rf.assets.delete(fetched.id) is None
        assert [a.id for a in rf.assets.list()] == [image.id]
