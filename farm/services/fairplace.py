"""A queued render's place in line from views of the fair queue: what ``FairQueue.frames_ahead``
computes (``reelfarm.farm.services.fairqueue``, "Place in line"), and what any process computes from
the views the farm's dispatcher publishes (``reelfarm.farm.runtime.dispatchmirror.place``): one
function over plain values, so both give the same figure.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SpaceView:
    """A workspace with chunks waiting, as ``fluid_ahead`` reads it."""

    chunks: int
    frames: int
    served: float  # virtual service
    weight: float
    first: float  # its earliest waiting chunk's arrival: the tie break among equal service
    next_cost: int  # the least cost of the chunks it may dispatch next (its renders' heads)


@dataclass(frozen=True, slots=True)
class RenderView:
    """A render with chunks waiting, as ``fluid_ahead`` reads it."""

    workspace: str
    chunks: int
    frames: int
    served: float  # the render's virtual service in its workspace
    low: bool  # its next chunk is of low priority
    since: float  # its next chunk's arrival: the tie break among equal service
    next_cost: int  # its next chunk's frames


def fluid_ahead(render: str, workspace: str, spaces: Mapping[str, SpaceView],
                renders: Mapping[str, RenderView]) -> int:
    """Frames ahead of ``render``'s next chunk in fluid form (module docstring, "Place in line"),
    from the views of every workspace with chunks waiting and of the renders of ``render``'s own
    workspace: what ``FairQueue.frames_ahead`` gives, and what a reader of a published view computes.
    One that comes first (less service, or as much and earlier in the tie break) is given at least
    its next chunk, as the discrete order gives it."""
    mine = renders[render]
    own = 0.0
    for other, view in renders.items():
        if other == render or view.workspace != workspace:
            continue
        if mine.low and not view.low:
            own += view.frames
        elif view.low == mine.low:
            first = (view.served, view.since, other) < (mine.served, mine.since, render)
            own += _given(view.frames, mine.served - view.served, view.next_cost, first)
    home = spaces[workspace]
    start = home.served + own / home.weight
    ahead = own
    for other_workspace, space in spaces.items():
        if other_workspace != workspace and space.chunks:
            first = (space.served, space.first, other_workspace) < (start, home.first, workspace)
            ahead += _given(space.frames, (start - space.served) * space.weight, space.next_cost, first)
    return math.floor(ahead + 1e-6)


def _given(frames: int, gap: float, next_cost: int, first: bool) -> float:
    """Frames another render or workspace is given ahead: the fluid gap, and at least its next
    chunk when it comes first, never more than it has waiting."""
    return min(frames, max(gap, next_cost if first else 0.0, 0.0))
