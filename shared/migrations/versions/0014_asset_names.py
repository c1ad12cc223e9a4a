"""Names of files in the media library, and thumbnails that keep transparency.

Revision ID: 0014
Revises: 0013

- ``assets.name``: the file's name as the person knows it (the uploaded file's name, or the last
  part of the address it came from), which they may change; NULL for files kept before this
  revision and for bytes sent without a name.
- ``assets.thumbnail_alpha``: whether an image's thumbnail keeps its transparency (a WebP beside it,
  ``<sha256>.thumb.webp``) rather than being a JPEG (``<sha256>.thumb.jpg``, as every thumbnail
  made before this revision is: false for them).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assets") as batch:
        batch.add_column(sa.Column("name", sa.String(255), nullable=True))
        batch.add_column(sa.Column("thumbnail_alpha", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("assets") as batch:
        batch.drop_column("thumbnail_alpha")
        batch.drop_column("name")
