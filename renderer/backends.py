"""Choosing a rasterizer by name: "cpu", "gl" or "auto".

- "cpu": `SkiaRasterizer`, Skia's raster backend. Every machine has it.
- "gl": `GLRasterizer` on whatever EGL offers: NVIDIA's GPU by index when there is one, else
  Mesa's llvmpipe (software GL; how CI checks the GL path without a GPU).
- "auto": GL on a node with an NVIDIA GPU, CPU otherwise. Software GL is never chosen
  automatically: on an NVIDIA node "auto" asks for the hardware device only.

A choice is a small picklable value (`RasterChoice`) resolved once and handed to chunk
processes, each of which makes its own rasterizer (GL contexts do not cross processes). When
GL was asked for and no context can be made, `make` logs why and draws on the CPU: a render
never fails for want of a GPU.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import RasterError
from reelfarm.renderer.model import Doc
from reelfarm.renderer.raster import Rasterizer, SkiaRasterizer
from reelfarm.renderer.spec import RenderSpec

log = logging.getLogger(__name__)

RASTER_KINDS = ("auto", "cpu", "gl")
_NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


def nvidia_gpu_present(gpu_index: int = 0) -> bool:
    """True when the NVIDIA kernel driver exposes GPU `gpu_index` (no library is loaded to ask)."""
    if Path(f"/dev/nvidia{gpu_index}").exists():
        return True
    try:
        return len(list(_NVIDIA_PROC.iterdir())) > gpu_index
    except OSError:
        return False


@dataclass(frozen=True)
class RasterChoice:
    """A resolved choice: `kind` is "cpu" or "gl"; `hardware_only` refuses software GL."""

    kind: str = "cpu"
    gpu_index: int = 0
    hardware_only: bool = False

    def make(self, doc: Doc, spec: RenderSpec, assets: AssetSource | None = None, yuv: bool = False) -> Rasterizer:
        """A rasterizer for `spec`; `yuv` asks a GL one for BT.709 yuv420p frames (for encoding).

        Falls back to the CPU, with a logged reason, when GL cannot be had.
        """
        if self.kind == "gl":
            from reelfarm.renderer.gl import GLRasterizer
            try:
                return GLRasterizer(doc, spec.format, *spec.size, assets, gpu_index=self.gpu_index, yuv=yuv,
                                    hardware_only=self.hardware_only)
            except RasterError as exc:
                log.warning("GL rasterizer unavailable (%s); drawing on the CPU", exc)
        return SkiaRasterizer(doc, spec.format, *spec.size, assets)


def choose_raster(kind: str | RasterChoice = "auto", gpu_index: int = 0) -> RasterChoice:
    """Resolve "auto" | "cpu" | "gl" for this machine (a `RasterChoice` passes through).

    Raises:
        ValueError: an unknown kind.
    """
    if isinstance(kind, RasterChoice):
        return kind
    if kind not in RASTER_KINDS:
        raise ValueError(f"unknown rasterizer {kind!r}; use one of {', '.join(RASTER_KINDS)}")
    if kind == "auto":
        if nvidia_gpu_present(gpu_index):
            return RasterChoice("gl", gpu_index, hardware_only=True)
        return RasterChoice("cpu", gpu_index)
    return RasterChoice(kind, gpu_index)


def make_rasterizer(kind: str | RasterChoice, doc: Doc, spec: RenderSpec, assets: AssetSource | None = None,
                    gpu_index: int = 0, **options: Any) -> Rasterizer:
    """`choose_raster(kind, gpu_index).make(doc, spec, assets, **options)`."""
    return choose_raster(kind, gpu_index).make(doc, spec, assets, **options)
