"""Captions drawn: only during their cues, inside the safe area of every format, wrapped to lines
that fit, the same whether frames are drawn in order or alone; linted for contrast, length and
timing; and part of the fingerprint of exactly the segments that show them."""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from reelfarm.renderer.chunks import scene_chunks
from reelfarm.renderer.fingerprint import segment_fingerprint
from reelfarm.renderer.linter import lint
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import FORMATS, RenderSpec, frame_size
from tests.conftest import BASE_DOC

CUES = [{"start": 1.0, "end": 2.0, "text": "The first words"},
        {"start": 4.0, "end": 5.0, "text": "And the last ones, long enough to need more than one line on a phone"}]


def with_captions(cues: list[dict[str, Any]] = CUES, **style: str) -> dict[str, Any]:
    doc = copy.deepcopy(BASE_DOC)
    doc["captions"] = {"cues": cues, **style}
    return doc


def changed(fmt: str, t: float, doc: dict[str, Any], resolution: int = 240) -> np.ndarray:
    """Where the frame at ``t`` with captions differs from the frame without them."""
    width, height = frame_size(fmt, resolution)
    bare = copy.deepcopy(doc)
    del bare["captions"]
    a = SkiaRasterizer(parse_doc(doc), fmt, width, height, reuse=False).render(t).astype(int)
    b = SkiaRasterizer(parse_doc(bare), fmt, width, height, reuse=False).render(t).astype(int)
    return np.abs(a - b).max(axis=-1) > 24


def extent(mask: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_words_are_drawn_only_during_their_cue_inside_the_safe_area(fmt: str) -> None:
    doc = with_captions()
    width, height = frame_size(fmt, 240)
    for t in (0.5, 2.5, 3.5, 5.5):
        assert not changed(fmt, t, doc).any(), f"nothing is drawn at {t} s, between cues"
    for t in (1.0, 1.5, 4.2):
        mask = changed(fmt, t, doc)
        assert mask.sum() > 200, f"the cue is drawn at {t} s"
        x0, y0, x1, y1 = extent(mask)
        assert x0 >= 0.05 * width - 1 and x1 <= 0.95 * width + 1, "inside the safe area's sides"
        assert y1 <= 0.95 * height + 1 and y0 > height / 2, "at the bottom, above the safe area's edge"


def test_long_words_wrap_to_more_lines_on_a_phone_and_top_places_them_at_the_top() -> None:
    short = extent(changed("9:16", 1.5, with_captions()))
    long = extent(changed("9:16", 4.5, with_captions()))
    assert long[3] - long[1] > 1.5 * (short[3] - short[1]), "the long cue takes two lines or more"
    top = extent(changed("9:16", 1.5, with_captions(position="top")))
    assert top[1] >= 0.05 * 426 - 1 and top[3] < 426 / 2


def test_frames_drawn_in_order_equal_frames_drawn_alone() -> None:
    parsed = parse_doc(with_captions())
    ordered = SkiaRasterizer(parsed, "16:9", 320, 180)
    frames = {n: ordered.render(n / 30).copy() for n in range(180)}
    for n in (29, 30, 45, 59, 60, 89, 95, 119, 120, 149, 150):
        alone = SkiaRasterizer(parse_doc(with_captions()), "16:9", 320, 180).render(n / 30)
        assert np.array_equal(frames[n], alone), f"frame {n} depends on the frames before it"
        reference = SkiaRasterizer(parse_doc(with_captions()), "16:9", 320, 180, reuse=False).render(n / 30)
        assert np.abs(frames[n].astype(np.int16) - reference).max() <= 24, f"frame {n} strays from the reference"


def test_a_cue_across_a_cut_holds_still_and_styles_take_the_brand_colours() -> None:
    doc = with_captions([{"start": 2.0, "end": 4.5, "text": "Across the cut"}])
    doc["scenes"][1].pop("transition")
    before, after = changed("16:9", 2.9, doc), changed("16:9", 3.1, doc)
    assert extent(before) == extent(after), "the same place in both scenes"
    width, height = frame_size("16:9", 240)
    frame = SkiaRasterizer(parse_doc(doc), "16:9", width, height).render(2.9)
    x0, y0, x1, _ = extent(before)
    box = frame[y0 + 1, (x0 + x1) // 2, :3][::-1]  # BGRA: the box's top edge, above the words
    assert tuple(box) == (255, 255, 255), "style box: the brand's text colour (#FFFFFF) as the box"


def test_the_linter_names_low_contrast_long_cues_late_cues_and_backwards_ones() -> None:
    doc = with_captions([{"start": 1, "end": 2, "text": "word " * 90},
                         {"start": 7, "end": 8, "text": "after the end"}], style="primary")
    doc["brand"]["colors"]["primary"] = "#1E2A40"  # near the background colour #0B1020
    report = lint(doc)
    codes = {(w.pointer, w.code) for w in report.warnings}
    assert ("/captions/style", "low_contrast") in codes
    assert ("/captions/cues/0/text", "caption_overflow") in codes
    assert ("/captions/cues/1/start", "caption_after_end") in codes
    assert report.errors == []
    assert not {w.code for w in lint(with_captions()).warnings} & {"low_contrast", "caption_overflow"}
    backwards = with_captions([{"start": 2, "end": 1, "text": "x"}])
    assert [(e.pointer, e.code) for e in lint(backwards).errors] == [("/captions/cues/0/end", "timing")]


def test_only_the_segments_showing_a_changed_cue_get_new_fingerprints() -> None:
    def prints(raw: dict[str, Any]) -> list[str | None]:
        doc = parse_doc(raw)
        return [segment_fingerprint(doc, RenderSpec("16:9", 144, 30), c, "x264", lambda a: "d")
                for c in scene_chunks(doc, 30)]

    base = prints(with_captions())
    edited = copy.deepcopy(CUES)
    edited[1]["text"] = "Other words"
    after = prints(with_captions(edited))
    chunks = scene_chunks(parse_doc(with_captions()), 30)
    for chunk, a, b in zip(chunks, base, after):
        shows = chunk[1] > 120 and chunk[0] < 150
        assert (a != b) == shows, f"chunk {chunk}"
    bare = copy.deepcopy(BASE_DOC)
    assert prints(bare) != base and prints(with_captions(style="inverse")) != base


def test_captions_are_drawn_over_a_crossfade_not_blended_with_it() -> None:
    ended = with_captions([{"start": 2.0, "end": 3.0, "text": "Gone at the cut"}])
    for t in (3.05, 3.2, 3.4):  # scene two crossfades in over 0.5 s
        assert not changed("16:9", t, ended).any(), f"no fading ghost of the ended cue at {t} s"
    across = with_captions([{"start": 2.5, "end": 4.0, "text": "Across the crossfade"}])
    width, height = frame_size("16:9", 240)
    x0, y0, x1, y1 = extent(changed("16:9", 2.9, across))
    crops = []
    for t in (2.9, 3.1, 3.3, 3.6):
        frame = SkiaRasterizer(parse_doc(across), "16:9", width, height).render(t)
        crops.append(frame[y0 + 3:y1 - 3, x0 + 3:x1 - 3].copy())
    assert all(np.array_equal(crops[0], crop) for crop in crops[1:]), "the words hold still through the blend"
