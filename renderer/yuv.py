"""BT.709 limited-range yuv420p planes kept from frame to frame, converted only where a frame changed.

The CPU rasterizer draws BGRA; the encoder wants 4:2:0. Converting a whole 1080p frame with
swscale costs about as much as drawing it, yet most frames of a motion-graphics video change in a
few boxes only. `Bt709Planes` keeps the planes of the previous frame and converts just the
changed boxes again, each with a margin of source pixels around it, because swscale's chroma
filter reads a neighbour on each side: with the margin, every sample inside the box is exactly the
sample a whole-frame conversion gives (`tests/unit/renderer/test_skip.py` checks it). The source
around a box is widened to a multiple of `QUANTUM` pixels so that few distinct sizes occur, each
with its own cached swscale context (making one costs about as much as converting 400x400 pixels).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from av.video.reformatter import VideoReformatter

from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.encode import rgba_to_bt709

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 excluded

GRID = 8              # boxes start and end on this grid (even: chroma samples line up)
MARGIN = 8            # source pixels converted around a box (2 are enough; measured exact)
QUANTUM = 32          # the converted source's width and height are multiples of this (or the frame's)
FULL_FRACTION = 0.6   # boxes covering more of the frame than this: convert it whole


class Bt709Planes:
    """yuv420p planes of `width` x `height` in one buffer, laid out as the encoders read them."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.buffer = np.zeros((height * 3 // 2, width), np.uint8)
        flat = self.buffer.reshape(-1)
        n, c = width * height, (width // 2) * (height // 2)
        self.y = flat[:n].reshape(height, width)
        self.u = flat[n:n + c].reshape(height // 2, width // 2)
        self.v = flat[n + c:].reshape(height // 2, width // 2)
        # One swscale context per source size (creating one costs more than a small box's conversion).
        self._contexts: BoundedCache[tuple[int, int], VideoReformatter] = BoundedCache(
            64, 1 << 40, sizeof=lambda key, value: 1)
        self.converted_pixels = 0  # source pixels converted so far: what the skipping saved

    def convert(self, frame: np.ndarray, pixel_format: str, boxes: Sequence[Box] | None) -> np.ndarray:
        """Update the planes from `frame` (height, width, 4) where `boxes` say it changed
        (None: everywhere) and return the buffer (reused by the next call)."""
        if boxes is not None:
            grid = [self._on_grid(b) for b in boxes]
            if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in grid) <= FULL_FRACTION * self.width * self.height:
                for box in grid:
                    self._convert_box(frame, pixel_format, box)
                return self.buffer
        self._convert_box(frame, pixel_format, (0, 0, self.width, self.height))
        return self.buffer

    def _on_grid(self, box: Box) -> Box:
        x0, y0, x1, y1 = box
        return (max(0, x0 // GRID * GRID), max(0, y0 // GRID * GRID),
                min(self.width, -(-x1 // GRID) * GRID), min(self.height, -(-y1 // GRID) * GRID))

    def _convert_box(self, frame: np.ndarray, pixel_format: str, box: Box) -> None:
        x0, y0, x1, y1 = box
        if x1 <= x0 or y1 <= y0:
            return
        sx0, sx1 = _span(x0, x1, self.width)
        sy0, sy1 = _span(y0, y1, self.height)
        sw, sh = sx1 - sx0, sy1 - sy0
        sws = self._contexts.get((sw, sh))
        if sws is None:
            sws = VideoReformatter()
            self._contexts.put((sw, sh), sws)
        # The box's rows are read in place (a frame's line size may be longer than its width).
        out = rgba_to_bt709(sws, frame[sy0:sy1, sx0:sx1], "yuv420p", src_format=pixel_format)
        ox, oy = x0 - sx0, y0 - sy0
        for plane, dest, div in zip(out.planes, (self.y, self.u, self.v), (1, 2, 2)):
            rows = np.frombuffer(memoryview(plane), np.uint8).reshape(-1, plane.line_size)
            a0, a1, b0, b1 = y0 // div, y1 // div, x0 // div, x1 // div
            dest[a0:a1, b0:b1] = rows[oy // div:oy // div + a1 - a0, ox // div:ox // div + b1 - b0]
        self.converted_pixels += sw * sh


def _span(a: int, b: int, size: int) -> tuple[int, int]:
    """The source span converted for [a, b): `MARGIN` more on each side (but past the frame's
    edge), widened to a multiple of `QUANTUM`; every bound even."""
    a, b = max(0, a - MARGIN), min(size, b + MARGIN)
    length = min(size, -(-(b - a) // QUANTUM) * QUANTUM)
    b = a + length
    if b > size:
        a, b = size - length, size
    return a, b
