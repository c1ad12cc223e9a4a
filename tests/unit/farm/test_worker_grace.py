"""A node's grace period after SIGTERM: ``REELFARM_WORKER_GRACE_SEC``, read once at start."""
from __future__ import annotations

import pytest

from reelfarm.farm.runtime.worker import STOP_GRACE_SEC, stop_grace_sec


def test_the_grace_period_defaults_to_less_than_a_deployment_gives_a_node() -> None:
    assert stop_grace_sec({}) == stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": " "}) == STOP_GRACE_SEC < 600


@pytest.mark.parametrize(("raw", "seconds"), [("0", 0.0), ("1.5", 1.5), (" 90 ", 90.0)])
def test_a_grace_period_is_seconds_from_zero_up(raw: str, seconds: float) -> None:
    assert stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": raw}) == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "inf", "nan"])
def test_anything_else_is_refused_with_the_variable_named(raw: str) -> None:
    with pytest.raises(ValueError, match="REELFARM_WORKER_GRACE_SEC"):
        stop_grace_sec({"REELFARM_WORKER_GRACE_SEC": raw})


def _deaf_to_sigterm() -> None:
    """A scheduler process that never stops on SIGTERM (as one waiting for ever on a lock)."""
    import signal
    import time

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(120)


def test_a_scheduler_that_ignores_sigterm_is_killed_and_the_node_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """RQ waits for the node's scheduler process without end, in the node's SIGTERM handler; a
    node's wait is bounded, and then the scheduler is killed."""
    import multiprocessing
    import time
    from types import SimpleNamespace

    from reelfarm.farm.runtime import rqnode

    monkeypatch.setattr(rqnode, "SCHEDULER_STOP_SEC", 0.5)
    process = multiprocessing.get_context("fork").Process(target=_deaf_to_sigterm, daemon=True)
    process.start()
    time.sleep(0.3)  # its handler set
    node = SimpleNamespace(scheduler=SimpleNamespace(_process=process), name="deaf")
    began = time.monotonic()
    rqnode.NodeWorker.stop_scheduler(node)  # type: ignore[arg-type]
    assert not process.is_alive() and process.exitcode == -9
    assert time.monotonic() - began < 5
    rqnode.NodeWorker.stop_scheduler(node)  # type: ignore[arg-type] - again (teardown after the handler): no wait


def _stops_on_sigterm() -> None:
    """A scheduler process that SIGTERM stops (its default action: the test process's handler,
    which a forked child inherits, is dropped)."""
    import signal
    import time

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    time.sleep(120)


def test_a_scheduler_that_stops_on_sigterm_is_not_killed() -> None:
    import multiprocessing
    import time
    from types import SimpleNamespace

    from reelfarm.farm.runtime import rqnode

    process = multiprocessing.get_context("fork").Process(target=_stops_on_sigterm, daemon=True)
    process.start()
    time.sleep(0.3)  # its handler set
    rqnode.NodeWorker.stop_scheduler(SimpleNamespace(scheduler=SimpleNamespace(_process=process), name="n"))  # type: ignore[arg-type]
    assert process.exitcode == -15  # SIGTERM's default: it stopped by itself
