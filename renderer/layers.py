"""How the CPU rasterizer draws one layer: its state at a time (worked out once a frame), its box,
text shaped once per layer and box size, images, clips, groups, and the faint shapes, held text
and shapes it draws from images (`reelfarm.renderer.sprites`).

`LayerPainter` is a part of `reelfarm.renderer.raster.SkiaRasterizer`, kept apart from how frames
and scenes are put together from layers (the rasterizer's own module); the linter measures
layers through the same methods.
"""
from __future__ import annotations

import functools
from typing import Any

import skia

from reelfarm.renderer import compose
from reelfarm.renderer.cache import BoundedCache
from reelfarm.renderer.draw import ImageStore, Rect, draw_bounded, draw_fitted, draw_shape, lerp_view
from reelfarm.renderer.fonts import FontBook
from reelfarm.renderer.glide import Glides
from reelfarm.renderer.model import Doc, Footage, Layer, View
from reelfarm.renderer.sprites import LayerImages, Sprites
from reelfarm.renderer.text import TextBlock, TextSpec, shown_chars
from reelfarm.renderer.timeline import LayerState, layer_state
from reelfarm.renderer.tokens import Brand, argb

_ANCHORS = {
    "top-left": (0.0, 0.0), "top": (0.5, 0.0), "top-right": (1.0, 0.0),
    "left": (0.0, 0.5), "center": (0.5, 0.5), "right": (1.0, 0.5),
    "bottom-left": (0.0, 1.0), "bottom": (0.5, 1.0), "bottom-right": (1.0, 1.0),
}
_DEFAULT_TEXT_W = 0.9


