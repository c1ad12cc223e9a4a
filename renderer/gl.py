"""The GPU rasterizer: the CPU rasterizer's drawing code on Skia GL surfaces, made headless by EGL.

Only where pixels live differs from `SkiaRasterizer`: frames, scene bases and transition
scratch are GPU render targets (`_GLTarget`), and a frame leaves the GPU by one read-back.
With `yuv=True` the frame is converted on the GPU first (`YUV420Converter`: BT.709, limited
range, planar 4:2:0, the layout x264 takes as it is), so the CPU only encodes.

The context (`EGLSession`, one per process, made current on the calling thread) needs no
window, no X server and no pbuffer:

- On an NVIDIA node: the EGL device platform (EGL_EXT_platform_device) picks the GPU whose
  CUDA index is `gpu_index` among devices that carry EGL_NV_device_cuda (NVIDIA's EGL through
  glvnd).
- Elsewhere: Mesa's surfaceless platform, where GL is llvmpipe (software). That is a
  correctness path for CI, never chosen automatically: with `hardware_only=True` a software
  renderer is refused with `RasterError`, and the caller draws on the CPU instead.

EGL and GL state do not survive fork(): `context_in_process()` tells a pool to spawn its
workers rather than fork them once this process holds a context.
"""
from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import skia

from reelfarm.renderer.assets import AssetSource
from reelfarm.renderer.errors import RasterError
from reelfarm.renderer.fonts import FontBook
from reelfarm.renderer.model import Doc
from reelfarm.renderer.raster import SkiaRasterizer

log = logging.getLogger(__name__)

EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_CUDA_DEVICE_NV = 0x323A
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "software")
GL_COLOR_TYPE = skia.kRGBA_8888_ColorType

# BT.709 limited range on [0, 1] values, as rows of Skia's 4x5 colour matrix that write into
# alpha (an A8 target keeps only alpha). Y = 16 + 219 Y', Cb = 128 + 224 (B - Y') / 1.8556,
# Cr = 128 + 224 (R - Y') / 1.5748, Y' = 0.2126 R + 0.7152 G + 0.0722 B; pure red gives Y = 63.
_KR, _KG, _KB = 0.2126, 0.7152, 0.0722
_Y = (_KR * 219 / 255, _KG * 219 / 255, _KB * 219 / 255, 16 / 255)
_U = (-_KR / 1.8556 * 224 / 255, -_KG / 1.8556 * 224 / 255, (1 - _KB) / 1.8556 * 224 / 255, 128 / 255)
_V = ((1 - _KR) / 1.5748 * 224 / 255, -_KG / 1.5748 * 224 / 255, -_KB / 1.5748 * 224 / 255, 128 / 255)


def _egl() -> Any:
    # PyOpenGL picks its GL loader at first import; EGL is the one that works headless.
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    try:
        from OpenGL import EGL
    except Exception as exc:  # noqa: BLE001 - ImportError, or a missing libEGL.so.1
        raise RasterError(f"EGL is not available: {exc}") from exc
    return EGL


@dataclass
class EGLSession:
    """A GL context made current with no surface, and Skia's GPU context over it."""

    display: Any
    context: Any
    gr: skia.GrDirectContext
    renderer: str
    pid: int

    @property
    def software(self) -> bool:
        return any(word in self.renderer.lower() for word in SOFTWARE_RENDERERS)


_SESSIONS: dict[tuple[int, bool], EGLSession] = {}


def context_in_process() -> bool:
    """True once this process has made an EGL context (fork() would hand children a dead one)."""
    return any(s.pid == os.getpid() for s in _SESSIONS.values())


def gl_session(gpu_index: int = 0, hardware_only: bool = False) -> EGLSession:
    """This process's GL session for `gpu_index`, made on first use.

    Raises:
        RasterError: no EGL, no display, no context, or (with `hardware_only`) only a
            software renderer; the message says which.
    """
    key = (gpu_index, hardware_only)
    session = _SESSIONS.get(key)
    if session is None or session.pid != os.getpid():
        session = _SESSIONS[key] = _make_session(gpu_index, hardware_only)
    return session


def _make_session(gpu_index: int, hardware_only: bool) -> EGLSession:
    EGL = _egl()
    display = _nvidia_display(EGL, gpu_index)
    if display is None:
        if hardware_only:
            raise RasterError(f"no NVIDIA EGL device with CUDA index {gpu_index}")
        display = _surfaceless_display(EGL)
    context = _make_current(EGL, display)
    gr = skia.GrDirectContext.MakeGL(skia.GrGLInterface.MakeEGL())
    if gr is None:
        raise RasterError("Skia could not make a GL context over EGL")
    session = EGLSession(display, context, gr, _renderer_name(), os.getpid())
    if hardware_only and session.software:
        raise RasterError(f"the only GL renderer is software ({session.renderer})")
    log.info("GL rasterizer on %s", session.renderer)
    return session


