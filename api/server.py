"""The HTTP server's own answers, in the one error envelope.

gunicorn refuses some requests before the application sees them: a request line over
``limit_request_line`` (414), a header over ``limit_request_field_size`` or too many headers (431),
a NUL or other byte HTTP does not allow in a header, a malformed request line (400). Its stock
answer is an HTML page with no request id. ``EnvelopeWorker`` keeps gunicorn's limits and its
threaded worker, and answers those refusals as the API answers everything else:
``{"error": {"code", "message", "details", "request_id"}}`` with ``X-Request-Id``, then closes
the connection (the stream can no longer be trusted).

Connections are kept open ``KEEPALIVE_SEC`` between requests: longer than the idle timeouts of
common client pools (httpx 5 s, Node 5 s) and of load balancers in front (60 s), so the server is
never the side that closes a connection a client is about to reuse.

Stopping. SIGTERM (a deploy, a scale-down, a node drain) and gunicorn's graceful reload (SIGHUP,
whose old workers get SIGTERM) start a drain in each worker:

1. ``/readyz`` answers 503 at once (``ENVIRON_DRAINING`` in the WSGI environ), so a load balancer
   that checks it stops sending work; ``/livez`` stays 200.
2. For ``drain_sec`` (``reelfarm serve --drain-sec``, ``REELFARM_DRAIN_SEC``) the worker serves
   as before and keeps accepting connections, for a balancer that has not noticed yet, but answers
   every request with ``Connection: close``: a client on a kept-alive connection is told, in an
   answer, to take its next request elsewhere, and is never cut between two.
3. Then it stops accepting. When the listening socket closes with this server (a stop, not a
   reload, where the new workers keep it), new handshakes are dropped first (a socket filter on
   SYNs), those under way get ``SETTLE_SEC`` to complete, every connection the kernel has queued
   is accepted and served, and the socket is shut. A client that connects later is refused (its
   SYN is not answered, then refused) before it has sent anything, rather than reset after it
   has sent its request. On a reload the queue stays with the new workers.
4. Requests in flight finish and are answered with ``Connection: close``; kept-alive connections
   idle through the drain are closed between requests. A worker exits by the graceful timeout
   (``--graceful-sec``, ``REELFARM_GRACEFUL_SEC``, counted from SIGTERM and including the drain);
   a request still running then is logged with its request id, and the master kills the worker.
"""

from __future__ import annotations

import collections
import ctypes
import json
import logging
import math
import mmap
import secrets
import selectors
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from gunicorn import arbiter, util
from gunicorn.app.base import BaseApplication
from gunicorn.http import errors as http_errors
from gunicorn.workers.gthread import TConn, ThreadWorker

log = logging.getLogger("reelfarm.api")

KEEPALIVE_SEC = 75
WORKER_CLASS = "reelfarm.api.server.EnvelopeWorker"
DRAIN_SEC = 5.0  # the default of REELFARM_DRAIN_SEC
GRACEFUL_SEC = 30  # the default of REELFARM_GRACEFUL_SEC (gunicorn's graceful_timeout)
# Request threads a worker (REELFARM_THREADS). Python runs one thread of a process at a time, so
# threads serve CPU no faster; they are for requests that wait: on a database that does not
# answer (each up to shared.db.DATABASE_WAIT_BOUND_SEC), a slow upload or download. A worker starts
# its requests one at a time (PATIENCE_SEC below); building and linting versions, the CPU-heaviest
# work, also takes turns under one lock (studio.videos) for requests that run side by side.
THREADS = 4
# A worker gives its application one request at a time, in the order they came; the next starts
# beside it only once it has run this long (``EnvelopeWorker``): then it is most likely waiting (on
# a database that does not answer, a slow upload), not computing. Several times a create's CPU.
PATIENCE_SEC = 0.25
SETTLE_SEC = 0.25  # for handshakes under way when new ones stop being answered
STOP_MARGIN_SEC = 2  # a worker stops waiting this long before the master kills it
ENVIRON_DRAINING = "reelfarm.draining"
ENVIRON_REQUEST_ID = "reelfarm.request_id"

