"""What an upload to the media library is, read from its bytes (never its name or declared type).

``admit(data)`` answers the bytes to store and their ``Media`` (kind, content type, extension,
pixels or duration), or raises ``MediaRefused`` saying why, in words for the client. The bytes are
those sent, except an SVG's, which are rewritten without anything a browser could run or fetch
(``reelfarm.farm.services.svg``): what is stored, and measured, and drawn, is the rewritten document.
The limits are stated here and in the API's documentation:

- any upload: at most ``MAX_UPLOAD_BYTES``; images at most ``MAX_IMAGE_BYTES``;
- PNG, JPEG and WebP are identified and measured by Pillow (the header only, then a full decode,
  so a truncated file is refused), at most ``MAX_PIXELS`` pixels and ``MAX_SIDE`` on a side;
- SVG is parsed by the standard library's XML parser only after a document type declaration
  (and with it every entity: the "billion laughs") has been refused; its root must be ``<svg>``;
  it is sanitised (no script, event handler, ``<foreignObject>`` or outside reference; elements
  nested at most ``svg.MAX_DEPTH`` deep), and the sanitised document must have a size of at most
  ``MAX_SIDE`` and be drawn by Skia;
- MP3, AAC/M4A, WAV and Ogg are identified by their container (PyAV), must hold an audio stream
  that decodes to the end, and last at most ``MAX_DURATION_SEC``.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from xml.etree import ElementTree

import av
import skia
from PIL import Image, UnidentifiedImageError

from reelfarm.farm.services.svg import SvgTooDeep, sanitise

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 40_000_000
MAX_SIDE = 16_384
MAX_DURATION_SEC = 600.0
MIN_DURATION_SEC = 0.05

_RASTERS = {"PNG": ("image/png", "png"), "JPEG": ("image/jpeg", "jpg"), "WEBP": ("image/webp", "webp")}
_SOUNDS = {"mp3": ("audio/mpeg", "mp3"), "wav": ("audio/wav", "wav"), "ogg": ("audio/ogg", "ogg"),
           "mov,mp4,m4a,3gp,3g2,mj2": ("audio/mp4", "m4a"), "aac": ("audio/aac", "aac")}
_SOUND_CODECS = {"mp3", "mp3float", "aac", "vorbis", "opus", "flac"}
_LENGTH = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(px)?\s*$")


class MediaRefused(ValueError):
    """An upload the library does not take; ``reason`` says why."""

    def __init__(self, reason: str, code: str = "unsupported_media") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True)
class Media:
    kind: str  # "image" or "audio"
    content_type: str
    extension: str
    width: int | None = None
    height: int | None = None
    duration_sec: float | None = None


def admit(data: bytes) -> tuple[bytes, Media]:
    """What to store of an upload, and the media it holds: ``data`` itself, or for an SVG its
    sanitised rewrite. Raises MediaRefused."""
    if not data:
        raise MediaRefused("the file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise MediaRefused(f"the file is {len(data)} bytes, more than the {MAX_UPLOAD_BYTES} allowed", "too_large")
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<?xml", b"<svg", b"<!doctype", b"<!--")):
        return _svg(data)
    if data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff" or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return data, _raster(data)
    return data, _sound(data)


def probe(data: bytes) -> Media:
    """The media ``data`` holds, for a check that stores nothing (what to store is ``admit``'s).
    Raises MediaRefused."""
    return admit(data)[1]


def _raster(data: bytes) -> Media:
    if len(data) > MAX_IMAGE_BYTES:
        raise MediaRefused(f"the image is {len(data)} bytes, more than the {MAX_IMAGE_BYTES} allowed", "too_large")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                fmt = image.format
                width, height = image.size
                if fmt not in _RASTERS:
                    raise MediaRefused("the file is not a PNG, JPEG, WebP or SVG image")
                _check_size(width, height)
                image.load()  # a truncated or corrupt file fails here
    except MediaRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise MediaRefused(f"the image has more than the {MAX_PIXELS} pixels allowed", "too_large") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise MediaRefused("the image is truncated or corrupt") from None
    content_type, extension = _RASTERS[fmt]
    return Media("image", content_type, extension, width=width, height=height)


def _check_size(width: int, height: int) -> None:
    if width < 1 or height < 1 or width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
        raise MediaRefused(f"the image is {width}x{height}; at most {MAX_SIDE} on a side and {MAX_PIXELS} "
                           "pixels are allowed", "too_large")


def _svg(data: bytes) -> tuple[bytes, Media]:
    if len(data) > MAX_IMAGE_BYTES:
        raise MediaRefused(f"the image is {len(data)} bytes, more than the {MAX_IMAGE_BYTES} allowed", "too_large")
    if b"<!doctype" in data.lower() or b"<!entity" in data.lower():
        raise MediaRefused("an SVG may not declare a document type or entities")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise MediaRefused(f"the SVG is not well-formed XML ({exc})") from None
    if root.tag not in ("svg", "{http://www.w3.org/2000/svg}svg"):
        raise MediaRefused("the XML file is not an SVG image (its root is not <svg>)")
    try:
        clean = sanitise(root)
    except SvgTooDeep as exc:
        raise MediaRefused(f"the SVG cannot be taken: {exc}") from None
    width, height = _svg_size(ElementTree.fromstring(clean))
    _check_size(width, height)
    if skia.SVGDOM.MakeFromStream(skia.MemoryStream(clean)) is None:
        raise MediaRefused("the SVG cannot be drawn")
    return clean, Media("image", "image/svg+xml", "svg", width=width, height=height)


def _svg_size(root: ElementTree.Element) -> tuple[int, int]:
    width, height = _length(root.get("width")), _length(root.get("height"))
    box = (root.get("viewBox") or "").replace(",", " ").split()
    if (width is None or height is None) and len(box) == 4:
        try:
            box_w, box_h = float(box[2]), float(box[3])
        except ValueError:
            box_w = box_h = 0.0
        if box_w > 0 and box_h > 0:
            width = width or (height * box_w / box_h if height else box_w)
            height = height or width * box_h / box_w
    if width is None or height is None:
        raise MediaRefused("the SVG names no size: give its <svg> a width and height, or a viewBox")
    return max(1, round(width)), max(1, round(height))


def _length(value: str | None) -> float | None:
    match = _LENGTH.match(value or "")
    return float(match.group(1)) if match and float(match.group(1)) > 0 else None


def _sound(data: bytes) -> Media:
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            kind = _SOUNDS.get(container.format.name)
            streams = container.streams.audio
            if kind is None or not streams or container.streams.video:
                raise MediaRefused("the file is not a PNG, JPEG, WebP or SVG image, nor MP3, AAC/M4A, WAV or "
                                   "Ogg sound")
            stream = streams[0]
            if stream.codec_context.name not in _SOUND_CODECS and not stream.codec_context.name.startswith("pcm_"):
                raise MediaRefused(f"the sound's codec ({stream.codec_context.name}) is not supported")
            duration = _decoded_duration(container, stream)
    except MediaRefused:
        raise
    except (av.FFmpegError, ValueError, IndexError):
        raise MediaRefused("the file is not a PNG, JPEG, WebP or SVG image, nor MP3, AAC/M4A, WAV or Ogg "
                           "sound (or it is truncated)") from None
    if duration < MIN_DURATION_SEC:
        raise MediaRefused("the sound holds no audio that decodes")
    if duration > MAX_DURATION_SEC:
        raise MediaRefused(f"the sound lasts {duration:.1f} s, more than the {MAX_DURATION_SEC:.0f} s allowed",
                           "too_large")
    content_type, extension = kind
    return Media("audio", content_type, extension, duration_sec=round(duration, 3))


def _decoded_duration(container: av.container.InputContainer, stream: av.AudioStream) -> float:
    """Seconds of sound decoded to the end; a file whose end does not decode is refused."""
    samples, rate = 0, stream.codec_context.sample_rate or 0
    for frame in container.decode(stream):
        samples += frame.samples
        rate = frame.sample_rate or rate
        if rate and samples / rate > MAX_DURATION_SEC + 1:
            break
    declared = float(stream.duration * stream.time_base) if stream.duration and stream.time_base else None
    decoded = samples / rate if rate else 0.0
    if declared is not None and decoded + 0.5 < declared and decoded <= MAX_DURATION_SEC:
        raise MediaRefused(f"the sound is truncated: {decoded:.2f} s of the {declared:.2f} s it declares decode")
    return decoded
