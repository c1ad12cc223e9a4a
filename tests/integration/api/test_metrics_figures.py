"""The farm-wide figures behind ``/metrics`` (``Services.figures``): read from the database, kept
for a while, and partial rather than failed when a server is down."""
from __future__ import annotations

import pytest

from reelfarm.shared.db import make_engine
from reelfarm.shared.readmodels import FarmFigures
from tests.integration.api.support import failed_render


def test_figures_are_read_once_per_cache_window(services, clock, make_tenant, create_video):
    tenant = make_tenant()
    kept = FarmFigures(services.engine, cache_sec=3600)
    first = kept.read()
    assert first.totals is not None and first.waiting is not None
    assert set(first.totals.renders) >= {"queued", "running", "succeeded", "failed", "canceled"}
    failed_render(services, clock, tenant, create_video)
    assert kept.read() is first
    fresh = FarmFigures(services.engine, cache_sec=0).read()
    assert fresh.totals.renders["failed"] == first.totals.renders["failed"] + 1


def test_a_server_that_is_down_leaves_out_its_figures_only(services, tmp_path):
    def redis_down() -> dict:
        raise ConnectionError("redis is down")

    without_queue = FarmFigures(services.engine, waiting=redis_down, cache_sec=0).read()
    assert without_queue.totals is not None and without_queue.waiting is None
    engine = make_engine(f"sqlite:///{tmp_path}/missing/reelfarm.db")
    try:
        without_database = FarmFigures(engine, cache_sec=0).read()
    finally:
        engine.dispose()
    assert without_database.totals is None and without_database.waiting is None


def test_metrics_report_the_services_figures(client, services):
    text = client.get("/metrics").get_data(as_text=True)
    figures = services.figures.read()
    assert f'reelfarm_renders{{status="failed"}} {float(figures.totals.renders["failed"])}' in text
    assert 'reelfarm_queue_depth{queue="render"}' in text and "reelfarm_webhook_lag_seconds" in text


@pytest.mark.own_database  # the session's database holds other tests' waiting renders, some ranked above these
def test_metrics_show_each_busy_workspaces_chunks_by_name(client, make_tenant):
    """Renders waiting (the farm not started) show per workspace under its name."""
    busy, quiet = make_tenant(credits=5, name="Busy Co"), make_tenant(name="Quiet Co")
    video = client.post("/api/v1/videos", json={"storyId": "announcement", "durationSec": 6},
                        headers=busy.headers).get_json()
    render = client.post(f"/api/v1/videos/{video['id']}/renders", json={"format": "16:9", "resolution": 720},
                         headers=busy.headers).get_json()
    text = client.get("/metrics").get_data(as_text=True)
    waiting = render["queue"]["chunks_waiting"]
    assert f'reelfarm_workspace_chunks_waiting{{workspace="Busy Co"}} {float(waiting)}' in text
    assert 'reelfarm_workspace_frames_waiting{workspace="Busy Co"} 180.0' in text
    assert 'reelfarm_workspace_chunks_running{workspace="(other)"}' in text  # the rest, summed: a bounded set
    assert "Quiet Co" not in text  # nothing of it on the farm
    assert quiet.workspace_id not in text and busy.workspace_id not in text  # names, never ids
