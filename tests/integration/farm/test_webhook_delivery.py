"""Webhook delivery to a real HTTP receiver on loopback: outbox fan-out, Standard Webhooks
signatures, retries on the schedule, 410 disabling the endpoint, and concurrent dispatchers.

Tasks run synchronously through ``InlineQueue`` (enqueue records; ``drain`` runs the tasks), so a
test sees exactly what one ``deliver`` does. The clock starts at the real time, because
``standardwebhooks`` checks the signed timestamp against the wall clock.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import Engine, select
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from reelfarm.farm.runtime import webhooks as delivery
from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.queue import resolve
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import webhooks as repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.storage import LocalStorage
from reelfarm.shared.tables import event_outbox, webhook_deliveries, webhook_endpoints
from reelfarm.studio.webhooks import new_secret

# -- a real receiver ----------------------------------------------------------------------------

@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records every request and answers ``statuses`` in turn
    (then 200)."""

    server: ThreadingHTTPServer
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            me = holder[0]
            me.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = me.statuses.pop(0) if me.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(Receiver(server))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield holder[0]
    server.shutdown()
    server.server_close()


class InlineQueue:
    """A JobQueue that records what is enqueued; ``drain`` runs it here (deduplicated by job id)."""

    def __init__(self) -> None:
        self.jobs: dict[str, tuple[str, tuple[Any, ...]]] = {}

    def enqueue(self, func_path: str, *args: Any, job_id: str, queue: str = "render",
                depends_on: list[str] | None = None, retries: int = 2) -> None:
        self.jobs.setdefault(job_id, (func_path, args))

    def cancel(self, job_id: str) -> None:
        self.jobs.pop(job_id, None)

    def ping(self) -> None:
        return None

    def drain(self) -> list[Any]:
        results = []
        while self.jobs:
            job_id = next(iter(self.jobs))
            func_path, args = self.jobs.pop(job_id)
            results.append(resolve(func_path)(*args))
        return results


def verify(secret: str, request: Received) -> dict[str, Any]:
    """The body, after ``standardwebhooks`` verified its signature."""
    return Webhook(secret).verify(request.body, request.headers)  # type: ignore[no-any-return]


# -- fixtures -----------------------------------------------------------------------------------

@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def ctx(engine: Engine, clock: FixedClock, storage: LocalStorage, tmp_path) -> TaskContext:
    settings = Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_FETCH_ALLOW_PRIVATE": "1"})
    context = TaskContext(engine=engine, storage=storage, clock=clock,
                          progress=MemoryProgress(), settings=settings)
    configure(context)
    return context


@pytest.fixture
def queue() -> InlineQueue:
    return InlineQueue()


@pytest.fixture
def workspace_id(engine: Engine, clock: FixedClock) -> str:
    with transaction(engine) as conn:
        return ws_repo.create_workspace(conn, clock, name="hooks", plan="pro", brand_tokens=NEUTRAL_BRAND).id


def add_endpoint(engine: Engine, clock: FixedClock, workspace_id: str, url: str,
                 events: list[str] | None = None) -> repo.Endpoint:
    with transaction(engine) as conn:
        return repo.create_endpoint(conn, clock, workspace_id=workspace_id, url=url, events=events or [],
                                    description=None, secret=new_secret())


def emit(engine: Engine, clock: FixedClock, workspace_id: str, type: str = "comment.created",
         data: dict[str, Any] | None = None) -> str:
    with transaction(engine) as conn:
        return add_event(conn, clock, workspace_id=workspace_id, type=type, payload=data or {"comment": {"id": "c1"}})


def mine(engine: Engine, queue: InlineQueue, *endpoint_ids: str) -> int:
    """Keep only the queued attempts of these endpoints (the PostgreSQL database is shared by the
    session, so a dispatcher also sees other tests' rows); returns how many are left."""
    ours = {d.id for endpoint_id in endpoint_ids for d in attempts(engine, endpoint_id)}
    queue.jobs = {job: call for job, call in queue.jobs.items() if call[1][0] in ours}
    return len(queue.jobs)


def pending(engine: Engine, queue: InlineQueue, *endpoint_ids: str) -> int:
    delivery.dispatch_pending(queue)
    return mine(engine, queue, *endpoint_ids)


def due(engine: Engine, queue: InlineQueue, *endpoint_ids: str) -> int:
    delivery.dispatch_due(queue)
    return mine(engine, queue, *endpoint_ids)


def attempts(engine: Engine, endpoint_id: str) -> list[repo.Delivery]:
    with engine.connect() as conn:
        return sorted(repo.list_deliveries(conn, endpoint_id), key=lambda d: d.attempt)


# -- tests --------------------------------------------------------------------------------------

