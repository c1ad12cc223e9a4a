"""Drafts: animated previews of unsaved values.

Revision ID: 0009
Revises: 0008

- ``drafts``: a workspace's drafts (``reelfarm.farm.services.drafts``): the unsaved document, its
  low-resolution plan, how many of its chunks' stream segments are stored and what they take,
  and when it expires (minutes after it was asked for). Never a render: no credits, no events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> Any:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def upgrade() -> None:
    op.create_table(
        "drafts",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("format", sa.String(8), nullable=False),
        sa.Column("resolution", sa.Integer(), nullable=False),
        sa.Column("fps", sa.Integer(), nullable=False),
        sa.Column("frames", sa.Integer(), nullable=False),
        sa.Column("chunk_starts", _json(), nullable=False),
        sa.Column("doc", _json(), nullable=False),
        sa.Column("stored", sa.Integer(), server_default="0", nullable=False),
        sa.Column("bytes", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')",
                           name="ck_drafts_status"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name="fk_drafts_workspace_id_workspaces",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_drafts"),
    )
    op.create_index("ix_drafts_workspace_id", "drafts", ["workspace_id"])
    op.create_index("ix_drafts_expires_at", "drafts", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_drafts_expires_at", table_name="drafts")
    op.drop_index("ix_drafts_workspace_id", table_name="drafts")
    op.drop_table("drafts")