class LayerPainter:
    """Drawing one layer of a document at a time (the rasterizer's attributes below are set by it)."""

    doc: Doc
    width: int
    height: int
    fmt: str
    unit: float
    brand: Brand
    book: FontBook
    images: ImageStore
    _sprites: Sprites | None
    _layer_images: LayerImages | None
    _glides: Glides | None
    _texts: BoundedCache[tuple[int, int, int], TextBlock]
    _states: dict[tuple[int, float, float], tuple[Layer, Any]]
    _clips: Any  # a footage.ClipStore, made for the first video drawn (PyAV loads then)

    @property
    def clips(self) -> Any:
        """The document's video clips (``reelfarm.renderer.footage.ClipStore``)."""
        if self._clips is None:
            from reelfarm.renderer.footage import ClipStore
            self._clips = ClipStore(self.doc, self.images.assets)
        return self._clips

    def _state(self, layer: Layer, t: float, duration: float) -> LayerState | None:
        """`layer_state`, worked out once a frame: a layer is keyed, measured and drawn in each
        box it meets at the same `t`."""
        key = (id(layer), t, duration)
        found = self._states.get(key)
        if found is None or found[0] is not layer:  # holding the layer: no other takes its id
            if len(self._states) > 256:
                self._states.clear()
            found = self._states[key] = (layer, layer_state(layer, t, duration))
        return found[1]

    def _frame_box(self) -> Rect:
        return (0.0, 0.0, float(self.width), float(self.height))

    def _draw_layer(self, canvas: skia.Canvas, layer: Layer, t: float, duration: float, parent: Rect) -> None:
        state = self._state(layer, t, duration)
        if state is None:
            return
        box, block = self._box(layer, state, parent)
        x, y, w, h = box
        if self._sprites is not None and self._sprites.used(layer, state):
            self._sprites.draw(canvas, layer, box, state)
            return
        if self._glides is not None and self._glides.planned(layer, state) and canvas.getTotalMatrix().isIdentity():
            self._glides.draw(canvas, layer, box, functools.partial(self._paint_image, layer, state))
            return
        if self._layer_images is not None and LayerImages.used(layer, state) and canvas.getTotalMatrix().isIdentity():
            # Drawn faded, the reference draws it into a layer of these bounds, whose origin moves
            # where its edges land by a float32 rounding: its image is drawn through the same layer.
            layered = (_bounds(_outset(box, block, layer, self.unit), 0.02 * self.unit)
                       if state.opacity < 0.999 else None)
            if block is not None:
                key: Any = (id(layer), id(block), box, shown_chars(display_text(layer), state.reveal, state.reveal_mode),
                            layered is not None)
                self._layer_images.draw(canvas, key, lambda c: self._draw_text(c, layer, block, box, state),
                                        state.opacity, layered)
            else:
                self._layer_images.draw(canvas, (id(layer), box, layered is not None),
                                        lambda c: draw_shape(c, layer, box, self.brand, self.unit), state.opacity, layered)
            return
        depth = canvas.save()
        cx, cy = x + w / 2.0, y + h / 2.0
        if state.rotation or state.scale != 1.0:
            canvas.translate(cx, cy)
            canvas.rotate(state.rotation)
            canvas.scale(state.scale, state.scale)
            canvas.translate(-cx, -cy)
        if state.wipe < 1.0:
            canvas.clipRect(compose.wipe_rect(_outset(box, block, layer, self.unit), state.wipe, state.wipe_dir))
        if state.opacity < 0.999:
            canvas.saveLayerAlpha(_bounds(_outset(box, block, layer, self.unit), 0.02 * self.unit),
                                  round(state.opacity * 255))
        if layer.type == "text" and block is not None:
            self._draw_text(canvas, layer, block, box, state)
        elif layer.type == "image":
            self._draw_image(canvas, layer, box, state)
        elif layer.type == "video":
            self._draw_video(canvas, layer, box, t)
        elif layer.type == "shape":
            draw_shape(canvas, layer, box, self.brand, self.unit)
        elif layer.type == "group":
            for child in layer.children:
                self._draw_layer(canvas, child.for_format(self.fmt), t, duration, box)
        canvas.restoreToCount(depth)

    def _faded_bounds(self, layer: Layer, state: LayerState, parent: Rect) -> Rect | None:
        """Where `_draw_layer` puts a faded layer's offscreen layer, before its scale and rotation
        about its box's centre (None: drawn without one)."""
        if state.opacity >= 0.999:
            return None
        box, block = self._box(layer, state, parent)
        bounds = _bounds(_outset(box, block, layer, self.unit), 0.02 * self.unit)
        return bounds.x(), bounds.y(), bounds.width(), bounds.height()

    def _box(self, layer: Layer, state: LayerState, parent: Rect) -> tuple[Rect, TextBlock | None]:
        px, py, pw, ph = parent
        ax, ay = _ANCHORS[layer.anchor]
        block = None
        if layer.type == "text":
            bw, bh = self._text_box_size(layer, pw, ph)
            block = self._text_block(layer, (bw, bh))
            if bh <= 0:
                bh = block.height
        else:
            bw, bh = layer.w * pw, layer.h * ph
        left = px + (state.x + state.dx) * pw - ax * bw
        top = py + (state.y + state.dy) * ph - ay * bh
        return (left, top, bw, bh), block

    def _text_box_size(self, layer: Layer, pw: float, ph: float) -> tuple[float, float]:
        return (layer.w or _DEFAULT_TEXT_W) * pw, layer.h * ph

    def _text_block(self, layer: Layer, size: tuple[float, float]) -> TextBlock:
        key = (id(layer), round(size[0]), round(size[1]))
        block = self._texts.get(key)
        if block is None:
            block = TextBlock(self.text_spec(layer, size), self.book)
            self._texts.put(key, block)
        return block

    def text_spec(self, layer: Layer, size: tuple[float, float]) -> TextSpec:
        text = display_text(layer)
        size_px = layer.size * self.unit
        return TextSpec(
            text=text, font=self.brand.font(layer.font), size_px=size_px,
            min_size_px=(layer.min_size * self.unit) if layer.min_size else size_px * 0.5,
            color=self.brand.color(layer.color), align=layer.align, direction=layer.direction,
            line_height=layer.line_height, letter_spacing=layer.letter_spacing,
            auto_shrink=layer.auto_shrink, box_w=size[0], box_h=size[1],
        )

    def _draw_text(self, canvas: skia.Canvas, layer: Layer, block: TextBlock, box: Rect, state: LayerState) -> None:
        x, y, _w, h = box
        top = y
        if h > block.height:
            top = y + {"top": 0.0, "middle": (h - block.height) / 2.0, "bottom": h - block.height}[layer.valign]
        if layer.pill is not None:
            pad = layer.pill.padding * self.unit
            radius = self.brand.number(layer.pill.radius) * self.unit
            rect = skia.Rect.MakeXYWH(block.line_left(x) - pad, top - pad * 0.6, block.width + 2 * pad,
                                      block.height + 1.2 * pad)
            paint = skia.Paint(AntiAlias=True, Color=argb(self.brand.color(layer.pill.color)))
            canvas.drawRRect(skia.RRect.MakeRectXY(rect, radius, radius), paint)
        shadow = layer.shadow
        if shadow is not None:
            sigma = max(0.01, shadow.blur * self.unit / 2.0)
            filt = skia.ImageFilters.DropShadow(shadow.dx * self.unit, shadow.dy * self.unit, sigma, sigma,
                                                argb(self.brand.color(shadow.color)))
            reach = 3.0 * sigma + max(abs(shadow.dx), abs(shadow.dy)) * self.unit
            canvas.saveLayer(_bounds(_outset(box, block, layer, self.unit), reach), skia.Paint(ImageFilter=filt))
        block.paint(canvas, x, top, state.reveal, state.reveal_mode)
        if shadow is not None:
            canvas.restore()

    def _paint_image(self, layer: Layer, state: LayerState, canvas: skia.Canvas, box: Rect) -> None:
        """`_draw_image` with the layer and state first (what `reelfarm.renderer.glide` draws through)."""
        self._draw_image(canvas, layer, box, state)

    def _draw_image(self, canvas: skia.Canvas, layer: Layer, box: Rect, state: LayerState) -> None:
        x, y, w, h = box
        kb = layer.ken_burns
        zoom = max(kb.start.scale, kb.end.scale) if kb else 1.0
        image, dest = self.images.fitted(layer.asset or "", max(1, round(w)), max(1, round(h)), layer.fit, zoom)
        view = lerp_view(kb.start, kb.end, state.kb) if kb else None
        radius = self.brand.number(layer.radius) * self.unit
        if radius > 0:
            canvas.save()
            canvas.clipRRect(skia.RRect.MakeRectXY(skia.Rect.MakeXYWH(x, y, w, h), radius, radius), True)
        if layer.crop_max is not None and layer.fit == "cover":
            backdrop = self.images.backdrop(layer.asset or "", max(1, round(w)), max(1, round(h)))
            draw_bounded(canvas, image, backdrop, box, view, layer.crop_max)
        else:
            draw_fitted(canvas, image, dest, box, layer.fit, view)
        if radius > 0:
            canvas.restore()

    def _draw_video(self, canvas: skia.Canvas, layer: Layer, box: Rect, t: float) -> None:
        x, y, w, h = box
        if w < 0.5 or h < 0.5:
            return
        radius = self.brand.number(layer.radius) * self.unit
        if radius > 0:
            canvas.save()
            canvas.clipRRect(skia.RRect.MakeRectXY(skia.Rect.MakeXYWH(x, y, w, h), radius, radius), True)
        self._draw_clip(canvas, layer.asset or "", f"layer:{layer.id}", layer.footage, t - layer.start, box,
                        layer.fit)
        if radius > 0:
            canvas.restore()

    def _draw_clip(self, canvas: skia.Canvas, asset_id: str, slot: str, footage: Footage, elapsed: float,
                   box: Rect, fit: str, zoom: float = 1.0, view: View | None = None) -> None:
        """The clip frame shown `elapsed` seconds into `footage`, fitted to `box`."""
        number = self.clips.frame_number(asset_id, footage, elapsed)
        image, dest = self.clips.fitted(asset_id, slot, number, box[2], box[3], fit, zoom)
        draw_fitted(canvas, image, dest, box, fit, view)


def text_block_size(key: Any, block: TextBlock) -> int:
    # A shaped paragraph holds its glyph runs and line metrics: about 200 bytes a character.
    return 4096 + 200 * len(block.spec.text)


def display_text(layer: Layer) -> str:
    return layer.text.upper() if layer.uppercase else layer.text


def _outset(box: Rect, block: TextBlock | None, layer: Layer, unit: float) -> Rect:
    # A wipe must also reveal a text pill, which reaches past the text box.
    if block is None or layer.pill is None:
        return box
    pad = layer.pill.padding * unit
    x, y, w, h = box
    return (x - pad, y - pad, w + 2 * pad, h + 2 * pad)


def _bounds(box: Rect, margin: float) -> skia.Rect:
    x, y, w, h = box
    return skia.Rect.MakeXYWH(x - margin, y - margin, w + 2 * margin, h + 2 * margin)
