"""Pools of render nodes: which nodes a workspace's renders, or one render, may run on.

Revision ID: 0020
Revises: 0019

- ``workspaces.pools``: the pools (each a set of node tags, written ``region=eu,gpu``) the
  workspace's renders are limited to, as a JSON list, its default first; NULL: any node.
- ``renders.pool``: the pool the render's chunks run in (``""``: any node), fixed when it is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspaces") as batch:
        batch.add_column(sa.Column("pools", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                                   nullable=True))
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("pool", sa.String(200), nullable=False, server_default=sa.text("''")))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("pool")
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("pools")
