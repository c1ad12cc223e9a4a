"""Faint flat shapes (the stories' drifting tint orbs), text and held shapes drawn once into images.

A story's orbs cover up to nine tenths of the frame and drift a fraction of a pixel every frame,
so every pixel of their box changed every frame. Drawn as a filtered image instead of an
anti-aliased path, a shape's pixels are the same under any clip (a path's anti-aliasing depends
on where a clip cuts it) and the same inside it wherever it is drawn (one colour filtered is that
colour): between two frames only the band between its old and new outline changes
(`damage.outline_boxes`), and a box may cut through it.

Only faint shapes are drawn so: an edge resampled at another sub-pixel offset differs from the
path drawn there by up to a quarter of its contrast, which for a fill of at most `MAX_ALPHA`
stays within what `tests/unit/renderer/test_fidelity.py` allows. The image is drawn at the
largest scale the layer reaches, so it is only ever drawn smaller.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import skia

from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.draw import Rect, draw_shape
from reelfarm.renderer.model import Layer
from reelfarm.renderer.timeline import LayerState
from reelfarm.renderer.tokens import Brand, parse_hex

MAX_ALPHA = 0x40  # the faintest quarter: a resampled edge moves these pixels by at most ~16 levels
PAD = 2           # transparent pixels around the shape, so the image's own edge draws nothing
_SAMPLING = skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kNone)


class Sprites:
    """The images of one rasterizer's faint flat shapes, made on first use."""

    def __init__(self, brand: Brand, unit: float) -> None:
        self.brand, self.unit = brand, unit
        self._images: dict[tuple[int, int, int], tuple[skia.Image, int, int]] = {}
        self._takes: dict[int, bool] = {}

    def takes(self, layer: Layer) -> bool:
        """Whether `layer` is drawn as an image: a shape of one faint colour and no stroke."""
        found = self._takes.get(id(layer))
        if found is None:
            found = self._takes[id(layer)] = (
                layer.type == "shape" and layer.shape in ("ellipse", "rect", "rounded_rect")
                and isinstance(layer.fill, str) and layer.stroke is None
                and parse_hex(self.brand.color(layer.fill))[3] <= MAX_ALPHA)
        return found

    def used(self, layer: Layer, state: LayerState | None) -> bool:
        """Whether `layer` is drawn as its image at `state`: unrotated and not being wiped."""
        return state is not None and not state.rotation and state.wipe >= 1.0 and self.takes(layer)

    def draw(self, canvas: skia.Canvas, layer: Layer, box: Rect, state: LayerState) -> None:
        """Draw `layer`'s image for `box` (the shape's own box) at `state`'s scale about its centre
        and its opacity, filtered, unaliased. The rect is worked out here, not by the canvas: an
        image drawn through a scaled matrix was seen to change where a clip cuts it."""
        x, y, w, h = box
        if w <= 0 or h <= 0:
            return
        image, iw, ih = self._image(layer, w, h)
        s = state.scale
        dw, dh = (w + 2 * PAD * w / iw) * s, (h + 2 * PAD * h / ih) * s
        paint = skia.Paint(Alphaf=state.opacity) if state.opacity < 0.999 else None
        dest = skia.Rect.MakeXYWH(x + w / 2.0 - dw / 2.0, y + h / 2.0 - dh / 2.0, dw, dh)
        canvas.drawImageRect(image, dest, _SAMPLING, paint)

    def clear(self) -> None:
        self._images.clear()

    def _image(self, layer: Layer, w: float, h: float) -> tuple[skia.Image, int, int]:
        key = (id(layer), round(w * 16), round(h * 16))
        found = self._images.get(key)
        if found is None:
            zoom = _largest_scale(layer)
            iw, ih = math.ceil(w * zoom), math.ceil(h * zoom)
            surface = skia.Surface(iw + 2 * PAD, ih + 2 * PAD)
            canvas = surface.getCanvas()
            canvas.clear(0)
            # drawn to fill whole pixels, so the image maps onto the box exactly
            canvas.translate(PAD, PAD)
            canvas.scale(iw / w, ih / h)
            draw_shape(canvas, layer, (0.0, 0.0, w, h), self.brand, self.unit)
            found = self._images[key] = (surface.makeImageSnapshot(), iw, ih)
        return found


def _largest_scale(layer: Layer) -> float:
    values = [layer.scale, 1.0] + [k.v for k in layer.track("scale")]
    pop = 1.1 if any(m is not None and m.preset == "pop" for m in (layer.enter, layer.exit)) else 1.0
    return min(4.0, max(values) * pop)



class LayerImages:
    """Text and shape layers drawn once into an image at their sub-pixel place, then copied there.

    Held text and shapes (most of a story's frames) are met by the boxes of what moves around
    them; drawn as paths and glyphs, a box cutting one must grow to hold it whole (its edges
    would differ), and it is painted again. As an image copied at a whole-pixel offset, a box may
    cut it like any copy. Each image is keyed by everything its pixels depend on, so which frames
    were drawn before never changes it. Bounded in bytes: `frames` frames' worth.
    """

    def __init__(self, width: int, height: int, frames: float = 1.5) -> None:
        limit = max(1, int(frames * width * height * 4))
        self._images: BoundedCache[Any, tuple[Any, int, int]] = BoundedCache(
            64, limit, sizeof=lambda key, found: (found[0].width() * found[0].height() * 4 if found[0] else 0) + 256)

    @staticmethod
    def used(layer: Layer, state: LayerState | None) -> bool:
        """Whether `layer` is drawn as an image at `state`: text or a shape, unscaled, unrotated,
        not being wiped."""
        return (state is not None and layer.type in ("text", "shape") and state.scale == 1.0
                and not state.rotation and state.wipe >= 1.0)

    def draw(self, canvas: skia.Canvas, key: Any, paint: Callable[[skia.Canvas], None], opacity: float) -> None:
        """Copy the image of `paint` (what it draws on an untransformed canvas) onto `canvas`."""
        found = self._images.get(key)
        if found is None:
            found = self._make(paint)
            self._images.put(key, found)
        image, x, y = found
        if image is not None:
            canvas.drawImage(image, x, y, skia.SamplingOptions(), skia.Paint(Alphaf=opacity) if opacity < 0.999 else None)

    def clear(self) -> None:
        self._images.clear()

    @staticmethod
    def _make(paint: Callable[[skia.Canvas], None]) -> tuple[Any, int, int]:
        recorder = skia.PictureRecorder()
        paint(recorder.beginRecording(skia.Rect.MakeLTRB(-1e6, -1e6, 1e6, 1e6), skia.RTreeFactory()()))
        picture = recorder.finishRecordingAsPicture()
        if not picture.approximateOpCount():
            return None, 0, 0
        cull = picture.cullRect()
        x, y = math.floor(cull.left()) - PAD, math.floor(cull.top()) - PAD
        w, h = math.ceil(cull.right()) + PAD - x, math.ceil(cull.bottom()) + PAD - y
        surface = skia.Surface(w, h)
        canvas = surface.getCanvas()
        canvas.clear(0)
        canvas.translate(-x, -y)  # whole pixels: the text keeps its sub-pixel place
        paint(canvas)
        return surface.makeImageSnapshot(), x, y
