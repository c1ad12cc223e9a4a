"""How fast the farm draws, before it has drawn anything: a cold farm's rate from its nodes' own checks.

A queued render's estimated start is its frames ahead over the farm's frames a second
(``fairness.place``). The farm's rate is what it finished over the last two minutes
(``Dispatcher.throughput``); a farm that has finished nothing lately has none, and a start
estimated from a guess was minutes off. Each node measures itself instead when it starts (and
again at each ``reelfarm node check``): frames a second at 1080p of its rasterizer and of x264.
A chunk draws then encodes each frame, so a node's chunk rate is ``1 / (1/raster + 1/x264)``;
the farm's seed is the sum over its live nodes that take chunks (each works one chunk at a time).
Pure functions over plain values; the runtime reads the nodes (``reelfarm.farm.runtime.nodespeed``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from reelfarm.farm.services.pools import split_queues

SPEED_FIELD = "speed_fps"  # a node record's measured chunk rate (frames a second)


def chunk_rate(raster_fps: float | None, x264_fps: float | None) -> float | None:
    """Frames a second of a node that draws at ``raster_fps`` and encodes at ``x264_fps``; None
    when either is unknown or not positive."""
    if not raster_fps or not x264_fps or raster_fps <= 0 or x264_fps <= 0:
        return None
    return 1.0 / (1.0 / raster_fps + 1.0 / x264_fps)


def seeded_rate(nodes: Iterable[Mapping[str, object]], chunk_queues: Iterable[str]) -> float:
    """The frames a second the live ``nodes`` (registry records) that work a chunk queue and are not
    set aside measured themselves at, together; 0 when none did."""
    wanted = set(chunk_queues)
    total = 0.0
    for node in nodes:
        if not node.get("alive") or node.get("set_aside"):
            continue
        if not wanted & set(split_queues(str(node.get("queues", "")))):
            continue
        try:
            total += max(0.0, float(str(node.get(SPEED_FIELD) or 0)))
        except ValueError:
            continue
    return total


def start_rate(throughput: float, seed: float) -> float:
    """The rate a start estimate divides by: the farm's recent throughput, else its nodes' seed."""
    return throughput if throughput > 0 else seed
