"""The process's outage log: one warning when a dependency goes, one info line when it is back,
nothing above debug in between, however many threads and rounds meet the outage."""
from __future__ import annotations

import logging
import os
import threading
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.exc import OperationalError

from reelfarm.farm.runtime import resilience
from reelfarm.farm.runtime.resilience import DATABASE, REDIS, Outage, OutageLog, dependency_of

REFUSED = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
DB_DOWN = OperationalError("SELECT 1", {}, Exception("connection to server at \"127.0.0.1\", port 5432 failed"))


def _lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= level]


def test_eight_threads_failing_forty_times_each_make_one_gone_and_one_back_line(
        caplog: pytest.LogCaptureFixture) -> None:
    outages = OutageLog(logging.getLogger("reelfarm.farm"))
    start = threading.Barrier(8)

    def round_after_round() -> None:
        start.wait()
        for _ in range(40):
            outages.lost(REDIS, REFUSED, "dispatching chunks")

    with caplog.at_level(logging.DEBUG, logger="reelfarm.farm"):
        threads = [threading.Thread(target=round_after_round) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for _ in range(5):
            outages.ok(REDIS)
    gone, back = _lines(caplog)
    assert gone.levelno == logging.WARNING
    assert gone.getMessage() == ("Redis unreachable while dispatching chunks (Error 111 connecting to 127.0.0.1:6379. "
                                 "Connection refused.); retrying until it is back")
    assert (gone.dependency, gone.outage, gone.pid) == (REDIS, "gone", os.getpid())
    assert back.levelno == logging.INFO and back.getMessage().startswith("Redis reachable again after ")
    assert (back.dependency, back.outage) == (REDIS, "back")
    assert back.down_sec >= 0
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 8 * 40 - 1


def test_each_dependency_has_its_own_outage(caplog: pytest.LogCaptureFixture) -> None:
    outages = OutageLog(logging.getLogger("reelfarm.farm"))
    with caplog.at_level(logging.INFO, logger="reelfarm.farm"):
        outages.lost(REDIS, REFUSED)
        outages.lost(DATABASE, DB_DOWN)
        outages.lost(REDIS, REFUSED)
        outages.ok(DATABASE)
        outages.lost(REDIS, REFUSED)
        outages.ok(REDIS)
    assert [(r.dependency, r.outage) for r in _lines(caplog)] == \
        [(REDIS, "gone"), (DATABASE, "gone"), (DATABASE, "back"), (REDIS, "back")]


def test_parts_of_a_process_share_its_log_and_keep_their_own_state(caplog: pytest.LogCaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resilience.OUTAGES, "_since", {})
    heartbeat, maintenance = Outage(REDIS), Outage()  # the second meets both, each error saying which
    with caplog.at_level(logging.INFO, logger="reelfarm.farm"):
        heartbeat.lost(REFUSED, "sending the node's heartbeat")
        maintenance.lost(REFUSED, "node maintenance")
        maintenance.lost(DB_DOWN, "node maintenance")
        assert heartbeat.down and maintenance.down
        heartbeat.ok()
        assert not heartbeat.down and maintenance.down  # it has not reached the database again
        maintenance.ok(dependencies=(REDIS,))
        assert maintenance.down
        maintenance.ok()
    assert not maintenance.down
    assert [(r.dependency, r.outage) for r in _lines(caplog)] == \
        [(REDIS, "gone"), (DATABASE, "gone"), (REDIS, "back"), (DATABASE, "back")]


def test_an_error_names_its_dependency() -> None:
    assert dependency_of(REFUSED) == REDIS and dependency_of(DB_DOWN) == DATABASE
    try:
        raise RuntimeError("a round failed") from REFUSED
    except RuntimeError as exc:
        assert dependency_of(exc) == REDIS


def test_a_forked_child_starts_with_a_view_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resilience.OUTAGES, "_since", {})
    resilience.OUTAGES.lost(REDIS, REFUSED)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing of its parent's outage
        os.write(write, b"down" if resilience.OUTAGES.down(REDIS) else b"up")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 8) == b"up" and resilience.OUTAGES.down(REDIS)
    resilience.OUTAGES.ok(REDIS)


def test_a_success_of_work_begun_before_the_outage_was_seen_does_not_end_it(caplog: pytest.LogCaptureFixture) -> None:
    outages = OutageLog(logging.getLogger("reelfarm.farm"))
    with caplog.at_level(logging.INFO, logger="reelfarm.farm"):
        began = time.monotonic()  # a round that made its Redis calls, then slept a while
        outages.lost(REDIS, REFUSED, "waiting for jobs")  # meanwhile another thread met the outage
        outages.ok(REDIS, began=began)  # the round's end: nothing known of Redis since the outage began
        assert outages.down(REDIS)
        outages.ok(REDIS, began=time.monotonic())
    assert [(r.dependency, r.outage) for r in _lines(caplog)] == [(REDIS, "gone"), (REDIS, "back")]