def _devices(EGL: Any) -> list[Any]:
    from OpenGL.EGL.EXT import device_enumeration
    count = EGL.EGLint()
    if not device_enumeration.eglQueryDevicesEXT(0, None, ctypes.pointer(count)) or count.value == 0:
        return []
    devices = (EGL.EGLDeviceEXT * count.value)()
    device_enumeration.eglQueryDevicesEXT(count.value, devices, ctypes.pointer(count))
    return list(devices[:count.value])


def _nvidia_display(EGL: Any, gpu_index: int) -> Any:
    """The device-platform display of NVIDIA GPU `gpu_index` (its CUDA index), or None."""
    try:
        from OpenGL.EGL.EXT import device_query, platform_base, platform_device
        devices = _devices(EGL)
    except Exception:  # noqa: BLE001 - an EGL without device enumeration has no NVIDIA path
        log.debug("EGL device enumeration unavailable", exc_info=True)
        return None
    nvidia: list[tuple[int, Any]] = []  # (CUDA index, EGL device)
    for device in devices:
        extensions = device_query.eglQueryDeviceStringEXT(device, EGL.EGL_EXTENSIONS) or b""
        if b"EGL_NV_device_cuda" in extensions:
            cuda = EGL.EGLAttrib()
            found = device_query.eglQueryDeviceAttribEXT(device, EGL_CUDA_DEVICE_NV, ctypes.pointer(cuda))
            nvidia.append((int(cuda.value) if found else len(nvidia), device))
    chosen = [device for index, device in nvidia if index == gpu_index]
    if not chosen:
        return None
    return platform_base.eglGetPlatformDisplayEXT(platform_device.EGL_PLATFORM_DEVICE_EXT, chosen[0], None)


def _surfaceless_display(EGL: Any) -> Any:
    from OpenGL.EGL.EXT import platform_base
    try:
        display = platform_base.eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL.EGL_DEFAULT_DISPLAY, None)
    except Exception as exc:  # noqa: BLE001
        raise RasterError(f"no surfaceless EGL display: {exc}") from exc
    if not display:
        raise RasterError("no surfaceless EGL display (EGL_MESA_platform_surfaceless missing)")
    return display


def _make_current(EGL: Any, display: Any) -> Any:
    major, minor = EGL.EGLint(), EGL.EGLint()
    try:
        if not EGL.eglInitialize(display, ctypes.pointer(major), ctypes.pointer(minor)):
            raise RasterError("eglInitialize failed")
        EGL.eglBindAPI(EGL.EGL_OPENGL_API)
        # A pbuffer-capable config, though none is made: the default (window) matches none here.
        attrs = (EGL.EGLint * 5)(EGL.EGL_SURFACE_TYPE, EGL.EGL_PBUFFER_BIT, EGL.EGL_RENDERABLE_TYPE,
                                 EGL.EGL_OPENGL_BIT, EGL.EGL_NONE)
        config, found = EGL.EGLConfig(), EGL.EGLint()
        if not EGL.eglChooseConfig(display, attrs, ctypes.pointer(config), 1, ctypes.pointer(found)) or not found.value:
            raise RasterError("no EGL config renders OpenGL")
        context = EGL.eglCreateContext(display, config, EGL.EGL_NO_CONTEXT, None)
        if not context or not EGL.eglMakeCurrent(display, EGL.EGL_NO_SURFACE, EGL.EGL_NO_SURFACE, context):
            raise RasterError("an OpenGL context could not be made current without a surface")
    except RasterError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyOpenGL raises EGLError and friends
        raise RasterError(f"EGL failed: {exc}") from exc
    return context


def _renderer_name() -> str:
    try:
        from OpenGL import GL
        return (GL.glGetString(GL.GL_RENDERER) or b"unknown").decode("ascii", "replace")
    except Exception:  # noqa: BLE001 - the name is informational, except for spotting software GL
        return "unknown"


def _gpu_surface(gr: skia.GrDirectContext, width: int, height: int, color_type: Any) -> skia.Surface:
    info = skia.ImageInfo.Make(width, height, color_type, skia.kPremul_AlphaType)
    surface = skia.Surface.MakeRenderTarget(gr, skia.Budgeted.kYes, info)
    if surface is None:
        raise RasterError(f"cannot make a {width}x{height} GPU surface")
    return surface


