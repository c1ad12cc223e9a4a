"""Webhook delivery: from the event outbox to signed POSTs, with retries and a log of every attempt.

- ``dispatch_pending(queue)`` claims undispatched outbox rows, oldest first, and in the same
  transaction writes one ``pending`` attempt per enabled endpoint of the workspace subscribed to
  the event's type; after the commit it enqueues ``deliver`` for each. Safe to run from several
  processes at once: a row is claimed by an UPDATE guarded by ``dispatched_at IS NULL``.
- ``deliver(delivery_id)`` (a task) claims the attempt, signs the body per Standard Webhooks
  with the endpoint's secret (``webhook-id`` is the event id, the same on every retry) and POSTs
  it through the SSRF guard with a 10 s limit. 2xx: succeeded. ``410 Gone``: the endpoint is
  disabled. Anything else (another status, a timeout, a refused address): the next attempt is
  written for ``RETRY_SCHEDULE_SEC`` later, +-10 %, until the schedule is spent (``gave_up``).
- ``dispatch_due(queue)`` enqueues attempts whose time has come (retries, and any whose enqueue
  or sender was lost). Run both from the embedded queue's maintenance or a worker's heartbeat
  (``run_webhooks``).
- ``WebhookSender`` is what the API calls for ``redeliver`` and ``test``.
"""
from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.runtime.context import TaskContext, current
from reelfarm.farm.services.errors import QueueUnavailable, StateConflict
from reelfarm.farm.services.queues import JobQueue
from reelfarm.shared.clock import Clock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import webhooks as repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.studio.fetch import FetchError, PostResult, SafeFetcher, make_fetcher
from reelfarm.studio.webhooks import delivery_resource

log = logging.getLogger("reelfarm.farm")

DELIVER = "reelfarm.farm.runtime.webhooks.deliver"
QUEUE = "jobs"  # a queue every worker listens on; deliveries are short
TIMEOUT_SEC = 10.0
LEASE = timedelta(seconds=60)  # longer than one attempt can take, so a lost sender's row is retried
RETRY_SCHEDULE_SEC = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 14 * 3600, 20 * 3600, 24 * 3600)
JITTER = 0.10
BATCH = 100
USER_AGENT = "reelfarm-webhooks/1"


def retry_delay(failed_attempt: int, rand: Callable[[], float] = random.random) -> float | None:
    """Seconds before the attempt after ``failed_attempt`` (1-based), jittered +-10 %; None when spent."""
    if failed_attempt > len(RETRY_SCHEDULE_SEC):
        return None
    base = RETRY_SCHEDULE_SEC[failed_attempt - 1]
    return base * (1 + JITTER * (2 * rand() - 1))


