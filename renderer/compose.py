"""Transitions between scenes: drawn on a canvas, or composed from each scene's yuv420p planes.

`draw_transition` draws a transition frame from the previous scene's last frame and the incoming
scene's frame, both premultiplied images: the reference way, and the way of every target that
hands out RGBA (stills, the GL rasterizer). A CPU rasterizer handing out yuv420p composes every
transition from planes instead (`PlaneTransitions`): the previous scene's last frame is
converted once, the incoming scene's planes are kept up to date where it changed, and a frame is
a blend of them (crossfade), shifted copies (slide), copies of two parts (wipe) or the incoming
planes scaled by swscale and blended over the previous ones (zoom), so no transition frame is
converted whole. Blends and copies are linear in the colour, so they differ from converting the
drawn frame only by rounding (a chroma sample is one 2 x 2 block's, `encode.CHROMA_FILTER`, so
none along a seam mixes both frames); a zoom's scaling differs from Skia's bilinear one by a
filter's width (`ZOOM_FILTER`, measured at most 17 levels on a text edge once blended, luma PSNR
at least 46 dB; `tests/unit/renderer/test_fidelity.py` holds every story to 45).

A slide moves by an even number of pixels, a wipe's edge lies on an even pixel and a zoom fills a
rectangle on even pixels (on both ways), so that chroma samples, one for each 2 x 2 pixels, are
each scene's whole.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import skia

from reelfarm.renderer.model import Transition

PLANE_KINDS = ("crossfade", "slide", "wipe", "zoom")  # the transitions composed from planes
BLEND_SLICE = 1 << 18  # samples a blend works on at a time
ZOOM_FROM = 0.85  # a zoom's incoming frame grows from this scale to 1 about the centre
# swscale's filter for a zoom's planes: the closest to Skia's bilinear draw of the frame (measured
# on three stories at 1080p and 180p, once blended: at most 17 levels apart and a luma PSNR of at
# least 46.6 dB; bilinear 17 / 46.3, fast bilinear 71 / 40.6, bicubic 29 / 40.6)
ZOOM_FILTER = "AREA"
_DIRS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}


def slide_offsets(direction: str, p: float, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where the previous and the incoming frame are drawn at progress `p` of a slide: even
    pixel offsets, the incoming frame abutting the previous one."""
    ux, uy = _DIRS[direction]
    dx, dy = 2 * round(ux * width * p / 2), 2 * round(uy * height * p / 2)
    return (dx, dy), (dx - ux * width, dy - uy * height)


def zoom_rect(p: float, width: int, height: int) -> tuple[int, int, int, int]:
    """Where a zoom draws the incoming frame at progress `p`: scaled ``ZOOM_FROM`` to 1 about the
    centre, into the rectangle (x0, y0, x1, y1) on even pixels nearest that."""
    margin = (1.0 - ZOOM_FROM) * (1.0 - p) / 2
    x0, y0 = 2 * round(width * margin / 2), 2 * round(height * margin / 2)
    return x0, y0, width - x0, height - y0


def wipe_edge(p: float, direction: str, width: int, height: int) -> tuple[int, int, int, int]:
    """The part (x0, y0, x1, y1) of the frame a wipe in `direction` has revealed at progress `p`:
    its moving edge on an even pixel."""
    if direction in ("up", "down"):
        n = 2 * round(height * p / 2)
        return (0, height - n, width, height) if direction == "up" else (0, 0, width, n)
    n = 2 * round(width * p / 2)
    return (width - n, 0, width, height) if direction == "left" else (0, 0, n, height)


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
        x0, y0, x1, y1 = wipe_edge(p, tr.direction, width, height)
        canvas.save()
        canvas.clipRect(skia.Rect.MakeLTRB(x0, y0, x1, y1))
        canvas.drawImage(incoming, 0, 0)
        canvas.restore()
    elif tr.type == "zoom":
        x0, y0, x1, y1 = zoom_rect(p, width, height)
        canvas.drawImageRect(incoming, skia.Rect.MakeLTRB(x0, y0, x1, y1),
                             skia.SamplingOptions(skia.FilterMode.kLinear), skia.Paint(Alphaf=p))
    else:  # crossfade
        canvas.drawImage(incoming, 0, 0, skia.SamplingOptions(), skia.Paint(Alphaf=p))


