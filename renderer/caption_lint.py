"""The linter's checks of a document's captions (``reelfarm.renderer.linter``): a cue that does not
end after it starts (an error); a cue after the video's end, one that overflows its lines in a
format, and text without enough contrast against its box (warnings). Apart from
``reelfarm.renderer.caption_layout``, which the rasterizer draws captions with, because the overflow
check measures the cues with the rasterizer's own text layout."""
from __future__ import annotations

from collections.abc import Iterator

from reelfarm.renderer.caption_layout import CAPTION_COLORS, MAX_LINES, MIN_CONTRAST, _template
from reelfarm.renderer.captions import Captions
from reelfarm.renderer.errors import Problem
from reelfarm.renderer.model import Doc, Layer
from reelfarm.renderer.spec import FORMATS, LINT_RESOLUTION, frame_size
from reelfarm.renderer.tokens import Brand, contrast_ratio, parse_hex


def caption_problems(doc: Doc) -> Iterator[Problem]:
    """Warnings about ``doc``'s captions: a cue that overflows its lines in a format, a cue after the
    video's end, and text whose contrast against its box is under ``MIN_CONTRAST``."""
    captions = doc.captions
    if captions is None:
        return
    yield from _timing_problems(captions, doc.duration)
    color, box = (Brand(doc.brand).color(c) for c in CAPTION_COLORS[captions.style])
    fg, bg = parse_hex(color), parse_hex(box)
    if bg[3] == 255:
        ratio = contrast_ratio(fg[:3], bg[:3])
        if ratio < MIN_CONTRAST:
            yield Problem("/captions/style", "low_contrast",
                          f"captions in style {captions.style!r} have a contrast of {ratio:.1f}:1 against their box "
                          f"(under {MIN_CONTRAST:g}:1); choose another style or brand colours")
    yield from _overflow_problems(doc, captions)


def caption_errors(doc: Doc) -> Iterator[Problem]:
    """Errors in ``doc``'s captions: a cue that does not end after it starts."""
    for i, cue in enumerate(doc.captions.cues if doc.captions else ()):
        if cue.end <= cue.start:
            yield Problem(f"/captions/cues/{i}/end", "timing",
                          f"the cue ends at {cue.end:g} s, not after it starts ({cue.start:g} s)")


def _timing_problems(captions: Captions, duration: float) -> Iterator[Problem]:
    for i, cue in enumerate(captions.cues):
        if cue.start >= duration:
            yield Problem(f"/captions/cues/{i}/start", "caption_after_end",
                          f"the cue starts at {cue.start:.1f} s, after the video ends ({duration:.1f} s); it is not shown")


def _overflow_problems(doc: Doc, captions: Captions) -> Iterator[Problem]:
    from reelfarm.renderer.raster import SkiaRasterizer  # late: the rasterizer draws captions with this module
    from reelfarm.renderer.text import TextBlock

    named: set[int] = set()
    texts: dict[str, int] = {}
    for i, cue in enumerate(captions.cues):
        texts.setdefault(cue.text, i)
    for fmt in FORMATS:
        width, height = frame_size(fmt, LINT_RESOLUTION)
        raster = SkiaRasterizer(doc, fmt, width, height)
        template = _template(captions.style, captions.position, captions.size, fmt, doc.safe_area, captions.font)
        for text, i in texts.items():
            if i in named:
                continue
            layer = Layer(**{**template, "id": "captions.lint", "text": text})
            block = TextBlock(raster.text_spec(layer, raster._text_box_size(layer, float(width), float(height))),
                              raster.book)
            if block.overflows:
                named.add(i)
                yield Problem(f"/captions/cues/{i}/text", "caption_overflow",
                              f"the cue does not fit {MAX_LINES} lines in {fmt}; split it into shorter cues")
        raster.close()
