"""Drafts draw library clips from small proxies (``reelfarm.farm.services.proxies``), frame for frame.

A 960x540 clip made here with PyAV (each picture carrying its own number as black and white bars,
keyframes 2 s apart, B-frames, a tone as its sound) is uploaded to a workspace's library and shown
in a draft's two scenes (trimmed, played faster, starting late). The draft's chunks run in this
process through the draft's own task (``draw_draft_chunk``) on real local storage; what the chunks
open is counted by a storage that records ``open_local`` (the same ``Storage`` protocol). The first
draft draws the original and leaves a 640x360 proxy beside it, once; the second draws the proxy
only. Both show, frame by frame, the clip picture the full render shows at that instant. A proxy
that cannot be stored leaves drafts drawing the original. Another workspace never reaches the
proxy; deleting the clip, or retention deleting it, deletes its proxy.
"""
from __future__ import annotations

import logging
import math
from datetime import timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.draft_tasks import draw_draft_chunk
from reelfarm.farm.runtime.retention import purge
from reelfarm.farm.services.drafts import DraftService
from reelfarm.farm.services.library import AssetService
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.farm.services.proxies import PROXY_SIDE, ClipProxies
from reelfarm.renderer.footage import probe_clip
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.render import render_segment
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import render_still_png
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.errors import StorageError
from reelfarm.shared.repos.objects import WorkspaceObjects
from reelfarm.shared.storage import LocalStorage
from reelfarm.shared.storage_keys import asset_proxy_claim_key, asset_proxy_key, draft_segment_key
from reelfarm.studio.assets import StorageAssets
from reelfarm.studio.previews import StoryPreviews
from tests.integration.farm.conftest import Farm
from tests.unit.renderer.test_footage import bars as footage_bars
from tests.unit.renderer.test_footage import read_bars as footage_read_bars

BITS = 10
CLIP_FPS = 30
CLIP_SEC = 3.0
WIDTH, HEIGHT = 960, 540
RATE = 48000
DRAFT_FPS = 15  # drafts.DRAFT_FPS
# (scene duration, layer start, trim_start, speed, loop) of the two scenes that show the clip; the
# second loops from its trim to the clip's end, where the proxy's length must be the clip's
SCENES: list[tuple[int, Fraction, Fraction, Fraction, bool]] = [
    (3, Fraction(1, 5), Fraction(1, 2), Fraction(4, 5), False), (3, Fraction(0), Fraction(2), Fraction(3, 2), True)]


class RecordingStorage:
    """A ``Storage`` that keeps the keys it opened and can refuse puts under some keys."""

    def __init__(self, inner: LocalStorage) -> None:
        self.inner = inner
        self.opened: list[str] = []
        self.refused: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open_local(self, key: str) -> str:
        path = self.inner.open_local(key)
        self.opened.append(key)
        return path

    def put_file(self, key: str, path: Any, content_type: str) -> None:
        if key.endswith(self.refused or ("\0",)):
            raise StorageError(f"storage refused {key}")
        self.inner.put_file(key, path, content_type)


def bars(i: int) -> np.ndarray:
    """Picture ``i``: ``i`` in binary as vertical bars, most significant bit left."""
    return footage_bars(i, WIDTH, HEIGHT, BITS)


def read_bars(rgb: np.ndarray) -> int:
    return footage_read_bars(rgb, bits=BITS)


def numbered_clip(path: Path) -> bytes:
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=CLIP_FPS, options={"g": "60", "bf": "2", "preset": "ultrafast"})
        video.width, video.height, video.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        sound = container.add_stream("aac", rate=RATE)
        sound.layout = "mono"
        for i in range(round(CLIP_SEC * CLIP_FPS)):
            frame = av.VideoFrame.from_ndarray(bars(i), format="rgb24")
            frame.pts = i
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        total = round(CLIP_SEC * RATE)
        for start in range(0, total, 1024):
            u = (start + np.arange(min(1024, total - start))) / RATE
            tone = av.AudioFrame.from_ndarray((0.3 * np.sin(2 * np.pi * 440 * u)).astype(np.float32)[None],
                                              format="fltp", layout="mono")
            tone.sample_rate, tone.pts, tone.time_base = RATE, start, Fraction(1, RATE)
            container.mux(sound.encode(tone))
        container.mux(sound.encode(None))
    return path.read_bytes()


