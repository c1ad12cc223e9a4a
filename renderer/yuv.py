"""BT.709 limited-range yuv420p planes kept from frame to frame, converted only where a frame changed.

The CPU rasterizer draws BGRA; the encoder wants 4:2:0. Converting a whole 1080p frame with
swscale costs about as much as drawing it, yet most frames of a motion-graphics video change in a
few boxes only. `Bt709Planes` keeps the planes of the previous frame and converts just the
changed boxes again: a large box where it lies in the frame, the small ones (an outline's many
thin boxes) all in one swscale call, their pixels packed into one image (an atlas), converted, and
copied back out where they belong.

Every conversion uses swscale's area filter (`encode.rgba_to_bt709`): a luma sample is its own
pixel's and a chroma sample the average of its 2x2 block, so a box on even pixels converts
exactly as in the whole frame wherever it is packed, with one exception, measured: swscale
treats an image's last chroma row apart (off by one level). So each box is packed with the
`BELOW` rows under it, and the boxes that reach the frame's bottom, as one box, at the atlas's
own bottom. `tests/unit/renderer/test_skip.py` checks every sample against the whole frame's.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from reelfarm.renderer import damage
from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.damage import STRIP
from reelfarm.renderer.encode import rgba_to_bt709

if TYPE_CHECKING:  # a glide converts its planes here: only its stamps' type is named back
    from reelfarm.renderer.glide import Stamp

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 excluded

GRID = 2              # boxes start and end on even pixels: a chroma sample is one 2x2 block
BELOW = 2             # source rows packed under a box (its last chroma row is then not the image's last)
FULL_FRACTION = 0.6   # boxes covering more of the frame than this: convert it whole
ATLAS_QUANTUM = 64    # the atlas's width is a multiple of this (few sizes, few swscale contexts)
# ... and its height a multiple of this: a shelf of an outline's boxes (`damage.STRIP` rows) with
# the `BELOW` rows under them. At 64 one shelf took an atlas of 128 rows, converting twice its pixels.
ATLAS_ROWS = STRIP + BELOW
ALONE_PIXELS = 160 * 160  # a box this large is converted where it lies, not copied into the atlas
# ... its source widened to multiples of this each way: a few sizes for swscale's contexts, and at
# most 14 pixels more a side (at the atlas's 64 and 66, the stories' frames cost ~2% more, measured)
ALONE_QUANTUM = 16


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
            32, 1 << 40, sizeof=lambda key, value: 1)
        self.converted_pixels = 0  # source pixels converted so far: what the skipping saved
        self.stamped_pixels = 0    # pixels copied from stamps (`reelfarm.renderer.glide`) instead
        self._atlases: BoundedCache[tuple[int, int], np.ndarray] = BoundedCache(8, 4 * width * height * 2)

    def convert(self, frame: np.ndarray, pixel_format: str, boxes: Sequence[Box] | None,
                stamps: Sequence[Stamp] = ()) -> np.ndarray:
        """Update the planes from `frame` (height, width, 4) where `boxes` say it changed
        (None: everywhere) and return the buffer (reused by the next call). `stamps` hold the
        planes of boxes of `frame` (on the grid) already converted: copied, not converted again."""
        if boxes is not None:
            grid = [b for b in map(self._on_grid, boxes) if b[2] > b[0] and b[3] > b[1]]
            for stamp in stamps:
                box = stamp.box
                grid = [piece for b in grid for piece in
                        (damage.without(b, box) if damage.meets(b, box) else (b,))]
                self._stamp(stamp)
            if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in grid) <= FULL_FRACTION * self.width * self.height:
                small = []
                for box in grid:
                    if (box[2] - box[0]) * (box[3] - box[1]) >= ALONE_PIXELS:
                        self._convert_alone(frame, pixel_format, box)
                    else:
                        small.append(box)
                if small:
                    self._convert_atlas(frame, pixel_format, small)
                return self.buffer
        self._convert_alone(frame, pixel_format, (0, 0, self.width, self.height))
        return self.buffer

    def _stamp(self, stamp: Stamp) -> None:
        x0, y0, x1, y1 = stamp.box
        self.y[y0:y1, x0:x1] = stamp.y
        self.u[y0 // 2:y1 // 2, x0 // 2:x1 // 2] = stamp.u
        self.v[y0 // 2:y1 // 2, x0 // 2:x1 // 2] = stamp.v
        self.stamped_pixels += (x1 - x0) * (y1 - y0)

    def _on_grid(self, box: Box) -> Box:
        x0, y0, x1, y1 = box
        return (max(0, x0 // GRID * GRID), max(0, y0 // GRID * GRID),
                min(self.width, -(-x1 // GRID) * GRID), min(self.height, -(-y1 // GRID) * GRID))

    def _convert_alone(self, frame: np.ndarray, pixel_format: str, box: Box) -> None:
        """Convert a large `box` (on the grid) where it lies in the frame, with no copy: its source
        widened to multiples of `ALONE_QUANTUM` (few sizes, few contexts) and
        reaching `BELOW` rows under it or the frame's bottom."""
        x0, y0, x1, y1 = box
        sx0, sx1 = _span(x0, x1, self.width, ALONE_QUANTUM)
        sy0, sy1 = _span(y0, min(self.height, y1 + BELOW), self.height, ALONE_QUANTUM)
        out = rgba_to_bt709(self._context(sx1 - sx0, sy1 - sy0), frame[sy0:sy1, sx0:sx1], "yuv420p",
                            src_format=pixel_format)
        self._copy_out(out, [(box, x0 - sx0, y0 - sy0)])
        self.converted_pixels += (sx1 - sx0) * (sy1 - sy0)

    def _convert_atlas(self, frame: np.ndarray, pixel_format: str, boxes: Sequence[Box]) -> None:
        """Convert `boxes` (on the grid) in one swscale call: their sources packed in shelves of
        one image, those reaching the frame's bottom as one box at the image's bottom (beside the
        last shelf's boxes where it fits, else under them), each then
        copied out of the converted planes. A call costs about 60 us beside its pixels, which many
        thin boxes (an outline's damage) would pay many times."""
        h = self.height
        inner = sorted((b for b in boxes if b[3] < h), key=lambda b: b[1] - b[3])  # tallest first
        low = [b for b in boxes if b[3] == h]
        places: list[tuple[Box, int, int, int]] = []  # (box, x, y in the atlas, source rows)
        x = y = shelf = used = 0
        for box in inner:
            bw, rows = box[2] - box[0], box[3] - box[1] + BELOW
            if x + bw > self.width:
                x, y, shelf = 0, y + shelf, 0
            places.append((box, x, y, rows))
            x, shelf, used = x + bw, max(shelf, rows), max(used, x + bw)
        top = y + shelf
        ah = _ceil(top, ATLAS_ROWS)
        if low:
            box = (min(b[0] for b in low), min(b[1] for b in low), max(b[2] for b in low), h)
            bw, rows = box[2] - box[0], box[3] - box[1]
            if inner and x + bw <= self.width and rows <= ah - y:  # beside the last shelf's boxes
                at = x
            else:  # under them all
                at, ah = 0, _ceil(top + rows, ATLAS_ROWS)
            used = max(used, at + bw)
            places.append((box, at, ah - rows, rows))
        aw = min(self.width, _ceil(used, ATLAS_QUANTUM))
        atlas = self._atlases.get((aw, ah))
        if atlas is None:
            atlas = np.zeros((ah, aw, 4), np.uint8)
            self._atlases.put((aw, ah), atlas)
        for (x0, y0, x1, _), px, py, rows in places:
            atlas[py:py + rows, px:px + x1 - x0] = frame[y0:y0 + rows, x0:x1]
        out = rgba_to_bt709(self._context(aw, ah), atlas, "yuv420p", src_format=pixel_format)
        self._copy_out(out, [(box, px, py) for box, px, py, _ in places])
        self.converted_pixels += sum((box[2] - box[0]) * rows for box, _, _, rows in places)

    def _copy_out(self, out: av.VideoFrame, places: Sequence[tuple[Box, int, int]]) -> None:
        """Copy each box from where it lies in the converted `out` (x, y) into the planes."""
        planes = [np.frombuffer(memoryview(p), np.uint8).reshape(-1, p.line_size) for p in out.planes]
        for (x0, y0, x1, y1), px, py in places:
            self.y[y0:y1, x0:x1] = planes[0][py:py + y1 - y0, px:px + x1 - x0]
            a0, a1, b0, b1, r, c = y0 // 2, y1 // 2, x0 // 2, x1 // 2, py // 2, px // 2
            self.u[a0:a1, b0:b1] = planes[1][r:r + a1 - a0, c:c + b1 - b0]
            self.v[a0:a1, b0:b1] = planes[2][r:r + a1 - a0, c:c + b1 - b0]

    def _context(self, width: int, height: int) -> VideoReformatter:
        sws = self._contexts.get((width, height))
        if sws is None:
            sws = VideoReformatter()
            self._contexts.put((width, height), sws)
        return sws


@functools.lru_cache(maxsize=64)
def flat_samples(pixel: bytes, pixel_format: str) -> tuple[int, int, int]:
    """The Y, U and V samples of a box of one `pixel` (4 bytes in `pixel_format`), converted as
    every box is (`Bt709Planes`): a luma sample is its pixel's and a chroma sample its 2x2 block's,
    so these are every sample of such a box on even pixels wherever it lies."""
    image = np.empty((16, 16, 4), np.uint8)
    image[:] = np.frombuffer(pixel, np.uint8)
    planes = Bt709Planes(16, 16)
    planes.convert(image, pixel_format, None)
    return int(planes.y[0, 0]), int(planes.u[0, 0]), int(planes.v[0, 0])


def _span(a: int, b: int, size: int, quantum: int) -> tuple[int, int]:
    """[a, b) widened to a multiple of `quantum` (or `size`) within [0, size), never ending before b."""
    length = min(size, _ceil(b - a, quantum))
    b = a + length
    return (size - length, size) if b > size else (a, b)


def _ceil(n: int, quantum: int) -> int:
    return max(quantum, -(-n // quantum) * quantum)
