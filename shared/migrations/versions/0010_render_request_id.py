"""A render's request id: the ``X-Request-Id`` of the request that asked for it.

Revision ID: 0010
Revises: 0009

- ``renders.request_id``: bound, with the workspace id, to every log line a node writes while it
  runs one of the render's tasks (``reelfarm.farm.runtime.tasks``), so one render can be followed
  from its request to its stitch. NULL for renders asked for outside a request, or before 0010.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("request_id", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("request_id")
