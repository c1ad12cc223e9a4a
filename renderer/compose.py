"""Transitions between scenes: drawn on a canvas, or composed from each scene's yuv420p planes.

`draw_transition` draws a transition frame from the previous scene's last frame and the incoming
scene's frame, both premultiplied images: the reference way, and the way of every target that
hands out RGBA (stills, the GL rasterizer). A CPU rasterizer handing out yuv420p composes a
crossfade or a slide from planes instead (`PlaneTransitions`): the previous scene's last frame is
converted once, the incoming scene's planes are kept up to date where it changed, and a frame is
a blend or two shifted copies of them, so no transition frame is converted whole. Both are linear
in the colour, so the result differs from converting the drawn blend only by rounding (a chroma
sample is one 2 x 2 block's, `encode.CHROMA_FILTER`, so none along a slide's seam mixes both).

A slide moves by an even number of pixels (on both ways), so that chroma samples, one for each
2 x 2 pixels, move by whole samples.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import skia

from reelfarm.renderer.model import Transition

PLANE_KINDS = ("crossfade", "slide")  # the transitions composed from planes
BLEND_SLICE = 1 << 18  # samples a crossfade blends at a time
_DIRS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}


def slide_offsets(direction: str, p: float, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where the previous and the incoming frame are drawn at progress `p` of a slide: even
    pixel offsets, the incoming frame abutting the previous one."""
    ux, uy = _DIRS[direction]
    dx, dy = 2 * round(ux * width * p / 2), 2 * round(uy * height * p / 2)
    return (dx, dy), (dx - ux * width, dy - uy * height)


def wipe_rect(box: tuple[float, float, float, float], p: float, direction: str) -> skia.Rect:
    """The part of `box` a wipe in `direction` has revealed at progress `p`."""
    x, y, w, h = box
    if direction == "left":
        return skia.Rect.MakeXYWH(x + w * (1 - p), y, w * p, h)
    if direction == "up":
        return skia.Rect.MakeXYWH(x, y + h * (1 - p), w, h * p)
    if direction == "down":
        return skia.Rect.MakeXYWH(x, y, w, h * p)
    return skia.Rect.MakeXYWH(x, y, w * p, h)


def draw_transition(canvas: skia.Canvas, previous: skia.Image, incoming: skia.Image, tr: Transition,
                    p: float, width: int, height: int) -> None:
    """Draw the frame at progress `p` of transition `tr` from `previous` to `incoming`."""
    copy = skia.Paint(BlendMode=skia.BlendMode.kSrc)
    if tr.type == "slide":
        (px, py), (ix, iy) = slide_offsets(tr.direction, p, width, height)
        canvas.clear(0xFF000000)
        canvas.drawImage(previous, px, py)
        canvas.drawImage(incoming, ix, iy)
        return
    canvas.drawImage(previous, 0, 0, skia.SamplingOptions(), copy)
    if tr.type == "wipe":
        canvas.save()
        canvas.clipRect(wipe_rect((0.0, 0.0, float(width), float(height)), p, tr.direction))
        canvas.drawImage(incoming, 0, 0)
        canvas.restore()
    elif tr.type == "zoom":
        canvas.save()
        s = 0.85 + 0.15 * p
        canvas.translate(width / 2, height / 2)
        canvas.scale(s, s)
        canvas.translate(-width / 2, -height / 2)
        canvas.drawImage(incoming, 0, 0, skia.SamplingOptions(skia.FilterMode.kLinear), skia.Paint(Alphaf=p))
        canvas.restore()
    else:  # crossfade
        canvas.drawImage(incoming, 0, 0, skia.SamplingOptions(), skia.Paint(Alphaf=p))


