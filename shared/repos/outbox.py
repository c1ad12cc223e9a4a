"""The event outbox's one writer: ``add_event``, in the caller's transaction.

Every change that clients hear about (a render finished, a video generated, a comment written,
a brand kit extracted) writes its event here in the same transaction as the change itself, so
an event exists exactly when its change committed. ``reelfarm.farm.runtime.webhooks`` reads the outbox
(``reelfarm.shared.repos.webhooks``: claim, fan out, purge) and delivers it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from reelfarm.shared.clock import Clock
from reelfarm.shared.ids import new_event_id
from reelfarm.shared.tables import event_outbox


def add_event(conn: Connection, clock: Clock, *, workspace_id: str, type: str, payload: Mapping[str, Any]) -> str:
    """Write an event to the outbox, in the caller's transaction; returns its id."""
    event_id = new_event_id()
    conn.execute(event_outbox.insert().values(id=event_id, workspace_id=workspace_id, type=type,
                                              payload=dict(payload), created_at=clock.now()))
    return event_id
