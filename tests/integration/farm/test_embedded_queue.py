"""The embedded queue across restarts, crashes and several serving processes (SQLite)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.shared.db import make_engine, migrate
from reelfarm.shared.tables import queued_tasks
from tests.integration.farm.jobs_for_tests import recorded
from tests.integration.farm.test_render_embedded import wait_for

JOBS = "tests.integration.farm.jobs_for_tests"
HANDLER = f"{JOBS}.failed"


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/serve.db"
    engine = make_engine(url)
    migrate(engine)
    engine.dispose()
    return url


@pytest.fixture
def queues(url: str) -> Iterator[list[EmbeddedQueue]]:
    """Queues made by a test, each on its own engine, as separate serving processes would be."""
    made: list[EmbeddedQueue] = []
    yield made
    for queue in made:
        queue.stop()
        queue.engine.dispose()


def new_queue(url: str, queues: list[EmbeddedQueue], **options: object) -> EmbeddedQueue:
    queue = EmbeddedQueue(make_engine(url), poll_sec=0.05, retry_intervals=(0,), failure_handler=HANDLER,
                          **options)  # type: ignore[arg-type]
    queues.append(queue)
    return queue


def task(engine: Engine, task_id: str) -> dict[str, object]:
    with engine.connect() as conn:
        return dict(conn.execute(select(queued_tasks).where(queued_tasks.c.id == task_id)).one()._mapping)


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_queued_work_survives_a_restart(url: str, queues: list[EmbeddedQueue], tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    before = new_queue(url, queues)  # a `reelfarm serve` that queued work and stopped before running it
    before.enqueue(f"{JOBS}.record", out, "first", job_id="first")
    before.enqueue(f"{JOBS}.record", out, "second", job_id="second", depends_on=["first"])
    before.engine.dispose()

    after = new_queue(url, queues)  # the next `reelfarm serve`
    after.start()
    assert after.wait_idle(30)
    assert recorded(out) == ["first", "second"]


def test_work_claimed_by_a_process_that_died_is_run_again_on_start(url: str, queues: list[EmbeddedQueue],
                                                                   tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue = new_queue(url, queues)
    queue.enqueue(f"{JOBS}.record", out, "rescued", job_id="orphan")
    lease = datetime.now(UTC) + timedelta(hours=1)  # the lease alone would keep it for an hour
    with queue.engine.begin() as conn:
        conn.execute(update(queued_tasks).where(queued_tasks.c.id == "orphan").values(
            status="running", attempts=1, claimed_by=f"{socket.gethostname()}:{dead_pid()}:gone", lease_until=lease))

    queue.start()

    assert queue.wait_idle(30)
    assert recorded(out) == ["rescued"]
    assert (task(queue.engine, "orphan")["status"], task(queue.engine, "orphan")["attempts"]) == ("succeeded", 2)


def test_work_of_another_host_is_reclaimed_only_when_its_lease_runs_out(url: str, queues: list[EmbeddedQueue],
                                                                       tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue = new_queue(url, queues, lease_sec=1.0)
    for name, lease in (("expired", -5), ("held", 3600)):
        queue.enqueue(f"{JOBS}.record", out, name, job_id=name)
        with queue.engine.begin() as conn:
            conn.execute(update(queued_tasks).where(queued_tasks.c.id == name).values(
                status="running", attempts=1, claimed_by="elsewhere:1234:abcd",
                lease_until=datetime.now(UTC) + timedelta(seconds=lease)))
    queue.start()
    wait_for(lambda: recorded(out) == ["expired"])
    assert task(queue.engine, "held")["status"] == "running"


def test_a_task_whose_retries_are_spent_by_dead_processes_fails_with_the_handler(
        url: str, queues: list[EmbeddedQueue], tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue = new_queue(url, queues)
    queue.enqueue(f"{JOBS}.record", out, "late", job_id="spent", retries=0)
    with queue.engine.begin() as conn:
        conn.execute(update(queued_tasks).where(queued_tasks.c.id == "spent").values(
            status="running", attempts=1, claimed_by=f"{socket.gethostname()}:{dead_pid()}:gone"))
    queue.start()
    assert queue.wait_idle(30)
    assert recorded(out) == []
    assert recorded(out + ".failed") == ["record late: the process running it stopped"]
    assert task(queue.engine, "spent")["status"] == "failed"


def test_a_crashed_pool_process_is_replaced_and_its_task_retried(url: str, queues: list[EmbeddedQueue],
                                                                 tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue = new_queue(url, queues, workers=2)
    queue.enqueue(f"{JOBS}.exit_once", out, "survived", job_id="crashy", retries=2)
    queue.start()
    assert queue.wait_idle(60)
    queue.enqueue(f"{JOBS}.record", out, "after", job_id="after")  # the new pool works
    assert queue.wait_idle(30)
    assert recorded(out) == ["survived", "after"]


def test_several_serving_processes_run_each_task_exactly_once(url: str, queues: list[EmbeddedQueue],
                                                              tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    first, second = new_queue(url, queues, workers=2), new_queue(url, queues, workers=2)
    for i in range(30):
        first.enqueue(f"{JOBS}.record", out, str(i), job_id=f"t{i}")
    first.start()
    second.start()
    assert first.wait_idle(60) and second.wait_idle(60)
    assert sorted(recorded(out), key=int) == [str(i) for i in range(30)]
    with first.engine.connect() as conn:
        claimers = set(conn.execute(select(queued_tasks.c.claimed_by)).scalars())
    assert claimers <= {first.name, second.name}


@pytest.mark.parametrize(("priority", "added", "scheduler"), [("idle", 19, "idle"), ("low", 10, "other"),
                                                              ("normal", 0, "other")])
def test_tasks_run_at_the_priority_asked_below_the_serving_process(url: str, queues: list[EmbeddedQueue],
                                                                   tmp_path: Path, priority: str, added: int,
                                                                   scheduler: str) -> None:
    """``idle`` (the default) runs only on cores left idle; ``low`` and ``normal`` for a host with
    other work, where SCHED_IDLE would starve renders."""
    out = str(tmp_path / "nice")
    queue = new_queue(url, queues, task_priority=priority)
    queue.enqueue(f"{JOBS}.record_niceness", out, job_id="nice")
    queue.start()
    assert queue.wait_idle(30)
    assert recorded(out) == [str(min(19, os.nice(0) + added)), scheduler]


def test_the_priority_is_read_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    from reelfarm.shared import config
    from reelfarm.shared.config import Settings
    from reelfarm.shared.errors import ConfigError
    from tests.conftest import SHIPPED_TASK_PRIORITY

    assert SHIPPED_TASK_PRIORITY == "idle"  # what a user gets; the suite's own is set in tests/conftest.py
    assert Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path)}).task_priority == config.DEFAULT_TASK_PRIORITY
    assert Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_TASK_PRIORITY": "low"}).task_priority == "low"
    with pytest.raises(ConfigError, match="REELFARM_TASK_PRIORITY"):
        Settings.from_env({"REELFARM_DATA_DIR": str(tmp_path), "REELFARM_TASK_PRIORITY": "high"})


def test_a_dispatcher_that_finds_the_farm_full_takes_no_write_lock(url: str, queues: list[EmbeddedQueue],
                                                                    tmp_path: Path) -> None:
    """Every enqueue wakes each serving process's dispatcher; one that finds ``max_running`` tasks
    running (another process's) must not take a turn in SQLite's one writers' line for nothing,
    and claims as soon as there is room."""
    from sqlalchemy import event

    out = str(tmp_path / "out")
    queue = new_queue(url, queues, max_running=1)
    queue.enqueue(f"{JOBS}.record", out, "waiting", job_id="waiting")
    with queue.engine.begin() as conn:  # another process's task, running
        conn.execute(queued_tasks.insert().values(
            id="elsewhere", func=f"{JOBS}.record", args=[out, "x"], queue="render", status="running",
            depends_on=[], attempts=1, max_attempts=3, claimed_by="other-host:1",
            lease_until=datetime.now(UTC) + timedelta(minutes=5), run_after=datetime.now(UTC),
            created_at=datetime.now(UTC), updated_at=datetime.now(UTC)))
    begins: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.strip().upper().startswith("BEGIN IMMEDIATE"):
            begins.append(statement)

    event.listen(queue.engine, "before_cursor_execute", seen)
    try:
        assert queue._claim(1) == [] and begins == []
        with queue.engine.begin() as conn:
            conn.execute(update(queued_tasks).where(queued_tasks.c.id == "elsewhere").values(status="succeeded"))
        claimed = queue._claim(1)
        assert [c.id for c in claimed] == ["waiting"] and len(begins) == 1
    finally:
        event.remove(queue.engine, "before_cursor_execute", seen)
