"""What kind of file a render makes.

Revision ID: 0017
Revises: 0016

- ``renders.container``: ``mp4`` (every render made before this revision), ``gif`` or ``webm``.
- ``renders.transparent``: a WebM whose scenes without a background are left transparent (VP9
  with alpha); false for everything else.
- ``renders.clamped``: the names of the request's values lowered to the container's limits (a
  GIF's resolution and fps), as a JSON list; NULL when none was.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("container", sa.String(8), nullable=False, server_default="mp4"))
        batch.add_column(sa.Column("transparent", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("clamped", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("clamped")
        batch.drop_column("transparent")
        batch.drop_column("container")
