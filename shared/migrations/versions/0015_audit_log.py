"""What operators did.

Revision ID: 0015
Revises: 0014

- ``audit_log``: one row for each operator's control that took effect (a plan set, a node
  disabled, drained or enabled, the farm paused or resumed, a render suspended, resumed,
  requeued or given another priority): when, who (``actor``), the control (``action``), what it
  was applied to (``target_kind``, ``target_id``), the workspace concerned, and details.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("target_kind", sa.String(20), nullable=False),
        sa.Column("target_id", sa.String(200), nullable=True),
        sa.Column("workspace_id", sa.String(36), nullable=True),
        sa.Column("details", sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql"),
                  nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index(op.f("ix_audit_log_workspace_id"), "audit_log", ["workspace_id"])
    op.create_index("ix_audit_log_at", "audit_log", ["at", "id"])
    op.create_index("ix_audit_log_target", "audit_log", ["target_kind", "target_id"])
    op.create_index("ix_audit_log_action", "audit_log", ["action"])


def downgrade() -> None:
    op.drop_table("audit_log")
