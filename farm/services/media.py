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
  that decodes to the end, and last at most ``MAX_DURATION_SEC``;
- a container holding a video stream (a cover picture does not count) is a video: MP4/MOV with
  H.264, HEVC or AV1, or WebM with VP8, VP9 or AV1, where the installed FFmpeg decodes it. Its
  video stream is decoded to the end (a truncated file is refused) within a budget that bounds the
  work a hostile file can cause: at most ``MAX_VIDEO_SIDE`` pixels on a side (each frame),
  ``MAX_VIDEO_FRAMES`` frames, ``MAX_VIDEO_PIXELS`` pixels decoded in all, ``MAX_DURATION_SEC``
  seconds and ``MAX_VIDEO_FPS`` frames a second on average. Its first audio stream, if any, is
  decoded to the end too, and may not outlast the video by more than ``MAX_AUDIO_OVERRUN_SEC``:
  such a clip is refused rather than cut, so what the library holds plays as it was sent. Its
  width and height are as displayed (stretched by the sample aspect ratio, turned by the display
  matrix, as phones record upright footage), its duration the video's (first frame to the end of
  the last), its rate the average (frames over duration, so variable-rate footage has one too),
  and its poster a JPEG of the frame ``POSTER_AT_SEC`` in (or a tenth of the way, if sooner),
  at most ``POSTER_SIDE`` on a side, turned upright;
- text that begins as a WebVTT or SRT file does, or UTF-8 text holding a cue timing (``-->``), is
  captions: at most ``MAX_CAPTIONS_BYTES``, read whole by ``reelfarm.renderer.captions`` (a file
  with any line wrong is refused naming that line, ``invalid_captions``); its duration is its
  last cue's end, and its cues are kept with it.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, field
from struct import error as struct_error
from typing import Any
from xml.etree import ElementTree

import av
import skia
from PIL import Image, ImageFile, JpegImagePlugin, PngImagePlugin, UnidentifiedImageError, WebPImagePlugin

from reelfarm.farm.services.media_sizes import file_size
from reelfarm.farm.services.svg import SvgTooDeep, sanitise
from reelfarm.renderer.captions import CaptionsInvalid, looks_like_captions, read_captions

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 40_000_000
MAX_SIDE = 16_384
MAX_DURATION_SEC = 600.0
MIN_DURATION_SEC = 0.05
MAX_VIDEO_SIDE = 4096
MAX_VIDEO_FPS = 120.0
MAX_VIDEO_FRAMES = 72_000  # MAX_DURATION_SEC at MAX_VIDEO_FPS
MAX_VIDEO_PIXELS = 50_000_000_000  # ten minutes of 1080p at 60 fps is 75 billion: a budget, not a typical clip
MAX_AUDIO_OVERRUN_SEC = 0.5
POSTER_AT_SEC = 1.0
POSTER_SIDE = 320
MAX_CAPTIONS_BYTES = 2 * 1024 * 1024

_RASTERS = {"PNG": ("image/png", "png"), "JPEG": ("image/jpeg", "jpg"), "WEBP": ("image/webp", "webp")}
_SOUNDS = {"mp3": ("audio/mpeg", "mp3"), "wav": ("audio/wav", "wav"), "ogg": ("audio/ogg", "ogg"),
           "mov,mp4,m4a,3gp,3g2,mj2": ("audio/mp4", "m4a"), "aac": ("audio/aac", "aac")}
_SOUND_CODECS = {"mp3", "mp3float", "aac", "vorbis", "opus", "flac"}
_MP4 = "mov,mp4,m4a,3gp,3g2,mj2"
_VIDEOS = {_MP4: {"h264", "hevc", "av1"}, "matroska,webm": {"vp8", "vp9", "av1"}}
_HEADERS: dict[str, type[ImageFile.ImageFile]] = {
    "PNG": PngImagePlugin.PngImageFile, "JPEG": JpegImagePlugin.JpegImageFile, "WEBP": WebPImagePlugin.WebPImageFile}
_NOT_MEDIA = ("the file is not a PNG, JPEG, WebP or SVG image, an MP3, AAC/M4A, WAV or Ogg sound, an MP4, MOV or "
              "WebM video, nor an SRT or WebVTT captions file")
_CAPTIONS = {"vtt": ("text/vtt", "vtt"), "srt": ("application/x-subrip", "srt")}
_LENGTH = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(px)?\s*$")


class MediaRefused(ValueError):
    """An upload the library does not take; ``reason`` says why."""

    def __init__(self, reason: str, code: str = "unsupported_media") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True)
