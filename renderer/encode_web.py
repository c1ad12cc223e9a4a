"""Animated GIF and WebM outputs, beside the MP4s of ``reelfarm.renderer.encode``.

WebM is VP9 (libvpx-vp9 through PyAV) with Opus sound. Like an MP4 it is made of chunks: each is
a VP9 segment in its own WebM file that starts with a keyframe (VP9 has no B-frames, so every
keyframe starts a closed group), and ``reelfarm.renderer.concat`` joins them by stream copy and
encodes the sound once, as Opus. ``VP9Encoder(alpha=True)`` writes yuva420p: the alpha plane
travels as a second VP9 stream in each block's Matroska "BlockAdditional", which a stream copy
keeps; it decodes with libvpx-vp9 (FFmpeg's own vp9 decoder ignores it and shows black).

A GIF has one palette for the whole video, so it cannot be joined from GIF chunks (each would
have its own palette, and colours would jump at every joint). Its chunks are ordinary x264
segments (the very segments an MP4 of the same format, resolution and fps makes, so the two
share them), and ``write_gif`` makes the file in two passes over them: FFmpeg's ``palettegen``
counts the colours of every frame into one 256-colour palette, then ``paletteuse`` maps each
frame onto it (ordered Bayer dithering, which does not crawl from frame to frame as error
diffusion does, and only the changed rectangle of each frame is written). A GIF has no sound.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import av
import numpy as np
from av.video.reformatter import Colorspace, VideoReformatter

from reelfarm.renderer.encode import (
    DEFAULT_GOP_SECONDS,
    PyAVEncoder,
    close_quietly,
    gop_frames,
    rgba_to_bt709,
)
from reelfarm.renderer.errors import EncodeError

__all__ = ["OPUS_BIT_RATE", "VP9Encoder", "add_opus_stream", "content_type", "extension", "iter_opus_packets",
           "open_output", "webm_segment_tools", "write_gif"]

OPUS_BIT_RATE = 128_000
_CONTENT_TYPES = {"mp4": "video/mp4", "gif": "image/gif", "webm": "video/webm"}


def extension(container: str) -> str:
    """The file extension of a render's file in ``container`` (``mp4``, ``gif``, ``webm``)."""
    if container not in _CONTENT_TYPES:
        raise ValueError(f"unknown container {container!r}")
    return container


def content_type(container: str) -> str:
    """The media type a ``container`` file is stored and served with."""
    return _CONTENT_TYPES[extension(container)]


def open_output(path: str, container: str) -> Any:
    """Open a file for writing in ``container`` (MP4 with faststart), OS errors as EncodeError."""
    options = {"movflags": "+faststart"} if container == "mp4" else {}
    try:
        return av.open(path, "w", format=extension(container), options=options)
    except (OSError, av.FFmpegError) as exc:
        raise EncodeError(f"cannot create output file {path!r}: {exc}") from exc


# -- WebM ---------------------------------------------------------------------------------------

