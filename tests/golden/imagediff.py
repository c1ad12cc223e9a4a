"""An edge-tolerant image comparison: two rasterizers never agree exactly along an edge.

A pixel counts as different only when no pixel within `radius` of it in the other image is
within `tolerance` of it, checked both ways; a few such pixels are still allowed.
"""
from __future__ import annotations

import numpy as np


def _nearest_distance(a: np.ndarray, b: np.ndarray, radius: int) -> np.ndarray:
    """For each pixel of `a`, the smallest max-channel difference to `b` within `radius`."""
    h, w = a.shape[:2]
    padded = np.pad(b.astype(np.int16), ((radius, radius), (radius, radius), (0, 0)), mode="edge")
    best = np.full((h, w), 255, np.int16)
    a16 = a.astype(np.int16)
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            shifted = padded[dy:dy + h, dx:dx + w]
            np.minimum(best, np.abs(a16 - shifted).max(axis=-1), out=best)
    return best


def mismatch_fraction(actual: np.ndarray, expected: np.ndarray, tolerance: int = 24, radius: int = 1) -> float:
    """Fraction of pixels that differ beyond tolerance even allowing a `radius`-pixel shift."""
    if actual.shape != expected.shape:
        return 1.0
    a, e = actual[..., :3], expected[..., :3]
    bad = (_nearest_distance(a, e, radius) > tolerance) | (_nearest_distance(e, a, radius) > tolerance)
    return float(bad.mean())
