"""Measuring text the way the renderer will set it, so text boxes hug their text.

``RendererTypesetter`` lays paragraphs out with the renderer's own engine and shipped fonts
(the same code that draws them). Where that engine cannot be loaded, ``Frame.typesetter``
stays ``None`` and layouts fall back to the estimates in ``textfit``, which err on the roomy
side and lean on the renderer's auto-shrink.
"""

from __future__ import annotations

from typing import Any, Protocol

from reelfarm.renderer.cache import bounded_cache
from reelfarm.renderer.text import measure_text

# Pixels per short side to measure at: the 1080p render and the linter's 360 px preview, whose
# rounded glyph advances can wrap a line earlier. A box must hold the text at both.
MEASURE_SIZES = (1080.0, 360.0)
MARGIN_PX = 0.5  # measure a hair narrower: layer boxes are rounded to 1/10000 of the frame


class Typesetter(Protocol):
    """Sets one paragraph and reports its height (short sides) and whether every word fits."""

    def measure(self, text: str, font: str, size: float, width: float, line_height: float,
                letter_spacing: float) -> tuple[float, bool]: ...


class RendererTypesetter:
    """Measures with the renderer's own paragraph engine for one brand's heading and body fonts."""

    def __init__(self, fonts: dict[str, dict[str, Any]]) -> None:
        self._fonts = {role: (ref["family"], int(ref.get("weight") or 400)) for role, ref in fonts.items()}

    def measure(self, text: str, font: str, size: float, width: float, line_height: float,
                letter_spacing: float) -> tuple[float, bool]:
        results = [_measure(text, self._fonts[font], round(size, 4), round(width, 4), line_height, letter_spacing, px)
                   for px in MEASURE_SIZES]
        return max(h for h, _ in results), all(fits for _, fits in results)


@bounded_cache(max_entries=8192, max_bytes=4 * 1024 * 1024)
def _measure(text: str, font: tuple[str, int], size: float, width: float, line_height: float,
             letter_spacing: float, px: float) -> tuple[float, bool]:
    box_w = width * px - MARGIN_PX
    m = measure_text(text, font[0], font[1], size * px, box_w, line_height, letter_spacing)
    # Every word must fit the width whole: a word wider than the box would break mid-word.
    return m.height / px, m.widest_word <= box_w


def make_typesetter(fonts: dict[str, dict[str, Any]]) -> Typesetter | None:
    """A renderer-backed typesetter for ``fonts`` (``heading``/``body`` refs), or ``None``."""
    try:
        setter = RendererTypesetter(fonts)
        setter.measure("Ag", "body", 0.05, 1.0, 1.2, 0.0)
    except Exception:  # noqa: BLE001 - fonts the engine cannot set, whatever its error: estimates serve
        return None
    return setter