_SO_ATTACH_FILTER = 26  # Linux; Python's socket module does not name it
# A classic BPF program the kernel runs on every segment reaching the listening socket, before the
# TCP stack handles it: it answers how many bytes to keep, 0 meaning drop. Each instruction is
# (opcode, jump if true, jump if false, constant), ``struct sock_filter``; for a TCP socket the data
# starts at the TCP header, whose byte 13 holds the flags (ACK is 0x10, SYN 0x02). In words:
#   1. load the flags byte (offset 13) into the accumulator       BPF_LD  | BPF_B   | BPF_ABS  0x30
#   2. keep only its SYN and ACK bits                              BPF_ALU | BPF_AND | BPF_K    0x54
#   3. SYN without ACK (a new handshake)? go on to 4, else to 5    BPF_JMP | BPF_JEQ | BPF_K    0x15
#   4. return 0: drop it, the client's SYN goes unanswered         BPF_RET | BPF_K              0x06
#   5. return all of it: the rest of the handshake and the data    BPF_RET | BPF_K              0x06
_DROP_SYN = ((0x30, 0, 0, 13), (0x54, 0, 0, 0x12), (0x15, 0, 1, 0x02), (0x06, 0, 0, 0), (0x06, 0, 0, 0xFFFFFFFF))

# exception class -> (status, reason phrase, code); every other client error is a plain 400
_REFUSALS: dict[type[BaseException], tuple[int, str, str]] = {
    http_errors.LimitRequestLine: (414, "URI Too Long", "uri_too_long"),
    http_errors.LimitRequestHeaders: (431, "Request Header Fields Too Large", "headers_too_large"),
    http_errors.UnsupportedTransferCoding: (501, "Not Implemented", "not_implemented"),
    http_errors.ExpectationFailed: (417, "Expectation Failed", "expectation_failed"),
    http_errors.ForbiddenProxyRequest: (403, "Forbidden", "forbidden"),
}
_CLIENT_ERRORS: tuple[type[BaseException], ...] = tuple(
    getattr(http_errors, name) for name in (
        "InvalidRequestLine", "InvalidRequestMethod", "InvalidHTTPVersion", "InvalidHeader",
        "InvalidHeaderName", "LimitRequestLine", "LimitRequestHeaders", "InvalidProxyLine",
        "ForbiddenProxyRequest", "InvalidSchemeHeaders", "UnsupportedTransferCoding", "ObsoleteFolding",
        "ExpectationFailed", "InvalidChunkSize", "ChunkMissingTerminator", "InvalidChunkExtension",
    ) if hasattr(http_errors, name))
_MESSAGES = {
    400: "The request could not be read as HTTP; see details.",
    414: "The request line (method, path and query) is longer than this server accepts.",
    431: "A request header, or all of them together, is larger than this server accepts.",
    417: "This server cannot meet the request's Expect header.",
    501: "This server does not accept the request's Transfer-Encoding.",
    403: "This request is not accepted.",
    500: "Something went wrong on our side; it has been logged with the request id.",
}


def refusal(exc: BaseException) -> tuple[int, str, str, list[dict[str, str]] | None]:
    """``(status, reason, code, details)`` for an exception raised while reading a request."""
    for kind, (status, reason, code) in _REFUSALS.items():
        if isinstance(exc, kind):
            return status, reason, code, None
    if isinstance(exc, _CLIENT_ERRORS):
        return 400, "Bad Request", "validation_failed", [
            {"field": "request", "code": "malformed_request", "message": str(exc)[:300]}]
    return 500, "Internal Server Error", "internal_error", None


