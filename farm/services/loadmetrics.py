"""Each busy workspace's work on the farm as Prometheus families, for the API's ``/metrics`` and a
node's: ``reelfarm_workspace_chunks_running``, ``reelfarm_workspace_chunks_waiting`` and
``reelfarm_workspace_frames_waiting``, labelled ``workspace`` by name for the ten with the most
frames waiting and ``(other)`` for the sum of the rest, so the label set stays bounded however
many workspaces there are (``reelfarm.farm.services.fairness.top_loads``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reelfarm.farm.services.fairness import Load, top_loads

TOP = 10


def load_families(loads: Mapping[str, Load], names: Callable[[Iterable[str]], Mapping[str, str]],
                  limit: int = TOP) -> list[Any]:
    """The three gauge families; ``names`` looks workspaces' names up (only the shown ones)."""
    from prometheus_client.core import GaugeMetricFamily

    ranked = sorted(loads, key=lambda w: (-loads[w].waiting_frames, -loads[w].running, w))
    shown = top_loads(loads, names(ranked[:limit]), limit)
    running = GaugeMetricFamily("reelfarm_workspace_chunks_running",
                                "Chunks of the workspace dispatched and not finished", labels=["workspace"])
    waiting = GaugeMetricFamily("reelfarm_workspace_chunks_waiting",
                                "Chunks of the workspace waiting for their turn under fair dispatch",
                                labels=["workspace"])
    frames = GaugeMetricFamily("reelfarm_workspace_frames_waiting", "Frames of the workspace's waiting chunks",
                               labels=["workspace"])
    for label, load in shown:
        running.add_metric([label], float(load.running))
        waiting.add_metric([label], float(load.waiting))
        frames.add_metric([label], float(load.waiting_frames))
    return [running, waiting, frames]
