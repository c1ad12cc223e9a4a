"""One contract, two queues: EmbeddedQueue (SQLite and PostgreSQL) and RQQueue (real Redis, run by
RQ's SimpleWorker in burst mode)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.runtime.wiring import make_redis
from reelfarm.farm.services.errors import QueueUnavailable
from reelfarm.farm.services.queues import JobQueue, Turn
from reelfarm.shared.db import make_engine
from tests.integration.farm.conftest import clear_tasks, work_burst
from tests.integration.farm.jobs_for_tests import recorded

JOBS = "tests.integration.farm.jobs_for_tests"
HANDLER = f"{JOBS}.failed"


class Runner:
    """A queue and a way to run everything it holds to the end."""

    def __init__(self, queue: JobQueue, run: Any) -> None:
        self.queue = queue
        self.run = run


@pytest.fixture(params=["embedded-sqlite", "embedded-postgresql", "rq"])
def runner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runner]:
    if request.param == "rq":
        redis, namespace = request.getfixturevalue("redis"), request.getfixturevalue("namespace")
        queue = RQQueue(redis, namespace=namespace, retry_intervals=(0,), failure_handler=HANDLER)
        yield Runner(queue, lambda: work_burst(redis, namespace))
        return
    if request.param == "embedded-postgresql":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite:///{tmp_path}/queue.db"
        from reelfarm.shared.db import migrate
        migrate(make_engine(url))
    engine = make_engine(url)
    clear_tasks(engine)
    embedded = EmbeddedQueue(engine, workers=2, poll_sec=0.05, retry_intervals=(0,), failure_handler=HANDLER)

    def run() -> None:
        embedded.start()
        assert embedded.wait_idle(60)
    yield Runner(embedded, run)
    embedded.stop()
    clear_tasks(engine)
    engine.dispose()


def test_jobs_run_with_their_arguments_after_their_dependencies(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    runner.queue.enqueue(f"{JOBS}.slow", out, "a", 0.3, job_id="a")
    runner.queue.enqueue(f"{JOBS}.record", out, "b", job_id="b")
    runner.queue.enqueue(f"{JOBS}.record", out, "c", job_id="c", depends_on=["a", "b"])
    runner.run()
    assert sorted(recorded(out)[:2]) == ["a", "b"] and recorded(out)[2:] == ["c"]


def test_a_failing_job_is_retried(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    runner.queue.enqueue(f"{JOBS}.fail_times", out, 2, "done", job_id="flaky", retries=2)
    runner.run()
    assert recorded(out) == ["done"]
    assert len(recorded(out + ".attempts")) == 3
    assert recorded(out + ".failed") == []


def test_when_retries_are_spent_the_failure_handler_runs_once_and_dependents_do_not(
        runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    runner.queue.enqueue(f"{JOBS}.fail_times", out, 5, "never", job_id="doomed", retries=1)
    runner.queue.enqueue(f"{JOBS}.record", out, "after", job_id="after", depends_on=["doomed"])
    runner.run()
    assert recorded(out) == []
    assert len(recorded(out + ".attempts")) == 2
    assert recorded(out + ".failed") == ["fail_times never: an internal error (RuntimeError)"]


def test_a_canceled_job_and_its_dependents_do_not_run(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    runner.queue.enqueue(f"{JOBS}.record", out, "kept", job_id="kept")
    runner.queue.enqueue(f"{JOBS}.record", out, "dropped", job_id="dropped")
    runner.queue.enqueue(f"{JOBS}.record", out, "dependent", job_id="dependent", depends_on=["dropped"])
    runner.queue.cancel("dropped")
    runner.queue.cancel("no-such-job")
    runner.run()
    assert recorded(out) == ["kept"]


def test_enqueueing_a_waiting_job_again_runs_it_once(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    for _ in range(3):
        runner.queue.enqueue(f"{JOBS}.record", out, "once", job_id="same")
    runner.run()
    assert recorded(out) == ["once"]


def test_jobs_enqueued_in_a_batch_run_as_if_enqueued_one_by_one(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with runner.queue.batch():
        runner.queue.enqueue(f"{JOBS}.slow", out, "a", 0.2, job_id="a")
        runner.queue.enqueue(f"{JOBS}.record", out, "b", job_id="b", depends_on=["a"])
        runner.queue.enqueue(f"{JOBS}.record", out, "b", job_id="b", depends_on=["a"])  # again: once
    runner.queue.enqueue(f"{JOBS}.record", out, "c", job_id="c", depends_on=["b"])
    runner.run()
    assert recorded(out) == ["a", "b", "c"]


def test_an_embedded_batch_that_fails_enqueues_nothing(tmp_path: Path) -> None:
    from reelfarm.shared.db import migrate

    url = f"sqlite:///{tmp_path}/queue.db"
    migrate(make_engine(url))
    engine = make_engine(url)
    embedded = EmbeddedQueue(engine, workers=1, poll_sec=0.05, retry_intervals=(0,), failure_handler=HANDLER)
    out = str(tmp_path / "out")
    with pytest.raises(QueueUnavailable), embedded.batch():
        embedded.enqueue(f"{JOBS}.record", out, "a", job_id="a")
        raise QueueUnavailable("the next task could not be written")
    embedded.enqueue(f"{JOBS}.record", out, "b", job_id="b")
    embedded.start()
    try:
        assert embedded.wait_idle(60)
    finally:
        embedded.stop()
        engine.dispose()
    assert recorded(out) == ["b"]  # all or nothing: the first task of the failed batch is not there


def test_a_raised_render_takes_its_waiting_chunks_ahead_and_is_never_lowered(runner: Runner, tmp_path: Path) -> None:
    out = str(tmp_path / "out")

    def chunks(render: str, priority: str, count: int = 2, after: str | None = None) -> None:
        for index in range(count):
            runner.queue.enqueue(f"{JOBS}.record", out, f"{render}{index}", job_id=f"render-{render}-chunk-{index}",
                                 depends_on=[after] if after else None, turn=Turn("w", render, 100, priority, index))

    chunks("batch", "low")
    chunks("person", "low")
    runner.queue.enqueue(f"{JOBS}.slow", out, "gate", 0.2, job_id="gate")
    chunks("later", "low", count=1, after="gate")  # deferred: raised before it may wait
    assert runner.queue.standing("person")["frames_ahead"] == 100  # type: ignore[index]  # in turn with the batch

    assert runner.queue.raise_priority("person", "low") == 0
    assert runner.queue.raise_priority("person", "normal") == 2
    assert runner.queue.raise_priority("later", "normal") == 1
    assert runner.queue.standing("person")["frames_ahead"] == 0  # type: ignore[index]  # no kept line answers
    assert runner.queue.standing("batch")["frames_ahead"] == 200  # type: ignore[index]
    assert runner.queue.raise_priority("person", "normal") == 0  # raised already
    runner.run()
    done = [value for value in recorded(out) if value.startswith(("person", "batch"))]
    assert sorted(done[:2]) == ["person0", "person1"] and sorted(done[2:]) == ["batch0", "batch1"]


def test_ping_answers_while_the_backend_is_up(runner: Runner) -> None:
    runner.queue.ping()


@pytest.mark.parametrize("queue", ["rq", "embedded"])
def test_a_backend_that_is_down_raises_queue_unavailable(queue: str) -> None:
    if queue == "rq":
        down: JobQueue = RQQueue(make_redis("redis://127.0.0.1:1/15"))
    else:
        down = EmbeddedQueue(make_engine("postgresql+psycopg2://postgres@127.0.0.1:1/nothing",
                                         connect_args={"connect_timeout": 2}))
    with pytest.raises(QueueUnavailable):
        down.ping()
    with pytest.raises(QueueUnavailable):
        down.enqueue(f"{JOBS}.record", "/dev/null", "x", job_id="x")
    with pytest.raises(QueueUnavailable):
        down.cancel("x")
