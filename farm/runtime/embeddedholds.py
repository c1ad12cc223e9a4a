"""An operator's hold on renders in the embedded queue (``reelfarm.farm.runtime.embedded``).

A suspended render's chunk rows that wait (``queued``, or ``deferred`` on its asset import) get
``run_after`` = ``SUSPENDED_UNTIL``, far in the future: the claimer takes only rows due now, so
they are not claimed, and a deferred one keeps the mark when its import releases it
(``EmbeddedQueue._promote``). Rows running finish. Resume sets ``run_after`` to now: they are
claimed in the order fair dispatch gives (their arrival time and priority are their own). A
render's priority is rewritten on its waiting rows, which changes their stamp (``fairrows``), so
the next claim sees it.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, select, update

from reelfarm.farm.services.graph import chunk_index_of
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.tables import queued_tasks as tasks

SUSPENDED_UNTIL = datetime(9000, 1, 1, tzinfo=UTC)
_WAITING = ("deferred", "queued")


class EmbeddedHolds:
    """Suspend, resume and reprioritise renders' waiting chunk rows in ``queued_tasks``."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine, self.clock = engine, clock

    def suspend(self, render: str, workspace: str, rq_ids: Any = (), record: Any = None) -> int:
        """Mark the render's waiting chunk rows not due; returns how many were waiting."""
        with transaction(self.engine) as conn:
            done = conn.execute(update(tasks).where(
                tasks.c.render_id == render, tasks.c.status.in_(_WAITING), tasks.c.workspace_id.is_not(None),
                tasks.c.run_after < SUSPENDED_UNTIL).values(run_after=SUSPENDED_UNTIL, updated_at=self.clock.now()))
        return int(done.rowcount)

    def resume(self, render: str) -> tuple[bool, int]:
        """Rows marked by ``suspend`` are due now: (whether any was marked, how many)."""
        now = self.clock.now()
        with transaction(self.engine) as conn:
            done = conn.execute(update(tasks).where(
                tasks.c.render_id == render, tasks.c.status.in_(_WAITING),
                tasks.c.run_after >= SUSPENDED_UNTIL).values(run_after=now, updated_at=now))
        return bool(done.rowcount), int(done.rowcount)

    def suspended(self, render: str) -> dict[str, Any] | None:
        """``{"chunk": the earliest held back}`` while the render's rows are held back, else None."""
        with self.engine.connect() as conn:
            ids = conn.execute(select(tasks.c.id).where(
                tasks.c.render_id == render, tasks.c.status.in_(_WAITING),
                tasks.c.run_after >= SUSPENDED_UNTIL)).scalars().all()
        if not ids:
            return None
        indexes = [i for i in (chunk_index_of(render, task_id) for task_id in ids) if i is not None]
        return {"chunk": min(indexes) if indexes else 0}

    def set_priority(self, render: str, rq_ids: Any, priority: str) -> int:
        """The render's waiting chunk rows at ``priority``; returns how many changed."""
        with transaction(self.engine) as conn:
            done = conn.execute(update(tasks).where(
                tasks.c.render_id == render, tasks.c.status.in_(_WAITING), tasks.c.workspace_id.is_not(None),
                func.coalesce(tasks.c.priority, "normal") != priority).values(
                    priority=priority, updated_at=self.clock.now()))
        return int(done.rowcount)
