"""What each workspace's renders used on the farm as Prometheus counters, for the API's ``/metrics``:
``reelfarm_render_cpu_seconds_total``, ``reelfarm_render_gpu_seconds_total``,
``reelfarm_render_wall_seconds_total``, ``reelfarm_render_frames_total`` and
``reelfarm_render_storage_bytes_total`` (every task attempt ``task_costs`` holds, all time),
labelled ``workspace`` by name for the ten that used the most CPU and ``(other)`` for the sum of
the rest, as the fair-dispatch gauges are (``reelfarm.farm.services.loadmetrics``): the label set
stays bounded however many workspaces there are. A workspace that enters the ten moves its figures
out of ``(other)``, which then falls: read ``(other)`` with that in mind (``rate`` treats a fall as
a reset)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reelfarm.farm.services.fairness import OTHER
from reelfarm.shared.readmodels import WorkspaceUse

TOP = 10
FAMILIES = (
    ("reelfarm_render_cpu_seconds", "CPU seconds the workspace's render tasks used on the farm's nodes", "cpu_sec"),
    ("reelfarm_render_gpu_seconds", "Seconds the workspace's render tasks held a GPU", "gpu_sec"),
    ("reelfarm_render_wall_seconds", "Seconds the workspace's render tasks ran, summed over tasks", "wall_sec"),
    ("reelfarm_render_frames", "Frames the farm drew and stored for the workspace's renders, every attempt", "frames"),
    ("reelfarm_render_storage_bytes", "Bytes the workspace's render tasks stored", "storage_bytes"),
)


def top_use(used: Mapping[str, WorkspaceUse], names: Mapping[str, str],
            limit: int = TOP) -> list[tuple[str, WorkspaceUse]]:
    """The ``limit`` workspaces that used the most CPU, each labelled by its name (two of one name
    told apart by their id's first 8 characters), and the rest summed under ``(other)``."""
    ranked = sorted(used.items(), key=lambda kv: (-kv[1].cpu_sec, kv[0]))
    shown_names = [names.get(w, w) for w, _ in ranked[:limit]]
    shown = [(f"{name} ({w[:8]})" if shown_names.count(name) > 1 else name, use)
             for name, (w, use) in zip(shown_names, ranked[:limit], strict=True)]
    rest = WorkspaceUse()
    for _, use in ranked[limit:]:
        rest = rest + use
    return [*shown, (OTHER, rest)]


def usage_families(used: Mapping[str, WorkspaceUse], names: Callable[[Iterable[str]], Mapping[str, str]],
                   limit: int = TOP) -> list[Any]:
    """The counter families; ``names`` looks workspaces' names up (only the shown ones)."""
    from prometheus_client.core import CounterMetricFamily

    ranked = sorted(used, key=lambda w: (-used[w].cpu_sec, w))
    shown = top_use(used, names(ranked[:limit]), limit)
    families = []
    for name, documentation, attribute in FAMILIES:
        family = CounterMetricFamily(name, documentation, labels=["workspace"])
        for label, use in shown:
            family.add_metric([label], float(getattr(use, attribute)))
        families.append(family)
    return families
