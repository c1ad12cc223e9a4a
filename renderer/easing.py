"""Easing curves: maps of progress p in [0, 1] to eased progress.

All curves start at 0 and end at 1; `back` and `spring` overshoot in between.
"""
from __future__ import annotations

import math
from collections.abc import Callable

Easing = Callable[[float], float]

_BACK = 1.70158


def _in_quad(p: float) -> float:
    return p * p


def _in_cubic(p: float) -> float:
    return p * p * p


def _in_expo(p: float) -> float:
    return 0.0 if p <= 0 else 2.0 ** (10.0 * (p - 1.0))


def _in_back(p: float) -> float:
    return p * p * ((_BACK + 1.0) * p - _BACK)


def _out(f: Easing) -> Easing:
    return lambda p: 1.0 - f(1.0 - p)


def _in_out(f: Easing) -> Easing:
    return lambda p: f(2.0 * p) / 2.0 if p < 0.5 else 1.0 - f(2.0 - 2.0 * p) / 2.0


def _spring(p: float) -> float:
    # An under-damped spring (damping ratio 0.5) that settles within the segment.
    if p >= 1.0:
        return 1.0
    omega = 12.0
    zeta = 0.5
    wd = omega * math.sqrt(1.0 - zeta * zeta)
    decay = math.exp(-zeta * omega * p)
    value = 1.0 - decay * (math.cos(wd * p) + (zeta * omega / wd) * math.sin(wd * p))
    # Blend to exactly 1 in the last tenth so the curve ends where it must.
    if p > 0.9:
        k = (p - 0.9) / 0.1
        value = value * (1.0 - k) + k
    return value


EASINGS: dict[str, Easing] = {
    "linear": lambda p: p,
    "step": lambda p: 1.0 if p >= 1.0 else 0.0,
    "in-quad": _in_quad,
    "out-quad": _out(_in_quad),
    "in-out-quad": _in_out(_in_quad),
    "in-cubic": _in_cubic,
    "out-cubic": _out(_in_cubic),
    "in-out-cubic": _in_out(_in_cubic),
    "in-expo": _in_expo,
    "out-expo": _out(_in_expo),
    "in-out-expo": _in_out(_in_expo),
    "in-back": _in_back,
    "out-back": _out(_in_back),
    "in-out-back": _in_out(_in_back),
    "spring": _spring,
}


def ease(name: str, p: float) -> float:
    """Return eased progress for `p`, clamped to [0, 1] before easing."""
    p = 0.0 if p < 0.0 else min(p, 1.0)
    return EASINGS[name](p)
