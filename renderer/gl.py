"""The GPU rasterizer: the CPU rasterizer's drawing code on Skia GL surfaces, made headless by EGL.

Only where pixels live differs from `SkiaRasterizer`: frames, scene bases and transition
scratch are GPU render targets (`_GLTarget`), and a frame leaves the GPU by one read-back.
With `yuv=True` the frame is converted on the GPU first (`YUV420Converter`: BT.709, limited
range, planar 4:2:0, the layout x264 takes as it is), so the CPU only encodes.

The context (`EGLSession`, one per process and device choice, made current on the calling
thread) needs no window, no X server and no pbuffer. Which display it opens follows one rule
(`pick_device`), over the devices EGL enumerates (EGL_EXT_device_enumeration):

- "nvidia" (the default): the EGL device platform (EGL_EXT_platform_device) on the GPU whose
  CUDA index is `gpu_index`, among devices that carry EGL_NV_device_cuda (NVIDIA's EGL through
  glvnd). Without one: Mesa's surfaceless platform, where GL is llvmpipe (software). That is a
  correctness path for CI, never chosen automatically: with `hardware_only=True` a software
  renderer is refused with `RasterError`, and the caller draws on the CPU instead.
- "software" (`device="software"`, or `REELFARM_EGL_DEVICE=software`): the device platform on
  Mesa's software device (EGL_MESA_device_software), a test path that runs the same
  `eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device)` code as an NVIDIA node, on
  llvmpipe. Only ever taken when asked for; refused where hardware GL is required.

How far GL may differ from the CPU is defined here too (`GL_MAX_MISMATCH`, `compare_frames`):
the goldens and `reelfarm node check` hold GL to the CPU's frames with the same measure.

EGL and GL state do not survive fork(): `context_in_process()` tells a pool to spawn its
workers rather than fork them once this process holds a context.
"""
from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
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
NV_DEVICE_CUDA = "EGL_NV_device_cuda"
MESA_DEVICE_SOFTWARE = "EGL_MESA_device_software"
EGL_DEVICE_ENV = "REELFARM_EGL_DEVICE"
EGL_DEVICE_CHOICES = ("nvidia", "software")
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast", "software")
GL_COLOR_TYPE = skia.kRGBA_8888_ColorType

# The share of pixels GL may leave beyond the edge-tolerant diff (`mismatch_fraction`) against the
# CPU's frame of the same doc. The GPU covers thin strokes (about 1 px at 180 p, like countdown's
# ring) with its own analytic antialiasing, so along them whole pixels differ by more than the
# tolerance. Measured at 180 p (the goldens): at most 0.33% of the pixels (countdown 1:1), all on
# such strokes; most cases differ in fewer than 0.06%. At 360 p (`reelfarm node check`): at most
# 0.18% (countdown 4:5). The surfaceless platform and the device platform give the same figures.
# A missing or moved layer costs more than 1%.
GL_MAX_MISMATCH = 0.005

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
    except Exception as exc:  # ImportError, or a missing libEGL.so.1
        raise RasterError(f"EGL is not available: {exc}") from exc
    return EGL


@dataclass(frozen=True)
class EGLDevice:
    """One device as EGL enumerates it: its place in the list, its extensions, and (NVIDIA's
    only) its CUDA index; `handle` is the EGLDeviceEXT."""

    position: int
    extensions: tuple[str, ...]
    cuda_index: int | None = None
    handle: Any = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> str:
        """"nvidia", "software" (Mesa's llvmpipe device) or "other" (e.g. a Mesa DRM device)."""
        if NV_DEVICE_CUDA in self.extensions:
            return "nvidia"
        return "software" if MESA_DEVICE_SOFTWARE in self.extensions else "other"

    def describe(self) -> str:
        if self.kind == "nvidia":
            return f"NVIDIA EGL device, CUDA index {self.cuda_index if self.cuda_index is not None else '?'}"
        if self.kind == "software":
            return f"Mesa software EGL device ({MESA_DEVICE_SOFTWARE})"
        return f"EGL device {self.position} ({' '.join(self.extensions) or 'no extensions'})"


def egl_device_choice(device: str | None = None) -> str:
    """`device`, else `REELFARM_EGL_DEVICE`, else "nvidia".

    Raises:
        RasterError: a value other than "nvidia" or "software".
    """
    choice = (device or os.environ.get(EGL_DEVICE_ENV) or "nvidia").strip().lower()
    if choice not in EGL_DEVICE_CHOICES:
        raise RasterError(f"unknown EGL device {choice!r} ({EGL_DEVICE_ENV}); use one of "
                          f"{', '.join(EGL_DEVICE_CHOICES)}")
    return choice


