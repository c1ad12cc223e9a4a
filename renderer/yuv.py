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
ATLAS_QUANTUM = 128   # several boxes are converted stacked in one image of a multiple of this size


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
        self._atlases: BoundedCache[tuple[int, int], np.ndarray] = BoundedCache(8, 4 * width * height * 2)

    def convert(self, frame: np.ndarray, pixel_format: str, boxes: Sequence[Box] | None) -> np.ndarray:
        """Update the planes from `frame` (height, width, 4) where `boxes` say it changed
        (None: everywhere) and return the buffer (reused by the next call)."""
        if boxes is not None:
            grid = [self._on_grid(b) for b in boxes]
            if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in grid) <= FULL_FRACTION * self.width * self.height:
                # A box whose source reaches the frame's edge is converted alone, at its image's
                # edge as in the whole frame: swscale filters an edge otherwise than a neighbour.
                # Those reaching the same edges are converted as one box around them all.
                inner = [b for b in grid if b[2] > b[0] and b[3] > b[1] and not self._edges(b)]
                outer: dict[tuple[bool, ...], Box] = {}
                for b in grid:
                    if b[2] > b[0] and b[3] > b[1] and self._edges(b):
                        o = outer.get(self._edges(b), b)
                        outer[self._edges(b)] = (min(o[0], b[0]), min(o[1], b[1]), max(o[2], b[2]), max(o[3], b[3]))
                for box in outer.values():
                    self._convert_box(frame, pixel_format, box)
                if len(inner) == 1:
                    self._convert_box(frame, pixel_format, inner[0])
                elif inner:
                    self._convert_atlas(frame, pixel_format, inner)
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
        sws = self._context(sw, sh)
        # The box's rows are read in place (a frame's line size may be longer than its width).
        out = rgba_to_bt709(sws, frame[sy0:sy1, sx0:sx1], "yuv420p", src_format=pixel_format)
        ox, oy = x0 - sx0, y0 - sy0
        for plane, dest, div in zip(out.planes, (self.y, self.u, self.v), (1, 2, 2)):
            rows = np.frombuffer(memoryview(plane), np.uint8).reshape(-1, plane.line_size)
            a0, a1, b0, b1 = y0 // div, y1 // div, x0 // div, x1 // div
            dest[a0:a1, b0:b1] = rows[oy // div:oy // div + a1 - a0, ox // div:ox // div + b1 - b0]
        self.converted_pixels += sw * sh


    def _edges(self, box: Box) -> tuple[bool, ...]:
        """Which edges of the frame the source converted for `box` reaches (left, top, right, bottom)."""
        (sx0, sx1), (sy0, sy1) = _span(box[0], box[2], self.width), _span(box[1], box[3], self.height)
        edges = (sx0 == 0, sy0 == 0, sx1 == self.width, sy1 == self.height)
        return edges if any(edges) else ()

    def _convert_atlas(self, frame: np.ndarray, pixel_format: str, boxes: Sequence[Box]) -> None:
        """Convert several boxes in one swscale call: their sources (each with its margin) packed
        in rows of one image, each then copied out of the converted planes. A call costs about
        60 us beside its pixels, which many thin boxes (an outline's damage) would pay many times."""
        spans = [(_span(x0, x1, self.width), _span(y0, y1, self.height)) for x0, y0, x1, y1 in boxes]
        order = sorted(range(len(boxes)), key=lambda i: spans[i][1][0] - spans[i][1][1])  # tallest first
        places: dict[int, tuple[int, int]] = {}
        x = y = shelf = 0
        for i in order:
            (sx0, sx1), (sy0, sy1) = spans[i]
            if x + sx1 - sx0 > self.width:
                x, y, shelf = 0, y + shelf, 0
            places[i] = (x, y)
            x, shelf = x + sx1 - sx0, max(shelf, sy1 - sy0)
        aw = min(self.width, -(-max(px + sx1 - sx0 for ((sx0, sx1), _), (px, _) in
                                    ((spans[i], places[i]) for i in order)) // ATLAS_QUANTUM) * ATLAS_QUANTUM)
        ah = -(-(y + shelf) // ATLAS_QUANTUM) * ATLAS_QUANTUM
        atlas = self._atlases.get((aw, ah))
        if atlas is None:
            atlas = np.zeros((ah, aw, 4), np.uint8)
            self._atlases.put((aw, ah), atlas)
        for i, ((sx0, sx1), (sy0, sy1)) in enumerate(spans):
            px, py = places[i]
            atlas[py:py + sy1 - sy0, px:px + sx1 - sx0] = frame[sy0:sy1, sx0:sx1]
        out = rgba_to_bt709(self._context(aw, ah), atlas, "yuv420p", src_format=pixel_format)
        planes = [np.frombuffer(memoryview(p), np.uint8).reshape(-1, p.line_size) for p in out.planes]
        for i, (x0, y0, x1, y1) in enumerate(boxes):
            (sx0, _), (sy0, _) = spans[i]
            px, py = places[i]
            for rows_of, dest, div in zip(planes, (self.y, self.u, self.v), (1, 2, 2)):
                a0, a1, b0, b1 = y0 // div, y1 // div, x0 // div, x1 // div
                r0, c0 = (py + y0 - sy0) // div, (px + x0 - sx0) // div
                dest[a0:a1, b0:b1] = rows_of[r0:r0 + a1 - a0, c0:c0 + b1 - b0]
        self.converted_pixels += sum((sx1 - sx0) * (sy1 - sy0) for (sx0, sx1), (sy0, sy1) in spans)

    def _context(self, width: int, height: int) -> VideoReformatter:
        sws = self._contexts.get((width, height))
        if sws is None:
            sws = VideoReformatter()
            self._contexts.put((width, height), sws)
        return sws


def _span(a: int, b: int, size: int) -> tuple[int, int]:
    """The source span converted for [a, b): `MARGIN` more on each side (but past the frame's
    edge), widened to a multiple of `QUANTUM`; every bound even."""
    a, b = max(0, a - MARGIN), min(size, b + MARGIN)
    length = min(size, -(-(b - a) // QUANTUM) * QUANTUM)
    b = a + length
    if b > size:
        a, b = size - length, size
    return a, b
