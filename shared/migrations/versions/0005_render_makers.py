"""What made a render: its encoder family, its rasterizer, and the frames it reused.

Revision ID: 0005
Revises: 0004

- ``renders.encoder``: the encoder family of every segment of the render (``x264`` or ``nvenc``),
  recorded by the first chunk that starts; segments of two families cannot be joined into one
  playable file, so a chunk of another family refuses to draw.
- ``renders.raster``: the rasterizer of the first chunk (``cpu`` or ``gl``); chunks of either
  rasterizer may be mixed (the pixels agree within the goldens' tolerance).
- ``renders.reused_frames``: frames whose segments an earlier render of the workspace had made
  and this one reused instead of drawing (``reelfarm.farm.services.segments``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("encoder", sa.String(16), nullable=True))
        batch.add_column(sa.Column("raster", sa.String(16), nullable=True))
        batch.add_column(sa.Column("reused_frames", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("reused_frames")
        batch.drop_column("raster")
        batch.drop_column("encoder")
