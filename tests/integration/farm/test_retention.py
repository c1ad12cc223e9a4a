"""Retention: expired idempotency keys, old webhook delivery attempts and old dispatched events are
deleted, in batches, from the embedded maintenance round and a worker node's; nothing still needed is.

``purge`` deletes across every workspace, so these tests run on a database of their own (SQLite
and PostgreSQL) and compare exact counts; the clock is a ``FixedClock`` moved by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import Engine, Table, select

from reelfarm.farm.runtime import retention
from reelfarm.farm.runtime.context import TaskContext, configure
from reelfarm.farm.runtime.maintenance import embedded_maintenance
from reelfarm.farm.runtime.nodes import Capabilities, NodeRegistry
from reelfarm.farm.runtime.retention import Purged, PurgeSchedule, purge
from reelfarm.farm.runtime.worker import NodeHeartbeat
from reelfarm.farm.services.progress import MemoryProgress
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.shared.clock import FixedClock
from reelfarm.shared.config import Settings
from reelfarm.shared.db import make_engine, transaction
from reelfarm.shared.errors import ConfigError
from reelfarm.shared.repos import idempotency as idem_repo
from reelfarm.shared.repos import webhooks as repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.storage import LocalStorage
from reelfarm.shared.tables import event_outbox, idempotency_records, webhook_deliveries, webhook_endpoints
from reelfarm.studio.webhooks import new_secret
from tests.integration.conftest import BACKENDS, migrated

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "s" * 48
FINGERPRINT = idem_repo.Fingerprint("POST", "/api/v1/videos", "0" * 64)


def _maintain(queue: Any) -> None:
    """One tick of the embedded executor's maintenance (``reelfarm.farm.runtime.maintenance``)."""
    embedded_maintenance(queue)()


