"""Image layers that only move sideways, drawn from copies made once per sub-pixel offset.

A photo drifting sideways across a scene lands at a new sub-pixel offset every frame: every
pixel of its box is resampled (bilinear) and converted to yuv420p again, at 1080p some 2 ms of
drawing and 1.7 ms of conversion for a photo half the frame's width. Instead its left edge is
rounded onto a grid of `STEPS` positions a pixel (`Glides.place`), the layer is drawn once per
position into an image of its own (`Glide`), and a frame copies that image at a whole-pixel
offset (an unscaled image at whole pixels is copied, not resampled). Its inside (opaque, on the
2x2 chroma grid) is converted once per position and chroma phase too, and the frame's planes take
it as it is (`Stamp`) but where something is drawn over it.

Rounding a place by at most 1/(2*STEPS) pixel moves each bilinear sample, and each anti-aliased
edge, by at most that share of the difference between neighbouring pixels: 16 levels at `STEPS` 8.
Two steps are not continuous, and are kept from being crossed or avoided: an image rect is drawn
into the pixels whose centres it holds (a place rounded across one would add or drop a column;
`_on_grid` keeps both edges between the same centres), and Skia covers an edge horizontally in
1/32-pixel steps (8 levels, measured) but vertically in four rows a pixel, so a vertical move of a
fraction can change an edge's cover by a quarter (64 levels) where a rounded place crosses a row:
layers moving vertically are drawn where they are, not glided. Whether a layer moves only
sideways is worked out from its state at every frame of its scene, so the grid, and every frame,
is a function of the document alone, whatever frames a chunk draws. Grid positions sit `PHASE` of
a step off whole pixels (off the rounding ties of Skia's fixed-point steps).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import skia

from reelfarm.renderer import damage
from reelfarm.renderer.draw import Rect
from reelfarm.renderer.model import Layer
from reelfarm.renderer.target import PIXEL_COLOR_TYPE, PIXEL_FORMAT
from reelfarm.renderer.timeline import LayerState

STEPS = 8           # grid positions a pixel
PHASE = 0.3183      # of a step: where the grid's positions fall, off whole and half pixels
PAD = 2             # transparent pixels around the layer in its image (anti-aliased edges, and
                    # rows under its inside for the conversion: see `reelfarm.renderer.yuv.BELOW`)
FRAMES = 2.0        # the images and planes kept: this many frames' worth of bytes, ...
MIN_BYTES = 40 << 20  # ... or this many where more (a drift across a 1080p frame's half: 8 images
                      # of 2.7 MB and 16 insides' planes of 0.9 MB)


@dataclass(frozen=True)
class Stamp:
    """yuv420p planes of an opaque box (x0, y0, x1, y1 on even pixels) to copy into a frame's: arrays of
    the box's samples, or 0-d arrays of the one sample every place of a plane takes (`reelfarm.renderer.fills`)."""

    box: tuple[int, int, int, int]
    y: np.ndarray
    u: np.ndarray
    v: np.ndarray

    def without(self, hole: tuple[int, int, int, int]) -> list[Stamp]:
        """This stamp less `hole` (widened to even pixels): the pieces left, each a stamp."""
        x0, y0 = self.box[:2]
        left = damage.without(self.box, damage.even(hole))
        if not self.y.ndim:
            return [Stamp(box, self.y, self.u, self.v) for box in left]
        return [Stamp((a, b, c, d), self.y[b - y0:d - y0, a - x0:c - x0],
                      self.u[(b - y0) // 2:(d - y0) // 2, (a - x0) // 2:(c - x0) // 2],
                      self.v[(b - y0) // 2:(d - y0) // 2, (a - x0) // 2:(c - x0) // 2])
                for a, b, c, d in left]


@dataclass
class Glide:
    """A layer drawn at one grid position: its image (BGRA premultiplied; it owns its pixels, which
    the pictures of frames that drew it may play back after the glide is dropped), and its inside's
    planes per chroma phase (`Glides.stamp`)."""

    image: skia.Image
    planes: dict[tuple[int, int], Stamp | None]

    @property
    def nbytes(self) -> int:
        return self.image.width() * self.image.height() * 4


def sideways(rects: Sequence[Rect | None]) -> bool:
    """Whether a layer drawn at `rects` (its box at each frame, None where not shown) only moves
    sideways: its size and its top the same at every frame."""
    shown = [r for r in rects if r is not None]
    return bool(shown) and all(r[1:] == shown[0][1:] for r in shown)


def used(layer: Layer, state: LayerState | None) -> bool:
    """Whether `layer` at `state` is only placed (an image, unscaled, unrotated, opaque, unwiped,
    with no Ken Burns view of its own)."""
    return (state is not None and layer.type == "image" and layer.ken_burns is None and state.scale == 1.0
            and not state.rotation and state.opacity >= 0.999 and state.wipe >= 1.0)


class Glides:
    """The images of layers that only move sideways, per grid position, held within a budget of
    bytes (`FRAMES`, `MIN_BYTES`): once it is spent, an image or planes not held are made for the
    frame at hand and dropped (kept first come, not least recently used: a drift visits its grid
    positions in turn, where evicting the oldest would evict each one just before its next use)."""

    def __init__(self, width: int, height: int) -> None:
        self.budget = max(MIN_BYTES, int(FRAMES * width * height * 4))
        self._planned: set[int] = set()  # id() of the layers that only move sideways
        self._glides: dict[Any, Glide] = {}
        self.nbytes = 0

    def plan(self, layer: Layer, glides: bool) -> None:
        """Record whether `layer` only moves sideways over its scene (`sideways`)."""
        if glides:
            self._planned.add(id(layer))
        else:
            self._planned.discard(id(layer))

    def planned(self, layer: Layer, state: LayerState | None) -> bool:
        return id(layer) in self._planned and used(layer, state)

    def place(self, layer: Layer, box: Rect) -> tuple[int, int, float, float]:
        """Where `layer`'s box at `box` is drawn: the whole-pixel offset of its image and the
        position inside it (on the grid along each moving axis)."""
        x, y = _on_grid(box[0], box[2], STEPS), box[1]
        ix, iy = math.floor(x) - PAD, math.floor(y) - PAD
        return ix, iy, x - ix, y - iy

    def draw(self, canvas: skia.Canvas, layer: Layer, box: Rect, paint: Callable[[skia.Canvas, Rect], None]) -> None:
        """Copy `layer`'s image at `box` (rounded onto its grid) onto `canvas`; `paint(canvas, rect)`
        draws the layer with its box at `rect` on a canvas of its own."""
        ix, iy, fx, fy = self.place(layer, box)
        canvas.drawImage(self.glide(layer, box, fx, fy, paint).image, ix, iy)

    def glide(self, layer: Layer, box: Rect, fx: float, fy: float,
              paint: Callable[[skia.Canvas, Rect], None]) -> Glide:
        key = _key(layer, box, fx, fy)
        found = self._glides.get(key)
        if found is None:
            found = self._make(box[2], box[3], fx, fy, paint)
            if self.nbytes + found.nbytes <= self.budget:
                self._glides[key] = found
                self.nbytes += found.nbytes
        return found

    def stamp(self, layer: Layer, box: Rect, inset: float) -> Stamp | None:
        """The yuv420p planes of `layer`'s opaque inside as a frame at `box` holds it, on the
        chroma grid and at least `inset` pixels inside its box's edges (its rounded corners);
        converted once per grid position and chroma phase. None where nothing is opaque, and
        where the budget holds neither its image nor its planes (converted with the frame then)."""
        ix, iy, fx, fy = self.place(layer, box)
        glide = self._glides.get(_key(layer, box, fx, fy))
        if glide is None:
            return None
        phase = (ix & 1, iy & 1)
        if phase in glide.planes:
            found = glide.planes[phase]
        else:
            if self.nbytes + 1.5 * box[2] * box[3] > self.budget:  # the most its planes could take
                return None
            found = glide.planes[phase] = self._convert(glide, ix & 1, iy & 1, fx, fy, box[2], box[3], inset)
            self.nbytes += 0 if found is None else found.y.nbytes + found.u.nbytes + found.v.nbytes
        if found is None:
            return None
        x0, y0, x1, y1 = found.box
        return Stamp((x0 + ix - (ix & 1), y0 + iy - (iy & 1), x1 + ix - (ix & 1), y1 + iy - (iy & 1)),
                     found.y, found.u, found.v)

    def forget(self, layer: Layer) -> None:
        """Drop `layer`'s images and planes (its scene's plan is dropped)."""
        for key in [k for k in self._glides if k[0] == id(layer)]:
            self.nbytes -= _sizeof(self._glides.pop(key))
        self._planned.discard(id(layer))

    def clear(self) -> None:
        self._glides.clear()
        self.nbytes = 0

    def _make(self, w: float, h: float, fx: float, fy: float, paint: Callable[[skia.Canvas, Rect], None]) -> Glide:
        width, height = math.ceil(fx + w) + PAD + 1, math.ceil(fy + h) + PAD + 1
        surface = skia.Surface.MakeRaster(skia.ImageInfo.Make(width, height, PIXEL_COLOR_TYPE, skia.kPremul_AlphaType))
        surface.getCanvas().clear(0)
        paint(surface.getCanvas(), (fx, fy, w, h))
        return Glide(surface.makeImageSnapshot(), {})

    def _convert(self, glide: Glide, px: int, py: int, fx: float, fy: float, w: float, h: float,
                 inset: float) -> Stamp | None:
        """The planes of `glide`'s inside at chroma phase (px, py): the image's pixel (x, y) lands
        on a frame pixel of parity (x + px, y + py)."""
        # the inside in frame-parity coordinates (image coordinates + phase), on even pixels
        x0, y0 = _even_up(fx + inset + px), _even_up(fy + inset + py)
        x1, y1 = _even_down(fx + w - inset + px), _even_down(fy + h - inset + py)
        if x1 - x0 < 2 or y1 - y0 < 2:
            return None
        pixmap = skia.Pixmap()
        glide.image.peekPixels(pixmap)
        array = np.asarray(pixmap)  # a view of the image's pixels, read while the glide holds them
        region = array[y0 - py:y1 - py, x0 - px:x1 - px]
        if region[..., 3].min() < 255:  # a transparent photo, or a fit that leaves part of the box bare
            return None
        rows = min(array.shape[0], y1 - py + PAD)  # rows under it: its last chroma row not the image's
        source = array[y0 - py:rows, x0 - px:x1 - px]
        from reelfarm.renderer.yuv import Bt709Planes  # it imports this module; PyAV loads with it

        planes = Bt709Planes(x1 - x0, source.shape[0])
        planes.convert(source, PIXEL_FORMAT, None)
        n = y1 - y0
        return Stamp((x0, y0, x1, y1), planes.y[:n].copy(), planes.u[:n // 2].copy(), planes.v[:n // 2].copy())


def _key(layer: Layer, box: Rect, fx: float, fy: float) -> tuple[int, float, float, float, float]:
    """What a layer's image at a grid position is drawn from: the layer, its size and its place in the image."""
    return id(layer), box[2], box[3], fx, fy


def _on_grid(v: float, size: float, steps: int) -> float:
    """`v` (a box's edge at `v`, its other at `v + size`) on the grid of `steps` positions a pixel,
    kept between the same pixel centres as `v` for both edges: an image is drawn into the pixels
    whose centres its rect holds, so an edge crossing a centre adds or drops a column. Where the
    grid's position nearest `v` lies past one, the position `PHASE` of a step inside it is taken."""
    if not steps:
        return v
    q = (round(v * steps - PHASE) + PHASE) / steps
    lo = max(math.floor(v + edge - 0.5) + 0.5 - edge for edge in (0.0, size))  # the nearest centres
    hi = min(math.ceil(v + edge - 0.5) + 0.5 - edge for edge in (0.0, size))   # at or below, above
    if lo < q < hi or lo == hi:
        return q if lo < hi else v
    nudge = PHASE / steps
    if hi - lo <= 2 * nudge:
        return (lo + hi) / 2
    return lo + nudge if q <= lo else hi - nudge


def _even_up(v: float) -> int:
    return 2 * math.ceil(v / 2)


def _even_down(v: float) -> int:
    return 2 * math.floor(v / 2)


def _sizeof(glide: Glide) -> int:
    planes = sum(s.y.nbytes + s.u.nbytes + s.v.nbytes for s in glide.planes.values() if s is not None)
    return glide.nbytes + planes
