"""An operator's controls on renders: suspend, resume, reprioritise and requeue, one render or
every live render of a workspace; each one that takes effect is in the audit log
(``reelfarm.farm.services.audit``).

- **Suspend**: the render's chunks that wait for their turn are held back, not dispatched until
  it is resumed; chunks already handed to a node or running finish (a chunk is a few seconds of
  video). Its ``held_up`` says ``suspended`` meanwhile, and the stall bound
  (``reelfarm.farm.runtime.reaper``) does not fail it while the audit log's last word on it is a
  suspend. The queue's side is ``Holds``: ``reelfarm.farm.runtime.renderholds`` on the RQ farm,
  ``reelfarm.farm.runtime.embeddedholds`` on the embedded queue.
- **Resume**: the chunks held back are put back in line, in the place their arrival time and
  priority give them, and the render's stall clock starts again.
- **Priority**: the render's priority in its workspace's line (``normal``, or ``low``: it waits
  while a normal render of the workspace waits), in the database and on its chunks still waiting
  (held back ones included), both ways (the API only ever raises it).
- **Requeue** (``reelfarm.farm.runtime.requeue`` where the farm can): a failed render, or a live one
  whose work stopped moving, starts again from its unfinished chunks.

A workspace-wide control applies to that workspace's live renders only. A control refused (no
such render or workspace, a render that has finished) changes and records nothing; one that
would change nothing (a render suspended already, one not suspended, a priority it has) records
nothing either and says so.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Engine, select

from reelfarm.farm.services.audit import AuditEntry, AuditLog, write_entry
from reelfarm.farm.services.errors import StateConflict
from reelfarm.farm.services.fairness import PRIORITIES
from reelfarm.farm.services.graph import chunk_job_id
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import renders as repo
from reelfarm.shared.tables import audit_log, renders, workspaces

MAX_RENDERS = 10_000  # renders a workspace-wide control looks at


class Holds(Protocol):
    """The queue's side of suspend, resume and priority (``RedisHolds``, ``EmbeddedHolds``)."""

    def suspend(self, render: str, workspace: str, rq_ids: Sequence[str], record: dict[str, Any]) -> int: ...

    def resume(self, render: str) -> tuple[bool, int]: ...

    def suspended(self, render: str) -> dict[str, Any] | None: ...

    def set_priority(self, render: str, rq_ids: Sequence[str], priority: str) -> int: ...


@dataclass(frozen=True)
class Controlled:
    """What a control did to one render."""

    render_id: str
    workspace_id: str
    action: str
    changed: bool
    chunks: int = 0  # chunks held back, put back in line, given the priority, or enqueued again
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"render_id": self.render_id, "workspace_id": self.workspace_id, "action": self.action,
                "changed": self.changed, "chunks": self.chunks, **self.details}


