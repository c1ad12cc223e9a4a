"""What to render: the one definition of formats, resolutions and frame rates.

Every part of the service takes these names from here: the API publishes `FORMATS`,
`RESOLUTIONS` and `FPS_CHOICES` as its choices; the render service, the command line and the
renderer itself accept anything within the renderer's limits (`MIN_RESOLUTION`..
`MAX_RESOLUTION` pixels of short side, 1..`MAX_FPS` frames per second), which is one rule,
`spec_problems`, written once. The published choices are a subset of what can be rendered;
tests and previews use smaller sizes.

`RenderSpec` is the value that travels: format, resolution and fps, with its pixel size. It
cannot be built invalid: construction lists every problem at once in `SpecInvalid`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reelfarm.renderer.errors import Problem, SpecInvalid

FORMAT_RATIOS: dict[str, tuple[int, int]] = {"16:9": (16, 9), "9:16": (9, 16), "1:1": (1, 1), "4:5": (4, 5)}
FORMATS: tuple[str, ...] = tuple(FORMAT_RATIOS)
DEFAULT_FORMAT = FORMATS[0]  # a video, document or render that names no format

# What a node draws and encodes with (``reelfarm.renderer.backends`` chooses): a rasterizer and an
# encoder by name, "auto" choosing for the machine; each family's segments join only with its own.
RASTER_KINDS = ("auto", "cpu", "gl")
ENCODER_FAMILIES = ("x264", "nvenc")
ENCODER_KINDS = ("auto", *ENCODER_FAMILIES)
RESOLUTIONS: tuple[int, ...] = (720, 1080, 2160)
FPS_CHOICES: tuple[int, ...] = (24, 30, 60)
MIN_RESOLUTION = 16
MAX_RESOLUTION = 4320
MAX_FPS = 120
LINT_RESOLUTION = 360  # the short side the linter draws and measures at (reelfarm.renderer.linter)

# What a render's file is (``reelfarm.renderer.encode_web``): an MP4 (H.264 + AAC), an animated GIF
# (no sound, one palette for the whole video) or a WebM (VP9 + Opus; VP9 with alpha when
# transparent). A GIF is capped: a GIF frame costs a byte per pixel uncompressed per frame and
# players decode it on the CPU, so its short side is at most `GIF_MAX_RESOLUTION` pixels (720:
# 1280x720 at 16:9) and its rate at most `GIF_MAX_FPS`; larger values asked for are lowered to
# these, and the render says which (`clamp_for_container`).
CONTAINERS: tuple[str, ...] = ("mp4", "gif", "webm")
DEFAULT_CONTAINER = "mp4"
TRANSPARENT_CONTAINERS: tuple[str, ...] = ("webm",)
GIF_MAX_RESOLUTION = 720
GIF_MAX_FPS = 24

_UNSET: Any = object()


def frame_size(fmt: str, resolution: int) -> tuple[int, int]:
    """(width, height) in pixels; both even, as 4:2:0 video needs.

    >>> frame_size("16:9", 1080), frame_size("4:5", 1080), frame_size("16:9", 2160)
    ((1920, 1080), (1080, 1350), (3840, 2160))
    """
    rw, rh = FORMAT_RATIOS[fmt]
    short = min(rw, rh)
    width = resolution * rw / short
    height = resolution * rh / short
    return _even(width), _even(height)


def _even(value: float) -> int:
    return max(2, round(value / 2.0) * 2)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def spec_problems(fmt: Any = _UNSET, resolution: Any = _UNSET, fps: Any = _UNSET) -> list[Problem]:
    """Every reason the given values cannot be rendered; values not given are not checked.

    Pointers are `/format`, `/resolution` and `/fps`, as a request body names them.

    >>> [p.pointer for p in spec_problems("5:4", 0, 1000)]
    ['/format', '/resolution', '/fps']
    """
    problems = []
    if fmt is not _UNSET and fmt not in FORMATS:
        problems.append(Problem("/format", "invalid_choice", f"must be one of {', '.join(FORMATS)}"))
    if resolution is not _UNSET and not (_whole(resolution) and MIN_RESOLUTION <= resolution <= MAX_RESOLUTION):
        problems.append(Problem("/resolution", "out_of_range",
                                f"must be a whole number of pixels from {MIN_RESOLUTION} to {MAX_RESOLUTION}"))
    if fps is not _UNSET and not (_whole(fps) and 1 <= fps <= MAX_FPS):
        problems.append(Problem("/fps", "out_of_range", f"must be a whole number from 1 to {MAX_FPS}"))
    return problems


def container_problems(container: Any = DEFAULT_CONTAINER, transparent: Any = False) -> list[Problem]:
    """Every reason `container` and `transparent` cannot be rendered together (pointers
    `/container` and `/transparent`).

    >>> [p.pointer for p in container_problems("gif", True)]
    ['/transparent']
    """
    problems = []
    if container not in CONTAINERS:
        problems.append(Problem("/container", "invalid_choice", f"must be one of {', '.join(CONTAINERS)}"))
    if not isinstance(transparent, bool):
        problems.append(Problem("/transparent", "invalid", "must be true or false"))
    elif transparent and container in CONTAINERS and container not in TRANSPARENT_CONTAINERS:
        problems.append(Problem("/transparent", "unsupported",
                                f"transparent needs container {' or '.join(TRANSPARENT_CONTAINERS)}, not {container}"))
    return problems


def clamp_for_container(container: str, resolution: int, fps: int) -> tuple[int, int, list[str]]:
    """The resolution and fps a `container` file is made at, and the names of those lowered.

    >>> clamp_for_container("gif", 1080, 30), clamp_for_container("mp4", 1080, 30)
    ((720, 24, ['resolution', 'fps']), (1080, 30, []))
    """
    if container != "gif":
        return resolution, fps, []
    clamped: list[str] = []
    if resolution > GIF_MAX_RESOLUTION:
        resolution, clamped = GIF_MAX_RESOLUTION, [*clamped, "resolution"]
    if fps > GIF_MAX_FPS:
        fps, clamped = GIF_MAX_FPS, [*clamped, "fps"]
    return resolution, fps, clamped


@dataclass(frozen=True)
class RenderSpec:
    """Format, resolution (the short side in pixels) and frames per second of one output.

    Raises:
        SpecInvalid: on construction, listing every value out of range.
    """

    format: str
    resolution: int = 1080
    fps: int = 30

    def __post_init__(self) -> None:
        problems = spec_problems(self.format, self.resolution, self.fps)
        if problems:
            raise SpecInvalid("; ".join(f"{p.pointer[1:]} {p.message}" for p in problems), problems)

    @classmethod
    def for_doc(cls, doc: Any, fmt: str | None = None, resolution: int = 1080, fps: int | None = None) -> RenderSpec:
        """A spec whose format and fps default to the document's (`doc.format`, `doc.fps`)."""
        return cls(fmt or doc.format, resolution, fps or doc.fps)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return frame_size(self.format, self.resolution)

    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def height(self) -> int:
        return self.size[1]

    def time(self, frame: int) -> float:
        """Seconds at which frame number `frame` is shown."""
        return frame / self.fps

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "resolution": self.resolution, "fps": self.fps}
