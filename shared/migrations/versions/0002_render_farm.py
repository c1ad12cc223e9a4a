"""Render farm: the embedded task queue, render progress, render plans and dedup, ledger per render.

Revision ID: 0002
Revises: 0001

- ``queued_tasks``: the embedded executor's durable queue (``farm/runtime/embedded.py``).
- ``render_progress``: frames done per render in the embedded mode (``farm/progress.py``).
- ``renders``: ``frames``, ``chunks`` (the render's plan) and ``progressed_at`` (when a chunk last
  moved it forward; bounds how long a render can sit queued or running), and a partial unique
  index: one queued, running or succeeded render per (video, dedup hash), so identical requests
  coalesce even when they arrive together.
- ``credit_ledger``: the unique index on (workspace, version) render charges is replaced by one
  on (render, reason) for charges and refunds. The old index made a version un-chargeable after
  its paid render failed and was refunded; "once per version" is now kept under the workspace
  row lock (``shared/repos/renders.py``), and the new index stops a render being charged or
  refunded twice.

Self-contained on purpose, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = "status IN ('queued', 'running', 'succeeded')"
LEDGER_RENDER = "reason IN ('render_charge', 'render_refund')"
TASK_STATUSES = "'deferred', 'queued', 'running', 'succeeded', 'failed', 'canceled'"


def _json() -> Any:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _ts(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _partial(where: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(where), "postgresql_where": sa.text(where)}


def upgrade() -> None:
    op.add_column("renders", sa.Column("frames", sa.Integer(), nullable=True))
    op.add_column("renders", sa.Column("chunks", sa.Integer(), nullable=True))
    op.add_column("renders", _ts("progressed_at", True))
    op.create_index("uq_renders_active_dedup", "renders", ["video_id", "dedup_hash"], unique=True,
                    **_partial(ACTIVE))

    op.drop_index("uq_credit_ledger_render_charge", table_name="credit_ledger")
    op.create_index("uq_credit_ledger_render_entry", "credit_ledger", ["render_id", "reason"], unique=True,
                    **_partial(LEDGER_RENDER))

    op.create_table(
        "queued_tasks",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("func", sa.String(200), nullable=False),
        sa.Column("args", _json(), nullable=False),
        sa.Column("queue", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("depends_on", _json(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("max_attempts", sa.Integer(), server_default="1", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        _ts("run_after"), _ts("lease_until", True), _ts("created_at"), _ts("updated_at"), _ts("finished_at", True),
        sa.CheckConstraint(f"status IN ({TASK_STATUSES})", name="ck_queued_tasks_status"),
        sa.PrimaryKeyConstraint("id", name="pk_queued_tasks"),
    )
    op.create_index("ix_queued_tasks_status_run_after", "queued_tasks", ["status", "run_after"])

    op.create_table(
        "render_progress",
        sa.Column("render_id", sa.String(36), nullable=False),
        sa.Column("frames", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=True),
        _ts("updated_at"),
        sa.PrimaryKeyConstraint("render_id", name="pk_render_progress"),
    )


def downgrade() -> None:
    """Back to 0001. Fails if a version has been charged twice (after a refund): 0001 cannot hold that."""
    op.drop_table("render_progress")
    op.drop_index("ix_queued_tasks_status_run_after", table_name="queued_tasks")
    op.drop_table("queued_tasks")
    op.drop_index("uq_credit_ledger_render_entry", table_name="credit_ledger")
    op.create_index("uq_credit_ledger_render_charge", "credit_ledger", ["workspace_id", "version_id", "reason"],
                    unique=True, **_partial("reason = 'render_charge'"))
    op.drop_index("uq_renders_active_dedup", table_name="renders")
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("progressed_at")
        batch.drop_column("chunks")
        batch.drop_column("frames")
