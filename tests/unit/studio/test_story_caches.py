"""A create from a story leans on per-process caches (text shapes, measurements, contrast ratios,
backdrops): what a story builds and what the linter says of it must not depend on what earlier
creates left in them."""
from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from reelfarm.renderer import linter, text
from reelfarm.renderer.linter import lint
from reelfarm.renderer.spec import FORMATS
from reelfarm.studio.stories import NEUTRAL_BRAND, list_stories, measure, resolve_fields

# Text a shade lighter than the brand's surfaces, so every story gets contrast warnings to compare.
PALE = copy.deepcopy(NEUTRAL_BRAND)
PALE["colors"].update(primary="#CCCCCC", text="#999999")


def _empty_caches() -> None:
    for cache in (linter._backdrops, linter._ratios, linter._SEEN_TEXT_BACKDROPS):
        cache.clear()
    for kept in (text._shape, text._widest_line, measure._measure):
        kept.cache_clear()  # type: ignore[attr-defined]


def _create(story, fmt: str, headline: str) -> tuple[str, list[dict[str, str]]]:
    fields = {"headline": headline} if "headline" in story.fields["properties"] else {}
    doc = story.build(resolve_fields(story, fields), PALE, fmt, None)
    return json.dumps(doc), [p.as_dict() for p in lint(doc).warnings]


@pytest.mark.parametrize("story", list_stories(), ids=lambda s: s.id)
def test_warm_caches_build_and_lint_what_empty_ones_do(story):
    fresh = {}
    for fmt in FORMATS:
        _empty_caches()
        fresh[fmt] = _create(story, fmt, "Client 1 opens a studio")
    assert any(warnings for _, warnings in fresh.values())
    # Warm: other videos of the story first (other headlines), then the same ones again, twice.
    for fmt in FORMATS:
        _create(story, fmt, "Client 2 opens a studio")
    for _ in range(2):
        for fmt in FORMATS:
            assert _create(story, fmt, "Client 1 opens a studio") == fresh[fmt]
    assert len(linter._backdrops) > 0 and len(text._shape.cache) > 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("story", list_stories(), ids=lambda s: s.id)
def test_a_backdrop_left_without_texts_beside_the_region_has_its_pixels(story, monkeypatch):
    """Every backdrop the linter leaves a text out of (``linter._meeting``): the region behind the
    text has exactly the pixels it has with every layer drawn, in every format of every story."""
    import numpy as np

    asked = []
    meeting = linter._meeting

    def recorded(raster, scene, below, t, region):
        kept = meeting(raster, scene, below, t, region)
        asked.append((raster, scene, below, kept, t, region))
        return kept

    monkeypatch.setattr(linter, "_meeting", recorded)
    for fmt in FORMATS:
        _empty_caches()
        _create(story, fmt, "Client 1 opens a studio")

    def region_pixels(raster, scene, layers, t, region):
        backdrop = dataclasses.replace(scene, layers=layers, transition=dataclasses.replace(scene.transition, type="cut"))
        solo = dataclasses.replace(raster.doc, scenes=(backdrop,), duration=scene.duration)
        drawn = linter._region_rasterizer()(solo, raster.fmt, raster.width, raster.height, None, region=region)
        return np.array(drawn.render(t))

    left_out = [a for a in asked if a[3] != a[2]]
    if story.id == "announcement":
        assert left_out  # its address and button over its headline, at least: the check is not empty
    for raster, scene, below, kept, t, region in left_out:
        assert np.array_equal(region_pixels(raster, scene, kept, t, region), region_pixels(raster, scene, below, t, region))
    assert asked


def test_a_text_over_the_headline_shares_its_backdrop_with_every_video_of_the_story(monkeypatch):
    """The announcement's address is drawn after its headline, apart from it: its backdrop leaves the
    headline out, so the videos of the story, each with its own headline, share it."""
    story = next(s for s in list_stories() if s.id == "announcement")
    drawn = []  # a backdrop's pixels are read from its rasterizer (a whole frame or a region) only when drawn
    rgb = linter._rgb
    monkeypatch.setattr(linter, "_rgb", lambda raster, pixels: drawn.append(raster.doc) or rgb(raster, pixels))
    _empty_caches()
    _create(story, "9:16", "Client 1 opens a studio")
    assert drawn
    _create(story, "9:16", "Client 2 opens a studio")  # a backdrop with a text is kept when seen again
    drawn.clear()
    _create(story, "9:16", "Client 3 opens a studio")
    assert drawn == []
