"""Whole renders on the embedded queue: SQLite, a process pool, local storage, real pixels."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import av
import pytest
from PIL import Image
from sqlalchemy import select

from reelfarm.shared.storage import LocalStorage
from reelfarm.shared.tables import event_outbox, queued_tasks
from tests.helpers import WORK_CEILING_SEC
from tests.integration.farm.conftest import Farm, make_doc, with_audio


def wait_for(check: Callable[[], Any], timeout: float = WORK_CEILING_SEC, interval: float = 0.05) -> Any:
    """``check()``'s first truthy answer; ``timeout`` is a bound the product promises, or by default the
    ceiling of a wait on background work (``tests.helpers.WORK_CEILING_SEC``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s")


def local_file(storage: LocalStorage, url: str) -> Path:
    """The file a signed URL points at, after checking its signature as the /files/ route does."""
    parts = urlsplit(url)
    key = parts.path.removeprefix("/files/")
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert storage.verify(key, query["expires"], query["sig"])
    return storage.path(key)


def assert_video(path: Path, width: int, height: int, fps: int, frames: int, audio: bool) -> None:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (width, height)
        assert stream.average_rate == fps
        decoded = sum(1 for _ in container.decode(stream))
        assert decoded == frames
        assert bool(container.streams.audio) is audio


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_whole_render_with_audio_on_the_embedded_queue(embedded: Farm, tmp_path: Path) -> None:
    workspace = embedded.workspace(credits=5)
    video = embedded.video(workspace, with_audio(make_doc(6), embedded, workspace, tmp_path))
    render = embedded.renders.request(workspace, video, "16:9", resolution=180)
    assert render["status"] == "queued" and render["progress"] == 0 and render["url"] is None
    assert render["fps"] == 30 and render["resolution"] == 180 and render["duration_sec"] is None
    assert embedded.balance(workspace) == 4

    embedded.queue.start()  # type: ignore[attr-defined]
    seen: list[float] = []

    def finished() -> dict[str, Any] | None:
        current = embedded.renders.get(workspace, render["id"])
        seen.append(current["progress"])
        return current if current["status"] in ("succeeded", "failed") else None
    done = wait_for(finished)

    assert done["status"] == "succeeded", done["error"]
    assert done["progress"] == 1.0 and done["error"] is None
    assert done["duration_sec"] == pytest.approx(6.0) and done["bytes"] > 0 and done["finished_at"] is not None
    assert seen == sorted(seen), "progress went backwards"
    mp4 = local_file(embedded.storage, done["url"])
    assert mp4.stat().st_size == done["bytes"]
    assert_video(mp4, 320, 180, 30, 180, audio=True)
    assert Image.open(local_file(embedded.storage, done["poster_url"])).size == (320, 180)
    assert not embedded.storage.exists(f"renders/{render['id']}/seg0.mp4")  # segments cleaned up
    with embedded.engine.connect() as conn:
        events = conn.execute(select(event_outbox).where(event_outbox.c.workspace_id == workspace)).all()

    def tasks_settled() -> list[Any] | None:  # the stitch's row is marked once the task has returned
        with embedded.engine.connect() as conn:
            rows = conn.execute(select(queued_tasks.c.id, queued_tasks.c.status)).all()
        return rows if all(status != "running" for _, status in rows) else None
    tasks = wait_for(tasks_settled)
    assert [e.type for e in events] == ["render.completed"]
    assert events[0].payload["render"]["id"] == render["id"]
    assert events[0].payload["render"]["status"] == "succeeded"
    assert events[0].payload["render"]["url"].startswith("http://127.0.0.1:8000/files/renders/")
    assert sorted(tasks) == sorted([(f"render-{render['id']}-chunk-0", "succeeded"),
                                    (f"render-{render['id']}-chunk-1", "succeeded"),
                                    (f"render-{render['id']}-chunk-2", "succeeded"),
                                    (f"render-{render['id']}-chunk-3", "succeeded"),
                                    (f"render-{render['id']}-stitch", "succeeded")])
    assert embedded.balance(workspace) == 4

    again = embedded.renders.request(workspace, video, "16:9", resolution=180)
    assert again["id"] == render["id"] and again["status"] == "succeeded"  # an identical finished render
