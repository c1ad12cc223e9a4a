"""Webhook endpoints, the outbox rows they are fed from, and the log of delivery attempts.

One ``webhook_deliveries`` row is one attempt to deliver one event to one endpoint: it is
``pending`` until tried, then ``succeeded``, ``failed`` (a later attempt is scheduled, or none is
due: a refused URL, a disabled endpoint, ``410 Gone``) or ``gave_up`` (the last attempt of the
schedule failed). A ``pending`` row's ``next_attempt_at`` is when it may be tried; a sender
claims it by moving that time forward by a lease, so two senders never try one row at once.

Outbox rows are claimed with an UPDATE guarded by ``dispatched_at IS NULL``: whichever process
gets the row (rowcount 1) fans it out, in the same transaction, so an event is fanned out once
however many dispatchers run.

Retention (``reelfarm.farm.runtime.retention``): ``purge_deliveries`` deletes finished attempts older than the
period, and ``purge_events`` then deletes dispatched events older than it that have no attempt
left; so an event stays while any attempt of it is pending, scheduled or still in the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, exists, func, select, update

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import event_outbox, webhook_deliveries, webhook_endpoints


@dataclass(frozen=True)
class Endpoint:
    id: str
    workspace_id: str
    url: str
    description: str | None
    events: list[str]
    secret: str
    enabled: bool
    disabled_reason: str | None
    created_at: datetime
    updated_at: datetime

    def wants(self, event_type: str) -> bool:
        """Whether the endpoint subscribes to ``event_type`` (no list at all means every kind)."""
        return not self.events or event_type in self.events


@dataclass(frozen=True)
class Delivery:
    id: str
    endpoint_id: str
    event_id: str
    attempt: int
    status_code: int | None
    latency_ms: int | None
    error: str | None
    next_attempt_at: datetime | None
    state: str
    created_at: datetime
    event_type: str | None = None


@dataclass(frozen=True)
class Event:
    id: str
    workspace_id: str
    type: str
    payload: dict[str, Any]
    created_at: datetime
    dispatched_at: datetime | None


# -- endpoints ---------------------------------------------------------------------------------

def create_endpoint(conn: Connection, clock: Clock, *, workspace_id: str, url: str, events: list[str],
                    description: str | None, secret: str) -> Endpoint:
    now = clock.now()
    endpoint_id = new_id()
    conn.execute(webhook_endpoints.insert().values(
        id=endpoint_id, workspace_id=workspace_id, url=url, description=description, events=list(events),
        secret=secret, enabled=True, created_at=now, updated_at=now))
    return _endpoint(conn, endpoint_id)


def get_endpoint(conn: Connection, workspace_id: str, endpoint_id: str) -> Endpoint:
    """Raises NotFound when the workspace has no such endpoint."""
    row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id,
                                                       webhook_endpoints.c.workspace_id == workspace_id)).first()
    if row is None:
        raise NotFound("webhook", endpoint_id)
    return Endpoint(**row._mapping)


def find_endpoint(conn: Connection, endpoint_id: str) -> Endpoint | None:
    """The endpoint with this id, whatever its workspace (for tasks, which get bare ids)."""
    row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)).first()
    return Endpoint(**row._mapping) if row else None


def list_endpoints(conn: Connection, workspace_id: str) -> list[Endpoint]:
    rows = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.workspace_id == workspace_id)
                        .order_by(webhook_endpoints.c.created_at, webhook_endpoints.c.id))
    return [Endpoint(**row._mapping) for row in rows]


def update_endpoint(conn: Connection, clock: Clock, workspace_id: str, endpoint_id: str,
                    **changes: Any) -> Endpoint:
    """Change ``url``, ``events``, ``description``, ``enabled`` or ``disabled_reason``. Raises NotFound."""
    get_endpoint(conn, workspace_id, endpoint_id)
    conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)
                 .values(updated_at=clock.now(), **changes))
    return _endpoint(conn, endpoint_id)


def disable_endpoint(conn: Connection, clock: Clock, endpoint_id: str, reason: str) -> None:
    conn.execute(update(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)
                 .values(enabled=False, disabled_reason=reason, updated_at=clock.now()))


def delete_endpoint(conn: Connection, workspace_id: str, endpoint_id: str) -> None:
    """Delete the endpoint and its delivery log. Raises NotFound."""
    get_endpoint(conn, workspace_id, endpoint_id)
    conn.execute(delete(webhook_deliveries).where(webhook_deliveries.c.endpoint_id == endpoint_id))
    conn.execute(delete(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id))


def subscribed_endpoints(conn: Connection, workspace_id: str, event_type: str) -> list[Endpoint]:
    """The workspace's enabled endpoints that want ``event_type``, oldest first."""
    rows = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.workspace_id == workspace_id,
                                                        webhook_endpoints.c.enabled.is_(True))
                        .order_by(webhook_endpoints.c.created_at, webhook_endpoints.c.id))
    # `events` is a JSON list; filtering it here keeps the query the same on SQLite and PostgreSQL.
    return [e for e in (Endpoint(**row._mapping) for row in rows) if e.wants(event_type)]


