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
- ``segments``: the segments a workspace keeps for reuse, by fingerprint, with when each was last
  used; the retention sweep deletes (rows and files) those unused for the retention period.
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
    op.create_table(
        "segments",
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name="fk_segments_workspace_id_workspaces",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workspace_id", "fingerprint", name="pk_segments"),
    )
    op.create_index("ix_segments_workspace_id", "segments", ["workspace_id"])
    op.create_index("ix_segments_used_at", "segments", ["used_at"])


def downgrade() -> None:
    op.drop_index("ix_segments_used_at", table_name="segments")
    op.drop_index("ix_segments_workspace_id", table_name="segments")
    op.drop_table("segments")
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("reused_frames")
        batch.drop_column("raster")
        batch.drop_column("encoder")