class Media:
    kind: str  # "image", "audio", "video" or "captions"
    content_type: str
    extension: str
    width: int | None = None
    height: int | None = None
    duration_sec: float | None = None
    fps: float | None = None  # videos: frames a second, on average
    has_audio: bool | None = None  # videos: whether an audio stream decodes
    poster: bytes | None = field(default=None, repr=False)  # videos: a JPEG of one frame, upright
    cues: list[dict[str, Any]] | None = field(default=None, repr=False)  # captions: start, end, text


def _too_big(what: str, size: int, limit: int) -> MediaRefused:
    if file_size(size) == file_size(limit):  # just over (or read only to just past the limit)
        return MediaRefused(f"{what} is larger than the {file_size(limit)} allowed", "too_large")
    return MediaRefused(f"{what} is {file_size(size)}, more than the {file_size(limit)} allowed", "too_large")


def admit(data: bytes) -> tuple[bytes, Media]:
    """What to store of an upload, and the media it holds: ``data`` itself, or for an SVG its
    sanitised rewrite. Raises MediaRefused."""
    if not data:
        raise MediaRefused("the file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise _too_big("the file", len(data), MAX_UPLOAD_BYTES)
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<?xml", b"<svg", b"<!doctype", b"<!--")):
        return _svg(data)
    if data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff" or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return data, _raster(data)
    if _captions_like(data):
        return data, _captions(data)
    return data, _timed(data)


def _captions_like(data: bytes) -> bool:
    if looks_like_captions(data):
        return True
    head = data[:4096]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not a character cut at the 4 KiB edge
            return False
    return b"-->" in head and b"\x00" not in head


def _captions(data: bytes) -> Media:
    if len(data) > MAX_CAPTIONS_BYTES:
        raise _too_big("the captions file", len(data), MAX_CAPTIONS_BYTES)
    try:
        fmt, cues = read_captions(data)
    except CaptionsInvalid as exc:
        raise MediaRefused(f"the captions file is wrong at line {exc.line}: {exc.reason}", "invalid_captions") from None
    content_type, extension = _CAPTIONS[fmt]
    return Media("captions", content_type, extension, duration_sec=max(c.end for c in cues),
                 cues=[c.as_dict() for c in cues])


def probe(data: bytes) -> Media:
    """The media ``data`` holds, for a check that stores nothing (what to store is ``admit``'s).
    Raises MediaRefused."""
    return admit(data)[1]


def _raster(data: bytes) -> Media:
    if len(data) > MAX_IMAGE_BYTES:
        raise _too_big("the image", len(data), MAX_IMAGE_BYTES)
    _check_size(*_header_size(data))  # named in pixels before a decoder's own limits speak
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
        raise MediaRefused(f"the image has more than the {_millions(MAX_PIXELS)} pixels allowed", "too_large") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise MediaRefused("the image is truncated or corrupt") from None
    content_type, extension = _RASTERS[fmt]
    return Media("image", content_type, extension, width=width, height=height)


def _header_size(data: bytes) -> tuple[int, int]:
    """The pixels a PNG, JPEG or WebP declares, read from its header alone; (1, 1) when it cannot
    be read (the full decode that follows names the problem)."""
    header = _HEADERS["PNG" if data[:4] == b"\x89PNG" else "JPEG" if data[:2] == b"\xff\xd8" else "WEBP"]
    try:
        with header(io.BytesIO(data)) as image:  # no decoder's pixel limit here: the header alone
            return image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, struct_error, IndexError, KeyError, TypeError):
        return 1, 1


def _millions(pixels: int) -> str:
    return f"{pixels / 1e6:.1f}".removesuffix(".0") + " million"


def _check_size(width: int, height: int) -> None:
    if width < 1 or height < 1:
        raise MediaRefused(f"the image is {width}×{height} pixels; it has no pixels to show")
    if width > MAX_SIDE or height > MAX_SIDE:
        raise MediaRefused(f"the image is {width}×{height} pixels, more than the {MAX_SIDE} pixels on a side "
                           "allowed", "too_large")
    if width * height > MAX_PIXELS:
        raise MediaRefused(f"the image is {width}×{height} pixels ({_millions(width * height)}), more than the "
                           f"{_millions(MAX_PIXELS)} pixels allowed", "too_large")


def _svg(data: bytes) -> tuple[bytes, Media]:
    if len(data) > MAX_IMAGE_BYTES:
        raise _too_big("the image", len(data), MAX_IMAGE_BYTES)
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


