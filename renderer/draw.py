"""Skia drawing of the pieces of a frame: fills, backgrounds, images, shapes.

Nothing here knows about time; callers pass the state to draw. Images are decoded and scaled to
the size they are drawn at once (`ImageStore`), because resampling a large image every frame
costs more than the rest of the frame together.
"""
from __future__ import annotations

import math
from pathlib import Path

import skia

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Asset, Background, Doc, Gradient, Layer, View
from reelfarm.renderer.tokens import Brand, argb

Rect = tuple[float, float, float, float]  # left, top, width, height
SAMPLING = skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kNone)
_HQ = skia.SamplingOptions(skia.CubicResampler.Mitchell())
BACKDROP_BLUR = 0.03  # the blur of a bounded picture's backdrop, as a share of the box's long side
BACKDROP_SHADE = 0x33000000  # laid over the blurred backdrop, so the picture itself stands out


def gradient_shader(g: Gradient, brand: Brand, rect: Rect) -> skia.Shader:
    """A linear or radial gradient shader spanning `rect`."""
    x, y, w, h = rect
    colors = [argb(brand.color(c)) for c in g.colors]
    stops = list(g.stops) if g.stops and len(g.stops) == len(colors) else None
    if g.type == "radial":
        cx, cy = x + g.center[0] * w, y + g.center[1] * h
        radius = max(1.0, g.radius * math.hypot(w, h))
        return skia.GradientShader.MakeRadial(skia.Point(cx, cy), radius, colors, stops)
    # Endpoints on the line through the centre at `angle`, just far enough to span the rect.
    a = math.radians(g.angle)
    ux, uy = math.cos(a), math.sin(a)
    half = (abs(w * ux) + abs(h * uy)) / 2.0
    cx, cy = x + w / 2.0, y + h / 2.0
    dx, dy = ux * half, uy * half
    return skia.GradientShader.MakeLinear([skia.Point(cx - dx, cy - dy), skia.Point(cx + dx, cy + dy)],
                                          colors, stops)


def fill_paint(fill: str | Gradient | None, brand: Brand, rect: Rect, alpha: float = 1.0) -> skia.Paint:
    paint = skia.Paint(AntiAlias=True)
    if isinstance(fill, Gradient):
        paint.setShader(gradient_shader(fill, brand, rect))
    else:
        paint.setColor(argb(brand.color(fill or "$brand.colors.primary")))
    if alpha < 1.0:
        paint.setAlphaf(paint.getAlphaf() * alpha)
    paint.setDither(isinstance(fill, Gradient))
    return paint


