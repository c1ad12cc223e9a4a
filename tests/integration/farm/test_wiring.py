"""The farm built from settings, as the API and the worker build it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_farm, make_progress, make_queue
from reelfarm.farm.services.progress import DatabaseProgress, MemoryProgress, RedisProgress
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.clock import SystemClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import make_engine, migrate, transaction
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.storage import make_storage
from tests.integration.farm.conftest import make_doc
from tests.integration.farm.test_render_embedded import wait_for


def test_redis_url_chooses_rq_and_its_absence_the_embedded_queue(tmp_path: Path, redis_url: str) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/x.db")
    embedded = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path)})
    farm = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_REDIS_URL": redis_url})
    assert isinstance(make_queue(embedded, engine), EmbeddedQueue)
    assert isinstance(make_progress(embedded, engine), DatabaseProgress)
    assert isinstance(make_progress(embedded), MemoryProgress)
    assert isinstance(make_queue(farm, engine), RQQueue)
    assert isinstance(make_progress(farm, engine), RedisProgress)
    engine.dispose()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_an_embedded_farm_from_settings_renders(db_url: str, tmp_path: Path) -> None:
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_DATABASE_URL": db_url})
    clock = SystemClock()
    engine = make_engine(settings.database_url)
    migrate(engine)
    farm = make_farm(settings, engine, make_storage(settings, clock), clock)
    with transaction(engine) as conn:
        workspace = ws_repo.create_workspace(conn, clock, name="w", plan="pro", credits=1,
                                             brand_tokens=NEUTRAL_BRAND).id
        video, _ = videos_repo.create_video(conn, clock, workspace_id=workspace, title="t", status="ready",
                                            default_format="1:1", first_version=videos_repo.NewVersion(
                                                source="doc", doc=make_doc(6), duration_sec=6.0))
    farm.start()
    try:
        render = farm.renders.request(workspace, video.id, "1:1", resolution=180)
        done = wait_for(lambda: (r := farm.renders.get(workspace, render["id"]))["status"] == "succeeded" and r)
        assert done["url"].startswith("http://127.0.0.1:8000/files/renders/")
    finally:
        farm.stop()
        engine.dispose()
