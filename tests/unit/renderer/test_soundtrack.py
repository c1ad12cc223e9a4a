"""A soundtrack fits its video: a short sound loops (or plays once, with a lint warning), a long one
fades out at the video's end, and any span of the mix equals that span of the whole mix (a
draft's chunks mix their own parts). WAV files made with numpy, decoded through PyAV."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.audio import mix_audio
from reelfarm.renderer.linter import lint
from reelfarm.renderer.render import render_video
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from tests.helpers import write_tone

RATE = 48000
FULL = 0.5 / np.sqrt(2)  # the RMS of write_tone's sine


@dataclass
class Track:
    asset: str
    start: float = 0.0
    volume: float = 1.0
    fade_in: float = 0.0
    fade_out: float = 0.0
    fit: str = "loop"


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {"short": write_tone(tmp_path / "short.wav", 2.0), "long": write_tone(tmp_path / "long.wav", 8.0),
            "exact": write_tone(tmp_path / "exact.wav", 5.0)}


def mix(files: dict[str, Path], tracks: list[Track], duration: float, first: int = 0,
        count: int | None = None) -> np.ndarray:
    return mix_audio(tracks, lambda asset: str(files[asset]), duration, RATE, first=first, count=count)


def at(out: np.ndarray, a: float, b: float) -> np.ndarray:
    return out[0, round(a * RATE): round(b * RATE)]


def test_a_short_sound_loops_to_the_end_by_default(files: dict[str, Path]) -> None:
    out = mix(files, [Track("short")], 5.0)
    for second in (2.5, 3.5):  # the second and third times through
        assert rms(at(out, second, second + 0.4)) == pytest.approx(FULL, rel=0.02)
    assert out[0, -1] == 0  # cut by the video's end: faded out over the last second
    assert rms(at(out, 4.45, 4.55)) == pytest.approx(FULL * 0.5, rel=0.1)


def test_the_loop_joint_does_not_click(files: dict[str, Path]) -> None:
    """The 440 Hz tone's 2 s file ends mid-cycle; the joint crossfades instead of jumping."""
    out = mix(files, [Track("short")], 5.0)
    steps = np.abs(np.diff(out[0, : round(4.0 * RATE)]))
    smooth = 0.5 * 2 * np.pi * 440 / RATE  # the largest step of the tone itself
    assert steps.max() < smooth * 1.5


def test_once_plays_a_short_sound_once(files: dict[str, Path]) -> None:
    out = mix(files, [Track("short", fit="once")], 5.0)
    assert rms(at(out, 1.0, 1.9)) == pytest.approx(FULL, rel=0.02)
    assert not at(out, 2.0, 5.0).any()


def test_a_long_sound_fades_out_over_the_last_second(files: dict[str, Path]) -> None:
    for fit in ("loop", "once"):
        out = mix(files, [Track("long", fit=fit)], 5.0)
        assert rms(at(out, 3.0, 3.9)) == pytest.approx(FULL, rel=0.02)
        assert rms(at(out, 4.45, 4.55)) == pytest.approx(FULL * 0.5, rel=0.1)
        assert np.abs(out[:, -48:]).max() < 0.5 * 48 / RATE + 1e-6


def test_a_longer_fade_out_of_its_own_is_kept(files: dict[str, Path]) -> None:
    out = mix(files, [Track("long", fade_out=2.0)], 5.0)
    assert rms(at(out, 3.95, 4.05)) == pytest.approx(FULL * 0.5, rel=0.1)


def test_a_sound_as_long_as_the_video_is_neither_looped_nor_faded(files: dict[str, Path]) -> None:
    out = mix(files, [Track("exact")], 5.0)
    assert rms(at(out, 4.5, 4.99)) == pytest.approx(FULL, rel=0.02)


def test_a_looped_sound_from_a_start_time(files: dict[str, Path]) -> None:
    out = mix(files, [Track("short", start=1.0)], 6.0)
    assert not at(out, 0.0, 1.0).any()
    assert rms(at(out, 3.5, 4.5)) == pytest.approx(FULL, rel=0.02)


@pytest.mark.parametrize("tracks", [
    [Track("short")], [Track("short", fit="once", fade_out=0.5)], [Track("long", fade_in=0.7)],
    [Track("short", start=0.3, volume=0.6), Track("long", start=-1.5, fit="once")], [Track("exact", fade_out=1.5)],
], ids=["loop", "once", "long", "two", "exact"])
def test_any_span_equals_that_span_of_the_whole_mix(files: dict[str, Path], tracks: list[Track]) -> None:
    whole = mix(files, tracks, 5.0)
    cuts = [0, 1, 47_999, 96_000, 96_017, 150_001, 191_999, 200_000, 240_000]  # joints, fades, the end
    parts = [mix(files, tracks, 5.0, a, b - a) for a, b in itertools.pairwise(cuts)]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)


