"""Fair dispatch: a render's priority, who a queued chunk belongs to, operators' shares, the ledger.

Revision ID: 0007
Revises: 0006

- ``renders.priority``: ``normal`` or ``low`` (batch work that yields to the workspace's normal renders).
- ``queued_tasks.workspace_id``, ``render_id``, ``priority``, ``cost``, ``chunk_index``: what fair
  dispatch (``reelfarm.farm.services.fairness``) needs of a waiting chunk in the embedded queue;
  NULL for every other task (stitches, jobs, deliveries), which go first in arrival order.
- ``workspaces.dispatch_weight``, ``dispatch_cap``: the operator's overrides of the plan's share
  (NULL: the plan's, ``reelfarm.shared.plans``).
- ``fair_ledger``: the policy's virtual service per workspace (``w:<id>``) and render (``r:<id>``),
  kept between dispatch rounds by the embedded queue.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("renders") as batch:
        batch.add_column(sa.Column("priority", sa.String(8), nullable=False, server_default="normal"))
    with op.batch_alter_table("queued_tasks") as batch:
        batch.add_column(sa.Column("workspace_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("render_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("priority", sa.String(8), nullable=True))
        batch.add_column(sa.Column("cost", sa.Integer, nullable=True))
        batch.add_column(sa.Column("chunk_index", sa.Integer, nullable=True))
    op.create_index("ix_queued_tasks_status_workspace", "queued_tasks", ["status", "workspace_id"])
    with op.batch_alter_table("workspaces") as batch:
        batch.add_column(sa.Column("dispatch_weight", sa.Float, nullable=True))
        batch.add_column(sa.Column("dispatch_cap", sa.Integer, nullable=True))
    op.create_table(
        "fair_ledger",
        sa.Column("scope", sa.String(80), primary_key=True),
        sa.Column("served", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("fair_ledger")
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("dispatch_cap")
        batch.drop_column("dispatch_weight")
    op.drop_index("ix_queued_tasks_status_workspace", table_name="queued_tasks")
    with op.batch_alter_table("queued_tasks") as batch:
        for name in ("chunk_index", "cost", "priority", "render_id", "workspace_id"):
            batch.drop_column(name)
    with op.batch_alter_table("renders") as batch:
        batch.drop_column("priority")