class PlaneTransitions:
    """Transitions composed from yuv420p planes (see the module docstring).

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
        self._scaler: Any = None  # a zoom's swscale context (one: swscale keeps it across sizes)

    def forget(self) -> None:
        self._synced = False

    @property
    def synced(self) -> bool:
        """Whether `incoming` holds the conversion of the incoming scene's pixels as last drawn."""
        return self._synced

    def clear(self) -> None:
        self._previous.clear()
        self._synced = False

    def previous(self, index: int, frame: Callable[[], tuple[np.ndarray, bool]]) -> np.ndarray:
        """Scene `index`'s last frame as planes, made once a scene from `frame()`: its yuv420p
        planes (True, copied) or its BGRA pixels (False, converted)."""
        if index not in self._previous:
            from reelfarm.renderer.yuv import Bt709Planes

            for old in [i for i in self._previous if i != index]:
                del self._previous[old]
            pixels, converted = frame()
            self._previous[index] = pixels.copy() if converted else \
                Bt709Planes(self.width, self.height).convert(pixels, "bgra", None).copy()
        return self._previous[index]

    def update_incoming(self, pixels: np.ndarray, boxes: list[Any] | None, stamps: Sequence[Any] = ()) -> np.ndarray:
        """The incoming scene's planes, converted from its BGRA `pixels` where `boxes` changed (but
        where `stamps` hold them: `reelfarm.renderer.yuv.Bt709Planes.convert`)."""
        planes = self.incoming.convert(pixels, "bgra", boxes if self._synced else None, stamps if self._synced else ())
        self._synced = True
        return planes

    def compose(self, out: np.ndarray, previous: np.ndarray, incoming: np.ndarray, tr: Transition, p: float) -> None:
        """Write the frame at progress `p` of `tr` (a kind in `PLANE_KINDS`) into the planes `out`."""
        if tr.type == "slide":
            self._slide(out, previous, incoming, tr.direction, p)
        elif tr.type == "wipe":
            np.copyto(out, previous)
            self._each_plane(out, incoming, wipe_edge(p, tr.direction, self.width, self.height),
                             lambda dst, src: np.copyto(dst, src))
        elif tr.type == "zoom":
            self._zoom(out, previous, incoming, p)
        else:
            self._blend(out, previous, incoming, round(p * 256))

    def _zoom(self, out: np.ndarray, previous: np.ndarray, incoming: np.ndarray, p: float) -> None:
        """The incoming planes scaled into `zoom_rect` by swscale, blended over the previous ones.
        Measured at 1080p: 1.3 to 1.6 ms for the scaling, where Skia's bilinear draw of the frame
        took 6 to 9 and its conversion 3 to 4 more."""
        from av.video.reformatter import VideoReformatter

        from reelfarm.renderer.encode import yuv420p_frame

        x0, y0, x1, y1 = rect = zoom_rect(p, self.width, self.height)
        np.copyto(out, previous)
        if self._scaler is None:
            self._scaler = VideoReformatter()
        # not av.VideoFrame.from_numpy_buffer: it reads a frame whose chroma planes have an odd
        # number of rows (4:5 at 1080p) 2 rows short, its chroma from the wrong place
        scaled = self._scaler.reformat(yuv420p_frame(incoming),
                                       width=x1 - x0, height=y1 - y0, format="yuv420p", interpolation=ZOOM_FILTER)
        planes = iter([np.frombuffer(memoryview(q), np.uint8).reshape(-1, q.line_size) for q in scaled.planes])
        w = round(p * 256)

        def blend(dst: np.ndarray, _: np.ndarray) -> None:
            h, n = dst.shape
            self._blend(dst, dst, next(planes)[:h, :n], w)

        self._each_plane(out, incoming, rect, blend)

    def _planes(self, buffer: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """The Y, U and V planes of a yuv420p `buffer` as 2-D views, each with its subsampling."""
        w, h = self.width, self.height
        n, c = w * h, (w // 2) * (h // 2)
        flat = buffer.reshape(-1)
        return [(flat[:n].reshape(h, w), 1), (flat[n:n + c].reshape(h // 2, w // 2), 2),
                (flat[n + c:n + 2 * c].reshape(h // 2, w // 2), 2)]

    def _each_plane(self, out: np.ndarray, src: np.ndarray, rect: tuple[int, int, int, int],
                    do: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """``do(out's part, src's part)`` for the part `rect` (on even pixels) of each plane."""
        x0, y0, x1, y1 = rect
        for (dst, k), (origin, _) in zip(self._planes(out), self._planes(src)):
            part = (slice(y0 // k, y1 // k), slice(x0 // k, x1 // k))
            do(dst[part], origin[part])

    def _blend(self, out: np.ndarray, a: np.ndarray, b: np.ndarray, w: int) -> None:
        """``out = (a * (256 - w) + b * w + 128) >> 8``, sample by sample, for 2-D arrays of one
        shape (`out` may be `a`): a blend's weight in 256ths, rounded to the nearest (within one
        level of the exact blend). Measured at 1080p on a quiet machine: 1.1 ms a frame, where a
        Skia draw of the planes as two-byte pixels took 5.5 to 7.5."""
        h, n = out.shape
        if not h or not n:
            return
        rows = max(1, self._sums.shape[1] // n)
        for start in range(0, h, rows):
            end = min(h, start + rows)
            total = self._sums[0, :(end - start) * n].reshape(end - start, n)
            other = self._sums[1, :(end - start) * n].reshape(end - start, n)
            np.multiply(a[start:end], 256 - w, out=total, dtype=np.uint16)
            np.multiply(b[start:end], w, out=other, dtype=np.uint16)
            np.add(total, other, out=total)
            np.add(total, 128, out=total)
            np.right_shift(total, 8, out=total)
            np.copyto(out[start:end], total, casting="unsafe")

    def _slide(self, out: np.ndarray, previous: np.ndarray, incoming: np.ndarray, direction: str, p: float) -> None:
        for src, (dx, dy) in zip((previous, incoming), slide_offsets(direction, p, self.width, self.height)):
            for (dst, k), (origin, _) in zip(self._planes(out), self._planes(src)):
                _shifted(dst, origin, dx // k, dy // k)


def _shifted(out: np.ndarray, src: np.ndarray, dx: int, dy: int) -> None:
    """Copy `src` into `out` moved by (dx, dy) samples; what falls outside is dropped."""
    h, w = src.shape
    x0, x1, y0, y1 = max(0, dx), min(w, w + dx), max(0, dy), min(h, h + dy)
    if x1 > x0 and y1 > y0:
        out[y0:y1, x0:x1] = src[y0 - dy:y1 - dy, x0 - dx:x1 - dx]
