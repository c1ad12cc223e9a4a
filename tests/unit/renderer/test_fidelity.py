"""Every frame the rasterizer hands out is indistinguishable from the plain whole-frame drawing.

The fast path (frames skipped, boxes redrawn, layers cached as pictures and images and composited,
transitions blended from each scene's frame) is not bit-equal to drawing every frame whole
(`SkiaRasterizer(reuse=False)`, kept as the reference): edges drawn at other sub-pixel offsets and
premultiplied blends differ a little. How little is the contract: against the reference, every
frame of every story in every format, and of the benchmarks' test scene, keeps a luma PSNR of at
least `MIN_PSNR` dB and no sample of any plane off by more than `MAX_DIFF` levels.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from reelfarm.renderer.assets import LocalAssets
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import SkiaRasterizer
from reelfarm.renderer.spec import FORMATS, RenderSpec
from reelfarm.renderer.timeline import Timeline
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.studio.stories import list_stories

MIN_PSNR = 45.0
MAX_DIFF = 24
RESOLUTION = 180
BUSY = Path(__file__).resolve().parents[3] / "benchmarks" / "docs" / "busy.json"
CASES = [(s.id, fmt) for s in list_stories() for fmt in FORMATS]


def luma_psnr(a: np.ndarray, b: np.ndarray, height: int) -> float:
    """PSNR in dB of the Y planes of two yuv420p buffers (inf when equal)."""
    err = np.mean((a[:height].astype(np.float64) - b[:height].astype(np.float64)) ** 2)
    return math.inf if err == 0 else 10 * math.log10(255.0 ** 2 / err)


def _write_photo(path: Path) -> None:
    """A 1024x683 photo stand-in: colour ramps under fine noise, so a sub-pixel shift shows."""
    from PIL import Image

    y, x = np.mgrid[0:683, 0:1024]
    rng = np.random.default_rng(11)
    rgb = np.stack([x * 200 // 1024, y * 200 // 683, (x + y) * 100 // 1707], axis=-1) + rng.integers(0, 56, (683, 1024, 3))
    path.parent.mkdir(parents=True)
    Image.fromarray(rgb.astype(np.uint8)).save(path)


def _compare(doc, spec: RenderSpec, assets=None, frames: range | None = None) -> tuple[float, int]:
    """The lowest luma PSNR and the largest difference of any sample over every frame (of `frames`)."""
    reference = SkiaRasterizer(doc, spec.format, *spec.size, assets, yuv=True, reuse=False)
    fast = SkiaRasterizer(doc, spec.format, *spec.size, assets, yuv=True)
    worst_psnr, worst_diff = math.inf, 0
    for n in frames if frames is not None else range(doc.frame_count):
        a, b = fast.render(spec.time(n)), reference.render(spec.time(n))
        worst_psnr = min(worst_psnr, luma_psnr(a, b, spec.height))
        worst_diff = max(worst_diff, int(np.abs(a.astype(np.int16) - b).max()))
    return worst_psnr, worst_diff


@pytest.mark.parametrize("story_id,fmt", CASES, ids=[f"{s}-{f.replace(':', 'x')}" for s, f in CASES])
def test_every_story_frame_is_indistinguishable_from_the_reference(story_id, fmt):
    story = next(s for s in list_stories() if s.id == story_id)
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, fmt, None))
    psnr, diff = _compare(doc, RenderSpec(fmt, RESOLUTION, doc.fps))
    assert psnr >= MIN_PSNR and diff <= MAX_DIFF, f"worst frame: {psnr:.1f} dB, a sample off by {diff}"


@pytest.mark.parametrize("story_id", ["flash_sale", "countdown", "podcast_teaser"])
def test_a_zoom_at_an_odd_chroma_height_is_indistinguishable_from_the_reference(story_id):
    """4:5 at 1080p is 1080 x 1350, whose chroma planes have 675 rows; 360 x 450 has the same
    oddness at a ninth of the pixels. A zoom composed from planes read them through PyAV's
    ``from_numpy_buffer``, two rows short: its last frames came out 27 dB, 147 levels off (at
    180p, 224 rows, the test above could not see it)."""
    story = next(s for s in list_stories() if s.id == story_id)
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, "4:5", None))
    spec, timeline = RenderSpec("4:5", 360, doc.fps), Timeline(doc)
    zooming = [n for n in range(doc.frame_count)
               if (at := timeline.locate(spec.time(n))) and timeline.transition_progress(*at) is not None
               and doc.scenes[at[0]].transition.type == "zoom"]
    assert zooming
    psnr, diff = _compare(doc, spec, frames=range(max(0, zooming[0] - 2), zooming[-1] + 1))
    assert psnr >= MIN_PSNR and diff <= MAX_DIFF, f"worst frame: {psnr:.1f} dB, a sample off by {diff}"


def test_text_sliding_in_at_1080p_is_indistinguishable_from_the_reference():
    """Announcement's headline slides in, faded, over its first second. Its text image was drawn
    on a surface of its own, which places a glyph's outline a float32 rounding apart from the
    frame's (and from the layer the reference fades it through): a baseline on an anti-aliasing
    sample boundary then came out 31 and 43 levels off (frames 17 and 28). At 180p the same
    rounding stays under a level."""
    story = next(s for s in list_stories() if s.id == "announcement")
    doc = parse_doc(story.build({}, NEUTRAL_BRAND, "16:9", None))
    psnr, diff = _compare(doc, RenderSpec("16:9", 1080, doc.fps), frames=range(31))
    assert psnr >= MIN_PSNR and diff <= MAX_DIFF, f"worst frame: {psnr:.1f} dB, a sample off by {diff}"


@pytest.mark.parametrize("resolution", [RESOLUTION, 360])
def test_the_test_scene_is_indistinguishable_from_the_reference(resolution, tmp_path):
    _write_photo(tmp_path / "bench" / "photo.png")
    doc = parse_doc(json.loads(BUSY.read_text()))
    psnr, diff = _compare(doc, RenderSpec("16:9", resolution, doc.fps), LocalAssets(str(tmp_path)))
    assert psnr >= MIN_PSNR and diff <= MAX_DIFF, f"worst frame: {psnr:.1f} dB, a sample off by {diff}"


def test_the_measure_tells_a_small_change_from_a_visible_one():
    rng = np.random.default_rng(5)
    frame = rng.integers(16, 236, (270, 320), np.uint8)
    nudged = frame.copy()
    nudged[::7, ::5] += 1
    moved = np.roll(frame, 1, axis=1)
    assert luma_psnr(frame, frame, 180) == math.inf
    assert luma_psnr(nudged, frame, 180) > 55 > MIN_PSNR
    assert luma_psnr(moved, frame, 180) < 20
