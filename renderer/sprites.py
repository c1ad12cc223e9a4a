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

A faint shape at least `PLACED_MIN` pixels on its shorter side is also *placed* on a grid
(`Sprites.placed`): its edges on a grid fine enough that moving an edge to it changes a pixel by
at most `EDGE_LEVELS` of 255 (whole pixels for a fill of up to twice that alpha, halves up to four
times, ...), and its opacity in steps that change a pixel by at most `LEVELS_PER_STEP`. An orb
drifting a third of a pixel a frame, growing and fading in then changes every few frames instead
of every frame, and the frames between are the same frame (skipped). The grid is a function of
the layer's state alone, so every frame stays a function of its time. A thinner shape is drawn
where its state puts it (both its edges may fall in one pixel, whose cover a grid would change
by more).

An image drawn filtered under a clip is sampled by Skia's legacy bilinear path, which maps the
first pixel of each row's span through the inverse matrix in float and steps the rest in fixed
point: a span that starts elsewhere (a box's clip) could land a sample position on the other side
of a rounding and change a pixel by a level. So the drawn rect and the image's source rect are
chosen (`exact_span`) to make that mapping exact at every pixel, moving the shape's edges by at
most what changes a pixel by `EXACT_LEVELS` (on top of the grid's `EDGE_LEVELS`, within what
`test_fidelity` allows); where no such rects are near enough (the widest and least faint shapes,
more often at 2160p), the image goes through Skia's raster pipeline, which maps each pixel by
itself at some 3x the cost. Each frame is again a function of its time alone.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import skia

from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.draw import Rect, draw_shape
from reelfarm.renderer.model import Layer
from reelfarm.renderer.target import CpuTarget
from reelfarm.renderer.timeline import LayerState
from reelfarm.renderer.tokens import Brand, parse_hex

MAX_ALPHA = 0x40  # the faintest quarter: a resampled edge moves these pixels by at most ~16 levels
PAD = 2           # transparent pixels around the shape, so the image's own edge draws nothing
LEVELS_PER_STEP = 2  # the most one opacity step of a placed shape changes a pixel, of 255
EDGE_LEVELS = 13     # the most moving a placed shape's edge onto its grid changes a pixel, of 255
PLACED_MIN = 8       # pixels on the shorter side a shape needs to be placed on a grid
# Where the grid's lines fall within a pixel: not on whole or half pixels. Measured: an image
# drawn filtered onto whole-pixel edges at a whole-pixel size lands on rounding ties, and then a
# clip (where its rows start) changes pixels by one level; off those points it never did.
GRID_PHASE = 0.3183
SPANS_MAX = 4096  # exact spans kept (a few per orb and placement)
_SAMPLING = skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kNone)
# A colour filter that changes nothing, but moves an image's draw onto Skia's raster pipeline, which
# maps every pixel's position by itself (measured: the same under any clip, at some 3x the cost)
EVERY_PIXEL_MAPPED = skia.ColorFilters.Matrix([1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0])


