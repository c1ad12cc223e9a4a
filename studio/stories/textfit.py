"""Text fitting: estimating how text of a given length wraps, and sizing boxes to hold it.

The estimates use generous average advances measured on the shipped Montserrat and Inter, so
a box sized here holds the text; ``auto_shrink`` with the computed ``min_size`` covers the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from reelfarm.studio.errors import LayoutError
from reelfarm.studio.stories.measure import Typesetter

MIN_TEXT = 0.032  # smallest text we lay out, in short sides: 34.5 px at 1080p
FLOOR = 0.03  # smallest text auto-shrink may reach: 32.4 px at 1080p


@dataclass(frozen=True)
class Role:
    """A text style: brand font, size (short sides), line height and case."""

    font: str
    size: float
    line_height: float
    uppercase: bool = False
    spacing: float = 0.0

    @property
    def em(self) -> float:
        """A generous average advance per character, in ems (measured on Montserrat and Inter)."""
        base = 0.6 if self.font == "heading" else 0.54
        return base + (0.09 if self.uppercase else 0.0) + self.spacing


ROLES = {
    "display": Role("heading", 0.2, 1.0),
    "headline": Role("heading", 0.1, 1.08),
    "title": Role("heading", 0.07, 1.12),
    "lead": Role("heading", 0.06, 1.18),
    "subhead": Role("heading", 0.05, 1.15),
    "body": Role("body", 0.044, 1.34),
    "kicker": Role("body", 0.034, 1.2, uppercase=True, spacing=0.12),
    "caption": Role("body", 0.036, 1.3),
    "button": Role("heading", 0.04, 1.1),
}
WORST_WORD = 13  # longest word assumed in prose fields at their maxLength


def wrap_lines(text: str, chars_per_line: float) -> int:
    """How many lines greedy word wrapping gives ``text`` at ``chars_per_line``."""
    cpl = max(1.0, chars_per_line)
    total = 0
    for paragraph in text.split("\n"):
        lines, used = 1, 0.0
        for word in paragraph.split():
            need = len(word) if used == 0 else used + 1 + len(word)
            if need <= cpl:
                used = need
            else:
                lines += 1 if used else 0
                lines += max(0, math.ceil(len(word) / cpl) - 1)
                used = len(word) % cpl or min(cpl, len(word))
        total += lines
    return total


def _worst_lines(max_len: int, chars_per_line: float) -> int:
    # Greedy wrapping wastes up to a word per line; assume half the worst word on average.
    usable = max(1.0, chars_per_line - min(WORST_WORD, chars_per_line) * 0.5)
    return max(1, math.ceil(max_len / usable))


@dataclass(frozen=True)
class Fit:
    size: float
    min_size: float
    h: float  # units


def fit_text(text: str, max_len: int, width: float, max_h: float, role: Role, *, size: float | None = None,
             worst_word: int | None = None, setter: Typesetter | None = None,
             max_lines: int | None = None) -> Fit:
    """Size ``text`` for a box ``width`` wide and at most ``max_h`` tall (units).

    ``min_size`` is the size at which *any* value of ``max_len`` characters fits (by estimate),
    so ``auto_shrink`` can always rescue the box. The chosen size is the largest up to ``size``
    at which the actual text fits (in at most ``max_lines`` lines), measured by ``setter`` when
    given; the box height hugs the text.

    Raises:
        LayoutError: the box cannot hold ``max_len`` characters even at ``MIN_TEXT``.
    """
    top = size if size is not None else role.size
    word = min(max_len, worst_word if worst_word is not None else WORST_WORD)
    shown = text.upper() if role.uppercase else text

    def worst_fits(s: float) -> bool:
        cpl = width / (s * role.em)
        # a single long token (a code, a link) may be all capitals: give it capital widths
        return word * (role.em + 0.08) * s <= width and _worst_lines(max_len, cpl) * role.line_height * s <= max_h

    def height(s: float) -> tuple[float, bool]:
        if setter is not None:
            return setter.measure(shown, role.font, s, width, role.line_height, role.spacing)
        cpl = width / (s * role.em)
        longest = max((len(w) for w in shown.split()), default=0)
        return wrap_lines(shown, cpl) * role.line_height * s + 0.12 * s, longest <= cpl

    def actual_fits(s: float) -> bool:
        h, fits_width = height(s)
        lines_ok = max_lines is None or h <= (max_lines + 0.5) * role.line_height * s
        return fits_width and h <= max_h and lines_ok

    if not worst_fits(MIN_TEXT):
        raise LayoutError(f"{max_len} characters do not fit {width:.3f}x{max_h:.3f} at the minimum size")
    chosen = _largest(actual_fits, MIN_TEXT, top)
    # leave auto-shrink a step of room: other resolutions round glyph advances differently
    min_size = max(min(_largest(worst_fits, MIN_TEXT, top), chosen * 0.9), min(chosen, FLOOR))
    min_size = math.floor(min_size * 1000) / 1000
    return Fit(size=chosen, min_size=min_size, h=min(max_h, height(chosen)[0] + 0.004))


def _largest(fits: Callable[[float], bool], lo: float, hi: float) -> float:
    """The largest size in [lo, hi] (to 1/1000) for which ``fits`` holds; ``lo`` if none.

    Fourteen halvings, ended early once ``lo`` and ``hi`` round down to the same thousandth:
    every later ``lo`` lies between them, so the answer is already known (about half the
    measurements, each a paragraph laid out twice).
    """
    if fits(hi):
        return math.floor(hi * 1000) / 1000
    for _ in range(14):
        if math.floor(lo * 1000) == math.floor(hi * 1000):
            break
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return math.floor(lo * 1000) / 1000