# -- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=BACKENDS)
def own_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated database for this module alone (the session's PostgreSQL one holds other tests' rows)."""
    if request.param == "postgresql":
        return migrated(str(request.getfixturevalue("postgres_server").create_database()))
    return migrated(f"sqlite:///{tmp_path_factory.mktemp('retention')}/reelfarm.db")


@pytest.fixture
def engine(own_db_url: str) -> Iterator[Engine]:
    engine = make_engine(own_db_url)
    yield engine
    with transaction(engine) as conn:
        for table in (idempotency_records, webhook_deliveries, event_outbox, webhook_endpoints):
            conn.execute(table.delete())
    engine.dispose()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


def settings_with(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path / "data"), "REELFARM_SECRET_KEY": SECRET, **env})


@pytest.fixture
def ctx(engine: Engine, clock: FixedClock, storage: LocalStorage, tmp_path: Path) -> TaskContext:
    context = TaskContext(engine=engine, storage=storage, clock=clock, progress=MemoryProgress(),
                          settings=settings_with(tmp_path))
    configure(context)
    return context


@pytest.fixture
def workspace_id(engine: Engine, clock: FixedClock) -> str:
    with transaction(engine) as conn:
        return ws_repo.create_workspace(conn, clock, name="keep", plan="pro", brand_tokens=NEUTRAL_BRAND).id


@pytest.fixture
def endpoint_id(engine: Engine, clock: FixedClock, workspace_id: str) -> str:
    with transaction(engine) as conn:
        return repo.create_endpoint(conn, clock, workspace_id=workspace_id, url="https://hooks.example.com/in",
                                    events=[], description=None, secret=new_secret()).id


# -- helpers ------------------------------------------------------------------------------------

def claim(engine: Engine, clock: FixedClock, workspace_id: str, key: str, complete: bool = True) -> None:
    """An idempotency record made now: answered (``complete``), or a request that died holding it."""
    claimed = idem_repo.claim_key(engine, workspace_id, key, FINGERPRINT, clock.now(), timedelta(seconds=60),
                                  idem_repo.KEY_TTL)
    assert claimed.claimed
    if complete:
        idem_repo.complete_key(engine, workspace_id, key, 201, b'{"id":"v1"}', {}, clock.now())


def event(engine: Engine, clock: FixedClock, workspace_id: str, dispatched: bool = True) -> str:
    """An event written now and, when ``dispatched``, fanned out now."""
    with transaction(engine) as conn:
        event_id = add_event(conn, clock, workspace_id=workspace_id, type="comment.created",
                             payload={"comment": {"id": "c1"}})
        if dispatched:
            assert repo.claim_event(conn, event_id, clock.now()) is not None
    return event_id


def attempt(engine: Engine, clock: FixedClock, endpoint_id: str, event_id: str, state: str = "succeeded",
            retry_at: datetime | None = None) -> str:
    """A delivery attempt made now and left in ``state`` (a failed one scheduling a retry at ``retry_at``)."""
    with transaction(engine) as conn:
        number = repo.next_attempt_number(conn, endpoint_id, event_id)
        delivery = repo.insert_delivery(conn, clock, endpoint_id=endpoint_id, event_id=event_id, attempt=number,
                                        due=clock.now())
        if state != "pending":
            repo.finish_delivery(conn, delivery.id, state=state, status_code=200 if state == "succeeded" else 500,
                                 latency_ms=12, next_attempt_at=retry_at)
    return delivery.id


def ids(engine: Engine, table: Table) -> set[str]:
    column = table.c.key if table is idempotency_records else table.c.id
    with engine.connect() as conn:
        return set(conn.execute(select(column)).scalars())


class RecordingQueue:
    """A JobQueue that only records what is enqueued."""

    def __init__(self) -> None:
        self.enqueued: list[tuple[str, tuple[Any, ...]]] = []

    def enqueue(self, func_path: str, *args: Any, **options: Any) -> None:
        self.enqueued.append((func_path, args))

    def cancel(self, job_id: str) -> None:
        return None

    def ping(self) -> None:
        return None


# -- idempotency records ------------------------------------------------------------------------

def test_expired_idempotency_keys_go_and_fresh_ones_stay(ctx, engine, clock, workspace_id):
    claim(engine, clock, workspace_id, "answered")
    claim(engine, clock, workspace_id, "died-holding-it", complete=False)
    clock.advance(hours=2)
    claim(engine, clock, workspace_id, "fresh")
    clock.set(T0 + timedelta(hours=24, minutes=1))

    assert purge() == Purged(idempotency_records=2)

    assert ids(engine, idempotency_records) == {"fresh"}
    replay = idem_repo.claim_key(engine, workspace_id, "fresh", FINGERPRINT, clock.now(), timedelta(seconds=60),
                                 idem_repo.KEY_TTL)
    assert (replay.claimed, replay.record and replay.record.status_code) == (False, 201)  # still replayed


def test_the_purge_keeps_keys_for_as_long_as_the_api_replays_them():
    from reelfarm.api.idempotency import TTL

    assert idem_repo.KEY_TTL == TTL == timedelta(hours=24)


# -- events and delivery attempts ---------------------------------------------------------------

def test_old_dispatched_events_with_finished_deliveries_go(ctx, engine, clock, workspace_id, endpoint_id):
    retried = event(engine, clock, workspace_id)
    attempt(engine, clock, endpoint_id, retried, "failed", retry_at=clock.now() + timedelta(seconds=5))
    clock.advance(seconds=5)
    attempt(engine, clock, endpoint_id, retried, "succeeded")
    attempt(engine, clock, endpoint_id, event(engine, clock, workspace_id), "gave_up")
    attempt(engine, clock, endpoint_id, event(engine, clock, workspace_id), "failed")  # 410 Gone: no retry
    event(engine, clock, workspace_id)  # no endpoint wanted it: no attempt at all
    clock.set(T0 + timedelta(days=31))

    assert purge() == Purged(deliveries=4, events=4)

    assert ids(engine, event_outbox) == set()
    assert ids(engine, webhook_deliveries) == set()


def test_undispatched_retrying_and_recent_events_stay(ctx, engine, clock, workspace_id, endpoint_id):
    undispatched = event(engine, clock, workspace_id, dispatched=False)
    stuck = event(engine, clock, workspace_id)
    stuck_attempt = attempt(engine, clock, endpoint_id, stuck, "pending")  # never tried: the farm was down
    redelivered = event(engine, clock, workspace_id)
    first_try = attempt(engine, clock, endpoint_id, redelivered, "succeeded")
    clock.set(T0 + timedelta(days=2))
    recent = event(engine, clock, workspace_id)
    recent_attempt = attempt(engine, clock, endpoint_id, recent, "succeeded")
    clock.set(T0 + timedelta(days=31))
    failed_again = attempt(engine, clock, endpoint_id, redelivered, "failed",  # redelivered today, to retry
                           retry_at=clock.now() + timedelta(minutes=5))
    retry = attempt(engine, clock, endpoint_id, redelivered, "pending")

    assert purge() == Purged(deliveries=1)  # only the old finished attempt

    assert ids(engine, event_outbox) == {undispatched, stuck, redelivered, recent}
    assert ids(engine, webhook_deliveries) == {stuck_attempt, recent_attempt, failed_again, retry}
    assert first_try not in ids(engine, webhook_deliveries)


def test_old_delivery_attempts_go_and_their_event_with_the_last(ctx, engine, clock, workspace_id, endpoint_id):
    event_id = event(engine, clock, workspace_id)
    attempt(engine, clock, endpoint_id, event_id, "succeeded")
    clock.set(T0 + timedelta(days=20))
    redelivery = attempt(engine, clock, endpoint_id, event_id, "succeeded")
    clock.set(T0 + timedelta(days=31))

    assert purge() == Purged(deliveries=1)
    with engine.connect() as conn:
        assert [d.id for d in repo.list_deliveries(conn, endpoint_id)] == [redelivery]  # what the log shows
    assert ids(engine, event_outbox) == {event_id}  # its redelivery is still in the log

    clock.set(T0 + timedelta(days=51))
    assert purge() == Purged(deliveries=1, events=1)
    assert ids(engine, event_outbox) == set()


def test_a_failed_attempt_waits_for_its_retry_and_the_period_comes_from_settings(
        engine, clock, storage, tmp_path, workspace_id, endpoint_id):
    configure(TaskContext(engine=engine, storage=storage, clock=clock, progress=MemoryProgress(),
                          settings=settings_with(tmp_path, REELFARM_RETENTION_DAYS="1")))
    event_id = event(engine, clock, workspace_id)
    failed = attempt(engine, clock, endpoint_id, event_id, "failed", retry_at=T0 + timedelta(hours=26))
    retry = attempt(engine, clock, endpoint_id, event_id, "pending")  # written with the failure, due later
    clock.set(T0 + timedelta(hours=25))

    assert purge() == Purged()
    assert ids(engine, webhook_deliveries) == {failed, retry}

    clock.set(T0 + timedelta(hours=27))
    with transaction(engine) as conn:
        repo.finish_delivery(conn, retry, state="succeeded", status_code=200, latency_ms=9)
    assert purge() == Purged(deliveries=2, events=1)  # a day after they were made, all finished


# -- batches ------------------------------------------------------------------------------------

def test_a_backlog_goes_over_several_batches(ctx, engine, clock, workspace_id, endpoint_id):
    for i in range(7):
        claim(engine, clock, workspace_id, f"key-{i}")
        attempt(engine, clock, endpoint_id, event(engine, clock, workspace_id), "succeeded")
    clock.set(T0 + timedelta(days=31))

    assert purge(batch=3, round_sec=0) == Purged(3, 3, 3)  # out of time: one batch of each kind
    assert purge(batch=2, max_batches=1) == Purged(2, 2, 2)  # the round stops at its bound
    assert (len(ids(engine, idempotency_records)), len(ids(engine, webhook_deliveries)),
            len(ids(engine, event_outbox))) == (2, 2, 2)
    assert purge(batch=1) == Purged(2, 2, 2)  # several batches in one round
    assert purge(batch=1) == Purged()


# -- configuration ------------------------------------------------------------------------------

def test_the_retention_period_defaults_to_30_days(tmp_path):
    assert settings_with(tmp_path).retention_days == 30
    assert settings_with(tmp_path, REELFARM_RETENTION_DAYS="7").retention_days == 7
    assert retention.retention_period(None) == timedelta(days=30)


@pytest.mark.parametrize("value", ["0", "-3", "thirty", "1.5", "36501"])
def test_a_bad_retention_period_is_refused_at_start(tmp_path, value):
    with pytest.raises(ConfigError) as raised:
        settings_with(tmp_path, REELFARM_RETENTION_DAYS=value)
    assert raised.value.variable == "REELFARM_RETENTION_DAYS"
    assert str(raised.value).startswith("REELFARM_RETENTION_DAYS: ")


# -- where it runs ------------------------------------------------------------------------------

def test_the_schedule_allows_a_purge_every_few_minutes():
    now = [1000.0]
    schedule = PurgeSchedule(every_sec=300, monotonic=lambda: now[0])
    assert schedule.due()
    now[0] += 299
    assert not schedule.due()
    now[0] += 1
    assert schedule.due()


def test_the_embedded_round_purges_when_due_and_survives_a_failing_purge(ctx, engine, clock, workspace_id,
                                                                         monkeypatch, caplog):
    now = [0.0]
    monkeypatch.setattr(retention, "SCHEDULE", PurgeSchedule(every_sec=300, monotonic=lambda: now[0]))
    queue = RecordingQueue()
    claim(engine, clock, workspace_id, "first")
    clock.advance(hours=25)

    _maintain(queue)
    assert ids(engine, idempotency_records) == set()

    claim(engine, clock, workspace_id, "second")
    clock.advance(hours=25)
    now[0] += 5
    _maintain(queue)  # the next tick: not due yet
    assert ids(engine, idempotency_records) == {"second"}

    def broken(**_: Any) -> Purged:
        raise RuntimeError("database went away")

    monkeypatch.setattr(retention, "purge", broken)
    now[0] += 300
    with caplog.at_level(logging.ERROR, logger="reelfarm.farm"):
        _maintain(queue)  # does not raise
    assert "retention purge failed" in caplog.text
    assert ids(engine, idempotency_records) == {"second"}

    monkeypatch.setattr(retention, "purge", purge)
    now[0] += 300  # a failed purge waits its turn too, then runs again
    _maintain(queue)
    assert ids(engine, idempotency_records) == set()


def test_a_worker_node_purges_under_the_maintenance_lock_once_per_interval(ctx, engine, clock, workspace_id,
                                                                           redis, namespace):
    lock = f"reelfarm:{namespace}maintenance-lock"
    caps = Capabilities(hostname="node", pid=1, cores=1, gpu=None, nvenc=False)

    def node(name: str) -> NodeHeartbeat:
        return NodeHeartbeat(SimpleNamespace(name=f"{namespace}{name}"), NodeRegistry(redis, namespace), caps,
                             ["render"], [f"{namespace}render"], maintenance_lock=lock)

    claim(engine, clock, workspace_id, "first")
    clock.advance(hours=25)
    node("a").maintain()
    assert ids(engine, idempotency_records) == set()

    claim(engine, clock, workspace_id, "second")
    clock.advance(hours=25)
    node("b").maintain()  # node a holds the maintenance lock
    assert ids(engine, idempotency_records) == {"second"}
    redis.delete(lock)  # 30 s later: node b's turn, but the farm purged less than 5 minutes ago
    node("b").maintain()
    assert ids(engine, idempotency_records) == {"second"}
    assert redis.ttl(f"{lock}:retention") > 0

    redis.delete(lock, f"{lock}:retention")  # 5 minutes later
    node("b").maintain()
    assert ids(engine, idempotency_records) == set()


# -- segments kept for reuse --------------------------------------------------------------------

def test_kept_segments_unused_for_the_retention_period_go_with_their_files(ctx, engine, clock, storage,
                                                                          workspace_id):
    from reelfarm.farm.services.segments import cache_key
    from reelfarm.shared.repos import segments as segments_repo

    def kept(fingerprint: str) -> str:
        key = cache_key(workspace_id, fingerprint)
        storage.put_bytes(key, b"a segment", "video/mp4")
        with transaction(engine) as conn:
            assert segments_repo.keep(conn, clock, workspace_id, fingerprint, key)
            assert not segments_repo.keep(conn, clock, workspace_id, fingerprint, key), "kept once"
        return key

    old, reused, also_old = kept("a" * 64), kept("b" * 64), kept("c" * 64)
    clock.advance(days=29)
    with transaction(engine) as conn:
        segments_repo.used(conn, clock, workspace_id, ["b" * 64])  # a render reused it
    young = kept("d" * 64)
    clock.advance(days=2)

    assert purge() == Purged(segments=2)  # a..., c...: 31 days unused

    assert not storage.exists(old) and not storage.exists(also_old)
    assert storage.exists(reused) and storage.exists(young)
    with engine.connect() as conn:
        assert set(segments_repo.kept(conn, workspace_id, ["a" * 64, "b" * 64, "c" * 64, "d" * 64])) == {
            "b" * 64, "d" * 64}
