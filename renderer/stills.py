"""Single frames: stills as RGBA arrays or PNG bytes, and the JPEG poster of a video.

Stills need no encoder, so this module imports nothing of PyAV: `reelfarm still` starts
without loading FFmpeg.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.backends import RasterChoice, choose_raster
from reelfarm.renderer.model import Doc, parse_doc
from reelfarm.renderer.raster import Rasterizer, encode_jpeg, encode_png, to_rgba
from reelfarm.renderer.spec import RenderSpec


def as_doc(doc: Doc | Mapping[str, Any]) -> Doc:
    return doc if isinstance(doc, Doc) else parse_doc(doc)


def _still_spec(doc: Doc, spec: RenderSpec | None) -> RenderSpec:
    # A still's fps does not change its pixels; the document's is as good as any.
    return spec or RenderSpec.for_doc(doc)


def _still(raster: Rasterizer, doc: Doc, t: float) -> np.ndarray:
    return to_rgba(raster.render(min(max(t, 0.0), doc.duration)), raster.pixel_format)


def render_still(doc: Doc | Mapping[str, Any], t: float, spec: RenderSpec | None = None,
                 assets: AssetSource | None = None, raster: str | RasterChoice = "cpu") -> np.ndarray:
    """The frame at `t` as an RGBA array (a copy the caller owns); `spec` defaults to the doc's.

    `raster` names the rasterizer ("cpu", "gl", "auto"; see `reelfarm.renderer.backends`).
    """
    doc = as_doc(doc)
    spec = _still_spec(doc, spec)
    return _still(choose_raster(raster).make(doc, spec, assets), doc, t)


def render_still_png(doc: Doc | Mapping[str, Any], t: float, spec: RenderSpec | None = None,
                     assets: AssetSource | None = None, raster: str | RasterChoice = "cpu") -> bytes:
    """PNG bytes of the frame at `t`."""
    return encode_png(render_still(doc, t, spec, assets, raster))


def iter_stills_png(doc: Doc | Mapping[str, Any], times: Sequence[float], spec: RenderSpec | None = None,
                    assets: AssetSource | None = None, raster: str | RasterChoice = "cpu") -> Iterator[bytes]:
    """PNG bytes of each frame at `times`, in order, from one rasterizer (images decoded once)."""
    doc = as_doc(doc)
    spec = _still_spec(doc, spec)
    drawer = choose_raster(raster).make(doc, spec, assets)
    for t in times:
        yield encode_png(_still(drawer, doc, t))


def poster_time(doc: Doc) -> float:
    """When the first scene has settled: every enter animation of it has finished."""
    scene = doc.scenes[0]
    settled = 0.0
    for layer in scene.layers:
        if layer.enter:
            settled = max(settled, layer.start + layer.enter.delay + layer.enter.duration)
    return min(settled + 0.1, scene.duration - 1.0 / doc.fps)


def write_poster(doc: Doc | Mapping[str, Any], path: str, spec: RenderSpec | None = None,
                 assets: AssetSource | None = None, t: float | None = None,
                 raster: str | RasterChoice = "cpu") -> str:
    """Write a JPEG poster frame and return its path."""
    doc = as_doc(doc)
    frame = render_still(doc, poster_time(doc) if t is None else t, spec, assets, raster)
    Path(path).write_bytes(encode_jpeg(frame))
    return path