def clip_doc(key: str) -> dict[str, Any]:
    """The clip in every scene, muted as the stories place clips: what a draft opens is then its
    picture's file alone (an audible clip's sound is mixed from the original, as a proxy carries
    no sound, so its draft chunks open both)."""
    scenes = []
    for n, (duration, start, trim, speed, loop) in enumerate(SCENES):
        scenes.append({"id": f"s{n}", "duration": duration, "background": {"type": "solid", "color": "#000000"},
                       "layers": [{"id": "clip", "type": "video", "asset": "clip", "x": 0.5, "y": 0.5, "w": 1,
                                   "h": 1, "fit": "cover", "start": float(start), "trim_start": float(trim),
                                   "speed": float(speed), "loop": loop, "volume": 0}]})
    return {"version": 1, "fps": 30, "duration": sum(s[0] for s in SCENES), "format": "16:9",
            "assets": {"clip": {"type": "video", "key": key}}, "scenes": scenes}


def shown(n: int) -> int | None:
    """The clip picture at draft frame ``n`` (exact arithmetic); None before the layer starts."""
    t = Fraction(n, DRAFT_FPS)
    for duration, start, trim, speed, loop in SCENES:
        if t < duration:
            elapsed = t - start
            if elapsed < 0:
                return None
            x = elapsed * speed
            if loop:
                x %= Fraction(CLIP_SEC) - trim
            return math.floor((trim + x) * CLIP_FPS)
        t -= duration
    raise AssertionError(n)


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return numbered_clip(tmp_path_factory.mktemp("clip") / "clip.mp4")


@pytest.fixture
def recording(embedded: Farm) -> RecordingStorage:
    """The task context of ``embedded``, its storage recorded."""
    storage = RecordingStorage(embedded.storage)
    configure(TaskContext(engine=embedded.engine, storage=storage, clock=embedded.clock,
                          progress=embedded.progress))
    return storage


def drafts_of(farm: Farm) -> DraftService:
    return DraftService(farm.engine, farm.queue, farm.storage, farm.clock, "s" * 40, "http://127.0.0.1:9")


def library(farm: Farm) -> AssetService:
    return AssetService(farm.engine, farm.clock, farm.storage)