class VP9Encoder(PyAVEncoder):
    """VP9 in WebM through libvpx-vp9: yuv420p BT.709, or yuva420p with ``alpha``.

    ``deadline`` "realtime" with ``cpu_used`` 8 because libvpx's "good" deadline costs several
    times as much per frame; ``crf`` 32 (constant quality, bit rate unbounded) keeps flat colour
    and text clean. Alternate reference frames are off: libvpx cannot make them with alpha, and
    a segment must not hold frames back across its end.
    """

    codec = "libvpx-vp9"
    file_kind = "WebM"

    def __init__(self, alpha: bool = False, crf: int = 32, cpu_used: int = 8, threads: int = 0,
                 gop_seconds: float = DEFAULT_GOP_SECONDS) -> None:
        super().__init__(threads, gop_seconds)
        self.alpha = alpha
        self.crf = crf
        self.cpu_used = cpu_used

    @property
    def pix_fmt(self) -> str:
        return "yuva420p" if self.alpha else "yuv420p"

    def _settings(self) -> str:
        return f"crf={self.crf}"

    def _check_start(self, pixel_format: str) -> None:
        if self.alpha and pixel_format == "yuv420p":
            raise EncodeError("a VP9 encoder with alpha needs rgba or bgra frames, not yuv420p")

    def _open(self, path: str) -> Any:
        return open_output(path, "webm")

    def _add_stream(self, width: int, height: int, fps: int) -> Any:
        options = {"crf": str(self.crf), "b": "0", "deadline": "realtime", "cpu-used": str(self.cpu_used),
                   "row-mt": "1", "auto-alt-ref": "0", "lag-in-frames": "0"}
        stream = self._container.add_stream("libvpx-vp9", rate=fps, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, self.pix_fmt
        cc = stream.codec_context
        cc.time_base = Fraction(1, fps)
        cc.thread_count = self.threads
        cc.gop_size = gop_frames(fps, self.gop_seconds)
        cc.color_primaries = cc.color_trc = cc.colorspace = 1  # BT.709
        cc.color_range = 1  # limited ("tv")
        return stream

    def _frame(self, pixels: np.ndarray) -> av.VideoFrame:
        """BT.709, with its alpha plane when kept (the colours unpremultiplied first)."""
        if self.alpha:
            return rgba_to_bt709(self._sws, _unpremultiplied(pixels), "yuva420p", src_format=self._pixel_format)
        return super()._frame(pixels)


def webm_segment_tools(doc: Any, spec: Any, assets: Any, choice: Any, transparent: bool,
                       threads: int = 0) -> tuple[Any, VP9Encoder]:
    """The rasterizer and encoder of a WebM chunk: ``choice``'s rasterizer (``reelfarm.renderer.backends``)
    drawing yuv420p, or, for a transparent WebM, the CPU one drawing RGBA with nothing behind the
    scenes that have no background; VP9 on the CPU either way."""
    if not transparent:
        return choice.make(doc, spec, assets, yuv=True), VP9Encoder(threads=threads)
    from reelfarm.renderer.raster import SkiaRasterizer
    return (SkiaRasterizer(doc, spec.format, spec.width, spec.height, assets, transparent=True),
            VP9Encoder(alpha=True, threads=threads))


def _unpremultiplied(pixels: np.ndarray) -> np.ndarray:
    """Straight-alpha colour from Skia's premultiplied pixels (a video's alpha plane is straight)."""
    alpha = pixels[..., 3:4]
    if alpha.min() == 255:
        return pixels
    out = pixels.astype(np.uint16)
    safe = np.maximum(alpha, 1).astype(np.uint16)
    out[..., :3] = np.minimum(255, (out[..., :3] * 255 + safe // 2) // safe)
    return out.astype(np.uint8)


def add_opus_stream(container: Any, rate: int = 48000, bit_rate: int = OPUS_BIT_RATE) -> Any:
    """Add a stereo Opus stream to an output container (before anything is muxed)."""
    stream = container.add_stream("libopus", rate=rate)
    stream.layout = "stereo"
    stream.bit_rate = bit_rate
    stream.codec_context.time_base = Fraction(1, rate)
    return stream


def iter_opus_packets(stream: Any, samples: np.ndarray, rate: int = 48000) -> Iterator[Any]:
    """Encode (2, n) float samples as Opus (20 ms frames), yielding packets lazily."""
    if samples.ndim != 2 or samples.shape[0] != 2:
        raise ValueError(f"expected (2, n) stereo samples, got {samples.shape}")
    size = stream.codec_context.frame_size or 960
    for start in range(0, samples.shape[1], size):
        part = np.zeros((2, size), np.float32)
        chunk = samples[:, start:start + size]
        part[:, :chunk.shape[1]] = chunk
        # libopus takes interleaved samples: one plane of (L, R) pairs
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(part.T.reshape(1, -1)), format="flt",
                                           layout="stereo")
        frame.sample_rate = rate
        frame.pts = start
        yield from stream.encode(frame)
    yield from stream.encode(None)


# -- GIF ----------------------------------------------------------------------------------------

def _decoded(paths: Sequence[str]) -> Iterator[av.VideoFrame]:
    """Every frame of the segments in order, as RGB (their BT.709 limited range undone)."""
    sws = VideoReformatter()
    for path in paths:
        try:
            with av.open(path) as seg:
                for frame in seg.decode(video=0):
                    yield sws.reformat(frame, format="rgb24", src_colorspace=Colorspace.ITU709,
                                       dst_colorspace=Colorspace.ITU709, src_color_range="MPEG",
                                       dst_color_range="JPEG")
        except (OSError, av.FFmpegError) as exc:
            raise EncodeError(f"cannot read segment {path!r}: {exc}") from exc


def _pull_all(sink: Any) -> Iterator[av.VideoFrame]:
    while True:
        try:
            yield sink.pull()
        except (av.BlockingIOError, av.EOFError):
            return


def _palette(paths: Sequence[str], width: int, height: int) -> av.VideoFrame:
    """One 256-colour palette from the colours of every frame (pass one)."""
    graph = av.filter.Graph()
    src = graph.add_buffer(width=width, height=height, format=av.VideoFormat("rgb24"), time_base=Fraction(1, 1000))
    gen = graph.add("palettegen", "stats_mode=full")
    sink = graph.add("buffersink")
    src.link_to(gen)
    gen.link_to(sink)
    graph.configure()
    for i, frame in enumerate(_decoded(paths)):
        frame.pts, frame.time_base = i, Fraction(1, 1000)
        src.push(frame)
    src.push(None)
    palettes = list(_pull_all(sink))
    if not palettes:
        raise EncodeError("no frames to make a GIF palette from")
    return palettes[0]


def write_gif(segment_paths: Sequence[str], out_path: str, fps: int) -> int:
    """An animated GIF (looping for ever) of the segments' frames with one palette; returns the
    number of frames written. On failure the partly written file is left to the caller's scratch."""
    with av.open(segment_paths[0]) as first:
        cc = first.streams.video[0].codec_context
        width, height = cc.width, cc.height
    palette = _palette(segment_paths, width, height)
    graph = av.filter.Graph()
    tb = Fraction(1, fps)
    src = graph.add_buffer(width=width, height=height, format=av.VideoFormat("rgb24"), time_base=tb)
    pal = graph.add_buffer(width=palette.width, height=palette.height, format=palette.format, time_base=tb)
    use = graph.add("paletteuse", "dither=bayer:bayer_scale=4:diff_mode=rectangle")
    sink = graph.add("buffersink")
    src.link_to(use, 0, 0)
    pal.link_to(use, 0, 1)
    use.link_to(sink)
    graph.configure()
    palette.pts, palette.time_base = 0, tb
    pal.push(palette)
    pal.push(None)
    output = open_output(out_path, "gif")
    count = 0
    try:
        stream = output.add_stream("gif", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "pal8"
        stream.codec_context.time_base = tb

        def mux(frames: Iterator[av.VideoFrame]) -> None:
            nonlocal count
            for frame in frames:
                frame.pts, frame.time_base = count, tb
                output.mux(stream.encode(frame))
                count += 1
        for i, frame in enumerate(_decoded(segment_paths)):
            frame.pts, frame.time_base = i, tb
            src.push(frame)
            mux(_pull_all(sink))
        src.push(None)
        mux(_pull_all(sink))
        output.mux(stream.encode(None))
        output.close()
    except av.FFmpegError as exc:
        close_quietly(output)
        raise EncodeError(f"writing the GIF {out_path!r} failed: {exc}") from exc
    return count
