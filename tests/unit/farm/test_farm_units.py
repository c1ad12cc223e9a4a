"""Pure pieces of the farm: names, hashes, prices, resources, validation, failure reasons."""

from __future__ import annotations

import hashlib
import json
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reelfarm.farm.runtime.queue import describe_exception, on_rq_failure
from reelfarm.farm.services.errors import (
    FarmError,
    InvalidRequest,
    QueueUnavailable,
    StateConflict,
    TaskFailed,
)
from reelfarm.farm.services.graph import chunk_job_id, stitch_job_id
from reelfarm.farm.services.jobs import job_resource
from reelfarm.farm.services.progress import MemoryProgress, ProgressBatcher, fraction
from reelfarm.farm.services.renders import _validate, credits_for, dedup_hash, render_resource
from reelfarm.renderer import RENDERER_VERSION
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Asset
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.repos.jobs import Job
from reelfarm.shared.repos.renders import Render
from reelfarm.shared.storage import LocalStorage, check_key
from reelfarm.shared.storage_keys import imported_key, poster_key, segment_key, video_key
from reelfarm.studio.assets import StorageAssets

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path, "http://127.0.0.1:8000", "k" * 48, FixedClock(NOW))


def a_render(**changes: Any) -> Render:
    values: dict[str, Any] = {
        "id": "r1", "workspace_id": "w", "video_id": "v", "version_id": "ver", "format": "16:9",
        "resolution": 1080, "fps": 30, "status": "queued", "progress": 0.0, "url_key": None, "poster_key": None,
        "duration_sec": None, "bytes": None, "error": None, "dedup_hash": "h", "charged_credits": 1,
        "created_at": NOW, "started_at": None, "finished_at": None, "frames": 300, "chunks": 2,
        "progressed_at": NOW}
    return Render(**{**values, **changes})


def test_dedup_hash_covers_every_input() -> None:
    def spec(fmt: str = "16:9", resolution: int = 1080, fps: int = 30) -> RenderSpec:
        return RenderSpec(fmt, resolution, fps)
    base = dedup_hash("doc", spec())
    assert base == dedup_hash("doc", spec(), RENDERER_VERSION)
    assert len(base) == 64 and int(base, 16) >= 0
    # Hashes stored by earlier releases must keep matching: the canonical form is fixed.
    canonical = json.dumps(["doc", "16:9", 1080, 30, RENDERER_VERSION], separators=(",", ":"))
    assert base == hashlib.sha256(canonical.encode()).hexdigest()
    variants = {dedup_hash("doc2", spec()), dedup_hash("doc", spec("9:16")),
                dedup_hash("doc", spec(resolution=720)), dedup_hash("doc", spec(fps=24)),
                dedup_hash("doc", spec(), "9.9.9")}
    assert len(variants) == 5 and base not in variants


@pytest.mark.parametrize("seconds,credits", [(6, 1), (60, 1), (60.01, 2), (120, 2), (121, 3), (0.1, 1)])
def test_credits_per_started_minute(seconds: float, credits: int) -> None:
    assert credits_for(seconds) == credits


def test_names_are_deterministic_storage_keys() -> None:
    assert chunk_job_id("r1", 3) == "render-r1-chunk-3" and stitch_job_id("r1") == "render-r1-stitch"
    for key in (segment_key("r1", 0), video_key("r1"), poster_key("r1")):
        assert check_key(key) == key and key.startswith("renders/r1/")


def test_render_arguments_are_all_reported() -> None:
    with pytest.raises(InvalidRequest) as error:
        _validate(["16:9", "5:4"], 0, 1000)
    assert [d["field"] for d in error.value.details] == ["/formats/1", "/resolution", "/fps"]
    _validate(["4:5"], 180, None)


def test_a_queued_render_shows_frames_progress_below_one(storage: LocalStorage) -> None:
    progress = MemoryProgress()
    progress.add_frames("r1", 150)
    shown = render_resource(a_render(status="running"), storage, progress)
    assert list(shown) == ["id", "video_id", "version_id", "format", "resolution", "fps", "status", "progress",
                           "progress_stale", "url", "poster_url", "stream_url", "captions_url", "duration_sec", "bytes",
                           "error", "priority", "queue", "held_up", "reused_frames", "cost", "container", "transparent",
                           "clamped", "pool", "created_at",
                           "finished_at"]
    assert shown["progress"] == 0.5 and shown["url"] is None and shown["poster_url"] is None
    progress.add_frames("r1", 500)
    assert render_resource(a_render(status="running"), storage, progress)["progress"] == 0.99


def test_a_succeeded_render_has_urls_signed_for_seven_days(storage: LocalStorage) -> None:
    done = a_render(status="succeeded", progress=1.0, url_key="renders/r1/video.mp4",
                    poster_key="renders/r1/poster.jpg", bytes=10, duration_sec=10.0)
    shown = render_resource(done, storage)
    expires = int((NOW + timedelta(days=7)).timestamp())
    assert shown["url"].startswith("http://127.0.0.1:8000/files/renders/r1/video.mp4?expires=")
    assert f"expires={expires}" in shown["url"] and f"expires={expires}" in shown["poster_url"]
    assert shown["progress"] == 1.0


