"""Mix a VideoDoc's audio tracks into one stereo buffer and encode it as AAC.

The mix is done once for the whole timeline (not per rendered segment) so fades and music
never restart at segment boundaries; ``reelfarm.renderer.concat`` muxes the result next to the
stream-copied video. Everything is float32 at 48 kHz stereo: the rate and layout the
delivered AAC stream uses, so nothing is resampled twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, Protocol

import av
import numpy as np

from reelfarm.renderer.errors import AssetError

__all__ = [
    "AAC_BIT_RATE",
    "AudioTrack",
    "add_aac_stream",
    "decode_audio",
    "encode_audio_into",
    "iter_aac_packets",
    "mix_audio",
]

AAC_BIT_RATE = 192_000
"""Stereo AAC-LC at 192 kbit/s is transparent for music beds and voice-over."""


class AudioTrack(Protocol):
    """The attributes of a VideoDoc audio track that the mixer reads (seconds, linear gain).

    Read-only, so the frozen ``reelfarm.renderer.model.AudioTrack`` matches, as does any object with them.
    """

    @property
    def asset(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def volume(self) -> float: ...
    @property
    def fade_in(self) -> float: ...
    @property
    def fade_out(self) -> float: ...


# --------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------


def _open_audio(asset: str, path: str) -> Any:
    """Open a file and return (container, first audio stream), with user-facing errors."""
    try:
        container = av.open(path)
    except FileNotFoundError as exc:
        raise AssetError(f"audio asset {asset!r}: file not found ({path})") from exc
    except (OSError, av.FFmpegError) as exc:
        raise AssetError(
            f"audio asset {asset!r} could not be read as audio ({exc}); "
            "upload it again as MP3, AAC/M4A, WAV, OGG or FLAC"
        ) from exc
    if not container.streams.audio:
        container.close()
        raise AssetError(f"audio asset {asset!r} has no audio stream; upload an audio file")
    return container


def _resampled_chunks(container: Any, rate: int) -> Iterator[np.ndarray]:
    """Decode the first audio stream, resampled to float planar at ``rate``.

    Mono stays mono here (the caller duplicates it at full level: swresample would upmix
    it at -3 dB); more than two channels are downmixed to stereo by swresample.
    """
    stream = container.streams.audio[0]
    resampler = None
    for frame in container.decode(stream):
        if resampler is None:
            layout = "mono" if frame.layout.nb_channels == 1 else "stereo"
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        for out in resampler.resample(frame):
            yield out.to_ndarray()
    if resampler is not None:
        for out in resampler.resample(None):
            yield out.to_ndarray()


def decode_audio(
    path: str, rate: int = 48000, skip: int = 0, limit: int | None = None, asset: str = ""
) -> np.ndarray:
    """Decode a file to float32 stereo (2, n) at ``rate``.

    ``skip`` samples are dropped from the start and at most ``limit`` are kept, so a long
    music file under a short video is not decoded to the end. Undecodable data raises
    AssetError naming ``asset`` (or the path).
    """
    name = asset or path
    container = _open_audio(name, path)
    chunks: list[np.ndarray] = []
    have = 0
    try:
        for chunk in _resampled_chunks(container, rate):
            chunks.append(chunk)
            have += chunk.shape[1]
            if limit is not None and have >= skip + limit:
                break
    except (av.FFmpegError, ValueError) as exc:  # ValueError: stream changes layout midway
        raise AssetError(
            f"audio asset {name!r} is damaged or in an unsupported format ({exc}); "
            "upload it again as MP3, AAC/M4A, WAV, OGG or FLAC"
        ) from exc
    finally:
        container.close()
    if not chunks:
        raise AssetError(f"audio asset {name!r} contains no audio samples; upload it again")
    return _to_stereo(chunks, skip, limit)


def _to_stereo(chunks: list[np.ndarray], skip: int, limit: int | None) -> np.ndarray:
    """Join decoded chunks, trim to [skip, skip+limit), and duplicate mono to both sides."""
    samples = np.concatenate(chunks, axis=1).astype(np.float32, copy=False)
    end = None if limit is None else skip + limit
    samples = samples[:, skip:end]
    if samples.shape[0] == 1:
        samples = np.repeat(samples, 2, axis=0)
    return samples


# --------------------------------------------------------------------------------------
# Mixing
# --------------------------------------------------------------------------------------


def _envelope(n: int, volume: float, fade_in: int, fade_out: int) -> np.ndarray:
    """Gain per sample: ``volume`` with linear ramps that reach 0 on the first/last sample."""
    env = np.full(n, volume, np.float32)
    fade_in, fade_out = min(fade_in, n), min(fade_out, n)
    if fade_in > 0:
        env[:fade_in] *= np.arange(fade_in, dtype=np.float32) / fade_in
    if fade_out > 0:
        env[n - fade_out :] *= np.arange(fade_out - 1, -1, -1, dtype=np.float32) / fade_out
    return env


def _check_track(track: AudioTrack) -> None:
    """Refuse values the schema should already have refused, with the asset named."""
    if track.volume < 0 or track.fade_in < 0 or track.fade_out < 0:
        raise ValueError(f"audio track {track.asset!r}: volume, fade_in and fade_out must be >= 0")


def _mix_track(out: np.ndarray, track: AudioTrack, path: str, rate: int) -> None:
    """Add one track into ``out`` in place.

    A negative ``start`` trims the beginning of the file. Fades apply to the part that
    plays within the timeline, so a track cut by the end of the video still fades out.
    """
    _check_track(track)
    offset = round(track.start * rate)
    skip, offset = max(0, -offset), max(0, offset)
    room = out.shape[1] - offset
    if room <= 0:
        return
    samples = decode_audio(path, rate, skip=skip, limit=room, asset=track.asset)
    n = samples.shape[1]
    if n == 0:
        return
    env = _envelope(n, track.volume, round(track.fade_in * rate), round(track.fade_out * rate))
    out[:, offset : offset + n] += samples * env


def mix_audio(
    tracks: Sequence[AudioTrack],
    resolve: Callable[[str], str],
    duration: float,
    rate: int = 48000,
) -> np.ndarray:
    """Mix ``tracks`` over a timeline of ``duration`` seconds; float32 (2, round(duration*rate)).

    ``resolve`` maps an asset id to a local file path. Each track gets its volume and
    linear fades, tracks are summed, and the sum is clipped to [-1, 1].
    """
    if duration < 0:
        raise ValueError(f"duration must be >= 0, got {duration}")
    out = np.zeros((2, round(duration * rate)), np.float32)
    for track in tracks:
        _mix_track(out, track, resolve(track.asset), rate)
    np.clip(out, -1.0, 1.0, out=out)
    return out


# --------------------------------------------------------------------------------------
# AAC
# --------------------------------------------------------------------------------------


def add_aac_stream(container: Any, rate: int = 48000, bit_rate: int = AAC_BIT_RATE) -> Any:
    """Add a stereo AAC stream to an output container (before anything is muxed)."""
    stream = container.add_stream("aac", rate=rate)
    stream.layout = "stereo"
    stream.bit_rate = bit_rate
    stream.codec_context.time_base = Fraction(1, rate)
    return stream


def iter_aac_packets(stream: Any, samples: np.ndarray, rate: int = 48000) -> Iterator[Any]:
    """Encode (2, n) float samples into ``stream``'s AAC encoder, yielding packets lazily.

    Lazy so a muxer can interleave them with video packets instead of buffering either.
    """
    if samples.ndim != 2 or samples.shape[0] != 2:
        raise ValueError(f"expected (2, n) stereo samples, got {samples.shape}")
    size = stream.codec_context.frame_size or 1024
    for start in range(0, samples.shape[1], size):
        chunk = np.ascontiguousarray(samples[:, start : start + size], dtype=np.float32)
        frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        frame.sample_rate = rate
        frame.pts = start
        yield from stream.encode(frame)
    yield from stream.encode(None)


def encode_audio_into(
    container: Any, samples: np.ndarray, rate: int = 48000, bit_rate: int = AAC_BIT_RATE
) -> Any:
    """Add an AAC stream to ``container`` and mux all of ``samples`` into it; return the stream.

    For a file that has only audio, or when interleaving does not matter. ``concat``
    interleaves with ``add_aac_stream`` + ``iter_aac_packets`` instead.
    """
    stream = add_aac_stream(container, rate, bit_rate)
    for packet in iter_aac_packets(stream, samples, rate):
        container.mux(packet)
    return stream
