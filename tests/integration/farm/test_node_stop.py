"""A stop asked of an idle node stands even where RQ's way of asking is lost
(``reelfarm.farm.runtime.rqnode.NodeWorker.request_stop``), with a real Redis."""
from __future__ import annotations

import signal
import time
from typing import Any

from rq import Queue
from rq.exceptions import StopRequested

from reelfarm.farm.runtime.rqnode import NodeWorker


def test_a_stop_asked_while_idle_stands_though_rqs_exception_is_swallowed(redis: Any, namespace: str) -> None:
    """RQ stops an idle worker by raising StopRequested from its SIGTERM handler, wherever the main
    thread is: in a garbage collector's callback (seen in CI) or a broad ``except`` it is swallowed.
    The node's loop ends all the same, before it waits for a job, and the job queued stays queued."""
    queue = Queue(f"{namespace}render", connection=redis)
    worker = NodeWorker([queue], connection=redis, name=f"{namespace}idle")
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            worker.request_stop(signal.SIGTERM, None)  # idle: RQ raises
        except StopRequested:
            pass  # swallowed, as a gc callback would
        job = queue.enqueue("os.getpid")
        began = time.monotonic()
        assert worker.work(burst=False, with_scheduler=False, logging_level="WARNING") is False
        assert time.monotonic() - began < 10  # not after a wait for a job (RQ's: minutes)
        assert job.get_status(refresh=True) == "queued" and queue.job_ids == [job.id]
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_a_stop_asked_while_busy_is_rqs_warm_shutdown(redis: Any, namespace: str) -> None:
    """Busy, nothing is raised: the node finishes its job first (RQ's warm shutdown)."""
    from rq.worker import WorkerStatus

    worker = NodeWorker([Queue(f"{namespace}render", connection=redis)], connection=redis, name=f"{namespace}busy")
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker.set_state(WorkerStatus.BUSY)
        worker.request_stop(signal.SIGTERM, None)
        assert worker._stop_requested
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
