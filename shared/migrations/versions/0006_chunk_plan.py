"""A render's chunk plan, stored: the first frame of each chunk.

Revision ID: 0006
Revises: 0005

- ``renders.chunk_starts``: the first frame of each of the render's chunks, as planned when it was
  requested (``reelfarm.renderer.chunks.scene_chunks``). Every chunk task, the stitch and the
  node metrics read the plan from here, so a render planned by one release is drawn with the
  same frame ranges by nodes of the next, whatever the next release's chunking. NULL for renders
  planned before: their ranges are recomputed as their release planned them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("chunk_starts", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("chunk_starts")