def test_a_span_past_the_end_is_silent(files: dict[str, Path]) -> None:
    assert not mix(files, [Track("long")], 5.0, 240_000, 100).any()


def test_an_unknown_fit_is_refused(files: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="loop, once"):
        mix(files, [Track("short", fit="twice")], 5.0)


# -- the document, the linter and a rendered MP4 -----------------------------------------------

def sound_doc(key: str, duration: float, **track: object) -> dict:
    return {"version": 1, "fps": 24, "duration": duration, "format": "16:9", "brand": copy.deepcopy(NEUTRAL_BRAND),
            "assets": {"music": {"type": "audio", "key": key}},
            "audio": [{"asset": "music", **track}],
            "scenes": [{"id": "s", "duration": duration, "background": {"type": "solid", "color": "#203040"},
                        "layers": []}]}


def test_the_schema_takes_a_fit_and_refuses_others() -> None:
    assert lint(sound_doc("a.wav", 14.0, fit="once"), check_layout=False).ok
    assert lint(sound_doc("a.wav", 14.0), check_layout=False).ok
    report = lint(sound_doc("a.wav", 14.0, fit="stretch"), check_layout=False)
    assert [p.pointer for p in report.errors] == ["/audio/0/fit"]


def test_the_linter_warns_when_a_sound_played_once_ends_early(tmp_path: Path) -> None:
    write_tone(tmp_path / "six.wav", 6.0)
    lengths = {"music": 6.0}
    once = lint(sound_doc("six.wav", 14.0, fit="once"), check_layout=False, clip_duration=lengths.__getitem__)
    assert [(p.pointer, p.code, p.message.split(";")[0]) for p in once.warnings] == [
        ("/audio/0/fit", "sound_ends_early", "the sound ends at 6.0 s, 8.0 s before the video")]
    looped = lint(sound_doc("six.wav", 14.0), check_layout=False, clip_duration=lengths.__getitem__)
    assert looped.warnings == []
    # the CLI's way: the file measured through the assets
    measured = lint(sound_doc("six.wav", 14.0, fit="once", start=1.0), assets=LocalAssets(tmp_path))
    assert [p.message.split(";")[0] for p in measured.warnings if p.code == "sound_ends_early"] == [
        "the sound ends at 7.0 s, 7.0 s before the video"]


def decoded(path: Path) -> np.ndarray:
    with av.open(str(path)) as c:
        return np.concatenate([f.to_ndarray()[0] for f in c.decode(audio=0)])


def test_rendered_mp4_loops_a_six_second_sound_under_fourteen_seconds(tmp_path: Path) -> None:
    write_tone(tmp_path / "six.wav", 6.0)
    sounds = {}
    for fit in ("loop", "once"):
        out = tmp_path / f"{fit}.mp4"
        render_video(sound_doc("six.wav", 14.0, fit=fit), str(out), RenderSpec("16:9", 180, 24), workers=1,
                     assets=LocalAssets(tmp_path))
        sounds[fit] = decoded(out)
    for pcm in sounds.values():
        assert rms(pcm[round(3.0 * RATE): round(4.0 * RATE)]) == pytest.approx(FULL, rel=0.05)
    assert rms(sounds["loop"][round(10.0 * RATE): round(11.0 * RATE)]) == pytest.approx(FULL, rel=0.05)
    assert np.abs(sounds["once"][round(6.1 * RATE): round(13.9 * RATE)]).max() < 0.01


def test_rendered_mp4_fades_a_long_sound_at_the_end(tmp_path: Path) -> None:
    write_tone(tmp_path / "ten.wav", 10.0)
    out = tmp_path / "long.mp4"
    render_video(sound_doc("ten.wav", 6.0), str(out), RenderSpec("16:9", 180, 24), workers=1,
                 assets=LocalAssets(tmp_path))
    pcm = decoded(out)
    assert rms(pcm[round(4.0 * RATE): round(4.9 * RATE)]) == pytest.approx(FULL, rel=0.05)
    assert rms(pcm[round(5.45 * RATE): round(5.55 * RATE)]) == pytest.approx(FULL * 0.5, rel=0.15)
    assert np.abs(pcm[round(5.95 * RATE): round(6.0 * RATE)]).max() < 0.05