class PlaneTransitions:
    """Crossfades and slides composed from yuv420p planes (see the module docstring).

    `incoming` holds the incoming scene's planes; whoever draws the incoming scene's target
    without converting it calls `forget()`, so the next frame converts it whole.
    """

    def __init__(self, width: int, height: int) -> None:
        from reelfarm.renderer.yuv import Bt709Planes

        self.width, self.height = width, height
        self.incoming = Bt709Planes(width, height)
        self._previous: dict[int, np.ndarray] = {}
        self._synced = False
        # A crossfade's sums, a slice of the planes at a time (a few hundred kB: in cache, not 6
        # bytes a sample of the whole frame at 4K).
        self._sums = np.empty((2, min(BLEND_SLICE, height * 3 // 2 * width)), np.uint16)

    def forget(self) -> None:
        self._synced = False

    def clear(self) -> None:
        self._previous.clear()
        self._synced = False

    def previous(self, index: int, frame: Callable[[], np.ndarray]) -> np.ndarray:
        """Scene `index`'s last frame as planes (`frame()` gives its BGRA pixels), converted once."""
        if index not in self._previous:
            from reelfarm.renderer.yuv import Bt709Planes

            for old in [i for i in self._previous if i != index]:
                del self._previous[old]
            self._previous[index] = Bt709Planes(self.width, self.height).convert(frame(), "bgra", None).copy()
        return self._previous[index]

    def update_incoming(self, pixels: np.ndarray, boxes: list[Any] | None) -> np.ndarray:
        """The incoming scene's planes, converted from its BGRA `pixels` where `boxes` changed."""
        planes = self.incoming.convert(pixels, "bgra", boxes if self._synced else None)
        self._synced = True
        return planes

    def compose(self, out: np.ndarray, previous: np.ndarray, incoming: np.ndarray, tr: Transition, p: float) -> None:
        """Write the frame at progress `p` of `tr` (a kind in `PLANE_KINDS`) into the planes `out`."""
        if tr.type == "slide":
            self._slide(out, previous, incoming, tr.direction, p)
            return
        self._blend(out.reshape(-1), previous.reshape(-1), incoming.reshape(-1), round(p * 256))

    def _blend(self, out: np.ndarray, a: np.ndarray, b: np.ndarray, w: int) -> None:
        """``out = (a * (256 - w) + b * w + 128) >> 8``, sample by sample: a crossfade's weight
        in 256ths, rounded to the nearest (within one level of the exact blend). Measured at
        1080p on a quiet machine: 1.1 ms a frame, where a Skia draw of the planes as two-byte
        pixels took 5.5 to 7.5."""
        step = self._sums.shape[1]
        for start in range(0, out.size, step):
            end = min(out.size, start + step)
            total, other = self._sums[0, :end - start], self._sums[1, :end - start]
            np.multiply(a[start:end], 256 - w, out=total, dtype=np.uint16)
            np.multiply(b[start:end], w, out=other, dtype=np.uint16)
            np.add(total, other, out=total)
            np.add(total, 128, out=total)
            np.right_shift(total, 8, out=total)
            np.copyto(out[start:end], total, casting="unsafe")

    def _slide(self, out: np.ndarray, previous: np.ndarray, incoming: np.ndarray, direction: str, p: float) -> None:
        w, h = self.width, self.height
        n, c = w * h, (w // 2) * (h // 2)
        for src, (dx, dy) in zip((previous, incoming), slide_offsets(direction, p, w, h)):
            flat_src, flat_out = src.reshape(-1), out.reshape(-1)
            _shifted(flat_out[:n].reshape(h, w), flat_src[:n].reshape(h, w), dx, dy)
            for a, b in ((n, n + c), (n + c, n + 2 * c)):
                _shifted(flat_out[a:b].reshape(h // 2, w // 2), flat_src[a:b].reshape(h // 2, w // 2),
                         dx // 2, dy // 2)


def _shifted(out: np.ndarray, src: np.ndarray, dx: int, dy: int) -> None:
    """Copy `src` into `out` moved by (dx, dy) samples; what falls outside is dropped."""
    h, w = src.shape
    x0, x1, y0, y1 = max(0, dx), min(w, w + dx), max(0, dy), min(h, h + dy)
    if x1 > x0 and y1 > y0:
        out[y0:y1, x0:x1] = src[y0 - dy:y1 - dy, x0 - dx:x1 - dx]