def run_draft(farm: Farm, workspace: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Start a draft and draw its chunks here, in order, through the draft's own task."""
    drafts = drafts_of(farm)
    draft = drafts.start(workspace, doc, "16:9")
    for index in range(draft["chunks"]):
        draw_draft_chunk(draft["id"], index)
    return drafts.get(workspace, draft["id"])


def pictures(paths: list[str]) -> list[int]:
    found = []
    for path in paths:
        with av.open(path) as container:
            found += [read_bars(f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]
    return found


def draft_pictures(farm: Farm, workspace: str, draft: dict[str, Any]) -> list[int]:
    keys = [draft_segment_key(workspace, draft["id"], i) for i in range(draft["chunks"])]
    return pictures([str(farm.storage.path(key)) for key in keys])


def full_render_pictures(farm: Farm, storage: RecordingStorage, workspace: str, doc: dict[str, Any],
                         tmp_path: Path) -> list[int]:
    """What a render shows at the draft's size and rate: through a render's asset source."""
    out = tmp_path / "full.mp4"
    parsed = parse_doc(doc)
    frames = round(parsed.duration * DRAFT_FPS)
    render_segment(parsed, str(out), RenderSpec("16:9", 360, DRAFT_FPS), range(frames),
                   assets=StorageAssets(storage, WorkspaceObjects(farm.engine, workspace)))
    return pictures([str(out)])


def test_a_draft_draws_the_clip_from_its_proxy_frame_for_frame(clip_bytes: bytes, embedded: Farm,
                                                               recording: RecordingStorage, tmp_path: Path) -> None:
    workspace = embedded.workspace()
    clip = library(embedded).upload(workspace, clip_bytes)
    key, proxy = clip["key"], asset_proxy_key(clip["key"])
    doc = clip_doc(key)

    drafts = drafts_of(embedded)
    first = drafts.start(workspace, doc, "16:9")
    assert first["chunks"] >= 2
    draw_draft_chunk(first["id"], 0)  # the first chunk draws the original, then makes the proxy
    assert recording.opened == [key]
    assert embedded.storage.exists(proxy) and not embedded.storage.exists(asset_proxy_claim_key(key))
    made_at = embedded.storage.modified(proxy)
    recording.opened.clear()
    for index in range(1, first["chunks"]):
        draw_draft_chunk(first["id"], index)
    assert set(recording.opened) == {proxy}  # the chunks after it draw the proxy
    first = drafts.get(workspace, first["id"])
    assert first["status"] == "succeeded", first

    recording.opened.clear()
    second = run_draft(embedded, workspace, doc)
    assert second["status"] == "succeeded", second
    assert proxy in recording.opened and key not in recording.opened  # later drafts draw the proxy only
    assert embedded.storage.modified(proxy) == made_at  # made once

    with av.open(str(embedded.storage.path(proxy))) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (PROXY_SIDE * WIDTH // HEIGHT, PROXY_SIDE)
        assert not container.streams.audio  # a draft is about the picture
    copied, original = probe_clip(str(embedded.storage.path(proxy))), probe_clip(str(embedded.storage.path(key)))
    assert copied.starts == original.starts and copied.duration == original.duration
    assert max(np.diff([copied.starts[copied.pts.index(k)] for k in copied.keyframes])) <= 0.5

    recording.opened.clear()
    full = full_render_pictures(embedded, recording, workspace, doc, tmp_path)
    still = StoryPreviews(embedded.engine, recording, tmp_path).assets(workspace)
    render_still_png(parse_doc(doc), 1.0, RenderSpec("16:9", 360), still)
    assert set(recording.opened) == {key}  # renders and stills draw the original, proxy or not
    expected = [shown(n) for n in range(len(full))]
    assert len(full) == 6 * DRAFT_FPS
    assert [p for p, e in zip(full, expected, strict=True) if e is not None] == [e for e in expected if e is not None]
    assert draft_pictures(embedded, workspace, first) == full
    assert draft_pictures(embedded, workspace, second) == full


def test_drafts_keep_the_original_while_the_proxy_is_claimed_cannot_be_stored_or_does_not_open(
        clip_bytes: bytes, embedded: Farm, recording: RecordingStorage, caplog: pytest.LogCaptureFixture) -> None:
    workspace = embedded.workspace()
    clip = library(embedded).upload(workspace, clip_bytes)
    key, proxy = clip["key"], asset_proxy_key(clip["key"])
    doc = clip_doc(key)

    # another chunk claimed it a moment ago: this draft draws the original and leaves it be
    embedded.storage.put_bytes(asset_proxy_claim_key(key), f"making {embedded.clock.now().isoformat()}".encode(),
                               "text/plain")
    assert run_draft(embedded, workspace, doc)["status"] == "succeeded"
    assert not embedded.storage.exists(proxy)
    embedded.storage.delete(asset_proxy_claim_key(key))  # as its maker would once done (or failed)

    recording.refused = (".proxy.mp4",)
    with caplog.at_level(logging.WARNING, logger="reelfarm.farm"):
        assert run_draft(embedded, workspace, doc)["status"] == "succeeded"
    assert not embedded.storage.exists(proxy)
    assert any("could not be stored" in r.getMessage() and "from the original" in r.getMessage()
               for r in caplog.records), caplog.text

    recording.refused, recording.opened = (), []
    later = run_draft(embedded, workspace, doc)
    assert later["status"] == "succeeded" and key in recording.opened
    assert embedded.storage.exists(proxy)  # made by the draft after

    embedded.storage.put_bytes(proxy, b"not a video", "video/mp4")  # a proxy that does not open
    recording.opened = []
    with caplog.at_level(logging.WARNING, logger="reelfarm.farm"):
        assert run_draft(embedded, workspace, doc)["status"] == "succeeded"
    assert "does not open" in caplog.text and key in recording.opened
    assert probe_clip(str(embedded.storage.path(proxy))).starts  # deleted, and made again


def test_a_proxy_that_cannot_be_made_is_not_tried_by_every_draft(clip_bytes: bytes, embedded: Farm,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    workspace = embedded.workspace()
    clip = library(embedded).upload(workspace, clip_bytes)
    clock = FixedClock(embedded.clock.now())
    proxies = ClipProxies(embedded.engine, embedded.storage, clock, make_sec=0.0)
    row = proxies.clip(workspace, clip["key"])
    assert row is not None
    original = str(embedded.storage.path(clip["key"]))
    with caplog.at_level(logging.WARNING, logger="reelfarm.farm"):
        assert not proxies.make(row, original)
    assert "took longer than 0 s" in caplog.text and not embedded.storage.exists(asset_proxy_key(clip["key"]))

    patient = ClipProxies(embedded.engine, embedded.storage, clock)
    assert not patient.make(row, original)  # the failure holds for a day
    clock.advance(hours=25)
    assert patient.make(row, original) and embedded.storage.exists(asset_proxy_key(clip["key"]))


def test_another_workspace_never_reaches_the_proxy(clip_bytes: bytes, embedded: Farm,
                                                   recording: RecordingStorage) -> None:
    a, b = embedded.workspace(), embedded.workspace()
    data = clip_bytes
    mine = library(embedded).upload(a, data)
    assert run_draft(embedded, a, clip_doc(mine["key"]))["status"] == "succeeded"
    proxy = asset_proxy_key(mine["key"])
    assert embedded.storage.exists(proxy)

    recording.opened.clear()
    for key in (mine["key"], proxy):  # b names a's clip, or a's proxy, in its document
        refused = run_draft(embedded, b, clip_doc(key))
        assert refused["status"] == "failed" and "asset 'clip'" in refused["error"], refused
        assert "no object of this workspace" in refused["error"]
    assert recording.opened == []
    own = run_draft(embedded, a, clip_doc(proxy))  # no document names a proxy, its own workspace's neither
    assert own["status"] == "failed" and "asset 'clip'" in own["error"]

    theirs = library(embedded).upload(b, data)  # the same bytes: b's own copy, and its own proxy
    assert theirs["key"] != mine["key"]
    run_draft(embedded, b, clip_doc(theirs["key"]))
    recording.opened.clear()
    assert run_draft(embedded, b, clip_doc(theirs["key"]))["status"] == "succeeded"
    assert set(recording.opened) == {asset_proxy_key(theirs["key"])}


@pytest.mark.own_database  # retention deletes across workspaces
def test_deleting_a_clip_or_retention_deletes_its_proxy(clip_bytes: bytes, embedded: Farm,
                                                        recording: RecordingStorage) -> None:
    workspace = embedded.workspace()
    data = clip_bytes
    clip = library(embedded).upload(workspace, data)
    run_draft(embedded, workspace, clip_doc(clip["key"]))
    proxy = asset_proxy_key(clip["key"])
    assert embedded.storage.exists(proxy)
    library(embedded).delete(workspace, clip["id"])
    assert not embedded.storage.exists(proxy) and not embedded.storage.exists(clip["key"])

    again = library(embedded).upload(workspace, data)
    run_draft(embedded, workspace, clip_doc(again["key"]))
    embedded.storage.put_bytes(asset_proxy_claim_key(again["key"]), b"failed 2025-01-01T00:00:00+00:00", "text/plain")
    assert embedded.storage.exists(asset_proxy_key(again["key"]))
    later = FixedClock(embedded.clock.now() + timedelta(days=31))
    configure(TaskContext(engine=embedded.engine, storage=embedded.storage, clock=later, progress=MemoryProgress()))
    assert purge().assets == 1
    assert embedded.storage.list_keys(f"assets/{workspace}") == []
