"""The footage benchmark (``benchmarks/footage.py``) measures what it says: its clips have a
keyframe exactly every GOP and no other, and a chunk that starts one frame before a keyframe
decodes from the keyframe before it."""
from __future__ import annotations

from pathlib import Path

from benchmarks.footage import FPS, LONG_GOP_KEY, long_gop_doc, make_clip, measure_chunk_start
from reelfarm.renderer.footage import probe_clip


def test_a_clip_has_a_keyframe_every_gop_and_no_other(tmp_path: Path) -> None:
    info = make_clip(tmp_path / "clip.mp4", 64, 36, seconds=2.0, gop_frames=15)
    index = probe_clip(info["path"])
    assert len(index.pts) == info["frames"] == 2 * FPS
    assert [index.pts.index(k) for k in index.keyframes] == [0, 15, 30, 45]


def test_a_chunk_one_frame_before_a_keyframe_decodes_from_the_keyframe_before(tmp_path: Path) -> None:
    gop = FPS  # documents last 6 s at least
    make_clip(tmp_path / LONG_GOP_KEY, 64, 36, seconds=6.0, gop_frames=gop)
    row = measure_chunk_start(long_gop_doc(6.0), 36, tmp_path, 2 * gop - 1, tmp_path / "chunk.mp4")
    assert row["seeks"] >= 1
    # from the keyframe at 30 to the chunk's first (59), then its 30: all of 30..88 at most, less the
    # pictures before 59 that nothing refers to (skipped: renderer.footage), the keyframe at least
    assert FPS + 1 <= row["frames_decoded"] <= gop + FPS - 1
    assert 0 < row["first_frame_s"] <= row["chunk_s"]