# -- outbox --------------------------------------------------------------------------------------

def pending_event_ids(conn: Connection, limit: int) -> list[str]:
    """Ids of undispatched events, oldest first."""
    return list(conn.execute(select(event_outbox.c.id).where(event_outbox.c.dispatched_at.is_(None))
                             .order_by(event_outbox.c.created_at, event_outbox.c.id).limit(limit)).scalars())


def claim_event(conn: Connection, event_id: str, now: datetime) -> Event | None:
    """Mark the event dispatched; the event, or None when another dispatcher already had it."""
    claimed = conn.execute(update(event_outbox).where(event_outbox.c.id == event_id,
                                                      event_outbox.c.dispatched_at.is_(None))
                           .values(dispatched_at=now))
    return find_event(conn, event_id) if claimed.rowcount == 1 else None


def find_event(conn: Connection, event_id: str) -> Event | None:
    row = conn.execute(select(event_outbox).where(event_outbox.c.id == event_id)).first()
    return Event(**row._mapping) if row else None


# -- deliveries ----------------------------------------------------------------------------------

def insert_delivery(conn: Connection, clock: Clock, *, endpoint_id: str, event_id: str, attempt: int,
                    due: datetime) -> Delivery:
    """A ``pending`` attempt, to be tried at ``due``."""
    delivery_id = new_id()
    conn.execute(webhook_deliveries.insert().values(
        id=delivery_id, endpoint_id=endpoint_id, event_id=event_id, attempt=attempt, state="pending",
        next_attempt_at=due, created_at=clock.now()))
    return _delivery(conn, delivery_id)


def next_attempt_number(conn: Connection, endpoint_id: str, event_id: str) -> int:
    last = conn.execute(select(func.max(webhook_deliveries.c.attempt)).where(
        webhook_deliveries.c.endpoint_id == endpoint_id, webhook_deliveries.c.event_id == event_id)).scalar()
    return int(last or 0) + 1


def get_delivery(conn: Connection, endpoint_id: str, delivery_id: str) -> Delivery:
    """Raises NotFound when the endpoint has no such attempt (check the endpoint's workspace first)."""
    row = conn.execute(_with_type().where(webhook_deliveries.c.id == delivery_id,
                                          webhook_deliveries.c.endpoint_id == endpoint_id)).first()
    if row is None:
        raise NotFound("delivery", delivery_id)
    return Delivery(**row._mapping)


def find_delivery(conn: Connection, delivery_id: str) -> Delivery | None:
    row = conn.execute(_with_type().where(webhook_deliveries.c.id == delivery_id)).first()
    return Delivery(**row._mapping) if row else None


