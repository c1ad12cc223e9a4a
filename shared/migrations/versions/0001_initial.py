"""Initial schema: workspaces, keys, brand kits, videos and versions, jobs, renders, credits,
idempotency, webhooks, event outbox, comments.

Revision ID: 0001
Revises:

Self-contained on purpose: it must keep producing this schema after ``shared/tables.py`` moves
on. Names follow ``reelfarm.shared.tables.NAMING_CONVENTION``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "workspaces", "api_keys", "brand_kits", "videos", "versions", "jobs", "renders",
    "credit_ledger", "idempotency_records", "webhook_endpoints", "event_outbox",
    "webhook_deliveries", "comments",
)
JOB_STATUSES = "'queued', 'running', 'succeeded', 'failed', 'canceled'"


def _json() -> Any:
    return sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


def _ts(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _id(name: str = "id", length: int = 36) -> sa.Column[Any]:
    return sa.Column(name, sa.String(length), nullable=False)


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*(columns or ("id",)), name=f"pk_{table}")


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}",
                                   ondelete=ondelete)


def _workspace(table: str) -> list[Any]:
    return [_id("workspace_id"), _fk(table, "workspace_id", "workspaces", "CASCADE")]


def _check(table: str, name: str, sql: str) -> sa.CheckConstraint:
    return sa.CheckConstraint(sql, name=f"ck_{table}_{name}")


def _index(table: str, *columns: str, name: str | None = None, unique: bool = False, where: str | None = None) -> None:
    partial: dict[str, Any] = {"sqlite_where": sa.text(where), "postgresql_where": sa.text(where)} if where else {}
    op.create_index(name or f"ix_{table}_{columns[0]}", table, list(columns), unique=unique, **partial)


def upgrade() -> None:
    op.create_table(
        "workspaces",
        _id(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("plan", sa.String(20), nullable=False),
        sa.Column("credits", sa.Integer(), server_default="0", nullable=False),
        _ts("created_at"), _ts("updated_at"),
        _check("workspaces", "plan", "plan IN ('starter', 'pro', 'crypto_pro', 'agency')"),
        _check("workspaces", "credits_not_negative", "credits >= 0"),
        _pk("workspaces"),
    )
    op.create_table(
        "api_keys",
        _id(), *_workspace("api_keys"),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("prefix", sa.String(20), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        _ts("created_at"), _ts("expires_at", True), _ts("revoked_at", True), _ts("last_used_at", True),
        _pk("api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    _index("api_keys", "workspace_id")

    op.create_table(
        "brand_kits",
        _id(), *_workspace("brand_kits"),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("source_url", sa.Text(), nullable=True),
        sa.Column("is_default", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("tokens", _json(), nullable=False),
        _ts("created_at"), _ts("updated_at"),
        _pk("brand_kits"),
    )
    _index("brand_kits", "workspace_id")
    _index("brand_kits", "workspace_id", name="uq_brand_kits_one_default", unique=True, where="is_default")

    op.create_table(
        "videos",
        _id(), *_workspace("videos"),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("story_id", sa.String(100), nullable=True),
        sa.Column("brand_kit_id", sa.String(36), nullable=True),
        sa.Column("default_format", sa.String(8), nullable=False),
        sa.Column("duration_sec", sa.Float(), nullable=True),
        sa.Column("current_version_id", sa.String(36), nullable=True),
        sa.Column("fields", _json(), nullable=True),
        sa.Column("locale", sa.String(35), nullable=True),
        sa.Column("source_video_id", sa.String(36), nullable=True),
        _ts("created_at"), _ts("updated_at"),
        _check("videos", "status", "status IN ('draft', 'generating', 'ready', 'failed', 'archived')"),
        _fk("videos", "brand_kit_id", "brand_kits", "SET NULL"),
        _fk("videos", "source_video_id", "videos", "SET NULL"),
        _pk("videos"),
    )
    _index("videos", "workspace_id")
    _index("videos", "workspace_id", "created_at", "id", name="ix_videos_workspace_created")

    op.create_table(
        "versions",
        _id(), _id("video_id"),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("doc", _json(), nullable=False),
        sa.Column("doc_hash", sa.String(64), nullable=False),
        sa.Column("fields", _json(), nullable=True),
        sa.Column("lint", _json(), nullable=False),
        _ts("created_at"),
        _check("versions", "source", "source IN ('story', 'generate', 'doc', 'fields', 'translate', 'restore')"),
        _check("versions", "number_positive", "number >= 1"),
        _fk("versions", "video_id", "videos", "CASCADE"),
        _pk("versions"),
        sa.UniqueConstraint("video_id", "number", name="uq_versions_video_id_number"),
    )

    op.create_table(
        "jobs",
        _id(), *_workspace("jobs"),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("stage", sa.String(40), nullable=True),
        sa.Column("progress", sa.Float(), server_default="0", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("result", _json(), nullable=True),
        sa.Column("params", _json(), nullable=False),
        sa.Column("video_id", sa.String(36), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        _ts("created_at"), _ts("started_at", True), _ts("finished_at", True),
        _check("jobs", "status", f"status IN ({JOB_STATUSES})"),
        _fk("jobs", "video_id", "videos", "SET NULL"),
        _pk("jobs"),
    )
    _index("jobs", "workspace_id")
    _index("jobs", "video_id")

    op.create_table(
        "renders",
        _id(), *_workspace("renders"), _id("video_id"), _id("version_id"),
        sa.Column("format", sa.String(8), nullable=False),
        sa.Column("resolution", sa.Integer(), nullable=False),
        sa.Column("fps", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("progress", sa.Float(), server_default="0", nullable=False),
        sa.Column("url_key", sa.Text(), nullable=True),
        sa.Column("poster_key", sa.Text(), nullable=True),
        sa.Column("duration_sec", sa.Float(), nullable=True),
        sa.Column("bytes", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("dedup_hash", sa.String(64), nullable=False),
        sa.Column("charged_credits", sa.Integer(), server_default="0", nullable=False),
        _ts("created_at"), _ts("started_at", True), _ts("finished_at", True),
        _check("renders", "status", f"status IN ({JOB_STATUSES})"),
        _fk("renders", "video_id", "videos", "CASCADE"),
        _fk("renders", "version_id", "versions", "CASCADE"),
        _pk("renders"),
    )
    _index("renders", "workspace_id")
    _index("renders", "video_id")
    _index("renders", "dedup_hash")

    op.create_table(
        "credit_ledger",
        _id(), *_workspace("credit_ledger"),
        sa.Column("delta", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(40), nullable=False),
        sa.Column("render_id", sa.String(36), nullable=True),
        sa.Column("version_id", sa.String(36), nullable=True),
        _ts("created_at"),
        _pk("credit_ledger"),
    )
    _index("credit_ledger", "workspace_id")
    _index("credit_ledger", "workspace_id", "version_id", "reason", name="uq_credit_ledger_render_charge",
           unique=True, where="reason = 'render_charge'")

    op.create_table(
        "idempotency_records",
        *_workspace("idempotency_records"),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("body_hash", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.LargeBinary(), nullable=True),
        sa.Column("response_headers", _json(), nullable=True),
        _ts("locked_until", True), _ts("created_at"), _ts("completed_at", True),
        _pk("idempotency_records", "workspace_id", "key"),
    )
    _index("idempotency_records", "created_at")

    op.create_table(
        "webhook_endpoints",
        _id(), *_workspace("webhook_endpoints"),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("events", _json(), nullable=False),
        sa.Column("secret", sa.String(100), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        _ts("created_at"), _ts("updated_at"),
        _pk("webhook_endpoints"),
    )
    _index("webhook_endpoints", "workspace_id")

    op.create_table(
        "event_outbox",
        _id(length=40), *_workspace("event_outbox"),
        sa.Column("type", sa.String(60), nullable=False),
        sa.Column("payload", _json(), nullable=False),
        _ts("created_at"), _ts("dispatched_at", True),
        _pk("event_outbox"),
    )
    _index("event_outbox", "workspace_id")
    _index("event_outbox", "created_at", name="ix_event_outbox_pending", where="dispatched_at IS NULL")

    op.create_table(
        "webhook_deliveries",
        _id(), _id("endpoint_id"), _id("event_id", length=40),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("next_attempt_at", True),
        sa.Column("state", sa.String(20), nullable=False),
        _ts("created_at"),
        _check("webhook_deliveries", "state", "state IN ('pending', 'succeeded', 'failed', 'gave_up')"),
        _fk("webhook_deliveries", "endpoint_id", "webhook_endpoints", "CASCADE"),
        _fk("webhook_deliveries", "event_id", "event_outbox", "CASCADE"),
        _pk("webhook_deliveries"),
    )
    _index("webhook_deliveries", "event_id")
    _index("webhook_deliveries", "endpoint_id", "created_at", name="ix_webhook_deliveries_endpoint_created")
    _index("webhook_deliveries", "next_attempt_at", name="ix_webhook_deliveries_due", where="state = 'pending'")

    op.create_table(
        "comments",
        _id(), *_workspace("comments"), _id("video_id"),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("time_sec", sa.Float(), nullable=True),
        sa.Column("author", sa.String(200), nullable=True),
        _ts("created_at"), _ts("deleted_at", True),
        _fk("comments", "video_id", "videos", "CASCADE"),
        _pk("comments"),
    )
    _index("comments", "workspace_id")
    _index("comments", "video_id", "created_at", name="ix_comments_video_created")


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
