"""``reelfarm`` with each frame a chunk draws held back ``PACED_FRAME_SEC`` seconds, and a stitch
held ``PACED_STITCH_SEC`` between joining its MP4 and storing it (a stand-in pace); a stitch that
has joined its MP4 creates the file ``PACED_STITCH_MARK`` names, if any.

Tests that stop or pause a process in the middle of a chunk or a stitch need it to last a known
time whatever the machine's load (a 720p frame takes a few milliseconds). The renderer is
unchanged: only the progress callback a chunk hands to ``render_segment`` waits before it
reports, and ``finish_video`` before it returns. Forked work horses and pool processes inherit
the pace. Run as ``python -m tests.paced <reelfarm args>``.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reelfarm.renderer import render

FRAME_SEC = float(os.environ.get("PACED_FRAME_SEC", "0"))
STITCH_SEC = float(os.environ.get("PACED_STITCH_SEC", "0"))
STITCH_MARK = os.environ.get("PACED_STITCH_MARK", "")
_render_segment = render.render_segment
_finish_video = render.finish_video


def paced_segment(*args: Any, progress: Callable[[int], None] | None = None, **kwargs: Any) -> int:
    """``render_segment``, reporting each batch of frames ``FRAME_SEC`` per frame later."""
    if progress is not None and FRAME_SEC > 0:
        report = progress

        def progress(frames: int) -> None:
            time.sleep(frames * FRAME_SEC)
            report(frames)
    return _render_segment(*args, progress=progress, **kwargs)


def paced_finish(*args: Any, **kwargs: Any) -> None:
    """``finish_video``, returning ``STITCH_SEC`` after the MP4 is written (and marked)."""
    _finish_video(*args, **kwargs)
    if STITCH_MARK:
        Path(STITCH_MARK).touch()
    time.sleep(STITCH_SEC)


render.render_segment = paced_segment
render.finish_video = paced_finish

if __name__ == "__main__":
    from reelfarm.cli import main

    main()
