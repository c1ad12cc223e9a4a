"""Turn RGBA frames into H.264 MP4 files.

Two encoders share one small protocol (``start`` / ``write`` / ``finish``) so the frame loop
does not care which one runs:

- ``X264Encoder``: libx264 through PyAV, on the CPU. The default, and the only one tested on
  every machine.
- ``NvencEncoder``: NVENC through PyNvVideoCodec, on NVIDIA GPUs that have encoder units
  (L4, L40S, A10, T4, RTX; *not* H100/H200). Written from the PyNvVideoCodec documentation and
  never run against real hardware yet: see its docstring.

Colour is handled the same way on both paths: RGBA is converted to 4:2:0 YUV by swscale with
the BT.709 matrix and limited ("tv") range, and the stream is tagged BT.709/tv, because
letting the encoder convert implicitly uses BT.601 and leaves the file untagged (players then
guess, and reds and greens shift). Pure red therefore encodes to Y=63.

Every output starts with an IDR frame, uses closed GOPs and pts = frame index in 1/fps, so
segments rendered in parallel can be joined by stream copy (see ``renderer.concat``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from fractions import Fraction
from functools import lru_cache
from typing import Any, Protocol

import av
import numpy as np
from av.codec.context import Flags
from av.video.reformatter import Colorspace, VideoReformatter

from renderer.errors import EncodeError

log = logging.getLogger(__name__)

__all__ = [
    "Encoder",
    "X264Encoder",
    "NvencEncoder",
    "H264AnnexBMuxer",
    "available_h264_encoders",
    "encode_frames",
    "make_encoder",
    "nvenc_available",
    "open_mp4",
    "rgba_to_bt709",
]

FASTSTART = {"movflags": "+faststart"}
"""Muxer options for every MP4 we write: moov first, so playback starts before the download ends."""

# AVCOL_* values (libavutil/pixfmt.h) for BT.709 primaries/transfer/matrix and limited range.
AVCOL_BT709 = 1
AVCOL_RANGE_MPEG = 1

DEFAULT_GOP_SECONDS = 2.0


class Encoder(Protocol):
    """What the frame loop needs from an encoder.

    ``write`` receives a uint8 array in ``start``'s ``pixel_format``: (height, width, 4) for
    "rgba" or "bgra" (the CPU rasterizer's native order), or the three planes of "yuv420p"
    (BT.709 limited range, converted on the GPU) as (height * 3 / 2, width). The caller reuses
    it for the next frame, so implementations must copy or convert it before returning.
    ``finish`` flushes and closes; it must be safe after a failed ``start`` or ``write``
    because callers always run it in ``finally``.
    """

    def start(self, path: str, width: int, height: int, fps: int, pixel_format: str = "rgba") -> None: ...

    def write(self, rgba: np.ndarray) -> None: ...

    def finish(self) -> None: ...


# --------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------


def _check_geometry(width: int, height: int, fps: int) -> None:
    """Reject sizes 4:2:0 cannot represent before any file is created."""
    if width <= 0 or height <= 0 or width % 2 or height % 2:
        raise EncodeError(
            f"frame size {width}x{height} is invalid: H.264 4:2:0 needs even, positive sizes"
        )
    if fps <= 0:
        raise EncodeError(f"fps must be positive, got {fps}")


PIXEL_FORMATS = ("rgba", "bgra", "yuv420p")


def _check_pixel_format(pixel_format: str) -> None:
    if pixel_format not in PIXEL_FORMATS:
        raise EncodeError(f"pixel_format must be one of {', '.join(PIXEL_FORMATS)}, not {pixel_format!r}")


def _check_frame(rgba: np.ndarray, width: int, height: int, pixel_format: str = "rgba") -> np.ndarray:
    """Validate a frame; return it C-contiguous (copying only if it is not).

    Packed frames are (height, width, 4); yuv420p frames are the three planes one after the
    other, (height * 3 / 2, width), as `renderer.gl.YUV420Converter` reads them back.
    """
    shape = (height * 3 // 2, width) if pixel_format == "yuv420p" else (height, width, 4)
    if rgba.dtype != np.uint8 or rgba.shape != shape:
        raise EncodeError(
            f"expected a {shape} uint8 {pixel_format.upper()} frame, got {rgba.shape} {rgba.dtype}"
        )
    if not rgba.flags.c_contiguous:
        rgba = np.ascontiguousarray(rgba)
    return rgba


def to_bt709_frame(
    sws: VideoReformatter, pixels: np.ndarray, pixel_format: str, pix_fmt: str = "yuv420p"
) -> av.VideoFrame:
    """A BT.709 limited-range frame in `pix_fmt` from a packed or planar frame.

    yuv420p input is already BT.709 limited range (converted where it was drawn) and is
    wrapped without conversion when `pix_fmt` is yuv420p.
    """
    if pixel_format != "yuv420p":
        return rgba_to_bt709(sws, pixels, pix_fmt, src_format=pixel_format)
    frame = av.VideoFrame.from_numpy_buffer(pixels, format="yuv420p")
    if pix_fmt != "yuv420p":
        frame = sws.reformat(frame, format=pix_fmt, src_colorspace=Colorspace.ITU709, dst_colorspace=Colorspace.ITU709,
                             src_color_range="MPEG", dst_color_range="MPEG")
    frame.color_primaries = AVCOL_BT709
    frame.color_trc = AVCOL_BT709
    return frame


def rgba_to_bt709(
    sws: VideoReformatter, rgba: np.ndarray, pix_fmt: str = "yuv420p", threads: int = 1,
    src_format: str = "rgba",
) -> av.VideoFrame:
    """Convert an RGBA array to BT.709 limited-range YUV with swscale.

    The array is wrapped without copying; swscale (which runs without the GIL) writes the
    converted planes into a new frame, so the caller may reuse ``rgba`` as soon as this
    returns. Reusing one ``VideoReformatter`` keeps swscale's context between frames.
    One swscale thread by default: measured at 1080p on 2 cores, automatic swscale
    threading next to x264's frame threads cost about 20% of total throughput.
    """
    src = av.VideoFrame.from_numpy_buffer(rgba, format=src_format)
    out = sws.reformat(
        src,
        format=pix_fmt,
        src_colorspace=Colorspace.ITU709,
        dst_colorspace=Colorspace.ITU709,
        src_color_range="JPEG",
        dst_color_range="MPEG",
        threads=threads,
    )
    out.color_primaries = AVCOL_BT709
    out.color_trc = AVCOL_BT709
    return out


def _tag_bt709(cc: Any) -> None:
    """Write BT.709 / limited range into the codec context, hence into the SPS VUI and MP4."""
    cc.color_primaries = AVCOL_BT709
    cc.color_trc = AVCOL_BT709
    cc.colorspace = AVCOL_BT709
    cc.color_range = AVCOL_RANGE_MPEG


def _gop_frames(fps: int, gop_seconds: float) -> int:
    """Keyframe interval in frames: a few seconds keeps seeking cheap and files small."""
    return max(1, round(fps * gop_seconds))


def open_mp4(path: str) -> Any:
    """Open an MP4 for writing with faststart, turning OS errors into EncodeError."""
    try:
        return av.open(path, "w", format="mp4", options=FASTSTART)
    except (OSError, av.FFmpegError) as exc:
        raise EncodeError(f"cannot create output file {path!r}: {exc}") from exc


def _close_quietly(container: Any) -> None:
    """Close a container on an error path, where a second error would hide the first."""
    try:
        container.close()
    except Exception:  # noqa: BLE001 - already failing; the original error matters
        log.debug("ignored error while closing %r", container, exc_info=True)


# --------------------------------------------------------------------------------------
# x264
# --------------------------------------------------------------------------------------


class X264Encoder:
    """H.264 High, yuv420p, BT.709 tv range, through PyAV's libx264.

    ``crf`` 20 keeps text and flat colour clean at 1080p. ``preset`` "veryfast" because, on a
    1080p gradient + moving shapes scene at CRF 20, it cost 18-34 ms of CPU per frame against
    29-57 ms for "faster" and "medium" (about 1.6x faster), with files no larger and luma
    PSNR 1-2 dB lower but still above 47 dB. ``threads`` 0 lets x264 choose; threading is
    by frame (about 30% faster than PyAV's default slice threading). When several processes each
    encode a segment, give each a few threads (``renderer.render`` gives 2), not one per core.
    """

    def __init__(
        self,
        crf: int = 20,
        preset: str = "veryfast",
        threads: int = 0,
        gop_seconds: float = DEFAULT_GOP_SECONDS,
    ) -> None:
        self.crf = crf
        self.preset = preset
        self.threads = threads
        self.gop_seconds = gop_seconds
        self.frames_written = 0
        self._container: Any = None
        self._stream: Any = None
        self._sws = VideoReformatter()
        self._size = (0, 0)
        self._pixel_format = "rgba"
        self._failed = False

    def start(self, path: str, width: int, height: int, fps: int, pixel_format: str = "rgba") -> None:
        """Create the file and open libx264 now, so bad settings fail here, not mid-render.

        A failed start closes what it opened, so callers that only ``finish()`` after a
        successful start leak nothing either.
        """
        if self._container is not None:
            raise EncodeError("encoder already started; call finish() first")
        _check_geometry(width, height, fps)
        _check_pixel_format(pixel_format)
        self._size, self.frames_written, self._failed = (width, height), 0, False
        self._pixel_format = pixel_format
        self._container = open_mp4(path)
        try:
            self._stream = self._add_stream(width, height, fps)
            self._container.start_encoding()
        except (av.FFmpegError, ValueError) as exc:
            _close_quietly(self._container)
            self._container = self._stream = None
            raise EncodeError(
                f"cannot open libx264 (preset={self.preset!r}, crf={self.crf}): {exc}"
            ) from exc

    def _add_stream(self, width: int, height: int, fps: int) -> Any:
        """Configure the libx264 stream: explicit preset/crf, High profile, closed GOP, tags."""
        stream = self._container.add_stream(
            "libx264", rate=fps, options={"preset": self.preset, "crf": str(self.crf)}
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        cc = stream.codec_context
        cc.time_base = Fraction(1, fps)
        cc.thread_type = "FRAME"
        cc.thread_count = self.threads
        cc.profile = "High"
        cc.gop_size = _gop_frames(fps, self.gop_seconds)
        cc.flags = int(cc.flags) | int(Flags.closed_gop)
        _tag_bt709(cc)
        return stream

    def write(self, rgba: np.ndarray) -> None:
        """Convert one frame (swscale) and encode it (libx264); both release the GIL."""
        if self._stream is None or self._failed:
            raise EncodeError("write() called on an encoder that is not started or has failed")
        try:
            pixels = _check_frame(rgba, *self._size, self._pixel_format)
            # x264 copies the picture in before encode() returns, so the caller may reuse it.
            frame = to_bt709_frame(self._sws, pixels, self._pixel_format)
            frame.pts = self.frames_written
            self._container.mux(self._stream.encode(frame))
        except EncodeError:
            self._failed = True
            raise
        except av.FFmpegError as exc:
            self._failed = True
            raise EncodeError(f"libx264 failed on frame {self.frames_written}: {exc}") from exc
        self.frames_written += 1

    def finish(self) -> None:
        """Flush delayed frames and write the trailer; after a failure, only close the file."""
        container, self._container = self._container, None
        stream, self._stream = self._stream, None
        if container is None:
            return
        if self._failed or stream is None:
            _close_quietly(container)
            return
        try:
            container.mux(stream.encode(None))
        except av.FFmpegError as exc:
            _close_quietly(container)
            raise EncodeError(f"flushing libx264 failed: {exc}") from exc
        try:
            container.close()
        except av.FFmpegError as exc:
            raise EncodeError(f"writing the MP4 trailer failed: {exc}") from exc


# --------------------------------------------------------------------------------------
# Elementary H.264 -> MP4 (used by NVENC, testable without a GPU)
# --------------------------------------------------------------------------------------

_BT709_METADATA = (
    "h264_metadata=colour_primaries=1:transfer_characteristics=1:"
    "matrix_coefficients=1:video_full_range_flag=0"
)


def _nal_types(data: bytes) -> set[int]:
    """NAL unit types present in an Annex B access unit (start codes 00 00 01)."""
    types: set[int] = set()
    pos = data.find(b"\x00\x00\x01")
    while pos != -1 and pos + 3 < len(data):
        types.add(data[pos + 3] & 0x1F)
        pos = data.find(b"\x00\x00\x01", pos + 3)
    return types


class H264AnnexBMuxer:
    """Mux an Annex B H.264 elementary stream without B-frames into MP4, by PyAV.

    Hardware encoders hand back raw access units with no timestamps; without B-frames decode
    order is display order, so pts = dts = frame index in 1/fps. The ``h264_metadata``
    bitstream filter rewrites the SPS VUI to BT.709/tv so the file is tagged whatever the
    encoder wrote; PyAV takes the MP4's avcC from the first keyframe's SPS/PPS.
    """

    def __init__(
        self, path: str, width: int, height: int, fps: int, tag_bt709: bool = True
    ) -> None:
        _check_geometry(width, height, fps)
        self.frames = 0
        self._tb = Fraction(1, fps)
        self._container = open_mp4(path)
        try:
            self._stream = self._container.add_mux_stream(
                "h264", rate=fps, width=width, height=height
            )
            self._stream.time_base = self._tb
            self._parser = av.CodecContext.create("h264", "r")
            self._bsf = av.BitStreamFilterContext(_BT709_METADATA, "h264") if tag_bt709 else None
        except (av.FFmpegError, ValueError) as exc:
            _close_quietly(self._container)
            raise EncodeError(f"cannot set up H.264 muxing for {path!r}: {exc}") from exc

    def write(self, data: bytes) -> int:
        """Feed any chunk of the byte stream; returns how many frames were muxed."""
        if not data:
            return 0
        return self._mux_packets(self._parser.parse(data))

    def close(self) -> None:
        """Flush the parser and filter, then write the trailer."""
        try:
            self._mux_packets(self._parser.parse(None))
            if self._bsf is not None:
                self._mux_filtered(self._bsf.filter(None))
        finally:
            self._container.close()

    def abort(self) -> None:
        """Close the file without flushing, on an error path."""
        _close_quietly(self._container)

    def _mux_packets(self, packets: list[Any]) -> int:
        before = self.frames
        for packet in packets:
            if self._bsf is None:
                self._mux_filtered([packet])
            else:
                self._mux_filtered(self._bsf.filter(packet))
        return self.frames - before

    def _mux_filtered(self, packets: list[Any]) -> None:
        for packet in packets:
            if packet.size == 0:
                continue
            packet.is_keyframe = 5 in _nal_types(bytes(packet))
            if self.frames == 0 and not packet.is_keyframe:
                raise EncodeError("the H.264 stream does not start with an IDR frame")
            packet.pts = packet.dts = self.frames
            packet.duration = 1
            packet.time_base = self._tb
            packet.stream = self._stream
            self._container.mux(packet)
            self.frames += 1


# --------------------------------------------------------------------------------------
# NVENC
# --------------------------------------------------------------------------------------


def _import_nvc() -> Any:
    """Import PyNvVideoCodec lazily; it raises RuntimeError when libnvidia-encode is missing."""
    try:
        import PyNvVideoCodec
    except Exception as exc:  # noqa: BLE001 - ImportError, RuntimeError, OSError all mean "no"
        raise EncodeError(f"NVENC is not available (PyNvVideoCodec: {exc})") from exc
    return PyNvVideoCodec


def _bitstream_bytes(out: Any) -> bytes:
    """Normalise what ``Encode``/``EndEncode`` return across PyNvVideoCodec versions.

    1.x returns a byte buffer (or a list of ints); 2.x returns a list of dicts whose
    ``"data"`` is one access unit.
    """
    if out is None:
        return b""
    if isinstance(out, (bytes, bytearray, memoryview)):
        return bytes(out)
    if isinstance(out, np.ndarray):
        return out.astype(np.uint8, copy=False).tobytes()
    if isinstance(out, dict):
        return _bitstream_bytes(out.get("data"))
    items = list(out)
    if all(isinstance(item, (int, np.integer)) for item in items):
        return bytes(items)
    return b"".join(_bitstream_bytes(item) for item in items)


class NvencEncoder:
    """H.264 through NVENC (PyNvVideoCodec), muxed into MP4 by PyAV.

    UNVERIFIED: written from PyNvVideoCodec 2.x's documentation and samples; it has not run
    on a GPU with NVENC (H100/H200 have no encoder units). Only the plumbing around it is
    tested, with a stand-in module. What to check on the first real run: ``probe()`` reports
    profile High and BT.709 tags, decoded frame count and times are exact, colour of pure
    red is Y=63, and speed beats ``X264Encoder``.

    Design: RGBA is converted to NV12 on the CPU by swscale (BT.709, tv range; about 3 ms
    at 1080p) rather than handing ABGR to NVENC, so colours match the x264 path exactly.
    B-frames are off (``bf=0``) so the elementary stream needs no timestamps; SPS/PPS are
    repeated on every IDR; the IDR period is ``gop_seconds``. NVENC picks the H.264 profile
    itself (High for 4:2:0 8-bit in practice); PyNvVideoCodec exposes no profile option.
    """

    def __init__(
        self,
        bitrate: int = 8_000_000,
        nvenc_preset: str = "P4",
        tuning_info: str = "high_quality",
        gpu_id: int = 0,
        gop_seconds: float = DEFAULT_GOP_SECONDS,
        extra_options: dict[str, Any] | None = None,
    ) -> None:
        self.bitrate = bitrate
        self.nvenc_preset = nvenc_preset
        self.tuning_info = tuning_info
        self.gpu_id = gpu_id
        self.gop_seconds = gop_seconds
        self.extra_options = dict(extra_options or {})
        self.frames_written = 0
        self._nvenc: Any = None
        self._muxer: H264AnnexBMuxer | None = None
        self._sws = VideoReformatter()
        self._size = (0, 0)
        self._pixel_format = "rgba"
        self._failed = False

    def options(self, fps: int) -> dict[str, str]:
        """CreateEncoder keyword options (PyNvVideoCodec stringifies them anyway)."""
        gop = _gop_frames(fps, self.gop_seconds)
        opts: dict[str, Any] = {
            "codec": "h264",
            "preset": self.nvenc_preset,
            "tuning_info": self.tuning_info,
            "rc": "vbr",
            "bitrate": self.bitrate,
            "maxbitrate": int(self.bitrate * 1.5),
            "vbvbufsize": self.bitrate,
            "fps": fps,
            "gop": gop,
            "idrperiod": gop,
            "bf": 0,
            "repeatspspps": 1,
            "gpu_id": self.gpu_id,
        }
        opts.update(self.extra_options)
        return {key: str(value) for key, value in opts.items()}

    def start(self, path: str, width: int, height: int, fps: int, pixel_format: str = "rgba") -> None:
        """Create the NVENC session (host-memory NV12 input) and the MP4 muxer.

        A failed start releases what it created, like ``X264Encoder.start``.
        """
        if self._nvenc is not None or self._muxer is not None:
            raise EncodeError("encoder already started; call finish() first")
        _check_geometry(width, height, fps)
        nvc = _import_nvc()
        _check_pixel_format(pixel_format)
        self._size, self.frames_written, self._failed = (width, height), 0, False
        self._pixel_format = pixel_format
        try:
            nvenc = nvc.CreateEncoder(width, height, "NV12", True, **self.options(fps))
        except Exception as exc:  # noqa: BLE001 - PyNvVideoCodec raises its own types
            raise EncodeError(f"cannot create an NVENC encoder: {exc}") from exc
        self._muxer = H264AnnexBMuxer(path, width, height, fps)  # on error, nvenc is dropped
        self._nvenc = nvenc

    def write(self, rgba: np.ndarray) -> None:
        """Convert to NV12 (swscale, no GIL), copy to NVENC, mux whatever comes back."""
        if self._nvenc is None or self._muxer is None or self._failed:
            raise EncodeError("write() called on an encoder that is not started or has failed")
        try:
            pixels = _check_frame(rgba, *self._size, self._pixel_format)
            nv12 = to_bt709_frame(self._sws, pixels, self._pixel_format, "nv12").to_ndarray()
            self._muxer.write(_bitstream_bytes(self._nvenc.Encode(nv12.reshape(-1))))
        except EncodeError:
            self._failed = True
            raise
        except Exception as exc:  # noqa: BLE001 - PyNvVideoCodec and PyAV errors alike
            self._failed = True
            raise EncodeError(f"NVENC failed on frame {self.frames_written}: {exc}") from exc
        self.frames_written += 1

    def finish(self) -> None:
        """Drain NVENC (EndEncode) and close the MP4; after a failure, only close."""
        nvenc, self._nvenc = self._nvenc, None
        muxer, self._muxer = self._muxer, None
        if muxer is None:
            return
        if self._failed or nvenc is None:
            muxer.abort()
            return
        try:
            muxer.write(_bitstream_bytes(nvenc.EndEncode()))
        except Exception as exc:  # noqa: BLE001
            muxer.abort()
            raise EncodeError(f"flushing NVENC failed: {exc}") from exc
        try:
            muxer.close()
        except av.FFmpegError as exc:
            raise EncodeError(f"writing the MP4 trailer failed: {exc}") from exc


@lru_cache(maxsize=1)
def nvenc_available() -> bool:
    """True only if PyNvVideoCodec imports and an H.264 NVENC session can be opened.

    Importing is not enough: the library loads on GPUs without encoder units (H100, H200)
    and only fails when a session is created. Cached: the answer does not change while the
    process lives.
    """
    try:
        nvc = _import_nvc()
        encoder = nvc.CreateEncoder(256, 256, "NV12", True, codec="h264")
    except Exception:  # noqa: BLE001
        log.debug("NVENC unavailable", exc_info=True)
        return False
    del encoder
    return True


# --------------------------------------------------------------------------------------
# Choosing, listing, running
# --------------------------------------------------------------------------------------

_KINDS = ("auto", "nvenc", "x264")


def _accepted_kwargs(cls: type[Encoder], kw: dict[str, Any]) -> dict[str, Any]:
    """Keep the options ``cls`` understands, so one settings dict can serve both encoders."""
    params = inspect.signature(cls.__init__).parameters
    return {key: value for key, value in kw.items() if key in params}


def make_encoder(kind: str = "auto", **kw: Any) -> Encoder:
    """Return NVENC when asked for ("auto" or "nvenc") and usable, libx264 otherwise.

    Options that only the other encoder knows are dropped (e.g. ``crf`` for NVENC), so a
    fallback from "nvenc" to x264 still works; an option neither knows is a TypeError.
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown encoder kind {kind!r}; use one of {', '.join(_KINDS)}")
    known = set(inspect.signature(X264Encoder.__init__).parameters)
    known |= set(inspect.signature(NvencEncoder.__init__).parameters)
    unknown = sorted(set(kw) - (known - {"self"}))
    if unknown:
        raise TypeError(f"unknown encoder option(s): {', '.join(unknown)}")
    if kind in ("auto", "nvenc") and nvenc_available():
        return NvencEncoder(**_accepted_kwargs(NvencEncoder, kw))
    if kind == "nvenc":
        log.warning("NVENC was requested but is not available; encoding with libx264")
    return X264Encoder(**_accepted_kwargs(X264Encoder, kw))


def available_h264_encoders() -> list[str]:
    """Names of the H.264 encoders compiled into PyAV's FFmpeg (e.g. libx264, h264_nvenc).

    Being compiled in says nothing about hardware: h264_nvenc is listed on machines without
    an NVIDIA driver and fails when opened.
    """
    h264_id = av.Codec("h264", "r").id
    names = []
    for name in av.codecs_available:
        try:
            codec = av.Codec(name, "w")
        except Exception:  # noqa: BLE001 - decoders only, or unavailable
            continue
        if codec.id == h264_id and codec.name == name:
            names.append(name)
    return sorted(names)


def encode_frames(
    encoder: Encoder, path: str, width: int, height: int, fps: int, frames: Iterable[np.ndarray]
) -> int:
    """Run start/write/finish with finish in ``finally``; return the number of frames written."""
    count = 0
    try:
        encoder.start(path, width, height, fps)
        for frame in frames:
            encoder.write(frame)
            count += 1
    finally:
        encoder.finish()
    return count
