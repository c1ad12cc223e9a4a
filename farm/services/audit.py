"""The audit log: what operators did, who did it and when (the table ``audit_log``).

Every operator's control that takes effect records one entry: ``reelfarm admin set-plan`` (and
``share``, ``set-allowance``), ``reelfarm node disable``/``enable``/``clear``, ``reelfarm farm
pause``/``resume`` and the render controls (``reelfarm farm render suspend``/``resume``/
``requeue``/``priority``), and the pools a workspace's renders are limited to (``reelfarm farm pool
set``/``clear``). ``reelfarm admin audit`` lists them, newest first.

- **Who** (``actor``): the operator's name as given (``--operator``, or ``REELFARM_OPERATOR``),
  else ``user@host`` of the shell that ran the command; through the operator API, ``key:<name>``
  of the operator key.
- **A refused control records nothing**: a render, node or workspace that does not exist, or a
  render that is not in a state the control applies to, changes nothing, and the command says
  so and exits non-zero. The audit log is what happened to the farm, not what was asked.
- **A control that took effect is never left out.** Where the control is a change in the
  database (a plan, credits, a share, a render's priority), its entry is written in the same
  transaction. Where it is a change in Redis (a pause, a node disabled, a render's chunks held
  back), the entry is written after it; if the database cannot take it then, it is kept in the
  Redis list ``reelfarm:<ns>audit:pending`` and written at the next entry or listing (each entry
  carries its own id and time, so one written twice is written once).
"""
from __future__ import annotations

import getpass
import json
import logging
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import audit_log

log = logging.getLogger("reelfarm.farm")

ACTIONS = (
    "workspace.set_plan", "workspace.share", "workspace.set_allowance",
    "workspace.set_pools",
    "node.disable", "node.enable", "node.clear",
    "farm.pause", "farm.resume",
    "render.suspend", "render.resume", "render.requeue", "render.priority",
)
TARGET_KINDS = ("workspace", "node", "farm", "render")
MAX_LIST = 1000


@dataclass(frozen=True)
class AuditEntry:
    """One control that took effect."""

    actor: str
    action: str
    target_kind: str
    target_id: str | None = None
    workspace_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    at: datetime | None = None
    id: str = field(default_factory=new_id)

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["details"] = dict(self.details)
        found["at"] = self.at.isoformat() if self.at else None
        return found


def operator_name(given: str | None = None) -> str:
    """Who runs an operator's command: ``given`` (``--operator``/``REELFARM_OPERATOR``), else user@host."""
    if given and given.strip():
        return given.strip()
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def write_entry(conn: Connection, clock: Clock, entry: AuditEntry) -> AuditEntry:
    """Write ``entry`` in the caller's transaction (with the change it records); an entry of
    this id already written is left as it is."""
    if entry.action not in ACTIONS or entry.target_kind not in TARGET_KINDS:
        raise ValueError(f"unknown audit action {entry.action!r} on {entry.target_kind!r}")
    stamped = entry if entry.at is not None else AuditEntry(**{**asdict(entry), "at": clock.now()})
    if conn.execute(select(audit_log.c.id).where(audit_log.c.id == stamped.id)).first() is None:
        conn.execute(audit_log.insert().values(
            id=stamped.id, at=stamped.at, actor=stamped.actor[:200], action=stamped.action,
            target_kind=stamped.target_kind, target_id=stamped.target_id, workspace_id=stamped.workspace_id,
            details=dict(stamped.details)))
    return stamped


class AuditLog:
    """Entries written and read (module docstring); ``redis`` keeps those the database could not take."""

    def __init__(self, engine: Engine, clock: Clock, redis: Any = None, namespace: str = "") -> None:
        self.engine, self.clock, self.redis = engine, clock, redis
        self.pending_key = f"reelfarm:{namespace}audit:pending"

    def record(self, entry: AuditEntry) -> AuditEntry:
        """Write the entry of a control that took effect (in Redis); kept in Redis when the
        database cannot take it now (then re-raised where there is no Redis)."""
        stamped = entry if entry.at is not None else AuditEntry(**{**asdict(entry), "at": self.clock.now()})
        try:
            with transaction(self.engine) as conn:
                write_entry(conn, self.clock, stamped)
        except Exception as exc:
            if self.redis is None:
                raise
            self.redis.rpush(self.pending_key, json.dumps(stamped.as_dict()))
            log.warning("the audit log's database cannot be written (%s): entry %s (%s by %s) is kept in Redis "
                        "until it can", type(exc).__name__, stamped.id, stamped.action, stamped.actor)
            return stamped
        self.flush()
        return stamped

    def flush(self) -> int:
        """Write the entries kept in Redis (oldest first); returns how many. Best effort."""
        if self.redis is None:
            return 0
        written = 0
        try:
            while (raw := self.redis.lindex(self.pending_key, 0)) is not None:
                found = json.loads(raw)
                found["at"] = datetime.fromisoformat(found["at"])
                with transaction(self.engine) as conn:
                    write_entry(conn, self.clock, AuditEntry(**found))
                self.redis.lrem(self.pending_key, 1, raw)
                written += 1
        except Exception as exc:  # noqa: BLE001 - kept for the next try
            log.warning("audit entries kept in Redis cannot be written yet (%s)", type(exc).__name__)
        return written

    def pending(self) -> int:
        """Entries still kept in Redis, not yet in the database."""
        return int(self.redis.llen(self.pending_key)) if self.redis is not None else 0

    def entries(self, limit: int = 50, *, action: str | None = None, target_kind: str | None = None,
                target_id: str | None = None, workspace_id: str | None = None,
                actor: str | None = None) -> list[AuditEntry]:
        """Entries newest first, at most ``limit``, of one action (or actions beginning ``x.``
        when ``action`` ends with a dot), target, workspace or actor where given."""
        self.flush()
        query = select(audit_log).order_by(audit_log.c.at.desc(), audit_log.c.id.desc())
        if action:
            query = query.where(audit_log.c.action.startswith(action) if action.endswith(".")
                                else audit_log.c.action == action)
        for column, value in ((audit_log.c.target_kind, target_kind), (audit_log.c.target_id, target_id),
                              (audit_log.c.workspace_id, workspace_id), (audit_log.c.actor, actor)):
            if value:
                query = query.where(column == value)
        with self.engine.connect() as conn:
            rows = conn.execute(query.limit(max(1, min(limit, MAX_LIST)))).all()
        return [AuditEntry(actor=r.actor, action=r.action, target_kind=r.target_kind, target_id=r.target_id,
                           workspace_id=r.workspace_id, details=r.details or {}, at=r.at, id=r.id) for r in rows]
