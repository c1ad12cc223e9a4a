"""What a render's tasks used.

Revision ID: 0016
Revises: 0015

- ``task_costs``: one row for each attempt of a render's task (asset import, chunk, stitch) that
  ended on its node, retries included: CPU, wall and GPU seconds, the process's peak memory, bytes
  stored, frames encoded, the node and its kind (``reelfarm.farm.runtime.accounting``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "task_costs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("video_id", sa.String(36), nullable=False),
        sa.Column("render_id", sa.String(36), nullable=False),
        sa.Column("task", sa.String(20), nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("node", sa.String(200), nullable=False),
        sa.Column("node_kind", sa.String(20), nullable=False),
        sa.Column("cpu_sec", sa.Float(), nullable=False),
        sa.Column("wall_sec", sa.Float(), nullable=False),
        sa.Column("gpu_sec", sa.Float(), nullable=True),
        sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("storage_bytes", sa.BigInteger(), nullable=False),
        sa.Column("frames", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_costs")),
    )
    op.create_index(op.f("ix_task_costs_workspace_id"), "task_costs", ["workspace_id"])
    op.create_index(op.f("ix_task_costs_render_id"), "task_costs", ["render_id"])
    op.create_index("ix_task_costs_workspace_finished", "task_costs", ["workspace_id", "finished_at"])


def downgrade() -> None:
    op.drop_table("task_costs")
