"""A workspace's monthly compute allowance.

Revision ID: 0018
Revises: 0017

- ``workspaces.cpu_allowance_sec``: the CPU seconds of the farm the workspace's renders may use in
  a calendar month (UTC), as an operator set it (``reelfarm admin set-allowance``); NULL: no
  allowance, as every workspace has until one is set.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspaces") as batch:
        batch.add_column(sa.Column("cpu_allowance_sec", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("cpu_allowance_sec")
