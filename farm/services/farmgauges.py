"""The farm's nodes and dispatcher in a few numbers, for the API's ``/metrics``
(read from Redis by ``reelfarm.farm.runtime.farmgauges``)."""
from __future__ import annotations

from dataclasses import dataclass

NODE_STATES = ("working", "set_aside", "disabled")


@dataclass(frozen=True)
class FarmGauges:
    """Live nodes by state (``working``: taking work), and the dispatcher's lease and pause."""

    nodes: dict[str, int]
    dispatch_lease_held: bool
    dispatch_paused: bool
