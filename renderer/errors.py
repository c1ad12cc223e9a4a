"""The renderer's exceptions: one base class, one subclass per thing a caller can act on.

Callers (the worker, the API, the CLI) catch ``RendererError`` to tell a render that failed
for a known reason from a crash, then use the subclass to decide what to tell the user:

    RendererError            base of everything the renderer raises on purpose
    ├── DocInvalid           the VideoDoc breaks the schema or its rules (.problems lists them)
    ├── SpecInvalid          a format, resolution or fps out of range (.problems lists them)
    ├── AssetError           an asset is missing, unreadable or not decodable
    ├── EncodeError          encoding or muxing the video failed
    ├── RasterError          no GPU rasterizer can be made here (callers fall back to the CPU)
    └── FontError            a font family or weight is unknown or its file cannot be loaded

Messages are written for the person who made the document: they name the asset, font or
setting involved and say what to do about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One finding about a document or a request: a JSON pointer into it, a code and a sentence."""

    pointer: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.pointer, "code": self.code, "message": self.message}


class RendererError(Exception):
    """Base class of every error the renderer raises deliberately."""


class DocInvalid(RendererError):
    """The document cannot be rendered as written.

    ``problems`` holds every problem found (not only the first), so an editor can show them
    all at once; items are whatever the validator produces (strings or dicts).
    """

    def __init__(self, message: str, problems: list[Any] | None = None) -> None:
        super().__init__(message)
        self.problems: list[Any] = list(problems) if problems else []


class SpecInvalid(RendererError):
    """What to render is out of range: ``problems`` lists every value wrong (``Problem`` items)."""

    def __init__(self, message: str, problems: list[Problem]) -> None:
        super().__init__(message)
        self.problems = list(problems)


class AssetError(RendererError):
    """An asset (image, audio, video clip) is missing, unreadable, or not a format we can decode; a
    clip damaged or cut short partway fails where a frame from the damage is first shown, naming
    the asset and the second into the clip."""


class EncodeError(RendererError):
    """Encoding frames or muxing the output file failed."""


class SegmentsMismatch(EncodeError):
    """Segments of one video were encoded with different codec parameters (profile, level, SPS/PPS,
    size, frame rate, time base): joined by stream copy they would make a file that breaks in
    players. ``segments`` names the ones that differ from the first."""

    def __init__(self, message: str, segments: list[str]) -> None:
        super().__init__(message)
        self.segments = segments


class RasterError(RendererError):
    """A GPU rasterizer cannot be made or used here: no EGL, no context, no GPU, a failed read-back."""


class FontError(RendererError):
    """A requested font is not available or its file cannot be loaded."""