def event_body(event: repo.Event) -> bytes:
    """The JSON body of an event, as sent (and signed)."""
    return json.dumps({"id": event.id, "type": event.type, "created_at": event.created_at.isoformat(),
                       "workspace_id": event.workspace_id, "data": event.payload},
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signed_headers(secret: str, event_id: str, timestamp: datetime, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers for ``body``."""
    from standardwebhooks import Webhook

    signature = Webhook(secret).sign(event_id, timestamp, body.decode("utf-8"))
    return {"webhook-id": event_id, "webhook-timestamp": str(int(timestamp.timestamp())),
            "webhook-signature": signature}


# -- dispatching ------------------------------------------------------------------------------

def dispatch_pending(queue: JobQueue, ctx: TaskContext | None = None, limit: int = BATCH) -> int:
    """Fan undispatched events out to their endpoints and enqueue the attempts; returns how many."""
    ctx = ctx or current()
    with ctx.engine.connect() as conn:
        event_ids = repo.pending_event_ids(conn, limit)
    created: list[str] = []
    for event_id in event_ids:
        with transaction(ctx.engine) as conn:
            now = ctx.clock.now()
            event = repo.claim_event(conn, event_id, now)
            if event is None:
                continue  # another dispatcher has it
            for endpoint in repo.subscribed_endpoints(conn, event.workspace_id, event.type):
                delivery = repo.insert_delivery(conn, ctx.clock, endpoint_id=endpoint.id, event_id=event.id,
                                                attempt=1, due=now)
                created.append(delivery.id)
    for delivery_id in created:
        _enqueue(queue, delivery_id)
    return len(created)


def dispatch_due(queue: JobQueue, ctx: TaskContext | None = None, limit: int = BATCH) -> int:
    """Enqueue every pending attempt whose time has come; returns how many."""
    ctx = ctx or current()
    with ctx.engine.connect() as conn:
        due = repo.due_delivery_ids(conn, ctx.clock.now(), limit)
    for delivery_id in due:
        _enqueue(queue, delivery_id)
    return len(due)


def run_webhooks(queue: JobQueue, ctx: TaskContext | None = None) -> None:
    """One maintenance round: fan out new events, then enqueue due retries."""
    dispatch_pending(queue, ctx)
    dispatch_due(queue, ctx)


def _enqueue(queue: JobQueue, delivery_id: str) -> None:
    try:
        # Retries of the task itself are pointless: the row is leased; dispatch_due re-sends it.
        queue.enqueue(DELIVER, delivery_id, job_id=f"webhook-delivery-{delivery_id}", queue=QUEUE, retries=0)
    except QueueUnavailable:
        log.warning("webhook delivery %s not enqueued (queue unavailable); dispatch_due will", delivery_id)


# -- sending ----------------------------------------------------------------------------------

def deliver(delivery_id: str, fetcher: SafeFetcher | None = None) -> str | None:
    """Try the attempt once, log it, and schedule the next one if it failed.

    Returns the attempt's final state, or None when it was not due (done, or taken by another sender).
    """
    ctx = current()
    with transaction(ctx.engine) as conn:
        now = ctx.clock.now()
        if not repo.claim_delivery(conn, delivery_id, now, now + LEASE):
            return None
        delivery = repo.find_delivery(conn, delivery_id)
        assert delivery is not None
        endpoint = repo.find_endpoint(conn, delivery.endpoint_id)
        event = repo.find_event(conn, delivery.event_id)
    if endpoint is None or event is None or not endpoint.enabled:
        with transaction(ctx.engine) as conn:
            repo.finish_delivery(conn, delivery_id, state="failed", error="the endpoint is disabled")
        return "failed"
    body = event_body(event)
    headers = {"User-Agent": USER_AGENT, **signed_headers(endpoint.secret, event.id, ctx.clock.now(), body)}
    try:
        result: PostResult | None = (fetcher or _fetcher(ctx.settings)).post(endpoint.url, body, headers)
        error = None
    except FetchError as exc:
        result, error = None, str(exc)
    return _record(ctx, delivery, endpoint, result, error)


def _record(ctx: TaskContext, delivery: repo.Delivery, endpoint: repo.Endpoint, result: PostResult | None,
            error: str | None) -> str:
    status = result.status if result else None
    latency = result.latency_ms if result else None
    with transaction(ctx.engine) as conn:
        now = ctx.clock.now()
        if status is not None and 200 <= status < 300:
            state, due = "succeeded", None
        elif status == 410:
            state, due, error = "failed", None, "the endpoint answered 410 Gone; it was disabled"
            repo.disable_endpoint(conn, ctx.clock, endpoint.id,
                                  f"answered 410 Gone to event {delivery.event_id} at {now.isoformat()}")
        else:
            error = error or f"the endpoint answered {status}"
            delay = retry_delay(delivery.attempt)
            state, due = ("failed", now + timedelta(seconds=delay)) if delay is not None else ("gave_up", None)
            if due is not None:
                repo.insert_delivery(conn, ctx.clock, endpoint_id=endpoint.id, event_id=delivery.event_id,
                                     attempt=delivery.attempt + 1, due=due)
        repo.finish_delivery(conn, delivery.id, state=state, status_code=status, latency_ms=latency, error=error,
                             next_attempt_at=due)
    log.info("webhook %s attempt %d of %s to %s: %s (%s)", delivery.id, delivery.attempt, delivery.event_id,
             endpoint.id, state, status if status is not None else error)
    return state


def _fetcher(settings: Settings | None) -> SafeFetcher:
    settings = settings or Settings.from_env()
    return make_fetcher(settings, read_timeout=TIMEOUT_SEC, total_timeout=TIMEOUT_SEC)


# -- the API's side -----------------------------------------------------------------------------

class WebhookSender:
    """Redeliveries and test events, asked for through the API; both are sent by ``deliver``."""

    def __init__(self, engine: Engine, queue: JobQueue, clock: Clock) -> None:
        self.engine = engine
        self.queue = queue
        self.clock = clock

    def redeliver(self, workspace_id: str, endpoint_id: str, delivery_id: str) -> dict[str, Any]:
        """A new attempt of that delivery's event, sent now. Raises NotFound or StateConflict (disabled)."""
        with transaction(self.engine) as conn:
            endpoint = repo.get_endpoint(conn, workspace_id, endpoint_id)
            earlier = repo.get_delivery(conn, endpoint_id, delivery_id)
            _require_enabled(endpoint)
            delivery = repo.insert_delivery(
                conn, self.clock, endpoint_id=endpoint_id, event_id=earlier.event_id,
                attempt=repo.next_attempt_number(conn, endpoint_id, earlier.event_id), due=self.clock.now())
        _enqueue(self.queue, delivery.id)
        return delivery_resource(delivery)

    def send_test(self, workspace_id: str, endpoint_id: str) -> dict[str, Any]:
        """A ``webhook.test`` event for this endpoint only. Raises NotFound or StateConflict (disabled)."""
        with transaction(self.engine) as conn:
            endpoint = repo.get_endpoint(conn, workspace_id, endpoint_id)
            _require_enabled(endpoint)
            event_id = add_event(conn, self.clock, workspace_id=workspace_id, type="webhook.test",
                                 payload={"webhook": {"id": endpoint.id, "url": endpoint.url}})
            repo.claim_event(conn, event_id, self.clock.now())  # dispatched here: no other endpoint gets it
            delivery = repo.insert_delivery(conn, self.clock, endpoint_id=endpoint_id, event_id=event_id,
                                            attempt=1, due=self.clock.now())
        _enqueue(self.queue, delivery.id)
        return delivery_resource(delivery)


def _require_enabled(endpoint: repo.Endpoint) -> None:
    if not endpoint.enabled:
        raise StateConflict("The webhook is disabled; enable it with PATCH {\"enabled\": true} first.")