class Sprites:
    """The images of one rasterizer's faint flat shapes, made on first use."""

    def __init__(self, brand: Brand, unit: float, width: int) -> None:
        self.brand, self.unit = brand, unit
        self.width = width  # the frame's, for `exact_span`
        self._spans: dict[tuple[float, float, int, float], tuple[float, float, float | None]] = {}  # `span`'s
        self._images: dict[tuple[int, int, int], tuple[skia.Image, int, int]] = {}
        self._takes: dict[int, bool] = {}
        # by the layer's id, each holding the layer itself (so that no other layer takes its id)
        self._alphas: dict[int, tuple[Layer, int]] = {}
        self._zooms: dict[int, tuple[Layer, float]] = {}
        # each layer's last placement, by the box and the very state it was worked out for (a
        # layer is placed in every box it is drawn in, with the state of its frame)
        self._placed: dict[int, tuple[Layer, Rect, LayerState, Placement]] = {}

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

    def placed(self, layer: Layer, box: Rect, state: LayerState) -> Placement:
        """Where and how opaque `layer` is drawn for `box` (the shape's own box) at `state`: its
        shape's box scaled about its centre, and its opacity. On a shape of at least `PLACED_MIN`
        pixels the edges are rounded to its grid and the opacity to its steps (equal placements
        draw equal pixels); on a smaller one they are as the state says."""
        last = self._placed.get(id(layer))
        if last is not None and last[0] is layer and last[1] == box and last[2] is state:
            return last[3]
        at = self._place(layer, box, state)
        self._placed[id(layer)] = (layer, box, state, at)
        return at

    def _place(self, layer: Layer, box: Rect, state: LayerState) -> Placement:
        x, y, w, h = box
        s = state.scale
        cx, cy = x + w / 2.0, y + h / 2.0
        left, top, right, bottom = cx - w * s / 2.0, cy - h * s / 2.0, cx + w * s / 2.0, cy + h * s / 2.0
        if min(right - left, bottom - top) < PLACED_MIN:
            return Placement(left, top, right, bottom, state.opacity)
        alpha = self._alpha(layer)
        cells = max(1, math.ceil(alpha / (2 * EDGE_LEVELS)))  # grid lines a pixel
        steps = max(1, math.ceil(alpha / LEVELS_PER_STEP))
        def grid(v: float) -> float:
            return (round(v * cells - GRID_PHASE) + GRID_PHASE) / cells

        return Placement(grid(left), grid(top), grid(right), grid(bottom), round(state.opacity * steps) / steps)

    def draw(self, canvas: skia.Canvas, layer: Layer, box: Rect, state: LayerState) -> None:
        """Draw `layer`'s image for `box` (the shape's own box) at its placement, filtered,
        unaliased. The rect is worked out here, not by the canvas: an image drawn through a scaled
        matrix was seen to change where a clip cuts it."""
        at = self.placed(layer, box, state)
        found = self.span(layer, box, at)
        if found is None:
            return
        dest, source = found
        image, _, _ = self._image(layer, box[2], box[3])
        paint = skia.Paint(Alphaf=at.opacity) if at.opacity < 0.999 else None
        if source is None:  # every pixel mapped: some 3x dearer
            paint = paint or skia.Paint()
            paint.setColorFilter(EVERY_PIXEL_MAPPED)
        canvas.drawImageRect(image, skia.Rect.MakeWH(source or image.width(), image.height()), dest, _SAMPLING,
                             paint, skia.Canvas.kFast_SrcRectConstraint)

    def span(self, layer: Layer, box: Rect, at: Placement) -> tuple[skia.Rect, float | None] | None:
        """The rect `layer`'s image is drawn into at placement `at` (for `box`, the shape's own),
        the image's transparent margin included (nothing is drawn outside it), and the width of
        the image's source rect `exact_span` found for it; None where it found none (the image is
        drawn whole into the rect asked, through Skia's raster pipeline, which maps every pixel by
        itself, and whose inside is a level off that of a draw on Skia's legacy path: a change of
        path changes the whole box). None for the whole: nothing is drawn."""
        w, h = box[2], box[3]
        if w <= 0 or h <= 0 or at.right <= at.left or at.bottom <= at.top or at.opacity <= 0.0:
            return None
        zoom = self._zoom(layer)
        iw, ih = math.ceil(w * zoom), math.ceil(h * zoom)  # the image's size (``_image``)
        # the image's transparent margin, at the scale the shape is drawn
        px, py = PAD * (at.right - at.left) / iw, PAD * (at.bottom - at.top) / ih
        # an edge moved by d pixels changes a pixel by at most alpha * d levels
        key = (at.left - px, at.right + px, iw + 2 * PAD, min(EXACT_SPAN_MAX_PX, EXACT_LEVELS / max(1, self._alpha(layer))))
        span = self._spans.get(key)
        if span is None:
            if len(self._spans) >= SPANS_MAX:
                self._spans.clear()
            exact = exact_span(key[0], key[1], key[2], self.width, key[3])
            span = self._spans[key] = exact or (key[0], key[1], None)
        return skia.Rect.MakeLTRB(span[0], at.top - py, span[1], at.bottom + py), span[2]

    def _alpha(self, layer: Layer) -> int:
        found = self._alphas.get(id(layer))
        if found is None or found[0] is not layer:
            found = self._alphas[id(layer)] = (layer, parse_hex(self.brand.color(layer.fill))[3]
                                               if isinstance(layer.fill, str) else 0xFF)
        return found[1]

    def _zoom(self, layer: Layer) -> float:
        found = self._zooms.get(id(layer))
        if found is None or found[0] is not layer:
            found = self._zooms[id(layer)] = (layer, _largest_scale(layer))
        return found[1]

    def clear(self) -> None:
        self._images.clear()
        self._placed.clear()
        self._spans.clear()

    def _image(self, layer: Layer, w: float, h: float) -> tuple[skia.Image, int, int]:
        key = (id(layer), round(w * 16), round(h * 16))
        found = self._images.get(key)
        if found is None:
            zoom = self._zoom(layer)
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