def test_stills_results_are_signed_on_every_read(tmp_path: Path) -> None:
    clock = FixedClock(NOW)
    storage = LocalStorage(tmp_path, "http://127.0.0.1:8000", "k" * 48, clock)
    job = Job(id="j", workspace_id="w", kind="stills", status="succeeded", stage="upload", progress=1.0,
              error=None, result={"stills": [{"time": 1.5, "key": "jobs/j/still-0.png", "width": 1920,
                                              "height": 1080}]},
              params={}, video_id="v", attempts=1, created_at=NOW, started_at=NOW, finished_at=NOW)
    first = job_resource(job, storage, clock)["result"]["stills"][0]
    assert first["expires_at"] == (NOW + timedelta(minutes=10)).isoformat()
    clock.advance(minutes=30)
    later = job_resource(job, storage, clock)["result"]["stills"][0]
    assert later["expires_at"] == (NOW + timedelta(minutes=40)).isoformat() and later["url"] != first["url"]
    assert set(later) == {"time", "url", "width", "height", "expires_at"}
    running = job_resource(Job(**{**job.__dict__, "status": "running"}), storage, clock)
    assert running["result"] is None


def test_failure_reasons_tell_users_what_they_can_act_on() -> None:
    assert describe_exception(AssetError("asset 'x': unreadable")) == "asset 'x': unreadable"
    assert describe_exception(TaskFailed("font missing")) == "font missing"
    assert describe_exception(KeyError("secret internals")) == "an internal error (KeyError)"
    assert describe_exception(None) == "the process running it stopped"
    abandoned = type("AbandonedJobError", (Exception,), {})()
    assert describe_exception(abandoned) == "the render node running it stopped"


def test_rq_failures_with_retries_left_are_not_final(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[Any], str]] = []
    monkeypatch.setattr("reelfarm.farm.runtime.queue.resolve", lambda path: lambda *a: calls.append(a))
    job = types.SimpleNamespace(id="j", retries_left=1, meta={}, func_name="reelfarm.farm.runtime.tasks.stitch", args=("r1",))
    on_rq_failure(job, None, RuntimeError, RuntimeError("x"), None)
    assert calls == []
    job.retries_left = 0
    on_rq_failure(job, None, RuntimeError, RuntimeError("x"), None)
    assert calls == [("reelfarm.farm.runtime.tasks.stitch", ["r1"], "an internal error (RuntimeError)")]


def test_progress_batches_reports() -> None:
    store = MemoryProgress()
    batch = ProgressBatcher(store, "r", interval=3600)
    for _ in range(10):
        batch(8)
    assert store.frames("r") == 0
    batch.flush()
    assert store.frames("r") == 80
    assert fraction(store, "r", None) == 0.0  # no total known
    store.set_total("r", 160)
    assert fraction(store, "r", None) == 0.5


class KeySet:
    """The keys a workspace owns, as a plain set (the database's answer in the real scope)."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)

    def owns(self, key: str) -> bool:
        return key in self.keys


def test_assets_come_from_storage_only(storage: LocalStorage) -> None:
    storage.put_bytes("assets/a.png", b"png", "image/png")
    storage.put_bytes("assets/other.png", b"theirs", "image/png")
    assets = StorageAssets(storage, KeySet("assets/a.png", "assets/b.png"))
    assert Path(assets.path("a", Asset("image", key="assets/a.png"))).read_bytes() == b"png"
    with pytest.raises(AssetError, match="no object of this workspace is stored under key 'assets/b.png'"):
        assets.path("b", Asset("image", key="assets/b.png"))
    # stored, but not the workspace's: refused with the same words as a missing object
    with pytest.raises(AssetError, match="no object of this workspace is stored under key 'assets/other.png'"):
        assets.path("o", Asset("image", key="assets/other.png"))
    with pytest.raises(AssetError, match="is neither in storage nor at an http"):
        assets.path("c", Asset("image", url="/etc/passwd"))
    with pytest.raises(AssetError, match="is neither in storage nor at an http"):
        assets.path("c", Asset("image", url="https://cdn.example/c.png"))  # no import was made for it
    imported = StorageAssets(storage, KeySet(), "renders/r1")
    with pytest.raises(RuntimeError, match="was not imported"):  # the import task runs first: lost, so retry
        imported.path("c", Asset("image", url="https://cdn.example/c.png"))
    storage.put_bytes(imported_key("renders/r1", "c"), b"c-png", "image/png")
    assert Path(imported.path("c", Asset("image", url="https://cdn.example/c.png"))).read_bytes() == b"c-png"


def test_error_hierarchy() -> None:
    assert all(issubclass(e, FarmError) for e in (QueueUnavailable, InvalidRequest, StateConflict, TaskFailed))
    assert issubclass(InvalidRequest, ValueError)
    assert StateConflict("done").code == "conflict"
    assert InvalidRequest([{"field": "/times/0", "code": "x", "message": "bad"}]).details[0]["field"] == "/times/0"
