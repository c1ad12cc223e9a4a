"""Choosing a rasterizer ("cpu", "gl" or "auto") and an encoder ("x264", "nvenc" or "auto") by name.

- "cpu": `SkiaRasterizer`, Skia's raster backend. Every machine has it.
- "gl": `GLRasterizer` on whatever EGL offers: NVIDIA's GPU by index when there is one, else
  Mesa's llvmpipe (software GL; how CI checks the GL path without a GPU).
- "auto": GL on a node with an NVIDIA GPU, CPU otherwise. Software GL is never chosen
  automatically: on an NVIDIA node "auto" asks for the hardware device only.

A choice is a small picklable value (`RasterChoice`) resolved once and handed to chunk
processes, each of which makes its own rasterizer (GL contexts do not cross processes). When
GL was asked for and no context can be made, `make` logs why and draws on the CPU: a render
never fails for want of a GPU.

Encoders are chosen the same way, once, by the node or the command (`choose_encoder`), but
with no silent fallback: "nvenc" where NVENC cannot be had is refused with the probe's reason,
and "auto" is NVENC only where the probe opened a real session. The choice (`EncoderChoice`)
names an encoder *family*: segments of one render are all made by one family, since segments
of different families cannot be joined by stream copy into one playable file.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import EncodeError, RasterError
from reelfarm.renderer.gpu import nvidia_gpu_present
from reelfarm.renderer.model import Doc
from reelfarm.renderer.raster import Rasterizer, SkiaRasterizer
from reelfarm.renderer.spec import ENCODER_KINDS, RASTER_KINDS, RenderSpec

if TYPE_CHECKING:
    from reelfarm.renderer.encode import Encoder

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class RasterChoice:
    """A resolved choice: `kind` is "cpu" or "gl"; `hardware_only` refuses software GL."""

    kind: str = "cpu"
    gpu_index: int = 0
    hardware_only: bool = False

    def make(self, doc: Doc, spec: RenderSpec, assets: AssetSource | None = None, yuv: bool = False) -> Rasterizer:
        """A rasterizer for `spec`; `yuv` asks for BT.709 yuv420p frames (for encoding): converted on
        the GPU by a GL one, by swscale where the frame changed by a CPU one.

        Falls back to the CPU, with a logged reason, when GL cannot be had.
        """
        if self.kind == "gl":
            from reelfarm.renderer.gl import GLRasterizer
            try:
                return GLRasterizer(doc, spec.format, *spec.size, assets, gpu_index=self.gpu_index, yuv=yuv,
                                    hardware_only=self.hardware_only)
            except RasterError as exc:
                log.warning("GL rasterizer unavailable (%s); drawing on the CPU", exc)
        return SkiaRasterizer(doc, spec.format, *spec.size, assets, yuv=yuv)


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


class EncoderUnavailable(EncodeError):
    """The encoder asked for cannot be had on this machine; the message says why."""


@dataclass(frozen=True)
class EncoderChoice:
    """A resolved encoder: its `family` ("x264" or "nvenc") and the options every encoder it makes
    gets. Picklable, so chunk processes make their own encoders from it."""

    family: str = "x264"
    options: tuple[tuple[str, Any], ...] = ()
    gpu_index: int = 0

    def make(self, **overrides: Any) -> Encoder:
        """A new encoder of this family; options the family does not take (x264's ``threads`` for
        NVENC) are dropped."""
        options = {**dict(self.options), **overrides}
        if self.family == "nvenc":
            from reelfarm.renderer.nvenc import NvencEncoder, accepted_options
            return NvencEncoder(**accepted_options(NvencEncoder, {"gpu_id": self.gpu_index, **options}))
        from reelfarm.renderer.encode import X264Encoder  # PyAV loads only where frames are encoded
        from reelfarm.renderer.nvenc import accepted_options
        return X264Encoder(**accepted_options(X264Encoder, options))


def choose_encoder(kind: str | EncoderChoice = "auto", gpu_index: int = 0) -> EncoderChoice:
    """Resolve "auto" | "x264" | "nvenc" for this machine (an `EncoderChoice` passes through).

    Raises:
        ValueError: an unknown kind.
        EncoderUnavailable: "nvenc" asked for where its probe failed (the reason is the message).
    """
    if isinstance(kind, EncoderChoice):
        return kind
    if kind not in ENCODER_KINDS:
        raise ValueError(f"unknown encoder {kind!r}; use one of {', '.join(ENCODER_KINDS)}")
    if kind == "x264":
        return EncoderChoice("x264")
    from reelfarm.renderer.nvenc import nvenc_probe

    ok, reason = nvenc_probe(gpu_index)
    if ok:
        return EncoderChoice("nvenc", gpu_index=gpu_index)
    if kind == "nvenc":
        raise EncoderUnavailable(f"NVENC cannot be used: {reason}")
    log.info("encoding with x264: %s", reason)
    return EncoderChoice("x264")