def envelope_response(status: int, reason: str, code: str, details: list[dict[str, str]] | None,
                      request_id: str) -> bytes:
    """A complete HTTP/1.1 response carrying the error envelope; the connection closes after it."""
    body = json.dumps({"error": {"code": code, "message": _MESSAGES.get(status, reason), "details": details,
                                 "request_id": request_id}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-Id: {request_id}\r\n\r\n")
    return head.encode("latin-1") + body


class EnvelopeWorker(ThreadWorker):
    """gunicorn's threaded worker, answering requests it refuses in the API's error envelope,
    accepting new connections only while it can start their requests, and serving requests one at
    a time in the order they arrived, on new connections and kept-alive ones alike.

    gunicorn's workers share one listening socket, and a threaded worker accepts every connection
    it sees, queueing their requests behind its own threads. Under a burst one worker could take
    most of the connections (measured: 1.75 s of CPU in one worker against 0.23 s in the other)
    while its peer idled. A worker with every thread busy accepts nothing, so the next connection
    waits in the kernel's queue for the first worker with a thread free.

    A request on a kept-alive connection that arrives while every thread is busy waits in the
    worker's own line (``_waiting``), not in the thread pool's. When a thread frees, the worker
    serves whichever came first: the oldest request in that line, or the connections queued in
    the kernel, which it watches while busy (``_queued_since``: when it first saw them there).
    gunicorn's stock worker hands a kept-alive request to its pool at once, so a client's second
    request went ahead of every client still waiting to connect: in a burst of clients that each
    create a video and then ask for its render, the render requests were served before the creates
    still queued, and the creates waited for both (``benchmarks.burst``). (``_in_flight`` and the
    line are touched only by the worker's main thread: gunicorn queues, and hears back from, its
    request threads there.)

    A request starts only when the one before it has ended, or has run ``patience`` seconds
    (``PATIENCE_SEC``) and is then most likely waiting on I/O: the next starts beside it, and so on
    up to the worker's threads. Python runs one thread of a process at a time, switching every
    5 ms, so requests started together all advance together and all end late; one at a time, each
    ends as early as the work ahead of it allows (in the burst above, the same server with one thread
    a worker gave creates' p99 0.50 s against 0.78 s with four: ``benchmarks/README.md``, "The burst
    under 1 s"). The threads are for requests that wait.

    On SIGTERM it drains instead of stopping at once (the module docstring's "Stopping"): the
    drain runs in the worker's main loop, which wakes when the next step is due.
    """

    wsgi: Any
    _in_flight = 0
    _drain_until: float | None = None  # set by SIGTERM
    _close_at: float | None = None  # set when the drain is over
    _stop_by = math.inf
    _listening = True
    _accepting: bool
    _queued_since: float | None = None  # connections seen in the kernel's queue while every thread was busy
    _started = 0.0  # when the latest request went to a thread
    patience = PATIENCE_SEC

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._running: dict[int, tuple[float, dict[str, Any]]] = {}  # request thread -> (start, environ)
        self._waiting: collections.deque[tuple[float, Any]] = collections.deque()  # (arrived, connection)

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app = self.wsgi

        def served(environ: dict[str, Any], start_response: Any) -> Any:
            environ[ENVIRON_DRAINING] = self._drain_until is not None
            self._running[threading.get_ident()] = (time.monotonic(), environ)
            return app(environ, start_response)

        self.wsgi = served

    def handle_request(self, req: Any, conn: Any) -> bool:
        if self._drain_until is not None:
            req.must_close = True  # answered with Connection: close
        try:
            return super().handle_request(req, conn)
        finally:
            self._running.pop(threading.get_ident(), None)

    def handle_exit(self, sig: Any, frame: Any) -> None:
        """SIGTERM: not ready from now on; serve through the drain, then stop (see the module docstring)."""
        if self._drain_until is not None:
            return
        now = time.monotonic()
        self._stop_by = now + self.cfg.graceful_timeout - STOP_MARGIN_SEC
        self._drain_until = now + (self.app.drain_sec if isinstance(self.app, Server) else 0.0)
        self.method_queue.defer(lambda: None)  # wake the loop

    def _wait_and_dispatch(self, timeout: float) -> None:
        if self.alive and self._drain_until is not None:
            due = self._drain_step(time.monotonic(), self._drain_until)
            if not self.alive:
                return
            timeout = min(timeout, max(0.0, due - time.monotonic()))
        super().wait_for_and_dispatch_events(timeout)

    def _drain_step(self, now: float, drain_until: float) -> float:
        """Move the drain on; returns when it next has something to do."""
        if now < drain_until:
            return drain_until
        final = isinstance(self.app, Server) and bool(self.app.closing_listener)
        if self._close_at is None:
            dropped = [_drop_new_handshakes(listener) for listener in self.sockets] if final else [False]
            self._close_at = now + (SETTLE_SEC if all(dropped) else 0.0)
        if now < self._close_at:
            return self._close_at
        self._stop_listening(final)
        # this worker's own copy of the settings: what is left before the master's deadline
        self.cfg.set("graceful_timeout", max(0, math.ceil(self._stop_by - time.monotonic())))
        self.alive = False
        return now

    def _stop_listening(self, final: bool) -> None:
        """No more connections: when the listening socket goes with this server, those the kernel
        has queued are accepted first, and the socket is shut for every process holding it."""
        self.set_accept_enabled(False)
        self._listening = False
        for listener in self.sockets:
            if final:
                self._accept_queued(listener)
                try:
                    listener.shutdown(socket.SHUT_RDWR)
                except OSError:  # another worker shut it first
                    pass
            listener.close()

    def _accept_queued(self, listener: Any) -> None:
        listener.setblocking(False)
        while True:
            try:
                client, addr = listener.accept()
            except OSError:  # none left (EAGAIN), or another worker shut it (EINVAL)
                return
            self.nr_conns += 1
            client.setblocking(True)
            self.enqueue_req(TConn(self.cfg, client, addr, listener.getsockname()))

    def run(self) -> None:
        super().run()
        for started, environ in list(self._running.values()):
            log.error("graceful timeout: a request still running after %.1f s is cut: %s %s",
                      time.monotonic() - started, environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"),
                      extra={"request_id": environ.get(ENVIRON_REQUEST_ID)})

    def enqueue_req(self, conn: Any) -> None:
        if self._saturated():
            self._waiting.append((time.monotonic(), conn))
            return
        self._in_flight += 1
        self._started = time.monotonic()
        super().enqueue_req(conn)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """(the drain's steps, above) Wake when the request running has had its patience while
        another waits, and let the next start beside it."""
        if self._in_flight and (self._waiting or self._queued_since is not None):
            timeout = min(timeout, max(0.0, self._started + self.patience - time.monotonic()))
        self._wait_and_dispatch(timeout)
        if (self._waiting or self._queued_since is not None) and not self._saturated():
            self._serve_next()

    def finish_request(self, conn: Any, fs: Any) -> None:
        self._in_flight -= 1
        super().finish_request(conn, fs)
        self._serve_next()

    def _serve_next(self) -> None:
        """Give free threads the requests that came first: the oldest kept-alive request waiting,
        or a connection from the kernel's queue when it was seen there before that request came."""
        while not self._saturated():
            oldest = self._waiting[0][0] if self._waiting else math.inf
            if self._queued_since is not None and self._queued_since <= oldest and self._listening:
                if not self._accept_one():
                    self._queued_since = None  # another worker took them
                continue
            if not self._waiting:
                break
            _, conn = self._waiting.popleft()
            self.enqueue_req(conn)
        self.set_accept_enabled(True)

    def _accept_one(self) -> bool:
        for listener in self.sockets:
            before = self.nr_conns
            self.accept(listener)
            if self.nr_conns > before:
                return True
            if not self._listening:
                break
        return False

    def _on_listener(self, listener: Any) -> None:
        """The listening socket has connections queued: take one while a thread is free; else
        note since when they wait, and stop watching until a thread frees."""
        if not self._saturated():
            self.accept(listener)
            return
        self._queued_since = time.monotonic()
        self.set_accept_enabled(False)

    def accept(self, listener: Any) -> None:
        try:
            super().accept(listener)
        except OSError:
            if self._drain_until is None:
                raise
            self._listening = False  # another worker has shut the socket at the end of the drain
            self.set_accept_enabled(False)

    def set_accept_enabled(self, enabled: bool) -> None:
        """Watch the listening socket while listening and not already knowing of queued connections
        (gunicorn's own loop asks this on every turn, with False once it holds too many connections)."""
        enabled = enabled and self._listening and self._queued_since is None
        if enabled == self._accepting:
            return
        for listener in self.sockets:
            if enabled:
                listener.setblocking(False)
                self.poller.register(listener, selectors.EVENT_READ, self._on_listener)
            else:
                self.poller.unregister(listener)
        self._accepting = enabled

    def _saturated(self) -> bool:
        """No request may start now: every thread is busy, or one runs and has not had its patience."""
        if self._in_flight >= self.cfg.threads:
            return True
        return self._in_flight > 0 and time.monotonic() - self._started < self.patience

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        status, reason, code, details = refusal(exc)
        request_id = f"req_{secrets.token_hex(12)}"
        where = (addr or ("", -1))[0]
        if status < 500:
            log.warning("refused a request from %s before the application: %s %s (%s)", where, status, code,
                        str(exc)[:200], extra={"request_id": request_id})
        else:
            log.error("error handling a request from %s", where, exc_info=exc, extra={"request_id": request_id})
        try:
            util.write_nonblock(client, envelope_response(status, reason, code, details, request_id))
        except Exception:  # the client is gone; nothing more to tell it (and the error handler never raises)
            log.debug("could not send the error answer", exc_info=True, extra={"request_id": request_id})


def _drop_new_handshakes(listener: Any) -> bool:
    """Make a TCP listening socket drop SYNs (Linux): handshakes already under way still complete
    and queue, new ones get no answer. False where that cannot be done."""
    if sys.platform != "linux" or listener.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    # the instructions as C lays out ``struct sock_filter`` (u16, u8, u8, u32), kept alive in a
    # buffer while the kernel copies them; ``struct sock_fprog`` is their count and its address
    program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in _DROP_SYN))
    try:
        listener.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER,
                            struct.pack("HP", len(_DROP_SYN), ctypes.addressof(program)))
    except OSError:
        return False
    return True