class RenderControls:
    """Suspend, resume and reprioritise renders (module docstring).

    ``rq_id`` turns a queue job id into the backend's (the RQ farm's namespace prefix).
    """

    def __init__(self, engine: Engine, clock: Clock, holds: Holds, audit: AuditLog,
                 rq_id: Callable[[str], str] = lambda job_id: job_id) -> None:
        self.engine, self.clock, self.holds, self.audit, self.rq_id = engine, clock, holds, audit, rq_id

    # -- which renders ------------------------------------------------------------------------

    def targets(self, render_id: str | None = None, workspace_id: str | None = None) -> list[repo.Render]:
        """The render named (live), or the live renders of the workspace named, oldest first.

        Raises:
            NotFound: no such render or workspace.
            StateConflict: the render named has finished.
        """
        with self.engine.connect() as conn:
            if render_id is not None:
                render = repo.find_render(conn, render_id)
                if render is None or (workspace_id is not None and render.workspace_id != workspace_id):
                    raise NotFound("render", render_id)
                if render.status not in repo.LIVE:
                    raise StateConflict(f"render {render_id} is {render.status}; only a queued or running "
                                        "render can be suspended, resumed or given a priority")
                return [render]
            if workspace_id is None:
                raise ValueError("name a render or a workspace")
            if conn.execute(select(workspaces.c.id).where(workspaces.c.id == workspace_id)).first() is None:
                raise NotFound("workspace", workspace_id)
            rows = conn.execute(select(renders).where(renders.c.workspace_id == workspace_id,
                                                      renders.c.status.in_(repo.LIVE))
                                .order_by(renders.c.created_at, renders.c.id).limit(MAX_RENDERS)).all()
        return [repo.render_of(row) for row in rows]

    def _chunk_ids(self, render: repo.Render) -> list[str]:
        return [self.rq_id(chunk_job_id(render.id, i)) for i in range(render.chunks or 0)]

    # -- controls -----------------------------------------------------------------------------

    def suspend(self, actor: str, render_id: str | None = None, workspace_id: str | None = None,
                reason: str = "") -> list[Controlled]:
        """Hold back the waiting chunks of the render, or of each live render of the workspace."""
        done = []
        for render in self.targets(render_id, workspace_id):
            was = self.holds.suspended(render.id)
            record = {"by": actor, "at": time.time(), "reason": reason}
            chunks = self.holds.suspend(render.id, render.workspace_id, self._chunk_ids(render), record)
            changed = was is None
            details = {"reason": reason, "chunks_held": chunks, "status": render.status}
            if workspace_id is not None and render_id is None:
                details["scope"] = "workspace"
            if changed:
                self.audit.record(AuditEntry(actor, "render.suspend", "render", render.id, render.workspace_id,
                                             details))
            done.append(Controlled(render.id, render.workspace_id, "suspend", changed, chunks, details))
        return done

    def resume(self, actor: str, render_id: str | None = None, workspace_id: str | None = None) -> list[Controlled]:
        """Put the held-back chunks of the render, or of each suspended render of the workspace,
        back in line; its stall clock starts again."""
        done = []
        for render in self.targets(render_id, workspace_id):
            was, chunks = self.holds.resume(render.id)
            if not was and render_id is None:
                continue  # a workspace-wide resume names the renders it resumed
            details: dict[str, Any] = {"chunks_back": chunks}
            if workspace_id is not None and render_id is None:
                details["scope"] = "workspace"
            if was:
                with transaction(self.engine) as conn:
                    repo.touch_render(conn, self.clock, render.id)
                self.audit.record(AuditEntry(actor, "render.resume", "render", render.id, render.workspace_id,
                                             details))
            done.append(Controlled(render.id, render.workspace_id, "resume", was, chunks, details))
        return done

    def set_priority(self, actor: str, priority: str, render_id: str | None = None,
                     workspace_id: str | None = None) -> list[Controlled]:
        """The render's (or each live render of the workspace's) priority in its workspace's line."""
        if priority not in PRIORITIES:
            raise ValueError(f"priority is one of {', '.join(PRIORITIES)}")
        done = []
        for render in self.targets(render_id, workspace_id):
            if render.priority == priority:
                done.append(Controlled(render.id, render.workspace_id, "priority", False, 0, {"priority": priority}))
                continue
            details: dict[str, Any] = {"priority": priority, "was": render.priority}
            if workspace_id is not None and render_id is None:
                details["scope"] = "workspace"
            with transaction(self.engine) as conn:  # the entry with the change
                changed = repo.set_priority(conn, render.id, priority, was=render.priority)
                if changed:
                    write_entry(conn, self.clock, AuditEntry(actor, "render.priority", "render", render.id,
                                                             render.workspace_id, details))
            chunks = self.holds.set_priority(render.id, self._chunk_ids(render), priority) if changed else 0
            done.append(Controlled(render.id, render.workspace_id, "priority", changed, chunks,
                                   {**details, "chunks": chunks}))
        return done

    def requeue(self, actor: str, render_id: str, enqueue: Callable[[repo.Render], list[str]]) -> Controlled:
        """Start the render again from its unfinished chunks: ``enqueue`` (``requeue_render``) puts
        back what the queue does not hold. A failed render is first reopened: queued again, free
        (its charge was refunded when it failed and is not taken again; a second failure refunds
        nothing), its error cleared; it ends as any render does, with ``render.completed`` or
        ``render.failed``.

        Raises:
            NotFound: no such render.
            StateConflict: the render succeeded or was canceled.
        """
        with self.engine.connect() as conn:
            render = repo.find_render(conn, render_id)
        if render is None:
            raise NotFound("render", render_id)
        if render.status not in (*repo.LIVE, "failed"):
            raise StateConflict(f"render {render_id} is {render.status}; only a failed, queued or running render "
                                "can be requeued")
        if render.status == "failed":
            details: dict[str, Any] = {"was": "failed", "error": render.error,
                                       "refunded": render.charged_credits}
            with transaction(self.engine) as conn:  # the entry with the change
                if not reopen_render(conn, self.clock, render.id):
                    raise StateConflict(f"render {render_id} changed meanwhile; look again")
                write_entry(conn, self.clock, AuditEntry(actor, "render.requeue", "render", render.id,
                                                         render.workspace_id, details))
                render = repo.find_render(conn, render.id) or render
            self.holds.resume(render.id)  # a hold it had when it failed ends with it
            enqueued = enqueue(render)  # lost here, the repair round puts the queued render's work back
            return Controlled(render.id, render.workspace_id, "requeue", True, len(enqueued),
                              {**details, "enqueued": enqueued})
        enqueued = enqueue(render)
        details = {"was": render.status, "enqueued": enqueued}
        if enqueued:
            with transaction(self.engine) as conn:
                repo.touch_render(conn, self.clock, render.id)
            self.audit.record(AuditEntry(actor, "render.requeue", "render", render.id, render.workspace_id, details))
        return Controlled(render.id, render.workspace_id, "requeue", bool(enqueued), len(enqueued), details)


def reopen_render(conn: Any, clock: Clock, render_id: str) -> bool:
    """``failed -> queued``, by an operator only: its error and end cleared, its stall clock started,
    and no charge (``RenderControls.requeue``). False when it is not failed."""
    now = clock.now()
    done = conn.execute(renders.update().where(renders.c.id == render_id, renders.c.status == "failed").values(
        status="queued", error=None, finished_at=None, progressed_at=now, charged_credits=0))
    return bool(done.rowcount)


def suspended_renders(engine: Engine, render_ids: Sequence[str]) -> set[str]:
    """Those of ``render_ids`` whose last suspend or resume in the audit log is a suspend."""
    if not render_ids:
        return set()
    with engine.connect() as conn:
        rows = conn.execute(select(audit_log.c.target_id, audit_log.c.action, audit_log.c.at, audit_log.c.id).where(
            audit_log.c.target_kind == "render", audit_log.c.target_id.in_(list(render_ids)),
            audit_log.c.action.in_(("render.suspend", "render.resume")))).all()
    last: dict[str, tuple[Any, str, str]] = {}
    for target, action, at, entry_id in rows:
        if target not in last or (at, entry_id) > last[target][:2]:
            last[target] = (at, entry_id, action)
    return {target for target, (_at, _id, action) in last.items() if action == "render.suspend"}
