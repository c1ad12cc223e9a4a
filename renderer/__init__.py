"""reelfarm's renderer: VideoDoc in, pixels and MP4 bytes out.

A pure library: it imports nothing of the service (no web framework, queue, database or
storage). Any frame is computed from (doc, t) alone, which is what lets the farm cut a video
into chunks rendered on different machines.
"""
from __future__ import annotations

from renderer.assets import AssetSource, LocalAssets
from renderer.audio import mix_audio
from renderer.concat import concat_segments, probe
from renderer.encode import (Encoder, NvencEncoder, X264Encoder, available_h264_encoders, make_encoder,
                             nvenc_available)
from renderer.errors import AssetError, DocInvalid, EncodeError, FontError, RendererError
from renderer.fonts import available_families
from renderer.formats import FORMAT_RATIOS, FPS_CHOICES, RESOLUTIONS, frame_size
from renderer.lint import LintReport, lint
from renderer.model import FORMATS, Doc, Problem, doc_schema, parse_doc
from renderer.raster import Rasterizer, SkiaRasterizer, encode_jpeg, encode_png
from renderer.render import (RenderStats, chunk_count, finish_video, iter_stills_png, plan_chunks, poster_time,
                             render_segment, render_still, render_still_png, render_video, write_poster)
from renderer.text import TextMeasure, measure_text
from renderer.tokens import NEUTRAL_BRAND

RENDERER_VERSION = "1.0.0"

__all__ = [
    "AssetError", "AssetSource", "Doc", "DocInvalid", "EncodeError", "Encoder", "FORMATS", "FORMAT_RATIOS",
    "FPS_CHOICES", "FontError", "LintReport", "LocalAssets", "NEUTRAL_BRAND", "NvencEncoder", "Problem",
    "RENDERER_VERSION", "RESOLUTIONS", "Rasterizer", "RenderStats", "RendererError", "SkiaRasterizer",
    "X264Encoder", "available_families", "available_h264_encoders", "chunk_count", "concat_segments",
    "doc_schema", "encode_jpeg", "encode_png", "finish_video", "frame_size", "lint", "make_encoder",
    "mix_audio", "nvenc_available", "parse_doc", "plan_chunks", "poster_time", "probe", "render_segment",
    "render_still", "render_still_png", "render_video", "write_poster", "TextMeasure", "measure_text",
    "iter_stills_png",
]
