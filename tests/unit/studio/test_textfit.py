"""Text fitting's size search: ended early, it answers what fourteen halvings answer."""
from __future__ import annotations

import math
import random

from reelfarm.studio.stories.textfit import MIN_TEXT, _largest


def _fourteen_halvings(fits, lo: float, hi: float) -> float:
    """The search as it was: always fourteen halvings."""
    if fits(hi):
        return math.floor(hi * 1000) / 1000
    for _ in range(14):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return math.floor(lo * 1000) / 1000


def test_an_early_end_gives_the_same_size_with_fewer_measurements():
    rng = random.Random(7)
    saved = searches = 0
    for _ in range(5000):
        top = rng.choice([0.2, 0.1, 0.07, 0.06, 0.05, 0.044, 0.04, 0.036, 0.034])
        limit = rng.uniform(0.0, 0.25)  # the largest size that fits; under MIN_TEXT: none does
        calls: list[float] = []

        def fits(s: float, limit: float = limit, calls: list[float] = calls) -> bool:
            calls.append(s)
            return s <= limit

        assert _largest(fits, MIN_TEXT, top) == _fourteen_halvings(lambda s, limit=limit: s <= limit, MIN_TEXT, top)
        if len(calls) > 1:  # the size asked for did not fit: a search
            searches += 1
            saved += 15 - len(calls)
    assert searches > 1000 and saved / searches > 4  # several measurements fewer a search
