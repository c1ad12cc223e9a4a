"""Captions: a library file's cues, and the WebVTT file a render publishes.

Revision ID: 0019
Revises: 0018

- ``assets.kind`` may be ``captions`` (``reelfarm.farm.services.media``: SRT and WebVTT files).
- ``assets.cues``: the cues of a captions file (kind ``captions``, SRT or WebVTT) as parsed at
  upload, a JSON list of ``{"start", "end", "text"}``; NULL for every other kind.
- ``renders.captions_key``: the storage key of the WebVTT file a render of a video with captions
  publishes; NULL for a render without captions.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assets") as batch:
        batch.add_column(sa.Column("cues", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True))
        batch.drop_constraint(op.f("ck_assets_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_assets_kind"), "kind IN ('image', 'audio', 'video', 'captions')")
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("captions_key", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("captions_key")
    op.execute("DELETE FROM assets WHERE kind = 'captions'")
    with op.batch_alter_table("assets") as batch:
        batch.drop_constraint(op.f("ck_assets_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_assets_kind"), "kind IN ('image', 'audio', 'video')")
        batch.drop_column("cues")
