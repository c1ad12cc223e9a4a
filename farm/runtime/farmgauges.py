"""The farm's nodes and dispatcher as the API's ``/metrics`` shows them, read from Redis when scraped.

What an operator is woken by (``deploy/prometheus/alerts.yml``) needs a few farm-wide facts that no
node can report once it is gone: how many nodes are alive and taking work, how many the farm set
aside or an operator disabled, whether some process holds the dispatch lease
(``reelfarm.farm.runtime.dispatchlease``) and whether dispatch is paused. Each is one or two Redis
commands over the live set (``reelfarm.farm.runtime.nodes``), however long the farm has run.
"""
from __future__ import annotations

from typing import Any

from reelfarm.farm.runtime.dispatch import Dispatcher, Shares
from reelfarm.farm.runtime.dispatchlease import holder
from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.services.farmgauges import NODE_STATES, FarmGauges


def read_farm_gauges(redis: Any, namespace: str = "") -> FarmGauges:
    """The gauges now. Raises Redis's errors when it cannot be reached."""
    registry = NodeRegistry(redis, namespace)
    disabled = registry.disabled_all()
    counts = dict.fromkeys(NODE_STATES, 0)
    for node in registry.live_nodes():
        if node["name"] in disabled:
            counts["disabled"] += 1
        elif node["set_aside"]:
            counts["set_aside"] += 1
        else:
            counts["working"] += 1
    paused = Dispatcher(redis, namespace, shares=Shares(None)).paused() is not None
    return FarmGauges(counts, holder(redis, namespace) is not None, paused)
