"""Presigned uploads to the media library.

Revision ID: 0012
Revises: 0011

- ``asset_uploads``: one row per presigned upload a workspace asked for
  (``reelfarm.farm.services.library``): the staging key the client PUTs to
  (``uploads/<workspace id>/<upload id>``), the size and type it declared, when its URL expires,
  and, once completed, the asset it became (so that completing it again answers that asset).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "asset_uploads",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("content_type", sa.String(100), nullable=False),
        sa.Column("filename", sa.String(255), nullable=True),
        sa.Column("asset_id", sa.String(36), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name="fk_asset_uploads_workspace_id_workspaces",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_asset_uploads"),
        sa.UniqueConstraint("key", name="uq_asset_uploads_key"),
    )
    op.create_index("ix_asset_uploads_workspace_id", "asset_uploads", ["workspace_id"])
    op.create_index("ix_asset_uploads_expires_at", "asset_uploads", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_asset_uploads_expires_at", table_name="asset_uploads")
    op.drop_index("ix_asset_uploads_workspace_id", table_name="asset_uploads")
    op.drop_table("asset_uploads")