_F32, _I32 = struct.Struct("<f"), struct.Struct("<i")
_OFFSET_STEPS = (0, 1, -1, 2, -2, 3, -3)  # offsets tried, in steps of their grid
_LEFT_STEPS = (0, 1, -1, 2, -2)  # float32 steps tried around a left
_SCALES_TRIED = 64  # inverse scales tried, nearest first
_NEAR = (0, 1, -1, 2, -2, 3, -3)  # float32 steps tried around a value
EXACT_LEVELS = 12  # the most an exact span's moving a shape's edge may change a pixel, of 255 (the nearest is taken)
EXACT_SPAN_MAX_PX = 0.5  # ... and the most it moves an edge at all


def _f32(x: float) -> float:
    """`x` rounded to float32 (a sum, product or quotient of float32s so rounded is float32's own)."""
    return float(_F32.unpack(_F32.pack(x))[0])


def _step(x: float, k: int) -> float:
    """The float32 `k` representable values from float32 `x` (away from zero for k > 0 when x < 0)."""
    return float(_F32.unpack(_I32.pack(_I32.unpack(_F32.pack(x))[0] + k))[0])


def exact_span(left: float, right: float, image_width: int, frame_width: int,
               tolerance: float) -> tuple[float, float, float] | None:
    """A rect's left and right and a source width (float32s) with which an image ``image_width``
    wide, its source rect ``0..source width`` drawn into ``left..right`` (``kFast``), lands within
    ``tolerance`` pixels of ``left``..``right`` and has the same source position at every pixel however
    a clip cuts its rows; None where there is none. The source width is at most a pixel short of
    the image's: what it leaves out is the image's transparent margin.

    Skia inverts the rect's matrix in float32 (``q = 1 / (width / source width)``, offset ``-left *
    q``) and maps the first pixel ``x`` of a span to ``(x + 0.5) * q + offset`` in float32, stepping
    by ``q`` in 32.32 fixed point (exact) after it. That mapping is exact, so the same as stepping
    from any other start, when ``q`` has few enough bits that ``(2x + 1) * q`` fits float32's 24 for
    every ``x`` a span of the rect can start at, and the offset lies on the products' grid with every sum (a position
    in the image) within 24 bits. So ``q`` has some 12 significant bits at 1080p and 11 at 2160p,
    and the widest shapes may find none near enough. The search emulates Skia's float32 arithmetic
    (Python's double arithmetic rounded to float32 is float32's own for these operations)."""
    asked = right - left
    inverse = image_width / asked
    last = min(frame_width, math.ceil(right) + 1)  # the last pixel a span of it can start at
    exponent = min(23 - math.ceil(math.log2(2 * last + 1)) - math.floor(math.log2(inverse)),  # products
                   23 - math.ceil(math.log2(image_width + 2)),  # positions in the image
                   23 - math.ceil(math.log2(abs(left) * inverse + 2)))  # the offset
    grain = 2.0 ** (exponent + 1)  # the products' grid, which the offset keeps to
    centre, ideal = (left + right) / 2.0, inverse * 2.0 ** exponent
    # the inverse scales (numerators over 2^exponent) whose image lands near enough, nearest first
    low = math.ceil(image_width / (asked + 2 * tolerance) * 2.0 ** exponent)
    high = math.floor(image_width / max(asked - 2 * tolerance, 1e-9) * 2.0 ** exponent)
    for m in sorted(range(low, high + 1), key=lambda m: abs(m - ideal))[:_SCALES_TRIED]:
        q = m / 2.0 ** exponent  # exact in float32
        scales = [x for x in (_step(_f32(1.0 / q), k) for k in _NEAR) if _f32(1.0 / x) == q]  # Skia's sx
        if scales:
            found = _placed(left, right, centre, image_width, q, scales, grain, tolerance)
            if found is not None:
                return found
    return None


