"""Frame sizes of the four formats: the resolution is the short side."""
from __future__ import annotations

FORMAT_RATIOS: dict[str, tuple[int, int]] = {"16:9": (16, 9), "9:16": (9, 16), "1:1": (1, 1), "4:5": (4, 5)}
RESOLUTIONS = (720, 1080, 2160)
FPS_CHOICES = (24, 30, 60)


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
    return max(2, int(round(value / 2.0)) * 2)
