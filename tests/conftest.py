"""Shared test helpers: small documents and asset files made on the fly."""
from __future__ import annotations

import copy
from typing import Any

import pytest

BASE_DOC: dict[str, Any] = {
    "version": 1,
    "fps": 30,
    "duration": 6,
    "format": "16:9",
    "brand": {"colors": {"primary": "#1D4ED8", "background": "#0B1020", "text": "#FFFFFF",
                         "secondary": "#F1F5F9", "accent": "#F59E0B"}},
    "scenes": [
        {"id": "one", "duration": 3, "background": {"type": "linear", "colors": ["#0B1020", "#1E293B"], "angle": 45},
         "layers": [
             {"id": "title", "type": "text", "text": "Hello reelfarm", "font": "$brand.fonts.heading",
              "size": 0.09, "x": 0.5, "y": 0.4, "w": 0.8, "enter": {"preset": "slide", "duration": 0.5}},
             {"id": "box", "type": "shape", "shape": "rounded_rect", "x": 0.5, "y": 0.75, "w": 0.3, "h": 0.08,
              "radius": 0.02, "fill": "$brand.colors.primary",
              "keyframes": {"x": [{"t": 0, "v": 0.3}, {"t": 2.5, "v": 0.7}]}},
         ]},
        {"id": "two", "duration": 3, "background": {"type": "solid", "color": "$brand.colors.primary"},
         "transition": {"type": "crossfade", "duration": 0.5},
         "layers": [{"id": "cta", "type": "text", "text": "Try it today", "size": 0.08, "x": 0.5, "y": 0.5,
                     "w": 0.8, "font": {"family": "Inter", "weight": 700}, "enter": {"preset": "pop"}}]},
    ],
}


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(BASE_DOC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite golden reference images")
