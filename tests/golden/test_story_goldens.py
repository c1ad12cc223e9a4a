"""Every built-in story in every format, compared with its reference PNG.

Refresh references deliberately with `pytest tests/golden --update-goldens` and look at them.
The references are the CPU rasterizer's. The GL rasterizer runs the same drawing code and is
held to the same references with the same edge-tolerant diff (`reelfarm.renderer.gl.mismatch_fraction`),
but may leave `GL_MAX_MISMATCH` of the pixels beyond it instead of `MAX_MISMATCH` (why: see
`reelfarm.renderer.gl`). It runs twice, through both ways EGL opens a display:

- "default": the device rule's default, NVIDIA's device by CUDA index where there is one, else
  Mesa's surfaceless platform (llvmpipe);
- "device": `eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, device)` on Mesa's software device,
  the code path an NVIDIA node takes, on llvmpipe. Only the NVIDIA driver itself is left out.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reelfarm.renderer.gl import GL_MAX_MISMATCH, GLRasterizer, mismatch_fraction
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.raster import to_rgba
from reelfarm.renderer.spec import FORMATS, RenderSpec
from reelfarm.renderer.stills import render_still_png
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.studio.stories import list_stories

HERE = Path(__file__).parent / "stories"
RESOLUTION = 180
MAX_MISMATCH = 0.003
GL_PATHS = {"default": None, "device": "software"}  # the EGL device each GL run asks for


def _case_id(story_id: str, fmt: str) -> str:
    return f"{story_id}-{fmt.replace(':', 'x')}"


CASES = [(s.id, fmt) for s in list_stories() for fmt in FORMATS]


@pytest.mark.parametrize("story_id,fmt", CASES, ids=[_case_id(*c) for c in CASES])
def test_story_matches_golden(story_id, fmt, request):
    story = next(s for s in list_stories() if s.id == story_id)
    doc = story.build({}, NEUTRAL_BRAND, fmt, None)
    t = round(doc["duration"] * 0.4, 3)
    png = render_still_png(doc, t, RenderSpec(fmt, RESOLUTION))
    path = HERE / f"{_case_id(story_id, fmt)}.png"
    if request.config.getoption("--update-goldens"):
        path.write_bytes(png)
    assert path.exists(), f"no reference for {story_id} {fmt}: run pytest tests/golden --update-goldens"
    actual = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    expected = np.asarray(Image.open(path).convert("RGBA"))
    assert mismatch_fraction(actual, expected) <= MAX_MISMATCH


@pytest.mark.parametrize("path", GL_PATHS)
@pytest.mark.parametrize("story_id,fmt", CASES, ids=[_case_id(*c) for c in CASES])
def test_story_on_gl_matches_the_cpu_golden(story_id, fmt, path):
    story = next(s for s in list_stories() if s.id == story_id)
    doc = story.build({}, NEUTRAL_BRAND, fmt, None)
    t = round(doc["duration"] * 0.4, 3)
    # GLRasterizer itself, not a choice of "gl": a missing EGL must fail here, not fall back.
    raster = GLRasterizer(parse_doc(doc), fmt, *RenderSpec(fmt, RESOLUTION).size, device=GL_PATHS[path])
    if path == "device":
        assert raster.session.platform == "device" and "EGL_MESA_device_software" in raster.session.device
    actual = to_rgba(raster.render(t), raster.pixel_format)
    expected = np.asarray(Image.open(HERE / f"{_case_id(story_id, fmt)}.png").convert("RGBA"))
    assert mismatch_fraction(actual, expected) <= GL_MAX_MISMATCH


def test_imagediff_tolerates_edges_but_not_changes():
    base = np.zeros((40, 40, 4), np.uint8)
    base[10:30, 10:30] = 255
    shifted = np.roll(base, 1, axis=1)
    assert mismatch_fraction(shifted, base) == 0.0
    changed = base.copy()
    changed[0:6, 0:6] = 255
    assert mismatch_fraction(changed, base) > 0.01