def _timed(data: bytes) -> Media:
    """A sound or a video, told apart by whether the container holds a video stream."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            pictures = [s for s in container.streams.video if not s.disposition & av.stream.Disposition.attached_pic]
            return _video(container, pictures[0], data[:64]) if pictures else _sound(container)
    except MediaRefused:
        raise
    except (av.FFmpegError, ValueError, IndexError, OverflowError, ZeroDivisionError):
        raise MediaRefused(f"{_NOT_MEDIA} (or it is truncated or corrupt)") from None


def _video(container: av.container.InputContainer, stream: av.VideoStream, head: bytes) -> Media:
    context = stream.codec_context
    codecs = _VIDEOS.get(container.format.name)
    if codecs is None:
        raise MediaRefused(_NOT_MEDIA)
    if context is None:  # a stream no decoder is known for: an MP4 whose index was cut off, say
        raise MediaRefused(f"{_NOT_MEDIA} (or it is truncated or corrupt)")
    codec = context.codec.canonical_name
    if codec not in codecs:
        raise MediaRefused(f"the video's codec ({codec}) is not supported: MP4 and MOV hold H.264, HEVC or AV1, "
                           "WebM VP8, VP9 or AV1")
    _check_video_side(context.width, context.height)
    if (stream.frames or 0) > MAX_VIDEO_FRAMES:
        raise MediaRefused(f"the video has {stream.frames} frames, more than the {MAX_VIDEO_FRAMES} allowed", "too_large")
    declared = _declared_seconds(container, stream)
    if declared is not None and declared > MAX_DURATION_SEC + 1:
        raise MediaRefused(f"the video lasts {declared:.1f} s, more than the {MAX_DURATION_SEC:.0f} s allowed",
                           "too_large")
    stream.thread_type = "AUTO"
    audio = container.streams.audio[0] if container.streams.audio else None
    seen = _Decoding(stream, min(POSTER_AT_SEC, declared / 10) if declared else 0.0)
    for packet in container.demux(*([stream, audio] if audio is not None else [stream])):
        for frame in packet.decode():
            if isinstance(frame, av.VideoFrame):
                seen.add_picture(frame)
            elif isinstance(frame, av.AudioFrame):
                seen.add_sound(frame)
    if seen.frames == 0:
        raise MediaRefused("the video holds no frames that decode")
    duration, (width, height) = seen.duration(), seen.display_size()
    _check_video_side(width, height)
    if seen.audio_end is not None and seen.audio_end - seen.video_end > MAX_AUDIO_OVERRUN_SEC:
        raise MediaRefused(f"the video's sound lasts {seen.audio_end - seen.first:.2f} s, longer than its "
                           f"{duration:.2f} s of pictures; cut the sound to the pictures' length and send it again")
    expected = stream.frames or 0
    if seen.frames < expected or (declared is not None and duration + 0.5 < declared):
        raise MediaRefused(f"the video is truncated: {seen.frames} frames ({duration:.2f} s) decode of the "
                           f"{expected or 'unknown number'} ({declared or 0:.2f} s) it declares")
    fps = seen.frames / duration
    if fps > MAX_VIDEO_FPS + 0.5:
        raise MediaRefused(f"the video has {fps:.0f} frames a second; at most {MAX_VIDEO_FPS:.0f} are allowed",
                           "too_large")
    content_type, extension = ("video/webm", "webm") if codecs is _VIDEOS["matroska,webm"] else (
        ("video/quicktime", "mov") if head[4:12] == b"ftypqt  " else ("video/mp4", "mp4"))
    return Media("video", content_type, extension, width=width, height=height, duration_sec=round(duration, 3),
                 fps=round(fps, 3), has_audio=(seen.audio_end or 0.0) > seen.first, poster=seen.poster())


def _check_video_side(width: int, height: int) -> None:
    if not (0 < width <= MAX_VIDEO_SIDE and 0 < height <= MAX_VIDEO_SIDE):
        raise MediaRefused(f"the video is {width}×{height} pixels; at most {MAX_VIDEO_SIDE} pixels on a side are "
                           "allowed", "too_large")


def _declared_seconds(container: av.container.InputContainer, stream: av.VideoStream) -> float | None:
    """How long the video stream says it lasts (the container's length if it alone holds pictures)."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    if container.duration and not container.streams.audio:
        return container.duration / av.time_base
    return None


class _Decoding:
    """What decoding a video has met so far, refusing it as soon as it passes a limit."""

    def __init__(self, stream: av.VideoStream, poster_at: float) -> None:
        self.rate = float(stream.guessed_rate or stream.average_rate or 0) or None
        self.sar = stream.codec_context.sample_aspect_ratio or stream.sample_aspect_ratio
        self.poster_at = poster_at
        self.frames = self.pixels = 0
        self.first = self.last_start = self.video_end = 0.0
        self.audio_end: float | None = None
        self.shown: Any = None  # the frame the poster is made of
        self.latest: Any = None

    def add_picture(self, frame: av.VideoFrame) -> None:
        self.frames += 1
        self.pixels += frame.width * frame.height
        _check_video_side(frame.width, frame.height)
        if self.frames > MAX_VIDEO_FRAMES:
            raise MediaRefused(f"the video has more than the {MAX_VIDEO_FRAMES} frames allowed", "too_large")
        if self.pixels > MAX_VIDEO_PIXELS:
            raise MediaRefused(f"the video holds more than the {MAX_VIDEO_PIXELS} pixels allowed in all "
                               f"(its frames' pixels added up)", "too_large")
        start = float(frame.time) if frame.time is not None else (self.frames - 1) / (self.rate or 1.0)
        if self.frames == 1:
            self.first = self.last_start = self.video_end = start
        if start >= self.last_start:  # the last frame shown so far lasts its own length, if it has one
            length = float(frame.duration * frame.time_base) if frame.duration and frame.time_base else 0.0
            self.last_start, self.video_end = start, start + length
        if self.last_start - self.first > MAX_DURATION_SEC:
            raise MediaRefused(f"the video lasts more than the {MAX_DURATION_SEC:.0f} s allowed", "too_large")
        if self.shown is None and start - self.first >= self.poster_at:
            self.shown = frame
        self.latest = frame

    def add_sound(self, frame: av.AudioFrame) -> None:
        if not frame.samples or not frame.sample_rate:
            return
        start = float(frame.time) if frame.time is not None else self.first + (self.audio_end or 0.0)
        self.audio_end = max(self.audio_end or 0.0, start + frame.samples / frame.sample_rate)

    def duration(self) -> float:
        """From the first frame to the end of the last (its own length, or the average interval)."""
        if self.frames == 0:
            return 0.0
        if self.video_end > self.last_start:
            return self.video_end - self.first
        span = self.last_start - self.first
        self.video_end = self.last_start + (span / (self.frames - 1) if self.frames > 1 else 1 / (self.rate or 1.0))
        return self.video_end - self.first

    def display_size(self) -> tuple[int, int]:
        frame = self.shown or self.latest
        if frame is None:
            return 0, 0
        width = max(1, round(frame.width * float(self.sar))) if self.sar else frame.width
        return (frame.height, width) if _quarter_turns(frame) % 2 else (width, frame.height)

    def poster(self) -> bytes:
        frame = self.shown or self.latest
        width, height = self.display_size()
        scale = min(1.0, POSTER_SIDE / max(width, height))
        width, height = max(1, round(width * scale)), max(1, round(height * scale))
        turns = _quarter_turns(frame)
        image = frame.reformat(*((height, width) if turns % 2 else (width, height)), format="rgb24").to_image()
        if turns:
            image = image.transpose(_TURNS[turns])
        out = io.BytesIO()
        image.save(out, "JPEG", quality=85)
        return out.getvalue()


_TURNS = {1: Image.Transpose.ROTATE_90, 2: Image.Transpose.ROTATE_180, 3: Image.Transpose.ROTATE_270}


def _quarter_turns(frame: av.VideoFrame) -> int:
    """Quarter turns counter-clockwise that the frame's display matrix shows it by."""
    return round((frame.rotation or 0) / 90.0) % 4


def _sound(container: av.container.InputContainer) -> Media:
    kind = _SOUNDS.get(container.format.name)
    streams = container.streams.audio
    if not streams and not container.streams.video:  # an MP4 whose index (at its end) was cut off, too
        raise MediaRefused(f"{_NOT_MEDIA} (or it is truncated or corrupt)")
    if kind is None or not streams or container.streams.video:
        raise MediaRefused(_NOT_MEDIA)
    stream = streams[0]
    if stream.codec_context.name not in _SOUND_CODECS and not stream.codec_context.name.startswith("pcm_"):
        raise MediaRefused(f"the sound's codec ({stream.codec_context.name}) is not supported")
    duration = _decoded_duration(container, stream)
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
