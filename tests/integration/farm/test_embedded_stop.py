"""The embedded queue stopping (SQLite): a task running at ``stop`` finishes and is recorded by the
deadline, or goes back to the queue unspent and its process is killed; task processes leave
SIGTERM and SIGINT to the serving process, and end with it when it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import process as futures_process
from pathlib import Path

import pytest

from reelfarm.farm.runtime.embedded import EmbeddedQueue
from reelfarm.farm.runtime.nodes import pid_exists
from reelfarm.shared.db import make_engine
from tests.integration.farm.jobs_for_tests import record, recorded
from tests.integration.farm.test_embedded_queue import HANDLER, task, url  # noqa: F401 - url: the fixture
from tests.integration.farm.test_render_embedded import wait_for

ROOT = Path(__file__).resolve().parents[3]
SLOW = f"{__name__}.started_then_slow"


def started_then_slow(path: str, value: str, seconds: float) -> None:
    """Records its process id in ``<path>.started``, sleeps, then records ``value``."""
    record(path + ".started", str(os.getpid()))
    time.sleep(seconds)
    record(path, value)


@pytest.fixture
def queue(url: str) -> Iterator[EmbeddedQueue]:  # noqa: F811
    made = EmbeddedQueue(make_engine(url), workers=1, poll_sec=0.05, retry_intervals=(0,), failure_handler=HANDLER)
    yield made
    made.stop(0)
    made.engine.dispose()


def started_pid(out: str) -> int:
    return int(wait_for(lambda: recorded(out + ".started"))[0])


def test_a_stop_with_a_deadline_leaves_no_pool_thread_ending(queue: EmbeddedQueue, tmp_path: Path) -> None:
    """A serving process exits right after ``stop``: had the pool's manager thread still been
    closing its pipe then, Python's exit would write to it ("Bad file descriptor", tests/e2e/test_serve)."""
    out = str(tmp_path / "out")
    queue.enqueue(SLOW, out, "finished", 0.2, job_id="short")
    queue.start()
    started_pid(out)

    queue.stop(30)

    assert recorded(out) == ["finished"]
    assert [t for t in threading.enumerate() if isinstance(t, futures_process._ExecutorManagerThread)] == []


def test_a_task_running_at_stop_finishes_and_is_recorded_before_the_deadline(queue: EmbeddedQueue,
                                                                            tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue.enqueue(SLOW, out, "finished", 1.0, job_id="running")
    queue.enqueue(SLOW, out, "never", 0.0, job_id="waiting")
    queue.start()
    started_pid(out)

    queue.stop(30)

    assert recorded(out) == ["finished"]
    assert (task(queue.engine, "running")["status"], task(queue.engine, "running")["attempts"]) == ("succeeded", 1)
    assert (task(queue.engine, "waiting")["status"], task(queue.engine, "waiting")["attempts"]) == ("queued", 0)


def test_a_task_still_running_at_the_deadline_is_handed_back_unspent_and_its_process_killed(
        queue: EmbeddedQueue, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue.enqueue(SLOW, out, "cut", 60.0, job_id="long")
    queue.start()
    pid = started_pid(out)

    began = time.monotonic()
    queue.stop(0.5)

    assert time.monotonic() - began < 10
    assert not pid_exists(pid)
    row = task(queue.engine, "long")
    assert (row["status"], row["attempts"], row["claimed_by"], row["lease_until"]) == ("queued", 0, None, None)
    assert recorded(out) == []


def test_task_processes_leave_sigterm_and_sigint_to_the_serving_process(queue: EmbeddedQueue,
                                                                        tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    queue.enqueue(SLOW, out, "survived", 1.0, job_id="signalled")
    queue.start()
    pid = started_pid(out)
    os.kill(pid, signal.SIGTERM)
    os.kill(pid, signal.SIGINT)

    assert queue.wait_idle(30)
    assert recorded(out) == ["survived"]
    assert task(queue.engine, "signalled")["attempts"] == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_task_processes_end_with_a_serving_process_that_is_killed(url: str, tmp_path: Path) -> None:  # noqa: F811
    out = str(tmp_path / "out")
    serving = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from reelfarm.farm.runtime.embedded import EmbeddedQueue
        from reelfarm.shared.db import make_engine
        queue = EmbeddedQueue(make_engine({url!r}), workers=1, poll_sec=0.05)
        queue.enqueue({SLOW!r}, {out!r}, "orphaned", 60.0, job_id="orphan")
        queue.start()
        time.sleep(120)
        """)], cwd=ROOT)
    pid = 0
    try:
        pid = started_pid(out)
        serving.kill()  # as gunicorn's master kills a worker past its graceful timeout
        serving.wait(10)
        wait_for(lambda: not pid_exists(pid), timeout=10)
    finally:
        if serving.poll() is None:
            serving.kill()
        if pid and pid_exists(pid):
            os.kill(pid, signal.SIGKILL)