class _GLTarget:
    """A GPU drawing target with the CPU `_Target`'s methods; `pixels()` reads it back."""

    def __init__(self, gr: skia.GrDirectContext, width: int, height: int) -> None:
        self.surface = _gpu_surface(gr, width, height, GL_COLOR_TYPE)
        self._info = skia.ImageInfo.Make(width, height, GL_COLOR_TYPE, skia.kPremul_AlphaType)
        self._array: np.ndarray | None = None
        self.converter: YUV420Converter | None = None

    def keep(self) -> skia.Image:
        return self.surface.makeImageSnapshot()

    def restore(self, kept: skia.Image) -> None:
        self.surface.getCanvas().drawImage(kept, 0, 0, skia.SamplingOptions(), skia.Paint(BlendMode=skia.BlendMode.kSrc))

    def image(self) -> skia.Image:
        return self.surface.makeImageSnapshot()

    def pixels(self) -> np.ndarray:
        if self.converter is not None:
            return self.converter.convert(self.surface.makeImageSnapshot())
        if self._array is None:
            self._array = np.empty((self._info.height(), self._info.width(), 4), np.uint8)
        if not self.surface.readPixels(self._info, self._array, self._info.minRowBytes(), 0, 0):
            raise RasterError("reading the frame back from the GPU failed")
        return self._array


class YUV420Converter:
    """BT.709 limited-range planar 4:2:0 on the GPU: three single-channel draws, one read each.

    Luma is drawn 1:1 through a colour matrix into an A8 target; each chroma plane is the frame
    drawn at half size with bilinear sampling (each output pixel samples the centre of its 2x2
    block, so it is their mean) through the Cb or Cr matrix. The planes land in one buffer laid
    out as yuv420p, shape (height * 3 / 2, width).
    """

    def __init__(self, gr: skia.GrDirectContext, width: int, height: int) -> None:
        if width % 2 or height % 2:
            raise RasterError(f"4:2:0 needs an even frame size, not {width}x{height}")
        self.width, self.height = width, height
        cw, ch = width // 2, height // 2
        self.buffer = np.empty((height * 3 // 2, width), np.uint8)
        flat = self.buffer.reshape(-1)
        y_end, u_end = width * height, width * height + cw * ch
        self._planes = [
            (_gpu_surface(gr, width, height, skia.kAlpha_8_ColorType), _matrix(_Y), flat[:y_end].reshape(height, width)),
            (_gpu_surface(gr, cw, ch, skia.kAlpha_8_ColorType), _matrix(_U), flat[y_end:u_end].reshape(ch, cw)),
            (_gpu_surface(gr, cw, ch, skia.kAlpha_8_ColorType), _matrix(_V), flat[u_end:].reshape(ch, cw)),
        ]

    def convert(self, frame: skia.Image) -> np.ndarray:
        """The frame as yuv420p planes in `buffer` (reused by the next call)."""
        for index, (surface, paint, plane) in enumerate(self._planes):
            canvas = surface.getCanvas()
            canvas.save()
            if index:
                canvas.scale(0.5, 0.5)
            canvas.drawImage(frame, 0, 0, skia.SamplingOptions(skia.FilterMode.kLinear), paint)
            canvas.restore()
            info = skia.ImageInfo.Make(plane.shape[1], plane.shape[0], skia.kAlpha_8_ColorType, skia.kPremul_AlphaType)
            if not surface.readPixels(info, plane, plane.shape[1], 0, 0):
                raise RasterError("reading a YUV plane back from the GPU failed")
        return self.buffer


def _matrix(row: tuple[float, float, float, float]) -> skia.Paint:
    r, g, b, offset = row
    matrix = [0.0] * 15 + [r, g, b, 0.0, offset]
    return skia.Paint(ColorFilter=skia.ColorFilters.Matrix(matrix), BlendMode=skia.BlendMode.kSrc)


class GLRasterizer(SkiaRasterizer):
    """`SkiaRasterizer` on GPU surfaces: same drawing, frames read back as RGBA or yuv420p.

    Raises:
        RasterError: when no GL context can be made (see `gl_session`).
    """

    def __init__(self, doc: Doc, fmt: str, width: int, height: int, assets: AssetSource | None = None,
                 book: FontBook | None = None, gpu_index: int = 0, yuv: bool = False,
                 hardware_only: bool = False) -> None:
        self.session = gl_session(gpu_index, hardware_only)
        self.pixel_format = "yuv420p" if yuv else "rgba"
        super().__init__(doc, fmt, width, height, assets, book)
        if yuv:
            self._main.converter = YUV420Converter(self.session.gr, width, height)

    def _new_target(self) -> _GLTarget:
        return _GLTarget(self.session.gr, self.width, self.height)

    def close(self) -> None:
        super().close()
        self.session.gr.flushAndSubmit()
        self.session.gr.purgeUnlockedResources(skia.GrPurgeResourceOptions.kAllResources)
