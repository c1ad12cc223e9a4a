"""Mix a VideoDoc's audio tracks and the sound of its video clips into one stereo buffer, and
encode it as AAC.

A render mixes once for the whole timeline and ``reelfarm.renderer.concat`` muxes the result next
to the stream-copied video. Any span of the timeline can be mixed on its own (``mix_audio``'s
``first`` and ``count``: a draft's chunk mixes its own part) and gives the same samples as that
span of the whole mix, since every gain, fade, loop and clip sample is a function of the sample's
place on the timeline alone (``reelfarm.renderer.soundtrack``: how a track loops or fades to fit). Everything is float32 at 48 kHz stereo: the rate and layout the
delivered AAC stream uses, so nothing is resampled twice.

A video layer or video background sounds while it shows (`clip_sounds`): from its start to its
end, cut by its scene's (and its groups') ends, at its ``volume``; a hidden layer is silent. Its
sample at each instant is the clip's sound at the clip second the picture shows
(``reelfarm.renderer.footage.clip_time``: ``trim_start + elapsed * speed``, wrapped at the used
part's end when it loops), so picture and sound stay together however the clip is cut. Unlike the
picture, which holds its last frame, the sound stops at the end of the used part. At a ``speed``
other than 1 the sound is played faster or slower as a tape would be (pitch moves with it: an
octave up at 2x): the clip's audio is resampled to ``48000 / speed`` samples per clip second,
which filters what would fold back above the output's Nyquist frequency, then each output sample
takes the nearest of those samples at its instant's clip second, so the sound keeps time with the
picture over any length, loops included. Muting other speeds (as some editors do) would hide
sound the user asked for; time-stretching that keeps the pitch is a heavier tool the service does
not carry. The clip's time zero is its first video frame, as for the picture: sound that starts
later in the file starts later here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import av
import numpy as np

from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Doc, Footage, Layer
from reelfarm.renderer.soundtrack import SoundTrack, gain, place_track

__all__ = [
    "AAC_BIT_RATE",
    "AudioTrack",
    "ClipSound",
    "add_aac_stream",
    "clip_audio",
    "clip_sounds",
    "decode_audio",
    "encode_audio_into",
    "has_audio",
    "iter_aac_packets",
    "mix_audio",
    "sound_lengths",
]

AAC_BIT_RATE = 192_000
"""Stereo AAC-LC at 192 kbit/s is transparent for music beds and voice-over."""
DECLICK_SEC = 0.005
"""A clip's sound rises and falls over 5 ms where its layer starts and ends: a cut into a
waveform at full level clicks."""
_BLOCK = 1 << 20  # samples of a clip's sound placed at a time: bounded memory for a 10-minute background


class AudioTrack(SoundTrack, Protocol):
    """The attributes of a VideoDoc audio track that the mixer reads (seconds, linear gain).

    Read-only, so the frozen ``reelfarm.renderer.model.AudioTrack`` matches, as does any object with them.
    """

    @property
    def asset(self) -> str: ...


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


def sound_lengths(doc: Doc, assets: Any) -> Callable[[str], float]:
    """An audio asset id -> its sound's length in seconds, decoded from the file ``assets`` gives
    (the linter's measure where no media library knows it)."""
    def length(asset_id: str) -> float:
        asset = doc.asset(asset_id)
        if asset is None:
            return math.inf
        return float(decode_audio(assets.path(asset_id, asset), asset=asset_id).shape[1] / 48000)
    return length


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


def _check_track(track: AudioTrack) -> None:
    """Refuse values the schema should already have refused, with the asset named."""
    if track.volume < 0 or track.fade_in < 0 or track.fade_out < 0:
        raise ValueError(f"audio track {track.asset!r}: volume, fade_in and fade_out must be >= 0")


def _mix_track(out: np.ndarray, track: AudioTrack, path: str, rate: int, first: int, total: int) -> None:
    """Add one track's part of timeline samples ``[first, first + out.shape[1])`` into ``out``.

    A negative ``start`` trims the beginning of the file. Fades apply to the part that plays
    within the timeline; a sound shorter or longer than the video loops or fades to fit it
    (``reelfarm.renderer.soundtrack.place_track``).
    """
    _check_track(track)
    placed = place_track(track, lambda n: decode_audio(path, rate, limit=n, asset=track.asset),
                         total, first, out.shape[1], rate)
    if placed is not None:
        at, samples = placed
        out[:, at : at + samples.shape[1]] += samples


def mix_audio(
    tracks: Sequence[AudioTrack],
    resolve: Callable[[str], str],
    duration: float,
    rate: int = 48000,
    clips: Sequence[ClipSound] = (),
    resolve_clip: Callable[[str], str] | None = None,
    first: int = 0,
    count: int | None = None,
) -> np.ndarray:
    """Mix ``tracks`` and ``clips`` over a timeline of ``duration`` seconds; float32 (2, count):
    timeline samples ``[first, first + count)``, the whole timeline (``round(duration*rate)``
    samples) by default. A span mixed alone equals that span of the whole mix.

    ``resolve`` maps an asset id to a local file path (``resolve_clip`` a video asset's, when
    given). Each track gets its volume, linear fades and fit, each clip its volume and `DECLICK_SEC`
    ramps; all are summed, and the sum is clipped to [-1, 1]. A clip without sound adds nothing.
    """
    if duration < 0:
        raise ValueError(f"duration must be >= 0, got {duration}")
    total = round(duration * rate)
    count = total - first if count is None else count
    if first < 0 or count < 0:
        raise ValueError(f"the span must start at 0 or later and have 0 or more samples, got {first}, {count}")
    out = np.zeros((2, count), np.float32)
    for track in tracks:
        _mix_track(out, track, resolve(track.asset), rate, first, total)
    for clip in clips:
        _mix_clip(out, clip, (resolve_clip or resolve)(clip.asset), rate, first, total)
    np.clip(out, -1.0, 1.0, out=out)
    return out


# --------------------------------------------------------------------------------------
# The sound of video clips
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipSound:
    """A video clip heard in a video: from ``start`` (video seconds) for ``seconds``, beginning
    ``elapsed`` seconds into its layer (or scene: a group can start after the layer in it), played
    as ``footage`` says."""

    asset: str
    start: float
    seconds: float
    footage: Footage
    elapsed: float = 0.0


def clip_sounds(doc: Doc, fmt: str | None = None) -> list[ClipSound]:
    """The video backgrounds and layers of ``doc`` that may sound, as drawn in format ``fmt`` (the
    document's own when None; a format's overrides can move, trim, hide or mute a layer).

    Whether a clip's file has sound is not known here (`has_audio` opens it). Opacity and motion
    do not touch the sound: a layer fading out is still heard until it ends.
    """
    fmt = fmt or doc.format
    found: list[ClipSound] = []
    for scene, start in zip(doc.scenes, doc.scene_starts(), strict=True):
        bg = scene.background
        if bg.type == "video" and bg.asset and bg.footage.volume > 0:
            found.append(ClipSound(bg.asset, start, scene.duration, bg.footage))
        found += _layer_sounds(scene.layers, fmt, start, 0.0, scene.duration)
    return found


def _layer_sounds(layers: Sequence[Layer], fmt: str, scene_start: float, lo: float, hi: float) -> list[ClipSound]:
    """The sounding video layers among ``layers`` (and their groups' children) shown within
    scene seconds [lo, hi), the part of the scene their parent shows in."""
    found: list[ClipSound] = []
    for layer in layers:
        layer = layer.for_format(fmt)
        begin = max(lo, layer.start)
        end = hi if layer.end is None else min(hi, layer.end)
        if layer.hidden or end <= begin:
            continue
        if layer.type == "video" and layer.asset and layer.volume > 0:
            found.append(ClipSound(layer.asset, scene_start + begin, end - begin, layer.footage, begin - layer.start))
        elif layer.type == "group":
            found += _layer_sounds(layer.children, fmt, scene_start, begin, end)
    return found


def has_audio(path: str) -> bool:
    """Whether the media file at ``path`` has an audio stream (an unreadable file has none; the
    picture's decoder names what is wrong with it)."""
    try:
        with av.open(path) as container:
            return bool(container.streams.audio)
    except (OSError, av.FFmpegError):
        return False


def _mix_clip(out: np.ndarray, clip: ClipSound, path: str, rate: int, first: int, total: int) -> None:
    """Add one clip's part of timeline samples ``[first, first + out.shape[1])`` into ``out``, cut
    where the timeline ends."""
    offset = round(clip.start * rate)
    n = min(round((clip.start + clip.seconds) * rate), total) - offset
    a, b = max(offset, first), min(offset + n, first + out.shape[1])
    if b <= a or clip.footage.volume <= 0:
        return
    samples = clip_audio(path, clip.footage, clip.elapsed, b - a, rate, clip.asset, skip=a - offset)
    if samples is None:
        return
    ramp = round(DECLICK_SEC * rate)
    env = gain(np.arange(a - offset, b - offset, dtype=np.int64), n, clip.footage.volume, ramp, ramp)
    out[:, a - first : b - first] += samples * env


def clip_audio(path: str, footage: Footage, elapsed: float, count: int, rate: int = 48000,
               asset: str = "", skip: int = 0) -> np.ndarray | None:
    """The sound of a clip played as ``footage`` says, ``count`` samples at ``rate`` from
    ``elapsed`` seconds into its layer and ``skip`` samples on (the part of it a span of the
    timeline holds): float32 (2, count), silent where the used part has ended.
    None when nothing of it can be heard (no audio stream, or the used part ended before). See the
    module docstring for what ``speed`` does.

    Raises:
        AssetError: the clip cannot be read, naming ``asset``.
    """
    from reelfarm.renderer.footage import probe_clip  # the picture's length bounds the used part

    name = asset or path
    if count <= 0 or not has_audio(path):
        return None
    try:
        end = probe_clip(path).duration
    except AssetError as exc:
        raise AssetError(f"video asset {name!r}: {exc}") from None
    if footage.trim_end is not None:
        end = min(end, footage.trim_end)
    span = end - footage.trim_start
    clip_rate = max(1, round(rate / footage.speed))  # samples per clip second
    lo, hi = _heard_span(footage, elapsed + skip / rate, count, rate, span)
    if span <= 0 or lo >= end:
        return None
    lo, hi = lo - 1.0 / clip_rate, min(end, hi) + 1.0 / clip_rate  # a sample either side for float noise
    pcm = _decode_clip_span(path, clip_rate, lo, hi, name)
    if pcm is None:
        return None
    out = np.zeros((2, count), np.float32)
    for first in range(0, count, _BLOCK):
        step = np.arange(skip + first, skip + min(count, first + _BLOCK), dtype=np.float64)
        x = (elapsed + step / rate) * footage.speed
        seconds = footage.trim_start + (np.mod(x, span) if footage.loop else x)
        index = np.floor((seconds - lo) * clip_rate + 0.5).astype(np.int64)
        heard = (seconds < end) & (index >= 0) & (index < pcm.shape[1])
        out[:, first + np.flatnonzero(heard)] = pcm[:, index[heard]]
    return out


def _heard_span(footage: Footage, elapsed: float, count: int, rate: int, span: float) -> tuple[float, float]:
    """The first and last clip seconds heard over ``count`` samples from ``elapsed`` seconds into
    the layer (``reelfarm.renderer.footage.clip_time``, sample by sample, and not held at the end)."""
    x0, x1 = elapsed * footage.speed, (elapsed + (count - 1) / rate) * footage.speed
    if footage.loop and span > 0:
        if math.floor(x0 / span) != math.floor(x1 / span):
            return footage.trim_start, footage.trim_start + span
        x0, x1 = x0 % span, x1 % span
    return footage.trim_start + x0, footage.trim_start + x1


def _decode_clip_span(path: str, rate: int, lo: float, hi: float, name: str) -> np.ndarray | None:
    """Clip seconds [lo, hi) of the first audio stream at ``rate``, float32 stereo (2, m); silence
    where the file has no sound. Clip time 0 is the first video frame. None without an audio stream."""
    try:
        container = av.open(path)
    except (OSError, av.FFmpegError) as exc:
        raise AssetError(f"video asset {name!r} could not be read ({exc})") from None
    try:
        if not container.streams.audio:
            return None
        want = math.ceil((hi - lo) * rate) + 1
        chunks, skip = _decode_from(container, rate, lo, _video_origin(container), want)
    except (av.FFmpegError, ValueError) as exc:  # ValueError: the stream changes layout midway
        raise AssetError(f"video asset {name!r}: its sound is damaged ({exc})") from None
    finally:
        container.close()
    if not chunks:
        return np.zeros((2, 0), np.float32)
    pcm = _to_stereo(chunks, max(0, skip), want - max(0, -skip))
    if skip < 0:  # the sound starts after clip second ``lo``
        pcm = np.concatenate([np.zeros((2, -skip), np.float32), pcm], axis=1)
    return pcm


def _video_origin(container: Any) -> float:
    """The time of the first video frame, clip second 0 (the picture's, ``reelfarm.renderer.footage``)."""
    video = container.streams.video[0] if container.streams.video else None
    if video is None or video.start_time is None or video.time_base is None:
        return 0.0
    return float(video.start_time * video.time_base)


def _decode_from(container: Any, rate: int, lo: float, origin: float, want: int) -> tuple[list[np.ndarray], int]:
    """Decoded chunks of the first audio stream at ``rate`` enough to hold ``want`` samples from
    clip second ``lo``, and how many of their samples come before it (negative: how many are
    missing before the sound starts)."""
    stream = container.streams.audio[0]
    skip: int | None = None
    chunks: list[np.ndarray] = []
    have = 0
    resampler = None
    for frame in container.decode(stream):
        if resampler is None:
            start = float(frame.time) - origin if frame.time is not None else 0.0
            skip = round((lo - start) * rate)
            layout = "mono" if frame.layout.nb_channels == 1 else "stereo"
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        for out in resampler.resample(frame):
            chunks.append(out.to_ndarray())
            have += chunks[-1].shape[1]
        if have >= (skip or 0) + want:
            return chunks, skip or 0
    if resampler is not None:
        chunks += [out.to_ndarray() for out in resampler.resample(None)]
    return chunks, skip or 0


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
