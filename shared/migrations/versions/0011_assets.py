"""The media library: a workspace's uploaded images and sounds.

Revision ID: 0011
Revises: 0010

- ``assets``: one row per distinct upload of a workspace (``reelfarm.farm.services.library``): its
  kind, probed type, size, pixels or duration, and the storage key named by its content's SHA-256
  (``assets/<workspace id>/<sha256>.<ext>``). ``(workspace_id, sha256)`` is unique: an identical
  upload answers the row already there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "assets",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("content_type", sa.String(100), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("duration_sec", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('image', 'audio')", name="ck_assets_kind"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name="fk_assets_workspace_id_workspaces",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_assets"),
        sa.UniqueConstraint("key", name="uq_assets_key"),
        sa.UniqueConstraint("workspace_id", "sha256", name="uq_assets_workspace_id_sha256"),
    )
    op.create_index("ix_assets_workspace_id", "assets", ["workspace_id"])
    op.create_index("ix_assets_workspace_created", "assets", ["workspace_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_assets_workspace_created", table_name="assets")
    op.drop_index("ix_assets_workspace_id", table_name="assets")
    op.drop_table("assets")
