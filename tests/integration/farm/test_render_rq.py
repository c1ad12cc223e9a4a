"""Whole renders on RQ over real Redis and PostgreSQL, run by RQ's SimpleWorker in burst mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reelfarm.shared.tables import event_outbox
from tests.integration.farm.conftest import (
    Farm,
    make_doc,
    with_audio,
    with_image,
    work_burst,
)
from tests.integration.farm.test_render_embedded import assert_video, local_file


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_whole_render_on_rq(rq_farm: Farm, redis: Any, namespace: str, tmp_path: Path) -> None:
    workspace = rq_farm.workspace(credits=3)
    doc = with_image(with_audio(make_doc(6), rq_farm, workspace, tmp_path), rq_farm, workspace, tmp_path)
    video = rq_farm.video(workspace, doc)
    render = rq_farm.renders.request(workspace, video, "9:16", resolution=180, fps=24)
    assert render["status"] == "queued" and (render["fps"], render["format"]) == (24, "9:16")
    assert redis.exists(f"rq:job:{namespace}render-{render['id']}-stitch")

    work_burst(redis, namespace)

    done = rq_farm.renders.get(workspace, render["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["progress"] == 1.0 and done["duration_sec"] == pytest.approx(6.0)
    assert_video(local_file(rq_farm.storage, done["url"]), 180, 320, 24, 6 * 24, audio=True)
    assert rq_farm.balance(workspace) == 2
    with rq_farm.engine.connect() as conn:
        types = conn.execute(select(event_outbox.c.type).where(event_outbox.c.workspace_id == workspace)).scalars()
        assert list(types) == ["render.completed"]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_unreadable_image_fails_the_render_on_rq_with_a_refund(rq_farm: Farm, redis: Any, namespace: str,
                                                                   tmp_path: Path) -> None:
    workspace = rq_farm.workspace(credits=3)
    video = rq_farm.video(workspace, with_image(make_doc(6), rq_farm, workspace, tmp_path, corrupt=True))
    render = rq_farm.renders.request(workspace, video, "16:9", resolution=180)
    assert rq_farm.balance(workspace) == 2

    work_burst(redis, namespace)

    failed = rq_farm.renders.get(workspace, render["id"])
    assert failed["status"] == "failed" and failed["url"] is None
    assert "asset 'photo'" in failed["error"] and "not a readable PNG, JPEG or WebP image" in failed["error"]
    assert "refunded" in failed["error"]
    assert rq_farm.balance(workspace) == 3