def _placed(left: float, right: float, centre: float, image_width: int, q: float, scales: list[float],
            grain: float, tolerance: float) -> tuple[float, float, float] | None:
    """For `exact_span`: a left whose offset ``-left * q`` is on the grid, a right, and a source
    width at most a pixel short of the image's that make Skia's scale one of ``scales`` (whose
    inverses are ``q``), the image (``image_width / q`` wide) about ``centre``."""
    drawn = image_width / q
    first = round(-(centre - drawn / 2.0) * q * grain)
    for k in _OFFSET_STEPS:
        offset = (first + k) / grain
        guess = _f32(-offset / q)
        for j in _LEFT_STEPS:
            lft = _step(guess, j)
            if _f32(-lft * q) != offset or max(abs(lft - left), abs(lft + drawn - right)) > tolerance:
                continue
            for rgt in (_step(_f32(lft + drawn), i) for i in _NEAR):
                width = _f32(rgt - lft)
                for sx in scales:
                    for source in (_step(_f32(width / sx), i) for i in _NEAR):
                        if image_width - 1 < source <= image_width and _f32(width / source) == sx:
                            return lft, rgt, source
    return None


class Placement(NamedTuple):
    """A placed faint shape: its box in pixels and its opacity (see `Sprites.placed`)."""

    left: float
    top: float
    right: float
    bottom: float
    opacity: float


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
        self._frame = (width, height)
        self._pad: CpuTarget | None = None  # `_make`'s frame-sized surface, made on first use
        self._images: BoundedCache[Any, tuple[Any, int, int]] = BoundedCache(
            64, limit, sizeof=lambda key, found: (found[0].width() * found[0].height() * 4 if found[0] else 0) + 256)

    @staticmethod
    def used(layer: Layer, state: LayerState | None) -> bool:
        """Whether `layer` is drawn as an image at `state`: text or a shape, unscaled, unrotated,
        not being wiped."""
        return (state is not None and layer.type in ("text", "shape") and state.scale == 1.0
                and not state.rotation and state.wipe >= 1.0)

    def draw(self, canvas: skia.Canvas, key: Any, paint: Callable[[skia.Canvas], None], opacity: float,
             layer: skia.Rect | None = None) -> None:
        """Copy the image of `paint` (what it draws on an untransformed canvas; inside a layer of
        bounds `layer` where given, as the reference draws a faded one) onto `canvas`."""
        found = self._images.get(key)
        if found is None:
            found = self._make(paint, layer)
            self._images.put(key, found)
        image, x, y = found
        if image is not None:
            canvas.drawImage(image, x, y, skia.SamplingOptions(), skia.Paint(Alphaf=opacity) if opacity < 0.999 else None)

    def clear(self) -> None:
        self._images.clear()
        self._pad = None

    def _make(self, paint: Callable[[skia.Canvas], None], layer: skia.Rect | None = None) -> tuple[Any, int, int]:
        """The image of `paint` where it meets the frame, and its place.

        Drawn where the frame has it, on a transparent frame-sized pad, and copied out: drawn on a
        small surface moved there instead, a glyph's outline lands a float32 rounding apart (its
        points are placed at another magnitude), and an edge lying on an anti-aliasing sample
        boundary then covers a quarter of a pixel less or more (seen: 53 levels at a headline's
        baseline, one frame of a slide). A layer's origin moves it the same way, so a faded one
        is drawn through the reference's layer. Cut at the frame's edges as drawing on the frame
        cuts it; nothing else clips it (a clip would move the layer's origin)."""
        recorder = skia.PictureRecorder()
        paint(recorder.beginRecording(skia.Rect.MakeLTRB(-1e6, -1e6, 1e6, 1e6), skia.RTreeFactory()()))
        picture = recorder.finishRecordingAsPicture()
        if not picture.approximateOpCount():
            return None, 0, 0
        width, height = self._frame
        cull = picture.cullRect()
        x, y = max(0, math.floor(cull.left()) - PAD), max(0, math.floor(cull.top()) - PAD)
        w, h = min(width, math.ceil(cull.right()) + PAD) - x, min(height, math.ceil(cull.bottom()) + PAD) - y
        if w <= 0 or h <= 0:
            return None, 0, 0
        if self._pad is None:
            self._pad = CpuTarget.make(width, height)
        pad = self._pad
        pad.array[y:y + h, x:x + w] = 0
        canvas = pad.surface.getCanvas()
        if layer is not None:
            canvas.saveLayer(layer, None)
        paint(canvas)
        if layer is not None:
            canvas.restore()
        # a snapshot of a part is a copy of that part (of the whole, it would make the surface
        # copy-on-write and part it from its array)
        return pad.surface.makeImageSnapshot(skia.IRect.MakeXYWH(x, y, w, h)), x, y
