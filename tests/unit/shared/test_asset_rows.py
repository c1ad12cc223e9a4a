"""An asset row read by this release keeps working when a later release has added a column to
``assets`` (a rolling upgrade migrates first, while this release still runs)."""
from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import create_engine, literal, select

from reelfarm.shared.repos import assets as repo
from reelfarm.shared.tables import assets, metadata, workspaces


def test_a_column_this_release_does_not_know_is_left_aside():
    engine = create_engine("sqlite://")
    metadata.create_all(engine, tables=[workspaces, assets])
    now = datetime(2026, 3, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(workspaces.insert().values(id="w1", name="acme", plan="pro", created_at=now, updated_at=now))
        conn.execute(assets.insert().values(id="a1", workspace_id="w1", kind="image", content_type="image/png",
                                            bytes=10, sha256="ab", key="assets/w1/ab.png", width=2, height=1,
                                            name="logo.png", created_at=now))
        row = conn.execute(select(assets, literal("later").label("added_by_a_later_release"))).one()
    asset = repo._asset(row)
    assert (asset.id, asset.name, asset.thumbnail_alpha, asset.thumbnail_key) == (
        "a1", "logo.png", False, "assets/w1/ab.thumb.jpg")