class SharedFlag:
    """A flag the master sets and the workers it has forked read (anonymous shared memory)."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, 1)

    def set(self) -> None:
        self._memory[0] = 1

    def __bool__(self) -> bool:
        return self._memory[0] == 1


class Arbiter(arbiter.Arbiter):
    """gunicorn's master, telling its workers when the listening socket goes with it: on a stop,
    not on a reload or a re-exec, nor under systemd (which keeps the socket)."""

    def stop(self, graceful: bool = True) -> None:
        if self.reexec_pid == self.master_pid == 0 and not self.systemd:
            self.app.closing_listener.set()
        super().stop(graceful)


class Server(BaseApplication):
    """gunicorn with ``options`` as its settings, serving what ``load`` makes in each worker, and
    stopping with the drain described above."""

    def __init__(self, options: dict[str, Any], load: Callable[[], Any], drain_sec: float = DRAIN_SEC) -> None:
        self.options, self._load, self.drain_sec = options, load, drain_sec
        self.closing_listener = SharedFlag()
        super().__init__()

    def load_config(self) -> None:
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self) -> Any:
        return self._load()

    def run(self) -> None:
        try:
            Arbiter(self).run()
        except RuntimeError as exc:  # as gunicorn's own run(): a master that cannot start says why
            print(f"\nError: {exc}\n", file=sys.stderr, flush=True)
            sys.exit(1)
