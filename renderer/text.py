"""Text blocks: shaped once per layer and format, painted every frame.

Shaping, bidi and line breaking come from Skia's paragraph engine (HarfBuzz + ICU). A block is
laid out once; auto-shrink searches for the largest size that fits the box. Typewriter and
word-by-word reveals keep the full layout and paint hidden text transparent, so lines never
jump; each reveal step is shaped once and cached.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import skia

from reelfarm.renderer.cache import bounded_cache
from reelfarm.renderer.fonts import FontBook
from reelfarm.renderer.model import FontRef
from reelfarm.renderer.tokens import argb

tl = skia.textlayout
_ALIGN = {"left": tl.TextAlign.kLeft, "center": tl.TextAlign.kCenter, "right": tl.TextAlign.kRight}
_RTL_CLASSES = {"R", "AL"}

# Skia draws a glyph of up to 256 device pixels from a cached mask, one per quarter-pixel place,
# in a glyph cache of 2 MB that skia-python cannot raise: large text moving a fraction of a pixel
# a frame makes new masks all the time (`python -m benchmarks.glyphs`: 31 glyphs of 140 px, 1.35 ms
# a line as masks, 0.35 as paths). Under a perspective Skia never caches glyphs and draws each as
# a path; this one's w is 1 + 1e-12 y, which is 1 in single precision for any y of a frame, so it
# moves nothing. Text of `PATH_GLYPHS_PX` device pixels or more is drawn under it: unhinted, at its
# exact place (masks also round y to a whole pixel).
PATH_GLYPHS = skia.Matrix()
PATH_GLYPHS.setAll(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1e-12, 1.0)
PATH_GLYPHS_PX = 96.0


def is_rtl(text: str) -> bool:
    """True when the first strong character of `text` is right-to-left."""
    for ch in text:
        cls = unicodedata.bidirectional(ch)
        if cls in _RTL_CLASSES:
            return True
        if cls == "L":
            return False
    return False


@dataclass(frozen=True)
class TextSpec:
    """Everything that decides a text block's shape, in pixels."""

    text: str
    font: FontRef
    size_px: float
    min_size_px: float
    color: str
    align: str
    direction: str
    line_height: float
    letter_spacing: float
    auto_shrink: bool
    box_w: float
    box_h: float  # 0 = grows with the text


@dataclass
class TextBlock:
    """A laid-out paragraph and the metrics drawing needs."""

    spec: TextSpec
    book: FontBook
    size_px: float = 0.0
    width: float = 0.0        # width of the longest line
    height: float = 0.0
    rtl: bool = False
    align: str = "center"
    _paragraphs: dict[int, skia.textlayout.Paragraph] = field(default_factory=dict)
    _words: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        spec = self.spec
        self.rtl = _rtl(spec)
        self.align = _physical_align(spec.align, self.rtl)
        self.size_px, longest_line, self.height = _shape(self.book, spec)
        self.width = min(longest_line, spec.box_w)
        self._words = _word_ends(spec.text)

    @property
    def overflows(self) -> bool:
        """True when the text does not fit its box even at the smallest allowed size."""
        too_wide = self._longest_word(self.size_px) > self.spec.box_w + 0.5
        too_tall = self.spec.box_h > 0 and self.height > self.spec.box_h + 0.5
        return too_wide or too_tall

    def _longest_word(self, size: float) -> float:
        """Width of the widest unbreakable word at `size`.

        Not the paragraph's MinIntrinsicWidth: once Skia has broken an over-long word that
        value describes the broken pieces. Words of scripts written without spaces (CJK)
        break anywhere and are left out.
        """
        return _longest_word(self.book, self.spec, size)

    def line_left(self, box_left: float) -> float:
        """X of the block's visible left edge inside a box starting at `box_left`."""
        if self.align == "left":
            return box_left
        if self.align == "right":
            return box_left + self.spec.box_w - self.width
        return box_left + (self.spec.box_w - self.width) / 2.0

    def paint(self, canvas: skia.Canvas, x: float, y: float, reveal: float = 1.0, mode: str = "",
              paths: bool = True) -> None:
        """Paint with its box's top-left at (x, y), showing `reveal` of the text; glyphs of
        `PATH_GLYPHS_PX` device pixels or more as paths unless `paths` is False."""
        shown = self._shown_chars(reveal, mode)
        paragraph = self._paragraphs.get(shown)
        if paragraph is None:
            paragraph = self._paragraphs[shown] = _paragraph(self.book, self.spec, self.align, self.rtl,
                                                             self.size_px, shown)
        if paths and self.size_px * canvas.getTotalMatrix().getMaxScale() >= PATH_GLYPHS_PX:
            canvas.save()
            canvas.concat(PATH_GLYPHS)
            paragraph.paint(canvas, x, y)
            canvas.restore()
            return
        paragraph.paint(canvas, x, y)

    def _shown_chars(self, reveal: float, mode: str) -> int:
        return _shown(len(self.spec.text), self._words, reveal, mode)


