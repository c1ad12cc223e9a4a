"""How an audio track fills the video: looped or played once, faded where the video cuts it.

A track's ``fit`` says what a sound shorter than the rest of the video (from the track's start to
the video's end) does: ``loop`` (the default) repeats it to the end, each repetition crossfading
into the next over ``JOIN_SEC`` (a joint at full level would click); ``once`` plays it once and
leaves the rest silent, which the linter warns about (``sound_problems``). A sound that would run
on past the video's end, looped or not, fades out over its last ``FIT_FADE_SEC`` (or the track's
own ``fade_out``, if longer) instead of stopping dead. A sound within ``SLACK_SEC`` of the video's
length either way plays as it is: no loop to add 30 ms, no fade to cut 30 ms.

Chunk-safe: ``place_track`` gives a track's samples for any span of the timeline from the track
and the file alone, with no state carried from an earlier span, so a draft's chunks each mix
their own part of the sound and the parts join as the whole mix would (STYLE.md: any frame from
``(doc, t)``). It reads the file from its start only as far as the span needs: past the span by
the longest crossfade or fade that could reach into it, and no further than the video's end
unless a fade depends on whether the sound goes on.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np

from reelfarm.renderer.errors import AssetError, Problem
from reelfarm.renderer.model import Doc

__all__ = ["FITS", "FIT_FADE_SEC", "JOIN_SEC", "SLACK_SEC", "SoundTrack", "doc_sound_problems", "gain", "place_track",
           "sound_problems"]

FITS = ("loop", "once")
FIT_FADE_SEC = 1.0
"""A sound cut by the video's end fades out over this much, at least."""
JOIN_SEC = 0.02
"""Each joint of a looped sound crossfades over this much."""
SLACK_SEC = 0.05
"""A sound this close to the rest of the video's length is neither looped nor faded."""

Reader = Callable[[int], np.ndarray]  # at most n samples from the file's start -> float32 (2, m <= n)


class SoundTrack(Protocol):
    """The attributes of a VideoDoc audio track that placing it reads (seconds, linear gain)."""

    @property
    def start(self) -> float: ...
    @property
    def volume(self) -> float: ...
    @property
    def fade_in(self) -> float: ...
    @property
    def fade_out(self) -> float: ...
    @property
    def fit(self) -> str: ...


def gain(index: np.ndarray, n: int, volume: float, fade_in: int, fade_out: int) -> np.ndarray:
    """The gain at positions ``index`` of a part ``n`` samples long: ``volume`` with linear ramps that
    reach 0 on its first and last sample (the same numbers for a position whatever span holds it)."""
    env = np.full(index.shape, volume, np.float32)
    fade_in, fade_out = min(fade_in, n), min(fade_out, n)
    if fade_in > 0:
        rising = index < fade_in
        env[rising] *= (index[rising] / fade_in).astype(np.float32)
    if fade_out > 0:
        falling = index >= n - fade_out
        env[falling] *= ((n - 1 - index[falling]) / fade_out).astype(np.float32)
    return env


def place_track(track: SoundTrack, read: Reader, total: int, first: int, count: int,
                rate: int = 48000) -> tuple[int, np.ndarray] | None:
    """The track's samples over timeline samples ``[first, first + count)`` of a video ``total``
    samples long: (the index in that span where they begin, float32 (2, m) gained samples), or None
    where it is silent throughout. ``read(n)`` decodes at most ``n`` samples from the file's start.

    Raises:
        ValueError: a fit other than ``loop`` or ``once``.
    """
    if track.fit not in FITS:
        raise ValueError(f"audio track fit must be one of {', '.join(FITS)}, got {track.fit!r}")
    offset = round(track.start * rate)
    skip = max(0, -offset)  # a negative start: the file's first samples come before the video
    end = total - offset  # the file's sample at the video's end
    a, b = max(first, offset), min(first + count, total)
    if b <= a or end <= skip:
        return None
    u0, u1 = a - offset, b - offset
    slack, join = round(SLACK_SEC * rate), round(JOIN_SEC * rate)
    cut_fade = round(max(track.fade_out, FIT_FADE_SEC) * rate)
    # past u1 as far as a joint or a fade reaching back into the span could need (see the docstring)
    want = min(u1 + max(join, cut_fade) + slack, end + slack) + 1
    pcm = read(want)
    length = pcm.shape[1] if pcm.shape[1] < want else None  # None: longer than ``want``, as good as endless here
    looped = track.fit == "loop" and length is not None and length < end - slack
    if looped or length is None or length > end + slack:
        played, fade_out = end, cut_fade
    else:
        played, fade_out = min(length, end), round(track.fade_out * rate)
    u1 = min(u1, played)
    if u1 <= u0:
        return None
    positions = np.arange(u0, u1, dtype=np.int64)
    samples = _looped(pcm, positions, join) if looped else pcm[:, u0:u1]
    env = gain(positions - skip, played - skip, track.volume, round(track.fade_in * rate), fade_out)
    return a - first, samples * env


def _looped(pcm: np.ndarray, positions: np.ndarray, join: int) -> np.ndarray:
    """The sound repeated at ``positions``: repetition k starts at k * (length - join), and its first
    ``join`` samples crossfade linearly with the last ``join`` of the one before."""
    length = pcm.shape[1]
    join = min(join, length // 2)
    period = length - join
    k, r = np.divmod(positions, period)
    out = pcm[:, r]
    if join > 0:
        joint = (k > 0) & (r < join)
        rise = (r[joint] / join).astype(np.float32)
        out[:, joint] = pcm[:, r[joint]] * rise + pcm[:, r[joint] + period] * (1 - rise)
    return out


SoundLength = Callable[[str], float]  # an audio asset id -> its sound's length in seconds


def doc_sound_problems(doc: Doc, length_of: SoundLength | None) -> list[Problem]:
    """``sound_problems`` for a document's tracks, their sounds measured by ``length_of`` (a media
    library knows them; ``reelfarm.renderer.audio.sound_lengths`` reads the files); none without it."""
    if length_of is None:
        return []
    tracks = ((f"/audio/{i}", t, t.asset) for i, t in enumerate(doc.audio)
              if (a := doc.asset(t.asset)) is not None and a.type == "audio")
    return list(sound_problems(tracks, doc.duration, length_of))


def sound_problems(tracks: Iterator[tuple[str, SoundTrack, str]], duration: float,
                   length_of: SoundLength) -> Iterator[Problem]:
    """A warning (``sound_ends_early``) for each track played ``once`` whose sound ends more than
    ``SLACK_SEC`` before the video does: (pointer, track, asset id) in, the sound's length by
    ``length_of`` (which may raise for a sound it cannot measure: that track is skipped)."""
    for ptr, track, asset in tracks:
        if track.fit != "once":
            continue
        try:
            length = length_of(asset)
        except AssetError:  # an unreadable sound fails its render, naming it
            continue
        if not np.isfinite(length):
            continue
        ends = track.start + length
        if ends < duration - SLACK_SEC:
            yield Problem(ptr + "/fit", "sound_ends_early",
                          f"the sound ends at {ends:.1f} s, {duration - ends:.1f} s before the video; "
                          "set fit to loop to repeat it to the end, or choose a longer sound")
