"""The database schema as SQLAlchemy Core tables (no ORM); Alembic migrations must match it.

Conventions: ids are UUID strings (events: ``evt_<uuid>``); timestamps are timezone-aware UTC
on every backend (``UTCDateTime``); JSON is JSONB on PostgreSQL; every workspace-owned table
is indexed on ``workspace_id``. Constraint names come from ``NAMING_CONVENTION`` so that
migrations (including SQLite batch mode) can refer to them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine

from reelfarm.shared import plans
from reelfarm.shared.statuses import (
    ACTIVE_RENDER_STATUSES,
    DELIVERY_STATES,
    DRAFT_STATUSES,
    JOB_STATUSES,
    RENDER_STATUSES,
    TASK_STATUSES,
    VIDEO_STATUSES,
)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

PLANS = plans.NAMES
VERSION_SOURCES = ("story", "generate", "doc", "fields", "translate", "restore")
RENDER_CHARGE = "render_charge"
RENDER_REFUND = "render_refund"

metadata = MetaData(naming_convention=NAMING_CONVENTION)
_ACTIVE = f"status IN ({', '.join(repr(status) for status in ACTIVE_RENDER_STATUSES)})"


class UTCDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that only takes aware datetimes and always returns aware UTC.

    PostgreSQL stores ``timestamptz``. SQLite has no time zones, so values are stored as naive
    UTC and marked UTC again when read.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: the database stores aware UTC datetimes only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def json_type() -> TypeEngine[Any]:
    """JSON on every backend, JSONB on PostgreSQL; Python None is SQL NULL, not JSON null."""
    return JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


def _id(name: str = "id") -> Column[str]:
    return Column(name, String(36), primary_key=True)


def _workspace_fk() -> Column[str]:
    return Column("workspace_id", String(36), ForeignKey("workspaces.id", ondelete="CASCADE"),
                  nullable=False, index=True)


def _ts(name: str, nullable: bool = False) -> Column[datetime]:
    return Column(name, UTCDateTime(), nullable=nullable)


def _one_of(column: str, values: tuple[str, ...], name: str | None = None) -> CheckConstraint:
    allowed = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({allowed})", name=name or column)


workspaces = Table(
    "workspaces", metadata,
    _id(),
    Column("name", String(200), nullable=False),
    Column("plan", String(20), nullable=False),
    Column("credits", Integer, nullable=False, server_default="0"),
    # 0018: CPU seconds of the farm its renders may use a calendar month (NULL: no allowance)
    Column("cpu_allowance_sec", Float, nullable=True),
    _ts("created_at"), _ts("updated_at"),
    # 0007: the operator's overrides of the plan's share of the farm (NULL: the plan's)
    Column("dispatch_weight", Float, nullable=True),
    Column("dispatch_cap", Integer, nullable=True),
    # 0020: the pools of nodes its renders are limited to, its default first (NULL: any node;
    # reelfarm.farm.services.pools)
    Column("pools", json_type(), nullable=True),
    _one_of("plan", PLANS),
    CheckConstraint("credits >= 0", name="credits_not_negative"),
)

api_keys = Table(
    "api_keys", metadata,
    _id(),
    _workspace_fk(),
    Column("name", String(200), nullable=False),
    Column("prefix", String(20), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    _ts("created_at"), _ts("expires_at", True), _ts("revoked_at", True), _ts("last_used_at", True),
)

brand_kits = Table(
    "brand_kits", metadata,
    _id(),
    _workspace_fk(),
    Column("name", String(200), nullable=False),
    Column("source_url", Text, nullable=True),
    Column("is_default", Boolean, nullable=False, server_default=false()),
    Column("tokens", json_type(), nullable=False),
    _ts("created_at"), _ts("updated_at"),
    Index("uq_brand_kits_one_default", "workspace_id", unique=True,
          sqlite_where=text("is_default"), postgresql_where=text("is_default")),
)

videos = Table(
    "videos", metadata,
    _id(),
    _workspace_fk(),
    Column("title", String(500), nullable=False),
    Column("status", String(20), nullable=False),
    Column("story_id", String(100), nullable=True),
    Column("brand_kit_id", String(36), ForeignKey("brand_kits.id", ondelete="SET NULL"), nullable=True),
    Column("default_format", String(8), nullable=False),
    Column("duration_sec", Float, nullable=True),
    # No foreign key: videos and versions would reference each other; repos keep it right.
    Column("current_version_id", String(36), nullable=True),
    Column("fields", json_type(), nullable=True),
    Column("locale", String(35), nullable=True),
    Column("source_video_id", String(36), ForeignKey("videos.id", ondelete="SET NULL"), nullable=True),
    _ts("created_at"), _ts("updated_at"),
    _one_of("status", VIDEO_STATUSES),
    Index("ix_videos_workspace_created", "workspace_id", "created_at", "id"),
)

versions = Table(
    "versions", metadata,
    _id(),
    Column("video_id", String(36), ForeignKey("videos.id", ondelete="CASCADE"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("source", String(20), nullable=False),
    Column("note", Text, nullable=True),
    Column("doc", json_type(), nullable=False),
    Column("doc_hash", String(64), nullable=False),
    Column("fields", json_type(), nullable=True),
    Column("lint", json_type(), nullable=False),
    _ts("created_at"),
    _one_of("source", VERSION_SOURCES),
    CheckConstraint("number >= 1", name="number_positive"),
    UniqueConstraint("video_id", "number"),
)

jobs = Table(
    "jobs", metadata,
    _id(),
    _workspace_fk(),
    Column("kind", String(40), nullable=False),
    Column("status", String(20), nullable=False),
    Column("stage", String(40), nullable=True),
    Column("progress", Float, nullable=False, server_default="0"),
    Column("error", Text, nullable=True),
    Column("result", json_type(), nullable=True),
    Column("params", json_type(), nullable=False),
    Column("video_id", String(36), ForeignKey("videos.id", ondelete="SET NULL"), nullable=True, index=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    _ts("created_at"), _ts("started_at", True), _ts("finished_at", True),
    _one_of("status", JOB_STATUSES),
)

renders = Table(
    "renders", metadata,
    _id(),
    _workspace_fk(),
    Column("video_id", String(36), ForeignKey("videos.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("version_id", String(36), ForeignKey("versions.id", ondelete="CASCADE"), nullable=False),
    Column("format", String(8), nullable=False),
    Column("resolution", Integer, nullable=False),
    Column("fps", Integer, nullable=False),
    Column("status", String(20), nullable=False),
    Column("progress", Float, nullable=False, server_default="0"),
    Column("url_key", Text, nullable=True),
    Column("poster_key", Text, nullable=True),
    Column("duration_sec", Float, nullable=True),
    Column("bytes", BigInteger, nullable=True),
    Column("error", Text, nullable=True),
    Column("dedup_hash", String(64), nullable=False, index=True),
    Column("charged_credits", Integer, nullable=False, server_default="0"),
    _ts("created_at"), _ts("started_at", True), _ts("finished_at", True),
    # 0002: the render's plan (total frames, chunk jobs) and when a chunk last moved it forward,
    # which bounds how long a render may stay queued or running (farm/runtime/reaper.py).
    Column("frames", Integer, nullable=True),
    Column("chunks", Integer, nullable=True),
    _ts("progressed_at", True),
    # 0005: what made it: the encoder family of all its segments and the first chunk's rasterizer.
    Column("encoder", String(16), nullable=True),
    Column("raster", String(16), nullable=True),
    Column("reused_frames", Integer, nullable=False, server_default="0"),
    # 0006: the chunk plan, the first frame of each chunk (NULL: planned before it was stored)
    Column("chunk_starts", json_type(), nullable=True),
    # 0007: normal, or low (batch work that yields to the workspace's normal renders)
    Column("priority", String(8), nullable=False, server_default="normal"),
    # 0020: the pool of nodes its chunks run in ("": any node; reelfarm.farm.services.pools)
    Column("pool", String(200), nullable=False, server_default=text("''")),
    # 0008: when the first chunk's part of its HLS stream was stored (NULL: no stream yet, or made before streams)
    _ts("stream_at", True),
    # 0010: the X-Request-Id of the request that asked for it, bound to its tasks' log lines
    Column("request_id", String(128), nullable=True),
    # 0017: the kind of file (mp4, gif, webm), a WebM's alpha, and the request's values lowered to the
    # container's limits (reelfarm.renderer.spec.clamp_for_container)
    Column("container", String(8), nullable=False, server_default="mp4"),
    Column("transparent", Boolean, nullable=False, server_default=false()),
    Column("clamped", json_type(), nullable=True),
    Column("captions_key", Text, nullable=True),
    # 0021: its estimate when it was made under a compute allowance (reelfarm.farm.services.allowance)
    Column("estimate_cpu_sec", Float, nullable=True),
    _one_of("status", RENDER_STATUSES),
    # Identical requests coalesce: one live or finished render per (video, dedup hash).
    Index("uq_renders_active_dedup", "video_id", "dedup_hash", unique=True,
          sqlite_where=text(_ACTIVE), postgresql_where=text(_ACTIVE)),
)

# 0009: animated previews of unsaved values (farm/services/drafts.py): a workspace's few drafts,
# drawn at a low size as a stream and deleted minutes later; never renders, never charged

drafts = Table(
    "drafts", metadata,
    _id(),
    _workspace_fk(),
    Column("status", String(20), nullable=False),
    Column("format", String(8), nullable=False),
    Column("resolution", Integer, nullable=False),
    Column("fps", Integer, nullable=False),
    Column("frames", Integer, nullable=False),
    Column("chunk_starts", json_type(), nullable=False),
    Column("doc", json_type(), nullable=False),
    Column("stored", Integer, nullable=False, server_default="0"),  # chunks whose segments are stored
    Column("bytes", BigInteger, nullable=False, server_default="0"),  # what those segments take
    Column("error", Text, nullable=True),
    _ts("created_at"), _ts("expires_at"),
    _one_of("status", DRAFT_STATUSES),
    Index("ix_drafts_expires_at", "expires_at"),
)

# 0005: segments a workspace keeps for reuse by later renders (farm/services/segments.py).
segments = Table(
    "segments", metadata,
    _workspace_fk(),
    Column("fingerprint", String(64), nullable=False),
    Column("key", Text, nullable=False),
    _ts("created_at"), _ts("used_at"),
    PrimaryKeyConstraint("workspace_id", "fingerprint"),
    Index("ix_segments_used_at", "used_at"),
)

credit_ledger = Table(
    "credit_ledger", metadata,
    _id(),
    _workspace_fk(),
    Column("delta", Integer, nullable=False),
    Column("reason", String(40), nullable=False),
    Column("render_id", String(36), nullable=True),
    Column("version_id", String(36), nullable=True),
    _ts("created_at"),
    # 0002: one charge and at most one refund per render. (0001 allowed one charge per version
    # ever, which made a version whose paid render failed and was refunded impossible to charge
    # again; "charged once per version" is now kept by the workspace row lock, see
    # shared/repos/renders.py.)
    Index("uq_credit_ledger_render_entry", "render_id", "reason", unique=True,
          sqlite_where=text(f"reason IN ('{RENDER_CHARGE}', '{RENDER_REFUND}')"),
          postgresql_where=text(f"reason IN ('{RENDER_CHARGE}', '{RENDER_REFUND}')")),
)

idempotency_records = Table(
    "idempotency_records", metadata,
    Column("workspace_id", String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
    Column("key", String(255), nullable=False),
    Column("method", String(10), nullable=False),
    Column("path", Text, nullable=False),
    Column("body_hash", String(64), nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("response_body", LargeBinary, nullable=True),  # bytes, replayed exactly
    Column("response_headers", json_type(), nullable=True),
    _ts("locked_until", True), _ts("created_at"), _ts("completed_at", True),
    PrimaryKeyConstraint("workspace_id", "key"),
    Index("ix_idempotency_records_created_at", "created_at"),  # expiry sweeps
)

webhook_endpoints = Table(
    "webhook_endpoints", metadata,
    _id(),
    _workspace_fk(),
    Column("url", Text, nullable=False),
    Column("description", Text, nullable=True),
    Column("events", json_type(), nullable=False),
    Column("secret", String(100), nullable=False),
    Column("enabled", Boolean, nullable=False, server_default=true()),
    Column("disabled_reason", Text, nullable=True),
    _ts("created_at"), _ts("updated_at"),
)

event_outbox = Table(
    "event_outbox", metadata,
    Column("id", String(40), primary_key=True),
    _workspace_fk(),
    Column("type", String(60), nullable=False),
    Column("payload", json_type(), nullable=False),
    _ts("created_at"), _ts("dispatched_at", True),
    Index("ix_event_outbox_pending", "created_at",
          sqlite_where=text("dispatched_at IS NULL"), postgresql_where=text("dispatched_at IS NULL")),
    Index("ix_event_outbox_dispatched", "dispatched_at"),  # retention sweeps
)

webhook_deliveries = Table(
    "webhook_deliveries", metadata,
    _id(),
    Column("endpoint_id", String(36), ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", String(40), ForeignKey("event_outbox.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("attempt", Integer, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("latency_ms", Integer, nullable=True),
    Column("error", Text, nullable=True),
    _ts("next_attempt_at", True),
    Column("state", String(20), nullable=False),
    _ts("created_at"),
    _one_of("state", DELIVERY_STATES),
    Index("ix_webhook_deliveries_endpoint_created", "endpoint_id", "created_at"),
    Index("ix_webhook_deliveries_created", "created_at"),  # retention sweeps
    Index("ix_webhook_deliveries_due", "next_attempt_at",
          sqlite_where=text("state = 'pending'"), postgresql_where=text("state = 'pending'")),
)

comments = Table(
    "comments", metadata,
    _id(),
    _workspace_fk(),
    Column("video_id", String(36), ForeignKey("videos.id", ondelete="CASCADE"), nullable=False),
    Column("body", Text, nullable=False),
    Column("time_sec", Float, nullable=True),
    Column("author", String(200), nullable=True),
    _ts("created_at"), _ts("deleted_at", True),
    Index("ix_comments_video_created", "video_id", "created_at"),
)

# 0002: the embedded executor's queue (farm/runtime/embedded.py). Rows outlive the process that wrote
# them, so queued work survives a restart of `reelfarm serve`.
queued_tasks = Table(
    "queued_tasks", metadata,
    Column("id", String(200), primary_key=True),
    Column("func", String(200), nullable=False),
    Column("args", json_type(), nullable=False),
    Column("queue", String(40), nullable=False),
    Column("status", String(20), nullable=False),
    Column("depends_on", json_type(), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("max_attempts", Integer, nullable=False, server_default="1"),
    Column("error", Text, nullable=True),
    Column("claimed_by", String(200), nullable=True),
    _ts("run_after"), _ts("lease_until", True), _ts("created_at"), _ts("updated_at"), _ts("finished_at", True),
    # 0007: a render chunk's place in fair dispatch (NULL for other tasks, which go first)
    Column("workspace_id", String(36), nullable=True),
    Column("render_id", String(36), nullable=True),
    Column("priority", String(8), nullable=True),
    Column("cost", Integer, nullable=True),
    Column("chunk_index", Integer, nullable=True),
    _one_of("status", TASK_STATUSES),
    Index("ix_queued_tasks_status_run_after", "status", "run_after"),
    Index("ix_queued_tasks_status_workspace", "status", "workspace_id"),
)

# 0007: fair dispatch's virtual service per workspace ("w:<id>") and render ("r:<id>"), kept by the
# embedded queue between rounds (farm.services.fairness.Ledger)
fair_ledger = Table(
    "fair_ledger", metadata,
    Column("scope", String(80), primary_key=True),
    Column("served", Float, nullable=False),
)

# 0002: frames rendered per render, for the embedded mode's progress (farm/progress.py); no
# foreign key, a counter may outlive a render row that a compensating transaction removed.
render_progress = Table(
    "render_progress", metadata,
    Column("render_id", String(36), primary_key=True),
    Column("frames", BigInteger, nullable=False, server_default="0"),
    Column("total", BigInteger, nullable=True),
    _ts("updated_at"),
)

# 0004: the people of a workspace who sign in to the console (console/). Passwords are argon2
# hashes; a one-time sign-in link is stored as the SHA-256 of its token, one outstanding per user.
USER_ROLES = ("owner", "member")

users = Table(
    "users", metadata,
    _id(),
    _workspace_fk(),
    Column("email", String(320), nullable=False, unique=True),
    Column("role", String(20), nullable=False),
    Column("is_operator", Boolean, nullable=False, server_default=false()),
    Column("password_hash", Text, nullable=True),
    Column("link_hash", String(64), nullable=True, unique=True),
    _ts("link_expires_at", True),
    _ts("created_at"), _ts("updated_at"), _ts("password_changed_at", True), _ts("last_sign_in_at", True),
    _one_of("role", USER_ROLES),
)

# 0011: a workspace's media library (reelfarm.farm.services.library): uploaded images and sounds,
# one row and one stored copy per distinct content (``sha256``) in a workspace.
# 0013: videos (``fps``, ``has_audio``). 0014: ``name``, the file's name as the person knows it.
ASSET_KINDS = ("image", "audio", "video", "captions")

assets = Table(
    "assets", metadata,
    _id(),
    _workspace_fk(),
    Column("kind", String(10), nullable=False),
    Column("content_type", String(100), nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("key", String(512), nullable=False, unique=True),
    Column("width", Integer, nullable=True),
    Column("height", Integer, nullable=True),
    Column("duration_sec", Float, nullable=True),
    Column("fps", Float, nullable=True),
    Column("has_audio", Boolean, nullable=True),
    Column("name", String(255), nullable=True),
    Column("thumbnail_alpha", Boolean, nullable=False, server_default=false()),
    Column("cues", json_type(), nullable=True),
    _ts("created_at"),
    _one_of("kind", ASSET_KINDS),
    UniqueConstraint("workspace_id", "sha256"),
    Index("ix_assets_workspace_created", "workspace_id", "created_at", "id"),
)

asset_uploads = Table(
    "asset_uploads", metadata,
    _id(),
    _workspace_fk(),
    Column("key", String(512), nullable=False, unique=True),
    Column("bytes", BigInteger, nullable=False),
    Column("content_type", String(100), nullable=False),
    Column("filename", String(255), nullable=True),
    Column("asset_id", String(36), nullable=True),
    _ts("expires_at"),
    _ts("created_at"),
    Index("ix_asset_uploads_expires_at", "expires_at"),
)

# 0015: what operators did (reelfarm.farm.services.audit): who (``actor``), when, which control
# (``action``) on what (``target_kind`` and ``target_id``: a workspace, node, render or the farm),
# and its details. No foreign key: a record outlives the workspace or render it names.
audit_log = Table(
    "audit_log", metadata,
    _id(),
    _ts("at"),
    Column("actor", String(200), nullable=False),
    Column("action", String(40), nullable=False),
    Column("target_kind", String(20), nullable=False),
    Column("target_id", String(200), nullable=True),
    Column("workspace_id", String(36), nullable=True, index=True),
    Column("details", json_type(), nullable=False),
    Index("ix_audit_log_at", "at", "id"),
    Index("ix_audit_log_target", "target_kind", "target_id"),
    Index("ix_audit_log_action", "action"),
)


# 0016: what each attempt of a render's task used on the node that ran it
# (reelfarm.farm.runtime.accounting): CPU seconds of its process and waited-for children, wall
# seconds, GPU seconds (null on a CPU node), the process's memory high-water mark, bytes it stored,
# frames it encoded, the node and its kind. One row an attempt, retries included; an attempt whose
# process died wrote none. No foreign key: usage outlives the render it measured.
task_costs = Table(
    "task_costs", metadata,
    _id(),
    Column("workspace_id", String(36), nullable=False, index=True),
    Column("video_id", String(36), nullable=False),
    Column("render_id", String(36), nullable=False, index=True),
    Column("task", String(20), nullable=False),
    Column("chunk", Integer, nullable=True),
    Column("outcome", String(20), nullable=False),
    Column("node", String(200), nullable=False),
    Column("node_kind", String(20), nullable=False),
    Column("cpu_sec", Float, nullable=False),
    Column("wall_sec", Float, nullable=False),
    Column("gpu_sec", Float, nullable=True),
    Column("peak_memory_bytes", BigInteger, nullable=False),
    Column("storage_bytes", BigInteger, nullable=False),
    Column("frames", Integer, nullable=False),
    _ts("started_at"),
    _ts("finished_at"),
    Index("ix_task_costs_workspace_finished", "workspace_id", "finished_at"),
)
