"""A gunicorn worker accepts new connections only while it can start their requests
(api.server.EnvelopeWorker), so a burst spreads over the workers instead of queueing in one; and
when it can start one it serves whichever request came first, a kept-alive connection's next one
or a connection waiting in the kernel's queue. It starts one request at a time, the next beside it
once the one running has had its patience.

The worker is gunicorn's own class on real sockets, driven by its own poller; only its thread
pool is one whose requests finish when the test says so, which is what the policy depends on.
"""
from __future__ import annotations

import functools
import logging
import selectors
import socket
import time
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
        conn.sock.shutdown(socket.SHUT_RD)  # gunicorn's close lingers for the client's end: none to wait for
        future.set_result(False)  # False: the connection is closed, not kept alive
        return conn, future


@pytest.fixture
def worker() -> Any:
    cfg = Config()
    cfg.set("threads", 2)
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    w = EnvelopeWorker(0, 0, [listener], None, 30, cfg, logging.getLogger("test"))
    w.tpool = HeldPool()
    w.patience = 0.0  # requests start as threads free (the patience has tests of its own, below)
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


def poll(worker: Any) -> None:
    """One turn of gunicorn's loop: what its poller reports is dispatched."""
    worker.wait_for_and_dispatch_events(0.2)


def running(worker: Any) -> list[Any]:
    return [conn for conn, _ in worker.tpool.running]


def kept_alive(worker: Any, client: socket.socket) -> Any:
    """The server side of ``client``'s connection, accepted and now kept alive between requests
    (as gunicorn's ``finish_request`` leaves a connection whose answer said keep-alive)."""
    conn = next(c for c in running(worker) if c.sock.getpeername() == client.getsockname())
    worker.tpool.running = [(c, f) for c, f in worker.tpool.running if c is not conn]
    worker._in_flight -= 1  # its request ended; the pool's future is not the one finishing it here
    conn.sock.setblocking(False)
    worker.keepalived_conns.append(conn)
    worker.poller.register(conn.sock, selectors.EVENT_READ, functools.partial(worker.on_client_socket_readable, conn))
    return conn


def test_a_worker_with_every_thread_busy_accepts_nothing_until_one_is_free(worker: Any) -> None:
    clients = [connect(worker) for _ in range(3)]
    try:
        for _ in range(3):
            poll(worker)
        assert worker.nr_conns == 2  # both threads busy: the third client waits in the kernel's queue
        assert worker._queued_since is not None

        worker.finish_request(*worker.tpool.finish())  # as gunicorn's main thread hears of it
        assert worker.nr_conns == 2  # the one that closed, and the queued one taken at once
        assert len(running(worker)) == 2
        worker.finish_request(*worker.tpool.finish())
        poll(worker)
        assert worker.nr_conns == 1 and worker._queued_since is None  # nothing queued any more
    finally:
        for c in clients:
            c.close()


def busy_with_one_kept_alive(worker: Any) -> tuple[Any, list[socket.socket]]:
    """Both threads busy, and one connection kept alive between requests: (its server side, the
    clients: the kept-alive one first)."""
    first, second = connect(worker), connect(worker)
    poll(worker)
    poll(worker)
    kept = kept_alive(worker, first)
    third = connect(worker)  # takes the free thread
    poll(worker)
    return kept, [first, second, third]


def test_a_kept_alive_request_waits_behind_connections_queued_before_it(worker: Any) -> None:
    kept, clients = busy_with_one_kept_alive(worker)
    first = clients[0]
    queued = connect(worker)  # every thread busy: it waits in the kernel's queue ...
    poll(worker)
    first.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # ... before this request comes
    poll(worker)
    assert kept not in running(worker) and len(worker._waiting) == 1
    try:
        worker.finish_request(*worker.tpool.finish())
        assert running(worker)[-1].sock.getpeername() == queued.getsockname()  # the earlier one first
        worker.finish_request(*worker.tpool.finish())
        assert running(worker)[-1] is kept and not worker._waiting
    finally:
        for c in (*clients, queued):
            c.close()


def test_a_kept_alive_request_goes_ahead_of_connections_queued_after_it(worker: Any) -> None:
    kept, clients = busy_with_one_kept_alive(worker)
    first = clients[0]
    first.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # every thread busy: it waits ...
    poll(worker)
    later = connect(worker)  # ... and this connection comes after it
    poll(worker)
    assert worker._queued_since is not None and worker.nr_conns == 3
    try:
        worker.finish_request(*worker.tpool.finish())
        assert running(worker)[-1] is kept  # stock gunicorn would do the same here
        worker.finish_request(*worker.tpool.finish())
        assert running(worker)[-1].sock.getpeername() == later.getsockname()
    finally:
        for c in (*clients, later):
            c.close()


# -- one request at a time, the next beside it once the one running has had its patience -------------

def test_a_request_starts_when_the_one_running_ends(worker: Any) -> None:
    worker.patience = 60.0
    clients = [connect(worker) for _ in range(2)]
    try:
        for _ in range(2):
            poll(worker)
        assert worker.nr_conns == 1 and len(running(worker)) == 1  # a thread is free, but one runs
        assert worker._queued_since is not None
        worker.finish_request(*worker.tpool.finish())
        assert len(running(worker)) == 1 and running(worker)[0].sock.getpeername() == clients[1].getsockname()
    finally:
        for c in clients:
            c.close()


def test_a_request_starts_beside_one_that_has_had_its_patience(worker: Any) -> None:
    worker.patience = 0.3
    clients = [connect(worker) for _ in range(2)]
    try:
        started = time.monotonic()
        poll(worker)
        assert len(running(worker)) == 1
        if worker._queued_since is None:  # the second connection not yet seen in the kernel's queue
            poll(worker)
        worker.wait_for_and_dispatch_events(5.0)  # gunicorn's loop waits up to 1 s: this one wakes at the patience
        waited = time.monotonic() - started
        assert len(running(worker)) == 2 and 0.3 <= waited < 2.5
    finally:
        for c in clients:
            c.close()


def test_a_kept_alive_request_waits_for_the_one_running(worker: Any) -> None:
    worker.patience = 60.0
    first, second = connect(worker), connect(worker)
    try:
        poll(worker)
        kept = kept_alive(worker, first)  # its request ended; the second connection is taken now
        poll(worker)
        assert [c.sock.getpeername() for c in running(worker)] == [second.getsockname()]
        first.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        poll(worker)
        assert kept not in running(worker) and len(worker._waiting) == 1
        worker.finish_request(*worker.tpool.finish())
        assert running(worker) == [kept] and not worker._waiting
    finally:
        for c in (first, second):
            c.close()
