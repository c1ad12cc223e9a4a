"""/metrics counts what each workspace's render tasks used (``reelfarm_render_cpu_seconds_total`` and
the like) by workspace name, the top ten by CPU and the rest under ``(other)``."""
from __future__ import annotations

import uuid
from datetime import timedelta

from reelfarm.farm.services.usagemetrics import top_use
from reelfarm.shared.db import transaction
from reelfarm.shared.readmodels import WorkspaceUse
from reelfarm.shared.tables import task_costs


def _task(services, clock, tenant, cpu, frames, gpu=None):
    now = clock.now()
    with transaction(services.engine) as conn:
        conn.execute(task_costs.insert().values(
            id=str(uuid.uuid4()), workspace_id=tenant.workspace_id, video_id=str(uuid.uuid4()),
            render_id=str(uuid.uuid4()), task="chunk", chunk=0, outcome="finished", node="n1", node_kind="cpu",
            cpu_sec=cpu, wall_sec=cpu + 1, gpu_sec=gpu, peak_memory_bytes=1, storage_bytes=1000, frames=frames,
            started_at=now - timedelta(seconds=cpu), finished_at=now))


def test_metrics_count_each_workspaces_render_seconds_by_name(client, services, clock, make_tenant):
    tag = uuid.uuid4().hex[:6]
    heavy, light = make_tenant(name=f"Heavy {tag}"), make_tenant(name=f"Light {tag}")
    _task(services, clock, heavy, 50000.0, 300)
    _task(services, clock, heavy, 10000.0, 150, gpu=2.5)
    _task(services, clock, light, 30000.0, 90)
    text = client.get("/metrics").get_data(as_text=True)
    assert f'reelfarm_render_cpu_seconds_total{{workspace="Heavy {tag}"}} 60000.0' in text
    assert f'reelfarm_render_cpu_seconds_total{{workspace="Light {tag}"}} 30000.0' in text
    assert f'reelfarm_render_gpu_seconds_total{{workspace="Heavy {tag}"}} 2.5' in text
    assert f'reelfarm_render_wall_seconds_total{{workspace="Heavy {tag}"}} 60002.0' in text
    assert f'reelfarm_render_frames_total{{workspace="Heavy {tag}"}} 450.0' in text
    assert f'reelfarm_render_storage_bytes_total{{workspace="Light {tag}"}} 1000.0' in text
    assert 'reelfarm_render_cpu_seconds_total{workspace="(other)"}' in text  # the rest, summed: a bounded set
    assert heavy.workspace_id not in text and light.workspace_id not in text  # names, never ids


def test_the_top_ten_by_cpu_are_named_and_the_rest_summed():
    used = {f"ws-{i:02d}-{'x' * 8}": WorkspaceUse(cpu_sec=float(i), frames=i) for i in range(1, 14)}
    names = {w: ("Same" if w.startswith(("ws-13", "ws-12")) else w[:5]) for w in used}
    shown = top_use(used, names)
    assert [label for label, _ in shown][:3] == ["Same (ws-13-xx)", "Same (ws-12-xx)", "ws-11"]
    assert len(shown) == 11 and shown[-1] == ("(other)", WorkspaceUse(cpu_sec=6.0, frames=6))
    assert sum(use.cpu_sec for _, use in shown) == sum(use.cpu_sec for use in used.values())
    assert top_use({}, {}) == [("(other)", WorkspaceUse())]
