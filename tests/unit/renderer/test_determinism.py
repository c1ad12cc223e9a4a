"""A frame is a function of the document, its time, format and size alone.

Chunk seams and segment reuse rely on it: the same frame must come out of any node, in any chunk
split, drawn in any order, whatever the rasterizer drew (or skipped) before it. Each story in each
format is rendered three ways through lossless x264 (which decodes to exactly the frames it was
given): in one segment; in chunks cut at random places and drawn in a shuffled order by one
rasterizer (as a pool process draws the chunks it is given); and in chunks cut elsewhere, each by a
fresh rasterizer, last chunk first. Every decoded frame must be equal, bit for bit.
"""
from __future__ import annotations

import random
from pathlib import Path

import av
import numpy as np
import pytest

from reelfarm.renderer.encode import X264Encoder
from reelfarm.renderer.model import Doc, parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.render import render_segment
from reelfarm.renderer.spec import FORMATS, RenderSpec
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.studio.stories import list_stories

RESOLUTION = 72
CASES = [(s.id, fmt) for s in list_stories() for fmt in FORMATS]


class _LosslessX264(X264Encoder):
    def __init__(self) -> None:
        super().__init__(crf=0, threads=1)

    def _add_stream(self, width: int, height: int, fps: int):
        stream = super()._add_stream(width, height, fps)
        stream.codec_context.profile = "High 4:4:4 Predictive"  # High refuses lossless
        return stream


def _decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="yuv420p") for f in container.decode(video=0)]


def _cuts(rng: random.Random, count: int) -> list[range]:
    """`count` frames cut into chunks of 1 to 60 frames."""
    out, start = [], 0
    while start < count:
        size = rng.choice([1, 2, rng.randint(3, 60)])
        out.append(range(start, min(count, start + size)))
        start += size
    return out


def _rendered(doc: Doc, spec: RenderSpec, chunks: list[range], order: list[int], shared: bool,
              folder: Path) -> list[np.ndarray]:
    """The frames of `chunks` drawn in `order` and decoded back, in frame order."""
    folder.mkdir()
    raster = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True)
    decoded: dict[int, list[np.ndarray]] = {}
    for i in order:
        if not shared:
            raster = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True)
        path = folder / f"chunk-{i}.mp4"
        render_segment(doc, str(path), spec, chunks[i], encoder=_LosslessX264(), raster=raster)
        decoded[i] = _decoded(path)
        assert len(decoded[i]) == len(chunks[i])
    return [frame for i in range(len(chunks)) for frame in decoded[i]]


@pytest.mark.parametrize("story_id,fmt", CASES, ids=[f"{s}-{f.replace(':', 'x')}" for s, f in CASES])
def test_every_frame_is_the_same_in_any_chunk_split_and_order(story_id, fmt, tmp_path):
    story = next(s for s in list_stories() if s.id == story_id)
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, fmt, None))
    spec = RenderSpec(fmt, RESOLUTION, doc.fps)
    rng = random.Random(f"{story_id}/{fmt}")
    whole = _rendered(doc, spec, [range(doc.frame_count)], [0], True, tmp_path / "whole")
    shuffled_cuts = _cuts(rng, doc.frame_count)
    order = list(range(len(shuffled_cuts)))
    rng.shuffle(order)
    shuffled = _rendered(doc, spec, shuffled_cuts, order, True, tmp_path / "shuffled")
    fresh_cuts = _cuts(rng, doc.frame_count)
    fresh = _rendered(doc, spec, fresh_cuts, list(reversed(range(len(fresh_cuts)))), False, tmp_path / "fresh")
    assert len(whole) == len(shuffled) == len(fresh) == doc.frame_count
    for n, (a, b, c) in enumerate(zip(whole, shuffled, fresh)):
        assert np.array_equal(a, b), f"frame {n} differs when drawn in shuffled chunks by one rasterizer"
        assert np.array_equal(a, c), f"frame {n} differs when drawn in chunks by fresh rasterizers"


@pytest.mark.parametrize("story_id", ["announcement", "testimonial"])
def test_at_1080p_a_frame_drawn_after_others_equals_it_drawn_first(story_id):
    """At 72p the mapping of a faint shape's image is exact by itself; at 1080p the image's rect
    must be chosen for it (`reelfarm.renderer.sprites.exact_span`): without that, a box redrawn
    came out a level off in a sample or two (announcement's frame 50). Compared on the frames as
    handed to the encoder (yuv420p), drawn in order and by a fresh rasterizer."""
    story = next(s for s in list_stories() if s.id == story_id)
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, "16:9", None))
    spec = RenderSpec("16:9", 1080, doc.fps)
    raster = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True)
    for n in range(61):
        frame = raster.render(spec.time(n))
        if n % 10 == 0:
            first = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True).render(spec.time(n))
            assert np.array_equal(frame, first), f"frame {n} differs when drawn after frames 0 to {n - 1}"


@pytest.mark.parametrize(("story_id", "frame"), [("milestone", 12), ("announcement", 234)])
def test_a_box_meeting_a_faded_layer_holds_its_whole_offscreen_layer(story_id, frame):
    """A faded layer drawn as paths goes through an offscreen layer wider than what it draws: a
    box holding its drawing but cutting that layer moved the layer's origin, and the frame drawn
    in order differed from it drawn first by up to 4 levels: milestone's frame 12 at 1080p (as
    landed at c4ff84b), and announcement's 234 once the fading orbs' insides were filled, not
    boxes that happened to hold its button whole."""
    story = next(s for s in list_stories() if s.id == story_id)
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, "16:9", None))
    spec = RenderSpec("16:9", 1080, doc.fps)
    raster = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True)
    for n in range(frame + 1):
        frame_in_order = raster.render(spec.time(n))
    first = SkiaRasterizer(doc, spec.format, *spec.size, yuv=True).render(spec.time(frame))
    assert np.array_equal(frame_in_order, first)
