"""A create from a story leans on per-process caches (text shapes, measurements, contrast ratios,
backdrops): what a story builds and what the linter says of it must not depend on what earlier
creates left in them."""
from __future__ import annotations

import copy
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