class ImageStore:
    """Decodes each asset once and keeps copies scaled to the sizes they are drawn at."""

    def __init__(self, doc: Doc, assets: AssetSource | None) -> None:
        self.doc = doc
        self.assets = assets
        self._decoded: dict[str, skia.Image | skia.SVGDOM] = {}
        self._scaled: dict[tuple[str, int, int, str], tuple[skia.Image, Rect]] = {}
        self._backdrops: dict[tuple[str, int, int], skia.Image] = {}

    def source(self, asset_id: str) -> skia.Image | skia.SVGDOM:
        if asset_id not in self._decoded:
            self._decoded[asset_id] = self._decode(asset_id)
        return self._decoded[asset_id]

    def fitted(self, asset_id: str, box_w: int, box_h: int, fit: str, max_zoom: float = 1.0) -> tuple[skia.Image, Rect]:
        """The image scaled for a box, and the destination rect inside the box (box-relative).

        For `cover` the image is scaled so the box is covered `max_zoom` times over, leaving room
        for Ken Burns zooms without upsampling per frame.
        """
        key = (asset_id, box_w, box_h, f"{fit}@{max_zoom:.3f}")
        if key not in self._scaled:
            self._scaled[key] = self._fit(self.source(asset_id), box_w, box_h, fit, max_zoom)
        return self._scaled[key]

    def backdrop(self, asset_id: str, box_w: int, box_h: int) -> skia.Image:
        """The image covering a ``box_w`` x ``box_h`` box about its centre, blurred and a little
        darkened: what fills the rest of a box around a picture kept whole by ``crop_max``. The
        same for every frame, so made once."""
        key = (asset_id, box_w, box_h)
        if key not in self._backdrops:
            image, _ = self.fitted(asset_id, box_w, box_h, "cover")
            surface = skia.Surface(box_w, box_h)
            canvas = surface.getCanvas()
            sigma = max(box_w, box_h) * BACKDROP_BLUR
            blur = skia.Paint(ImageFilter=skia.ImageFilters.Blur(sigma, sigma, skia.TileMode.kClamp))
            left, top = (box_w - image.width()) / 2.0, (box_h - image.height()) / 2.0
            canvas.drawImage(image, left, top, SAMPLING, blur)
            canvas.drawColor(BACKDROP_SHADE)
            self._backdrops[key] = surface.makeImageSnapshot()
        return self._backdrops[key]

    def _decode(self, asset_id: str) -> skia.Image | skia.SVGDOM:
        asset = self.doc.asset(asset_id)
        if asset is None and asset_id == "$brand.logo":
            logo = (self.doc.brand or {}).get("logo") or {}
            asset = Asset("image", url=logo.get("url"), key=logo.get("key")) if logo.get("url") or logo.get("key") else None
        if asset is None:
            raise AssetError(f"asset {asset_id!r} is not in the document's asset table")
        if self.assets is None:
            raise AssetError(f"asset {asset_id!r}: no asset source was given to the renderer")
        path = self.assets.path(asset_id, asset)
        data = Path(path).read_bytes()
        if path.lower().endswith(".svg") or data.lstrip()[:5] in (b"<svg ", b"<?xml"):
            dom = skia.SVGDOM.MakeFromStream(skia.MemoryStream(data))
            if dom is None:
                raise AssetError(f"asset {asset_id!r}: not a readable SVG image")
            return dom
        image = skia.Image.MakeFromEncoded(skia.Data.MakeWithCopy(data))
        if image is None:
            raise AssetError(f"asset {asset_id!r}: not a readable PNG, JPEG or WebP image")
        return image.makeRasterImage()

    def _fit(self, src: skia.Image | skia.SVGDOM, box_w: int, box_h: int, fit: str, zoom: float) -> tuple[skia.Image, Rect]:
        sw, sh = _source_size(src)
        if fit == "fill":
            return _drawn_at(src, sw, sh, box_w, box_h), (0.0, 0.0, float(box_w), float(box_h))
        scale = (max if fit == "cover" else min)(box_w / sw, box_h / sh) * (zoom if fit == "cover" else 1.0)
        tw, th = max(1, round(sw * scale)), max(1, round(sh * scale))
        image = _drawn_at(src, sw, sh, tw, th)
        if fit == "cover":
            return image, (0.0, 0.0, float(box_w), float(box_h))
        return image, ((box_w - tw) / 2.0, (box_h - th) / 2.0, float(tw), float(th))


def _drawn_at(src: skia.Image | skia.SVGDOM, sw: float, sh: float, width: int, height: int) -> skia.Image:
    """``src`` (``sw`` x ``sh``) drawn at ``width`` x ``height``."""
    surface = skia.Surface(width, height)
    canvas = surface.getCanvas()
    canvas.clear(0)
    if isinstance(src, skia.SVGDOM):
        src.setContainerSize(skia.Size(sw, sh))
        canvas.scale(width / sw, height / sh)
        src.render(canvas)
    else:
        canvas.drawImageRect(src, skia.Rect.MakeWH(width, height), _HQ)
    return surface.makeImageSnapshot()


def _source_size(src: skia.Image | skia.SVGDOM) -> tuple[float, float]:
    if isinstance(src, skia.SVGDOM):
        size = src.containerSize()
        w, h = size.width(), size.height()
        return (w or 512.0, h or 512.0)
    return float(src.width()), float(src.height())


def lerp_view(a: View, b: View, p: float) -> View:
    return View(a.scale + (b.scale - a.scale) * p, a.x + (b.x - a.x) * p, a.y + (b.y - a.y) * p)


def draw_fitted(canvas: skia.Canvas, image: skia.Image, dest: Rect, box: Rect, fit: str,
                view: View | None, paint: skia.Paint | None = None) -> None:
    """Draw a fitted image into `box`; for `cover`, crop by the Ken Burns `view`."""
    bx, by, bw, bh = box
    if fit != "cover":
        dx, dy, dw, dh = dest
        canvas.drawImageRect(image, skia.Rect.MakeXYWH(bx + dx, by + dy, dw, dh), SAMPLING, paint)
        return
    view = view or View()
    iw, ih = image.width(), image.height()
    # The crop covering the box at zoom 1 is box-sized around the focus; zoom shrinks it.
    crop_w = min(iw, (bw * min(iw / bw, ih / bh)) / max(1.0, view.scale))
    crop_h = min(ih, (bh * min(iw / bw, ih / bh)) / max(1.0, view.scale))
    cx = min(max(view.x * iw, crop_w / 2), iw - crop_w / 2)
    cy = min(max(view.y * ih, crop_h / 2), ih - crop_h / 2)
    src = skia.Rect.MakeXYWH(cx - crop_w / 2, cy - crop_h / 2, crop_w, crop_h)
    canvas.drawImageRect(image, src, skia.Rect.MakeXYWH(bx, by, bw, bh), SAMPLING,
                         paint, skia.Canvas.kFast_SrcRectConstraint)