def pick_device(devices: Sequence[EGLDevice], choice: str, gpu_index: int = 0) -> EGLDevice | None:
    """The device `choice` names among `devices`, or None.

    "nvidia": the NVIDIA device whose CUDA index is `gpu_index` (one whose index EGL does not say
    counts by its order among NVIDIA devices); never another GPU, never Mesa's. "software": Mesa's
    software device.
    """
    if choice == "software":
        return next((d for d in devices if d.kind == "software"), None)
    nvidia = [d for d in devices if d.kind == "nvidia"]
    for order, device in enumerate(nvidia):
        if (device.cuda_index if device.cuda_index is not None else order) == gpu_index:
            return device
    return None


@dataclass
class EGLSession:
    """A GL context made current with no surface, and Skia's GPU context over it.

    `platform` is "device" (EGL_EXT_platform_device) or "surfaceless" (Mesa's); `device` says
    which EGL device, when there is one.
    """

    display: Any
    context: Any
    gr: skia.GrDirectContext
    renderer: str
    pid: int
    platform: str = "surfaceless"
    device: str = ""

    @property
    def software(self) -> bool:
        return any(word in self.renderer.lower() for word in SOFTWARE_RENDERERS)

    def make_current(self) -> None:
        """Make this context current again, should another session's have been made since."""
        EGL = _egl()
        if _address(EGL.eglGetCurrentContext()) == _address(self.context):
            return
        if not EGL.eglMakeCurrent(self.display, EGL.EGL_NO_SURFACE, EGL.EGL_NO_SURFACE, self.context):
            raise RasterError("the GL context could not be made current again")


_SESSIONS: dict[tuple[int, bool, str], EGLSession] = {}


def _address(handle: Any) -> int | None:
    return ctypes.cast(handle, ctypes.c_void_p).value if handle else None


def context_in_process() -> bool:
    """True once this process has made an EGL context (fork() would hand children a dead one)."""
    return any(s.pid == os.getpid() for s in _SESSIONS.values())


def gl_session(gpu_index: int = 0, hardware_only: bool = False, device: str | None = None) -> EGLSession:
    """This process's GL session for `gpu_index` and the EGL device choice, made on first use and
    current on return. `device` is "nvidia" or "software" (default: `REELFARM_EGL_DEVICE`, else
    "nvidia"; see the module docstring).

    Raises:
        RasterError: no EGL, no display, no context, an unknown device choice, or (with
            `hardware_only`) only a software renderer; the message says which.
    """
    choice = egl_device_choice(device)
    key = (gpu_index, hardware_only, choice)
    session = _SESSIONS.get(key)
    if session is None or session.pid != os.getpid():
        session = _SESSIONS[key] = _make_session(gpu_index, hardware_only, choice)
    else:
        session.make_current()
    return session


def egl_devices() -> list[EGLDevice]:
    """The devices this machine's EGL enumerates; empty where EGL or device enumeration is missing."""
    try:
        return _devices(_egl())
    except Exception:  # RasterError, or an EGL without device enumeration
        log.debug("EGL device enumeration unavailable", exc_info=True)
        return []


def _make_session(gpu_index: int, hardware_only: bool, choice: str) -> EGLSession:
    if choice == "software" and hardware_only:
        raise RasterError(f"the software EGL device was asked for ({EGL_DEVICE_ENV}=software), "
                          "but hardware GL is required")
    EGL = _egl()
    devices = egl_devices()
    picked = pick_device(devices, choice, gpu_index)
    if picked is not None:
        display, platform, described = _device_display(EGL, picked), "device", picked.describe()
    elif choice == "software":
        found = "; ".join(d.describe() for d in devices) or "none"
        raise RasterError(f"EGL enumerates no software device ({MESA_DEVICE_SOFTWARE}); devices: {found}")
    elif hardware_only:
        raise RasterError(f"no NVIDIA EGL device with CUDA index {gpu_index}")
    else:
        display, platform, described = _surfaceless_display(EGL), "surfaceless", ""
    context = _make_current(EGL, display)
    gr = skia.GrDirectContext.MakeGL(skia.GrGLInterface.MakeEGL())
    if gr is None:
        raise RasterError("Skia could not make a GL context over EGL")
    session = EGLSession(display, context, gr, _renderer_name(), os.getpid(), platform, described)
    if hardware_only and session.software:
        raise RasterError(f"the only GL renderer is software ({session.renderer})")
    log.info("GL rasterizer on %s (EGL %s platform%s)", session.renderer, platform,
             f", {described}" if described else "")
    return session


def _devices(EGL: Any) -> list[EGLDevice]:
    from OpenGL.EGL.EXT import device_enumeration, device_query
    count = EGL.EGLint()
    if not device_enumeration.eglQueryDevicesEXT(0, None, ctypes.pointer(count)) or count.value == 0:
        return []
    handles = (EGL.EGLDeviceEXT * count.value)()
    device_enumeration.eglQueryDevicesEXT(count.value, handles, ctypes.pointer(count))
    devices = []
    for position, handle in enumerate(handles[:count.value]):
        raw = device_query.eglQueryDeviceStringEXT(handle, EGL.EGL_EXTENSIONS) or b""
        extensions = tuple(raw.decode("ascii", "replace").split())
        devices.append(EGLDevice(position, extensions, _cuda_index(EGL, handle, extensions), handle))
    return devices


