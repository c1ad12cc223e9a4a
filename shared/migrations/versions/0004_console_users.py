"""Console users: the people of a workspace who sign in to the web console at /app.

Revision ID: 0004
Revises: 0003

- ``users``: email (unique, lower case), workspace, role (``owner`` or ``member``), the operator
  flag for the farm pages, an argon2 password hash (null until the first sign-in link is used),
  and at most one outstanding one-time sign-in link, stored as the SHA-256 of its token with
  its expiry.

Self-contained on purpose, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("is_operator", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("link_hash", sa.String(64), nullable=True),
        _ts("link_expires_at", True),
        _ts("created_at"), _ts("updated_at"), _ts("password_changed_at", True), _ts("last_sign_in_at", True),
        sa.CheckConstraint("role IN ('owner', 'member')", name="ck_users_role"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], name="fk_users_workspace_id_workspaces",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("email", name="uq_users_email"),
        sa.UniqueConstraint("link_hash", name="uq_users_link_hash"),
    )
    op.create_index("ix_users_workspace_id", "users", ["workspace_id"])


def downgrade() -> None:
    op.drop_index("ix_users_workspace_id", table_name="users")
    op.drop_table("users")
