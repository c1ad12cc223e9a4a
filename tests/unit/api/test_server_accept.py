"""A gunicorn worker accepts new connections only while it has a request thread free
(api.server.EnvelopeWorker), so a burst spreads over the workers instead of queueing in one.

The worker is gunicorn's own class on real sockets; only its thread pool is one whose requests
finish when the test says so, which is what the accept policy depends on.
"""
from __future__ import annotations

import logging
import selectors
import socket
from concurrent.futures import Future
from typing import Any

import pytest
from gunicorn.config import Config

from reelfarm.api.server import EnvelopeWorker


class HeldPool:
    """A thread pool whose requests run until `finish` is called."""

    def __init__(self) -> None:
        self.running: list[tuple[Any, Future[Any]]] = []

    def submit(self, fn: Any, conn: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.running.append((conn, future))
        return future

    def finish(self) -> tuple[Any, Future[Any]]:
        conn, future = self.running.pop(0)
        future.set_result(False)  # False: the connection is closed, not kept alive
        return conn, future


@pytest.fixture
def worker() -> Any:
    cfg = Config()
    cfg.set("threads", 2)
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    w = EnvelopeWorker(0, 0, [listener], None, 30, cfg, logging.getLogger("test"))
    w.tpool = HeldPool()
    w.poller = selectors.DefaultSelector()
    w.method_queue.init()
    w.set_accept_enabled(True)
    yield w
    for conn in list(w.poller.get_map().values()):
        if conn.fileobj is not listener and hasattr(conn.fileobj, "close"):
            conn.fileobj.close()
    listener.close()


def connect(worker: Any) -> socket.socket:
    return socket.create_connection(worker.sockets[0].getsockname())


def accepting(worker: Any) -> bool:
    return any(key.fileobj is worker.sockets[0] for key in worker.poller.get_map().values())


def test_a_worker_with_every_thread_busy_stops_accepting_until_one_is_free(worker: Any) -> None:
    clients = [connect(worker) for _ in range(3)]
    try:
        worker.accept(worker.sockets[0])
        assert accepting(worker)  # one of two threads busy
        worker.accept(worker.sockets[0])
        assert not accepting(worker)  # both busy: the third client waits in the kernel's queue
        assert worker.nr_conns == 2

        worker.set_accept_enabled(True)  # what gunicorn's loop asks on every turn
        assert not accepting(worker)

        worker.finish_request(*worker.tpool.finish())  # as gunicorn's main thread hears of it
        worker.set_accept_enabled(True)
        assert accepting(worker)
        worker.accept(worker.sockets[0])
        assert worker.nr_conns == 2
        assert not accepting(worker)
    finally:
        for c in clients:
            c.close()