def draw_bounded(canvas: skia.Canvas, image: skia.Image, backdrop: skia.Image, box: Rect, view: View | None,
                 crop_max: float) -> None:
    """Draw ``image`` (scaled for ``cover``) into ``box`` hiding at most ``crop_max`` of its width
    or height, the Ken Burns ``view``'s zoom included; where that leaves part of the box uncovered,
    ``backdrop`` shows there. The crop is centred on the view's focus, kept inside the picture."""
    bx, by, bw, bh = box
    view = view or View()
    iw, ih = image.width(), image.height()
    covering = max(bw / iw, bh / ih)  # box pixels per image pixel when the box is just covered
    bound = min(bw / iw, bh / ih) / (1.0 - crop_max)  # the most that hides no more than crop_max
    k = min(covering * max(1.0, view.scale), bound)
    src_w, src_h = min(iw, bw / k), min(ih, bh / k)
    dest_w, dest_h = src_w * k, src_h * k
    if dest_w < bw - 0.5 or dest_h < bh - 0.5:
        canvas.drawImageRect(backdrop, skia.Rect.MakeXYWH(bx, by, bw, bh), SAMPLING)
    cx = min(max(view.x * iw, src_w / 2), iw - src_w / 2)
    cy = min(max(view.y * ih, src_h / 2), ih - src_h / 2)
    src = skia.Rect.MakeXYWH(cx - src_w / 2, cy - src_h / 2, src_w, src_h)
    dest = skia.Rect.MakeXYWH(bx + (bw - dest_w) / 2, by + (bh - dest_h) / 2, dest_w, dest_h)
    canvas.drawImageRect(image, src, dest, SAMPLING, None, skia.Canvas.kFast_SrcRectConstraint)


def draw_background(canvas: skia.Canvas, bg: Background, brand: Brand, images: ImageStore,
                    width: int, height: int, kb: float) -> None:
    frame = (0.0, 0.0, float(width), float(height))
    if bg.type == "solid":
        canvas.clear(argb(brand.color(bg.color)))
        return
    if bg.gradient is not None:
        canvas.drawPaint(fill_paint(bg.gradient, brand, frame))
        return
    canvas.clear(argb(brand.color(bg.color)) | 0xFF000000)
    zoom = max(bg.ken_burns.start.scale, bg.ken_burns.end.scale) if bg.ken_burns else 1.0
    image, dest = images.fitted(bg.asset or "", width, height, bg.fit, zoom)
    view = lerp_view(bg.ken_burns.start, bg.ken_burns.end, kb) if bg.ken_burns else None
    draw_fitted(canvas, image, dest, frame, bg.fit, view)
    if bg.overlay:
        canvas.drawColor(argb(brand.color(bg.overlay)))


def draw_shape(canvas: skia.Canvas, layer: Layer, rect: Rect, brand: Brand, unit: float) -> None:
    """Draw a shape layer into `rect`; `unit` is the frame's short side in pixels."""
    x, y, w, h = rect
    r = skia.Rect.MakeXYWH(x, y, w, h)
    radius = brand.number(layer.radius) * unit
    if layer.shape == "line":
        paint = skia.Paint(AntiAlias=True, Style=skia.Paint.kStroke_Style,
                           StrokeWidth=max(1.0, (layer.stroke.width if layer.stroke else 0.004) * unit),
                           StrokeCap=skia.Paint.kRound_Cap)
        color = layer.stroke.color if layer.stroke else (layer.fill if isinstance(layer.fill, str) else "$brand.colors.text")
        paint.setColor(argb(brand.color(color)))
        if h > 0.5:
            canvas.drawLine(x, y, x + w, y + h, paint)
        else:
            canvas.drawLine(x, y, x + w, y, paint)
        return
    if layer.fill is not None:
        _shape_path(canvas, layer.shape, r, radius, fill_paint(layer.fill, brand, rect))
    if layer.stroke is not None:
        paint = skia.Paint(AntiAlias=True, Style=skia.Paint.kStroke_Style,
                           StrokeWidth=layer.stroke.width * unit)
        paint.setColor(argb(brand.color(layer.stroke.color)))
        _shape_path(canvas, layer.shape, r, radius, paint)


def _shape_path(canvas: skia.Canvas, shape: str, r: skia.Rect, radius: float, paint: skia.Paint) -> None:
    if shape == "ellipse":
        canvas.drawOval(r, paint)
    elif shape == "rounded_rect" or radius > 0:
        canvas.drawRRect(skia.RRect.MakeRectXY(r, radius, radius), paint)
    else:
        canvas.drawRect(r, paint)
