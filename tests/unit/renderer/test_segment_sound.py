"""Segments made apart carry their own part of the sound (a draft's): each chunk mixes and encodes
its span alone, and the segments played one after another sound as the whole mix does."""

from __future__ import annotations

import itertools
from pathlib import Path

import av
import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.hls import TS_LEAD_SEC, remux_to_ts, segment_sound
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.render import mix_doc_audio, render_segment
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from tests.helpers import write_tone

RATE = 48000
FPS = 24


def doc_with(key: str | None, duration: float = 8.0) -> dict:
    doc = {"version": 1, "fps": FPS, "duration": duration, "format": "16:9", "brand": dict(NEUTRAL_BRAND),
           "scenes": [{"id": "s", "duration": duration, "background": {"type": "solid", "color": "#203040"},
                       "layers": []}]}
    if key:
        doc["assets"] = {"music": {"type": "audio", "key": key}}
        doc["audio"] = [{"asset": "music"}]  # a 3 s sound under 8 s: looped by default
    return doc


def segments(tmp_path: Path, source: dict, cuts: list[int]) -> Path:
    """The document's chunks, each drawn and given its own sound, joined as a player joins them."""
    doc, assets = parse_doc(source), LocalAssets(tmp_path)
    spec = RenderSpec("16:9", 180, FPS)
    joined = tmp_path / "joined.ts"
    with joined.open("wb") as out:
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            mp4, ts = tmp_path / f"c{i}.mp4", tmp_path / f"c{i}.ts"
            render_segment(doc, str(mp4), spec, range(a, b), assets=assets)
            part = segment_sound(doc, assets, None, range(a, b), FPS, last=b == cuts[-1])
            remux_to_ts(str(mp4), str(ts), a / FPS, part)
            out.write(ts.read_bytes())
    return joined


def decoded(path: Path) -> tuple[float, np.ndarray]:
    """(the first audio sample's time, the left channel) of a file's audio."""
    with av.open(str(path)) as c:
        frames = list(c.decode(audio=0))
    return float(frames[0].time), np.concatenate([f.to_ndarray()[0] for f in frames])


def test_segments_made_apart_sound_as_the_whole_mix(tmp_path: Path) -> None:
    write_tone(tmp_path / "three.wav", 3.0)
    source = doc_with("three.wav")
    joined = segments(tmp_path, source, [0, 17, 60, 121, 192])  # cuts off the AAC frame grid
    begins, pcm = decoded(joined)
    whole = mix_doc_audio(parse_doc(source), LocalAssets(tmp_path))[0]
    # the stream's audio starts at the lead (its priming frame dropped by the decoder or not)
    lead = round((begins - TS_LEAD_SEC) * RATE)
    assert -1024 <= lead <= 0
    pcm = pcm[-lead:]
    assert pcm.shape[0] == pytest.approx(whole.shape[0], abs=1024)
    n = min(pcm.shape[0], whole.shape[0])
    error = np.abs(pcm[:n] - whole[:n])
    assert np.sqrt(np.mean(np.square(error[: n - 2048]))) < 0.01  # AAC at 192 kbit/s, joints included
    assert error[1024 : n - 2048].max() < 0.05  # no click or gap where segments meet
    heard = pcm[round(5.0 * RATE): round(5.5 * RATE)]  # the third time through
    assert np.sqrt(np.mean(np.square(heard))) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_a_silent_document_gives_segments_no_sound(tmp_path: Path) -> None:
    doc = parse_doc(doc_with(None))
    assert segment_sound(doc, LocalAssets(tmp_path), None, range(24), FPS, last=False) is None
