"""Decoding logos with skia: raster formats re-encoded as PNG, SVG rasterized, dominant colours counted.

An SVG has no pixel size of its own worth keeping, so it is drawn with its long side at
``MAX_SIDE``; a raster image is scaled down to fit ``MAX_SIDE`` and never up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import skia

from reelfarm.studio.brand.colors import RGB, distance

MAX_SIDE = 1024
MAX_SOURCE_PIXELS = 40_000_000  # a small file may decode to gigabytes; refuse before decoding
OPAQUE = 200  # alpha at or above which a pixel counts as opaque
WHITE_FLOOR = 240  # every channel at or above: white, not a brand colour
_SAMPLE_PIXELS = 512 * 512
_MAX_BUCKETS = 32
_VIEWBOX = re.compile(rb"<svg\b[^>]*?\bviewBox\s*=\s*[\"']\s*([-\d.eE+]+)[\s,]+([-\d.eE+]+)[\s,]+"
                      rb"([\d.eE+]+)[\s,]+([\d.eE+]+)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class DecodedLogo:
    png: bytes
    width: int
    height: int
    colors: list[tuple[RGB, float]]  # most common first, with their share of the opaque pixels


def decode_logo(data: bytes, content_type: str = "") -> DecodedLogo | None:
    """The logo in ``data`` as PNG and colours; None when it cannot be decoded or shows nothing."""
    if looks_like_svg(data, content_type):
        image = rasterize_svg(data)
    else:
        image = _fit_raster(data)
    if image is None:
        return None
    pixels = image.toarray(colorType=skia.kRGBA_8888_ColorType, alphaType=skia.kUnpremul_AlphaType)
    if not (pixels[..., 3] > 0).any():
        return None  # a blank image (an SVG of <use> references, a spacer): try the next candidate
    encoded = image.encodeToData(skia.kPNG, 100)
    if encoded is None:
        return None
    return DecodedLogo(bytes(encoded), image.width(), image.height(), dominant_colors(pixels))


def looks_like_svg(data: bytes, content_type: str = "") -> bool:
    """Whether ``data`` is an SVG document (by its media type or its first bytes)."""
    if "svg" in content_type:
        return True
    head = data[:512].lstrip().lower()
    return head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:4096].lower())


def rasterize_svg(data: bytes) -> skia.Image | None:
    """Draw an SVG document with its long side at MAX_SIDE pixels; None when skia cannot read it."""
    try:
        dom = skia.SVGDOM.MakeFromStream(skia.MemoryStream(data))
    except Exception:  # noqa: BLE001 - skia raises assorted errors on bad input
        return None
    if dom is None:
        return None
    width, height = _svg_size(dom, data)
    if width <= 0 or height <= 0:
        return None
    scale = MAX_SIDE / max(width, height)
    out_w, out_h = max(1, round(width * scale)), max(1, round(height * scale))
    dom.setContainerSize(skia.Size(width, height))
    surface = skia.Surface(out_w, out_h)
    canvas = surface.getCanvas()
    canvas.clear(skia.ColorTRANSPARENT)
    canvas.scale(scale, scale)
    dom.render(canvas)
    return surface.makeImageSnapshot()


def _svg_size(dom: skia.SVGDOM, data: bytes) -> tuple[float, float]:
    size = dom.containerSize()
    if size.width() > 0 and size.height() > 0:
        return size.width(), size.height()
    match = _VIEWBOX.search(data[:65536])
    if match:
        return float(match.group(3)), float(match.group(4))
    return 300.0, 150.0  # the CSS default size of a replaced element


def _fit_raster(data: bytes) -> skia.Image | None:
    try:
        image = skia.Image.MakeFromEncoded(skia.Data.MakeWithCopy(data))
    except Exception:  # noqa: BLE001
        return None
    if image is None or image.width() <= 0 or image.height() <= 0:
        return None
    if image.width() * image.height() > MAX_SOURCE_PIXELS:
        return None
    scale = min(1.0, MAX_SIDE / max(image.width(), image.height()))
    out_w, out_h = max(1, round(image.width() * scale)), max(1, round(image.height() * scale))
    surface = skia.Surface(out_w, out_h)
    canvas = surface.getCanvas()
    canvas.clear(skia.ColorTRANSPARENT)
    sampling = skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kLinear)
    canvas.drawImageRect(image, skia.Rect.MakeWH(out_w, out_h), sampling)
    return surface.makeImageSnapshot()


def dominant_colors(pixels: np.ndarray, limit: int = 4) -> list[tuple[RGB, float]]:
    """The most common opaque colours of an RGBA (unpremultiplied) array, white left out.

    Pixels are grouped in 16-level buckets so anti-aliased edges do not split a flat colour; each
    bucket is represented by its most common exact colour. With no opaque non-white pixel, opaque
    white counts; with no opaque pixel at all, the result is empty.
    """
    step = max(1, int((pixels.shape[0] * pixels.shape[1] / _SAMPLE_PIXELS) ** 0.5))
    sample = pixels[::step, ::step].reshape(-1, 4).astype(np.int64)
    opaque = sample[sample[:, 3] >= OPAQUE]
    colored = opaque[~(opaque[:, :3] >= WHITE_FLOOR).all(axis=1)]
    chosen = colored if len(colored) else opaque
    if not len(chosen):
        return []
    exact = (chosen[:, 0] << 16) | (chosen[:, 1] << 8) | chosen[:, 2]
    buckets = ((chosen[:, 0] >> 4) << 8) | ((chosen[:, 1] >> 4) << 4) | (chosen[:, 2] >> 4)
    bucket_ids, bucket_counts = np.unique(buckets, return_counts=True)
    result: list[tuple[RGB, float]] = []
    for index in np.argsort(-bucket_counts, kind="stable")[:_MAX_BUCKETS]:
        members = exact[buckets == bucket_ids[index]]
        values, counts = np.unique(members, return_counts=True)
        value = int(values[int(np.argmax(counts))])
        color: RGB = ((value >> 16) & 255, (value >> 8) & 255, value & 255)
        share = float(bucket_counts[index]) / len(chosen)
        if all(distance(color, kept) >= 40 for kept, _ in result):
            result.append((color, share))
        if len(result) >= limit:
            break
    return result
