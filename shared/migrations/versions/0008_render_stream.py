"""A render's stream: when its first chunk's stream segment was stored.

Revision ID: 0008
Revises: 0007

- ``renders.stream_at``: set once the first chunk's part of the render's HLS stream is stored
  (``reelfarm.farm.services.stream``); the Render's ``stream_url`` shows from then on, read from
  the database alone, so reading a render never waits on the storage. NULL for renders made before
  streams.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("stream_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("stream_at")