def list_deliveries(conn: Connection, endpoint_id: str, limit: int = 100) -> list[Delivery]:
    """The endpoint's latest attempts, newest first."""
    rows = conn.execute(_with_type().where(webhook_deliveries.c.endpoint_id == endpoint_id)
                        .order_by(webhook_deliveries.c.created_at.desc(), webhook_deliveries.c.attempt.desc())
                        .limit(limit))
    return [Delivery(**row._mapping) for row in rows]


def claim_delivery(conn: Connection, delivery_id: str, now: datetime, lease_until: datetime) -> bool:
    """Take a due ``pending`` attempt for ``lease_until``; False when it is not due, taken or done."""
    claimed = conn.execute(update(webhook_deliveries).where(
        webhook_deliveries.c.id == delivery_id, webhook_deliveries.c.state == "pending",
        webhook_deliveries.c.next_attempt_at <= now).values(next_attempt_at=lease_until))
    return claimed.rowcount == 1


def finish_delivery(conn: Connection, delivery_id: str, *, state: str, status_code: int | None = None,
                    latency_ms: int | None = None, error: str | None = None,
                    next_attempt_at: datetime | None = None) -> None:
    conn.execute(update(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id).values(
        state=state, status_code=status_code, latency_ms=latency_ms, error=error, next_attempt_at=next_attempt_at))


def due_delivery_ids(conn: Connection, now: datetime, limit: int) -> list[str]:
    """Pending attempts whose time has come (or whose sender's lease ran out), earliest first."""
    return list(conn.execute(select(webhook_deliveries.c.id).where(
        webhook_deliveries.c.state == "pending", webhook_deliveries.c.next_attempt_at <= now)
        .order_by(webhook_deliveries.c.next_attempt_at).limit(limit)).scalars())


# -- retention -----------------------------------------------------------------------------------

def purge_deliveries(conn: Connection, *, before: datetime, now: datetime, limit: int) -> int:
    """Delete at most ``limit`` finished attempts made before ``before``; returns how many.

    A ``pending`` attempt stays whatever its age, and so does a failed one until the retry it
    scheduled is due.
    """
    d = webhook_deliveries.c
    old = (d.created_at < before) & (d.state != "pending") & (d.next_attempt_at.is_(None) | (d.next_attempt_at <= now))
    batch = select(d.id).where(old).limit(limit)
    # DELETE has no LIMIT on PostgreSQL: delete what a limited SELECT picks, judged again as it is now.
    return conn.execute(delete(webhook_deliveries).where(old, d.id.in_(batch))).rowcount or 0


def purge_events(conn: Connection, *, dispatched_before: datetime, limit: int) -> int:
    """Delete at most ``limit`` events dispatched before ``dispatched_before`` that have no delivery
    attempt left; returns how many. An undispatched event always stays."""
    picked = event_outbox.alias("picked")
    batch = select(picked.c.id).where(*_purgeable(picked, dispatched_before)).limit(limit)
    return conn.execute(delete(event_outbox).where(*_purgeable(event_outbox, dispatched_before),
                                                   event_outbox.c.id.in_(batch))).rowcount or 0


def _purgeable(events: Any, dispatched_before: datetime) -> list[Any]:
    attempts = exists().where(webhook_deliveries.c.event_id == events.c.id)
    return [events.c.dispatched_at.is_not(None), events.c.dispatched_at < dispatched_before, ~attempts]


def _with_type() -> Any:
    return select(webhook_deliveries, event_outbox.c.type.label("event_type")).join(
        event_outbox, event_outbox.c.id == webhook_deliveries.c.event_id)


def _endpoint(conn: Connection, endpoint_id: str) -> Endpoint:
    row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint_id)).one()
    return Endpoint(**row._mapping)


def _delivery(conn: Connection, delivery_id: str) -> Delivery:
    row = conn.execute(_with_type().where(webhook_deliveries.c.id == delivery_id)).one()
    return Delivery(**row._mapping)