def _cuda_index(EGL: Any, handle: Any, extensions: tuple[str, ...]) -> int | None:
    if NV_DEVICE_CUDA not in extensions:
        return None
    from OpenGL.EGL.EXT import device_query
    cuda = EGL.EGLAttrib()
    try:
        found = device_query.eglQueryDeviceAttribEXT(handle, EGL_CUDA_DEVICE_NV, ctypes.pointer(cuda))
    except Exception:  # noqa: BLE001 - PyOpenGL raises EGLError where the driver refuses
        return None
    return int(cuda.value) if found else None


def _device_display(EGL: Any, device: EGLDevice) -> Any:
    """The device-platform display of `device`."""
    from OpenGL.EGL.EXT import platform_base, platform_device
    try:
        display = platform_base.eglGetPlatformDisplayEXT(platform_device.EGL_PLATFORM_DEVICE_EXT, device.handle, None)
    except Exception as exc:
        raise RasterError(f"no EGL display on {device.describe()}: {exc}") from exc
    if not display:
        raise RasterError(f"no EGL display on {device.describe()}")
    return display


def _surfaceless_display(EGL: Any) -> Any:
    from OpenGL.EGL.EXT import platform_base
    try:
        display = platform_base.eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL.EGL_DEFAULT_DISPLAY, None)
    except Exception as exc:
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
    except Exception as exc:  # PyOpenGL raises EGLError and friends
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

    `device` picks the EGL device ("nvidia" or "software"; see `gl_session`).

    Raises:
        RasterError: when no GL context can be made (see `gl_session`).
    """

    def __init__(self, doc: Doc, fmt: str, width: int, height: int, assets: AssetSource | None = None,
                 book: FontBook | None = None, gpu_index: int = 0, yuv: bool = False,
                 hardware_only: bool = False, device: str | None = None) -> None:
        self.session = gl_session(gpu_index, hardware_only, device)
        self.pixel_format = "yuv420p" if yuv else "rgba"
        super().__init__(doc, fmt, width, height, assets, book)
        if yuv:
            self._main.converter = YUV420Converter(self.session.gr, width, height)

    def _new_target(self) -> _GLTarget:
        return _GLTarget(self.session.gr, self.width, self.height)

    def render(self, t: float) -> np.ndarray:
        self.session.make_current()
        return super().render(t)

    def close(self) -> None:
        super().close()
        self.session.make_current()
        self.session.gr.flushAndSubmit()
        self.session.gr.purgeUnlockedResources(skia.GrPurgeResourceOptions.kAllResources)


@dataclass(frozen=True)
class FrameDiff:
    """How a GL frame differs from the CPU's: the largest and mean channel difference (0-255, RGB)
    and the share of pixels beyond the edge-tolerant diff, judged against `GL_MAX_MISMATCH`."""

    max_diff: int
    mean_diff: float
    mismatch: float

    @property
    def ok(self) -> bool:
        return self.mismatch <= GL_MAX_MISMATCH


def compare_frames(actual: np.ndarray, expected: np.ndarray) -> FrameDiff:
    """`actual` (GL) against `expected` (the CPU's), both RGBA of one size."""
    if actual.shape != expected.shape:
        return FrameDiff(255, 255.0, 1.0)
    diff = np.abs(actual[..., :3].astype(np.int16) - expected[..., :3])
    return FrameDiff(int(diff.max()), float(diff.mean()), mismatch_fraction(actual, expected))


def _nearest_distance(a: np.ndarray, b: np.ndarray, radius: int) -> np.ndarray:
    """For each pixel of `a`, the smallest max-channel difference to `b` within `radius`."""
    h, w = a.shape[:2]
    padded = np.pad(b.astype(np.int16), ((radius, radius), (radius, radius), (0, 0)), mode="edge")
    best = np.full((h, w), 255, np.int16)
    a16 = a.astype(np.int16)
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            shifted = padded[dy:dy + h, dx:dx + w]
            np.minimum(best, np.abs(a16 - shifted).max(axis=-1), out=best)
    return best


def mismatch_fraction(actual: np.ndarray, expected: np.ndarray, tolerance: int = 24, radius: int = 1) -> float:
    """Fraction of pixels that differ beyond `tolerance` even allowing a `radius`-pixel shift.

    Two rasterizers never agree exactly along an edge: a pixel counts as different only when no
    pixel within `radius` of it in the other image is within `tolerance` of it, checked both ways.
    """
    if actual.shape != expected.shape:
        return 1.0
    a, e = actual[..., :3], expected[..., :3]
    bad = (_nearest_distance(a, e, radius) > tolerance) | (_nearest_distance(e, a, radius) > tolerance)
    return float(bad.mean())