def _rtl(spec: TextSpec) -> bool:
    return spec.direction == "rtl" or (spec.direction == "auto" and is_rtl(spec.text))


@bounded_cache(max_entries=8192, max_bytes=4 * 1024 * 1024,
               sizeof=lambda key, shape: 600 + 2 * len(key[1].text))
def _shape(book: FontBook, spec: TextSpec) -> tuple[float, float, float]:
    """(size in px after auto-shrink, longest line, height) of `spec` laid out: numbers only, so
    one process keeps thousands. A document's texts are laid out again and again, each time the
    same: in every format the linter checks, in every rasterizer a render or a still makes, and
    at every size a story's text fitting tries."""
    rtl = _rtl(spec)
    align = _physical_align(spec.align, rtl)
    size, full = _fit_size(book, spec, align, rtl)
    if full is None:
        full = _paragraph(book, spec, align, rtl, size, len(spec.text))
    return size, full.LongestLine, full.Height


def _fit_size(book: FontBook, spec: TextSpec, align: str,
              rtl: bool) -> tuple[float, skia.textlayout.Paragraph | None]:
    """The size to set `spec` at (auto-shrink's largest that fits), with its paragraph when
    one was laid out at that size on the way."""
    size = spec.size_px
    if not spec.auto_shrink:
        return size, None
    floor = min(spec.min_size_px, size)
    while size > floor:
        p = _paragraph(book, spec, align, rtl, size, len(spec.text))
        fits_w = _longest_word(book, spec, size) <= spec.box_w + 0.5
        fits_h = spec.box_h <= 0 or p.Height <= spec.box_h + 0.5
        if fits_w and fits_h:
            return size, p
        size = max(floor, size * 0.93)
    return floor, None


def _longest_word(book: FontBook, spec: TextSpec, size: float) -> float:
    """Width of the widest unbreakable word of `spec` at `size`.

    Not the paragraph's MinIntrinsicWidth: once Skia has broken an over-long word that value
    describes the broken pieces. Words of scripts written without spaces (CJK) break anywhere
    and are left out.
    """
    words = "\n".join(w for w in spec.text.split() if not _breaks_anywhere(w))
    if not words:
        return 0.0
    return _widest_line(book, words, spec.font.family, spec.font.weight, size, spec.line_height,
                        spec.letter_spacing)


