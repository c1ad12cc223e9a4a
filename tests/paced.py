"""``reelfarm`` with each frame a chunk draws held back ``PACED_FRAME_SEC`` seconds (a stand-in pace).

Tests that stop or pause a process in the middle of a chunk need the chunk to last a known time
whatever the machine's load (a 144p frame takes about a millisecond). The renderer is unchanged:
only the progress callback a chunk hands to ``render_segment`` waits before it reports. Forked
work horses and pool processes inherit the pace. Run as ``python -m tests.paced <reelfarm args>``.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from reelfarm.renderer import render

FRAME_SEC = float(os.environ.get("PACED_FRAME_SEC", "0"))
_render_segment = render.render_segment


def paced_segment(*args: Any, progress: Callable[[int], None] | None = None, **kwargs: Any) -> int:
    """``render_segment``, reporting each batch of frames ``FRAME_SEC`` per frame later."""
    if progress is not None and FRAME_SEC > 0:
        report = progress

        def progress(frames: int) -> None:
            time.sleep(frames * FRAME_SEC)
            report(frames)
    return _render_segment(*args, progress=progress, **kwargs)


render.render_segment = paced_segment

if __name__ == "__main__":
    from reelfarm.cli import main

    main()
