"""Videos in the media library.

Revision ID: 0013
Revises: 0012

- ``assets.kind`` may be ``video`` (``reelfarm.farm.services.media``: MP4/MOV and WebM footage
  probed to its end); ``width`` and ``height`` are a video's as displayed, ``duration_sec`` its
  length, and two columns are new: ``fps`` (frames a second, on average) and ``has_audio``. Both are
  NULL for images and sounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# 0011 named its check "ck_assets_kind", which the naming convention made "ck_assets_ck_assets_kind";
# the check made here has the name the tables declare (op.f: taken as it is).
OLD_CHECK = "ck_assets_kind"


def upgrade() -> None:
    with op.batch_alter_table("assets") as batch:
        batch.add_column(sa.Column("fps", sa.Float(), nullable=True))
        batch.add_column(sa.Column("has_audio", sa.Boolean(), nullable=True))
        batch.drop_constraint(OLD_CHECK, type_="check")
        batch.create_check_constraint(op.f("ck_assets_kind"), "kind IN ('image', 'audio', 'video')")


def downgrade() -> None:
    op.execute("DELETE FROM assets WHERE kind = 'video'")
    with op.batch_alter_table("assets") as batch:
        batch.drop_constraint(op.f("ck_assets_kind"), type_="check")
        batch.create_check_constraint(OLD_CHECK, "kind IN ('image', 'audio')")
        batch.drop_column("has_audio")
        batch.drop_column("fps")