def test_a_delivery_is_signed_per_standard_webhooks(ctx, queue, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    event_id = emit(engine, clock, workspace_id, data={"comment": {"id": "c1", "body": "héllo"}})
    assert pending(engine, queue, endpoint.id) == 1
    assert queue.drain() == ["succeeded"]

    [request] = receiver.requests
    assert request.path == "/hook"
    assert request.headers["webhook-id"] == event_id
    assert request.headers["content-type"] == "application/json"
    assert int(request.headers["webhook-timestamp"]) == int(clock.now().timestamp())
    assert request.headers["webhook-signature"].startswith("v1,")
    body = verify(endpoint.secret, request)
    assert body == {"id": event_id, "type": "comment.created", "created_at": clock.now().isoformat(),
                    "workspace_id": workspace_id, "data": {"comment": {"id": "c1", "body": "héllo"}}}

    for index in (0, len(request.body) // 2, len(request.body) - 1):
        tampered = bytearray(request.body)
        tampered[index] ^= 0x01
        with pytest.raises(WebhookVerificationError):
            Webhook(endpoint.secret).verify(bytes(tampered), request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(request.body, request.headers)

    [attempt] = attempts(engine, endpoint.id)
    assert (attempt.attempt, attempt.state, attempt.status_code, attempt.error, attempt.next_attempt_at) == \
        (1, "succeeded", 200, None, None)
    assert attempt.latency_ms is not None and attempt.latency_ms >= 0


def test_events_fan_out_once_in_order_to_subscribed_enabled_endpoints(ctx, queue, engine, clock, workspace_id,
                                                                         receiver):
    every = add_endpoint(engine, clock, workspace_id, receiver.url + "?all")
    only_deleted = add_endpoint(engine, clock, workspace_id, receiver.url + "?deleted", ["comment.deleted"])
    off = add_endpoint(engine, clock, workspace_id, receiver.url + "?off")
    with transaction(engine) as conn:
        repo.disable_endpoint(conn, clock, off.id, "test")
    created = emit(engine, clock, workspace_id, "comment.created")
    clock.advance(1)
    deleted = emit(engine, clock, workspace_id, "comment.deleted")

    ids = (every.id, only_deleted.id, off.id)
    assert pending(engine, queue, *ids) == 3
    assert pending(engine, queue, *ids) == 3  # already dispatched: nothing new
    queue.drain()
    seen = [(r.path.split("?")[1], r.headers["webhook-id"]) for r in receiver.requests]
    assert sorted(seen) == sorted([("all", created), ("all", deleted), ("deleted", deleted)])
    assert [e for p, e in seen if p == "all"] == [created, deleted]  # outbox order
    with engine.connect() as conn:
        assert conn.execute(select(event_outbox.c.dispatched_at).where(
            event_outbox.c.id.in_([created, deleted]))).scalars().all() == [clock.now(), clock.now()]
    assert attempts(engine, off.id) == []
    assert [d.event_id for d in attempts(engine, only_deleted.id)] == [deleted]
    assert due(engine, queue, *ids) == 0 and queue.drain() == []
    assert len(receiver.requests) == 3


def test_a_failed_attempt_is_retried_with_the_same_webhook_id(ctx, queue, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    receiver.statuses = [500]
    event_id = emit(engine, clock, workspace_id)
    pending(engine, queue, endpoint.id)
    assert queue.drain() == ["failed"]

    first, retry = attempts(engine, endpoint.id)
    assert (first.attempt, first.state, first.status_code, first.error) == \
        (1, "failed", 500, "the endpoint answered 500")
    assert first.latency_ms is not None
    assert (retry.attempt, retry.state, retry.status_code) == (2, "pending", None)
    assert first.next_attempt_at == retry.next_attempt_at
    assert 4.5 <= (retry.next_attempt_at - clock.now()).total_seconds() <= 5.5

    assert due(engine, queue, endpoint.id) == 0  # not yet due
    clock.advance(6)
    assert due(engine, queue, endpoint.id) == 1
    assert queue.drain() == ["succeeded"]
    assert due(engine, queue, endpoint.id) == 0

    assert [r.headers["webhook-id"] for r in receiver.requests] == [event_id, event_id]
    assert verify(endpoint.secret, receiver.requests[1])["id"] == event_id
    assert [(d.attempt, d.state, d.status_code) for d in attempts(engine, endpoint.id)] == \
        [(1, "failed", 500), (2, "succeeded", 200)]
    assert all(d.latency_ms is not None for d in attempts(engine, endpoint.id))


def test_an_attempt_is_sent_once_even_if_enqueued_twice(ctx, queue, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    emit(engine, clock, workspace_id)
    assert pending(engine, queue, endpoint.id) == 1
    [delivery_id] = [d.id for d in attempts(engine, endpoint.id)]
    assert delivery.deliver(delivery_id) == "succeeded"
    assert delivery.deliver(delivery_id) is None
    assert queue.drain() == [None]  # the queued task finds the attempt done
    assert due(engine, queue, endpoint.id) == 0
    assert len(receiver.requests) == 1


def test_410_gone_disables_the_endpoint(ctx, queue, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    receiver.statuses = [410]
    event_id = emit(engine, clock, workspace_id)
    pending(engine, queue, endpoint.id)
    assert queue.drain() == ["failed"]
    [attempt] = attempts(engine, endpoint.id)
    assert (attempt.state, attempt.status_code, attempt.next_attempt_at) == ("failed", 410, None)
    with engine.connect() as conn:
        row = conn.execute(select(webhook_endpoints).where(webhook_endpoints.c.id == endpoint.id)).one()
    assert row.enabled is False
    assert row.disabled_reason.startswith(f"answered 410 Gone to event {event_id}")

    emit(engine, clock, workspace_id)
    assert pending(engine, queue, endpoint.id) == 0  # a disabled endpoint gets nothing new
    assert len(receiver.requests) == 1


def test_an_unreachable_endpoint_is_retried_and_logged(ctx, queue, engine, clock, workspace_id, receiver):
    url = receiver.url
    receiver.server.shutdown()
    receiver.server.server_close()
    endpoint = add_endpoint(engine, clock, workspace_id, url)
    emit(engine, clock, workspace_id)
    pending(engine, queue, endpoint.id)
    assert queue.drain() == ["failed"]
    first, retry = attempts(engine, endpoint.id)
    assert first.status_code is None and first.latency_ms is None
    assert first.error and "could not reach" in first.error
    assert retry.state == "pending"


def test_the_last_attempt_gives_up(ctx, queue, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    receiver.statuses = [503] * 20
    emit(engine, clock, workspace_id)
    pending(engine, queue, endpoint.id)
    queue.drain()
    for _ in delivery.RETRY_SCHEDULE_SEC:
        clock.advance(hours=27)
        assert due(engine, queue, endpoint.id) == 1
        queue.drain()
    log = attempts(engine, endpoint.id)
    assert len(log) == len(delivery.RETRY_SCHEDULE_SEC) + 1 == 10
    assert [d.state for d in log] == ["failed"] * 9 + ["gave_up"]
    assert log[-1].next_attempt_at is None
    clock.advance(hours=48)
    assert due(engine, queue, endpoint.id) == 0
    assert len(receiver.requests) == 10


def test_a_private_address_is_refused_at_delivery_without_allow_private(ctx, queue, engine, clock, workspace_id,
                                                                         receiver):
    from dataclasses import replace

    configure(replace(ctx, settings=replace(ctx.settings, fetch_allow_private=False)))
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    emit(engine, clock, workspace_id)
    pending(engine, queue, endpoint.id)
    assert queue.drain() == ["failed"]
    first = attempts(engine, endpoint.id)[0]
    assert first.status_code is None and "not a public address" in (first.error or "")
    assert receiver.requests == []


def test_concurrent_dispatchers_fan_each_event_out_once(ctx, engine, clock, workspace_id, receiver):
    endpoint = add_endpoint(engine, clock, workspace_id, receiver.url)
    events = [emit(engine, clock, workspace_id) for _ in range(20)]
    queues = [InlineQueue() for _ in range(4)]
    barrier = threading.Barrier(len(queues))
    failures: list[BaseException] = []

    def run(q: InlineQueue) -> None:
        try:
            barrier.wait()
            delivery.dispatch_pending(q, ctx)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
    threads = [threading.Thread(target=run, args=(q,)) for q in queues]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sum(mine(engine, q, endpoint.id) for q in queues) == 20
    for q in queues:
        q.drain()
    assert sorted(r.headers["webhook-id"] for r in receiver.requests) == sorted(events)
    with engine.connect() as conn:
        rows = conn.execute(select(webhook_deliveries.c.event_id).where(
            webhook_deliveries.c.endpoint_id == endpoint.id)).scalars().all()
    assert sorted(rows) == sorted(events)


@pytest.mark.parametrize("attempt", range(1, 10))
def test_the_schedule_has_jitter_within_ten_percent(attempt):
    base = delivery.RETRY_SCHEDULE_SEC[attempt - 1]
    assert delivery.retry_delay(attempt, lambda: 0.0) == pytest.approx(base * 0.9)
    assert delivery.retry_delay(attempt, lambda: 1.0) == pytest.approx(base * 1.1)
    assert delivery.retry_delay(attempt, lambda: 0.5) == pytest.approx(base)
    samples = {delivery.retry_delay(attempt) for _ in range(200)}
    assert all(base * 0.9 <= s <= base * 1.1 for s in samples)
    assert len(samples) > 100  # actually jittered


def test_the_schedule_matches_the_documented_one():
    assert delivery.RETRY_SCHEDULE_SEC == (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
    assert delivery.retry_delay(10) is None


def test_event_body_is_compact_json():
    event = repo.Event(id="evt_x", workspace_id="w", type="webhook.test", payload={"a": 1},
                       created_at=datetime(2025, 1, 1, tzinfo=UTC), dispatched_at=None)
    assert json.loads(delivery.event_body(event)) == {
        "id": "evt_x", "type": "webhook.test", "created_at": "2025-01-01T00:00:00+00:00", "workspace_id": "w",
        "data": {"a": 1}}
    assert b" " not in delivery.event_body(event)
