"""What a render was estimated to cost when it was asked for, held against a compute allowance.

Revision ID: 0021
Revises: 0020

- ``renders.estimate_cpu_sec``: the CPU seconds the render was estimated at when it was made, in a
  workspace with a monthly compute allowance (``reelfarm.farm.services.allowance``): until it ends,
  what its tasks have not used of it yet is reserved, so renders asked for together cannot pass
  the allowance between them; NULL: made without an allowance, or before estimates were kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("estimate_cpu_sec", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("estimate_cpu_sec")