def _paragraph(book: FontBook, spec: TextSpec, align: str, rtl: bool, size: float,
               shown: int) -> skia.textlayout.Paragraph:
    """`spec` laid out at `size`, its first `shown` characters visible (the rest transparent)."""
    style = tl.ParagraphStyle()
    style.setTextAlign(_ALIGN[align])
    builder = tl.ParagraphBuilder.make(style, book.collection, skia.Unicode.ICU_Make())
    families = book.families_for(spec.font.family, spec.font.weight)
    visible = _text_style(families, size, argb(spec.color), spec.line_height, spec.letter_spacing)
    text = spec.text
    if rtl:
        builder.pushStyle(visible)
        builder.addText("\u202b")
    builder.pushStyle(visible)
    builder.addText(text[:shown])
    if shown < len(text):
        builder.pushStyle(_text_style(families, size, 0x00000000, spec.line_height, spec.letter_spacing))
        builder.addText(text[shown:])
    if rtl:
        builder.addText("\u202c")
    paragraph = builder.Build()
    paragraph.layout(max(1.0, spec.box_w))
    return paragraph


def _text_style(families: list[str], size: float, color: int, line_height: float,
                letter_spacing: float) -> skia.textlayout.TextStyle:
    style = tl.TextStyle()
    style.setFontFamilies(families)
    style.setFontSize(size)
    style.setColor(color)
    style.setHeight(line_height)
    style.setHeightOverride(True)
    style.setHalfLeading(True)
    if letter_spacing:
        style.setLetterSpacing(letter_spacing * size)
    return style


@bounded_cache(max_entries=2048, max_bytes=2 * 1024 * 1024)
def _widest_line(book: FontBook, lines: str, family: str, weight: int, size: float, line_height: float,
                 letter_spacing: float) -> float:
    """The width of the widest of `lines` set on one line each (an unbounded width); the same
    words are measured again and again: in every format, and at every auto-shrink step."""
    builder = tl.ParagraphBuilder.make(tl.ParagraphStyle(), book.collection, skia.Unicode.ICU_Make())
    builder.pushStyle(_text_style(book.families_for(family, weight), size, 0xFF000000, line_height, letter_spacing))
    builder.addText(lines)
    paragraph = builder.Build()
    paragraph.layout(1e6)
    return paragraph.LongestLine


def _breaks_anywhere(word: str) -> bool:
    return any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in word)


def _physical_align(align: str, rtl: bool) -> str:
    if align == "start":
        return "right" if rtl else "left"
    if align == "end":
        return "left" if rtl else "right"
    return align


def shown_chars(text: str, reveal: float, mode: str) -> int:
    """How many characters of `text` a typewriter ("chars") or word-by-word ("words") reveal shows."""
    return _shown(len(text), _word_ends(text) if mode == "words" else [], reveal, mode)


def _shown(n: int, word_ends: list[int], reveal: float, mode: str) -> int:
    if reveal >= 1.0 or not mode:
        return n
    if mode == "words" and word_ends:
        count = int(reveal * len(word_ends) + 1e-9)
        return word_ends[count - 1] if count > 0 else 0
    return int(reveal * n + 1e-9)


def _word_ends(text: str) -> list[int]:
    """Character offsets just past each word, so word-by-word reveals whole words."""
    ends, in_word = [], False
    for i, ch in enumerate(text):
        if ch.isspace():
            if in_word:
                ends.append(i)
            in_word = False
        else:
            in_word = True
    if in_word:
        ends.append(len(text))
    return ends


@dataclass(frozen=True)
class TextMeasure:
    """How a paragraph sets in a box: its height and the width of its widest unbreakable word."""

    height: float
    widest_word: float
    width: float


def measure_text(text: str, family: str, weight: int, size_px: float, box_w: float,
                 line_height: float = 1.2, letter_spacing: float = 0.0) -> TextMeasure:
    """Lay `text` out exactly as the rasterizer would, in pixels, without drawing it."""
    from reelfarm.renderer.fonts import font_book

    spec = TextSpec(text=text, font=FontRef(family, weight), size_px=size_px, min_size_px=size_px,
                    color="#000000", align="left", direction="auto", line_height=line_height,
                    letter_spacing=letter_spacing, auto_shrink=False, box_w=box_w, box_h=0.0)
    block = TextBlock(spec, font_book())
    return TextMeasure(height=block.height, widest_word=block._longest_word(size_px), width=block.width)
