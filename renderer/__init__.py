"""reelfarm's renderer: VideoDoc in, pixels and MP4 bytes out.

A pure library: it imports nothing of the service (no web framework, queue, database or
storage). Any frame is computed from (doc, t) alone, which is what lets the farm cut a video
into chunks rendered on different machines.

Public names load on first use (PEP 562): `import renderer` costs almost nothing, and a
command pays only for what it touches (a still never loads PyAV, a lint never loads an encoder).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

RENDERER_VERSION = "1.0.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "renderer.assets": ("AssetSource", "LocalAssets"),
    "renderer.audio": ("mix_audio",),
    "renderer.backends": ("RASTER_KINDS", "RasterChoice", "choose_raster", "make_rasterizer",
                          "nvidia_gpu_present"),
    "renderer.concat": ("concat_segments", "probe"),
    "renderer.encode": ("Encoder", "X264Encoder", "available_h264_encoders"),
    "renderer.errors": ("AssetError", "DocInvalid", "EncodeError", "FontError", "Problem", "RasterError",
                        "RendererError", "SpecInvalid"),
    "renderer.fonts": ("available_families",),
    "renderer.gl": ("GLRasterizer",),
    "renderer.linter": ("LintReport", "lint"),
    "renderer.model": ("Doc", "doc_schema", "parse_doc"),
    "renderer.nvenc": ("NvencEncoder", "make_encoder", "nvenc_available"),
    "renderer.raster": ("Rasterizer", "SkiaRasterizer", "encode_jpeg", "encode_png"),
    "renderer.render": ("RenderStats", "chunk_count", "finish_video", "plan_chunks", "render_segment",
                        "render_video"),
    "renderer.spec": ("FORMATS", "FORMAT_RATIOS", "FPS_CHOICES", "MAX_FPS", "MAX_RESOLUTION", "MIN_RESOLUTION",
                      "RESOLUTIONS", "RenderSpec", "frame_size", "spec_problems"),
    "renderer.stills": ("iter_stills_png", "poster_time", "render_still", "render_still_png", "write_poster"),
    "renderer.text": ("TextMeasure", "measure_text"),
    "renderer.tokens": ("NEUTRAL_BRAND",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(["RENDERER_VERSION", *_HOME])


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'renderer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from renderer.assets import AssetSource, LocalAssets
    from renderer.audio import mix_audio
    from renderer.backends import RASTER_KINDS, RasterChoice, choose_raster, make_rasterizer, nvidia_gpu_present
    from renderer.concat import concat_segments, probe
    from renderer.encode import Encoder, X264Encoder, available_h264_encoders
    from renderer.errors import (AssetError, DocInvalid, EncodeError, FontError, Problem, RasterError,
                                 RendererError, SpecInvalid)
    from renderer.fonts import available_families
    from renderer.gl import GLRasterizer
    from renderer.linter import LintReport, lint
    from renderer.model import Doc, doc_schema, parse_doc
    from renderer.nvenc import NvencEncoder, make_encoder, nvenc_available
    from renderer.raster import Rasterizer, SkiaRasterizer, encode_jpeg, encode_png
    from renderer.render import (RenderStats, chunk_count, finish_video, plan_chunks, render_segment,
                                 render_video)
    from renderer.spec import (FORMAT_RATIOS, FORMATS, FPS_CHOICES, MAX_FPS, MAX_RESOLUTION, MIN_RESOLUTION,
                               RESOLUTIONS, RenderSpec, frame_size, spec_problems)
    from renderer.stills import iter_stills_png, poster_time, render_still, render_still_png, write_poster
    from renderer.text import TextMeasure, measure_text
    from renderer.tokens import NEUTRAL_BRAND
