"""reelfarm's renderer: VideoDoc in, pixels and MP4 bytes out.

A pure library: it imports nothing of the service (no web framework, queue, database or
storage). Any frame is computed from (doc, t) alone, which is what lets the farm cut a video
into chunks rendered on different machines.

Public names load on first use (PEP 562): `from reelfarm import renderer` costs almost nothing, and a
command pays only for what it touches (a still never loads PyAV, a lint never loads an encoder).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

RENDERER_VERSION = "1.0.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "reelfarm.renderer.assets": ("AssetSource", "LocalAssets"),
    "reelfarm.renderer.audio": ("mix_audio",),
    "reelfarm.renderer.backends": ("RASTER_KINDS", "RasterChoice", "choose_raster", "make_rasterizer",
                          "nvidia_gpu_present"),
    "reelfarm.renderer.concat": ("concat_segments", "probe"),
    "reelfarm.renderer.encode": ("Encoder", "X264Encoder", "available_h264_encoders"),
    "reelfarm.renderer.errors": ("AssetError", "DocInvalid", "EncodeError", "FontError", "Problem", "RasterError",
                        "RendererError", "SpecInvalid"),
    "reelfarm.renderer.fonts": ("available_families",),
    "reelfarm.renderer.gl": ("GLRasterizer",),
    "reelfarm.renderer.linter": ("LintReport", "lint"),
    "reelfarm.renderer.model": ("Doc", "doc_schema", "parse_doc"),
    "reelfarm.renderer.nvenc": ("NvencEncoder", "make_encoder", "nvenc_available"),
    "reelfarm.renderer.raster": ("Rasterizer", "SkiaRasterizer", "encode_jpeg", "encode_png"),
    "reelfarm.renderer.render": ("RenderStats", "chunk_count", "finish_video", "plan_chunks", "render_segment",
                        "render_video"),
    "reelfarm.renderer.spec": ("FORMATS", "FORMAT_RATIOS", "FPS_CHOICES", "MAX_FPS", "MAX_RESOLUTION", "MIN_RESOLUTION",
                      "RESOLUTIONS", "RenderSpec", "frame_size", "spec_problems"),
    "reelfarm.renderer.stills": ("iter_stills_png", "poster_time", "render_still", "render_still_png", "write_poster"),
    "reelfarm.renderer.text": ("TextMeasure", "measure_text"),
    "reelfarm.renderer.tokens": ("NEUTRAL_BRAND",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(["RENDERER_VERSION", *_HOME])


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'reelfarm.renderer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from reelfarm.renderer.assets import AssetSource, LocalAssets
    from reelfarm.renderer.audio import mix_audio
    from reelfarm.renderer.backends import RASTER_KINDS, RasterChoice, choose_raster, make_rasterizer, nvidia_gpu_present
    from reelfarm.renderer.concat import concat_segments, probe
    from reelfarm.renderer.encode import Encoder, X264Encoder, available_h264_encoders
    from reelfarm.renderer.errors import (AssetError, DocInvalid, EncodeError, FontError, Problem, RasterError,
                                 RendererError, SpecInvalid)
    from reelfarm.renderer.fonts import available_families
    from reelfarm.renderer.gl import GLRasterizer
    from reelfarm.renderer.linter import LintReport, lint
    from reelfarm.renderer.model import Doc, doc_schema, parse_doc
    from reelfarm.renderer.nvenc import NvencEncoder, make_encoder, nvenc_available
    from reelfarm.renderer.raster import Rasterizer, SkiaRasterizer, encode_jpeg, encode_png
    from reelfarm.renderer.render import (RenderStats, chunk_count, finish_video, plan_chunks, render_segment,
                                 render_video)
    from reelfarm.renderer.spec import (FORMAT_RATIOS, FORMATS, FPS_CHOICES, MAX_FPS, MAX_RESOLUTION, MIN_RESOLUTION,
                               RESOLUTIONS, RenderSpec, frame_size, spec_problems)
    from reelfarm.renderer.stills import iter_stills_png, poster_time, render_still, render_still_png, write_poster
    from reelfarm.renderer.text import TextMeasure, measure_text
    from reelfarm.renderer.tokens import NEUTRAL_BRAND
