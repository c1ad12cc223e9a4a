"""Retention: indexes for the purge's range scans.

Revision ID: 0003
Revises: 0002

``farm/runtime/retention.py`` deletes webhook delivery attempts by age and outbox events by when they
were dispatched; without these indexes each of its batches would scan the whole table.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_webhook_deliveries_created", "webhook_deliveries", ["created_at"])
    op.create_index("ix_event_outbox_dispatched", "event_outbox", ["dispatched_at"])


def downgrade() -> None:
    op.drop_index("ix_event_outbox_dispatched", table_name="event_outbox")
    op.drop_index("ix_webhook_deliveries_created", table_name="webhook_deliveries")
