"""A render row is read by the columns this release knows: a column a later release adds (migrated
first in a rolling upgrade) does not break reading renders."""
from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert, select

from reelfarm.shared.repos.renders import Render, render_of
from reelfarm.shared.tables import renders


def test_a_column_this_release_does_not_know_is_left_aside() -> None:
    engine = create_engine("sqlite://")
    later = Table("renders", MetaData(), *[Column(c.name, c.type) for c in renders.columns],
                  Column("added_later", Integer), Column("note_later", String(10)))
    later.create(engine)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(insert(later).values(
            id="r1", workspace_id="w1", video_id="v1", version_id="x1", format="1:1", resolution=720, fps=24,
            status="queued", progress=0.0, dedup_hash="h", charged_credits=0, created_at=now, reused_frames=0,
            priority="normal", container="gif", transparent=False, clamped=["fps"], added_later=7, note_later="n"))
        row = conn.execute(select(later)).one()
    render = render_of(row)
    assert isinstance(render, Render) and render.container == "gif" and render.clamped == ["fps"]
