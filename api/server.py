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
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.workers.gthread import ThreadWorker

log = logging.getLogger("reelfarm.api")

KEEPALIVE_SEC = 75
WORKER_CLASS = "reelfarm.api.server.EnvelopeWorker"

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
    """gunicorn's threaded worker, answering requests it refuses in the API's error envelope, and
    accepting new connections only while it has a thread free.

    gunicorn's workers share one listening socket, and a threaded worker accepts every connection
    it sees, queueing their requests behind its own threads. Under a burst one worker could take
    most of the connections (measured: 1.75 s of CPU in one worker against 0.23 s in the other)
    while its peer idled. A worker with every thread busy stops accepting, so the next connection
    waits in the kernel's queue for the first worker with a thread free. Keep-alive connections
    it already holds are served as before. (``_in_flight`` is touched only by the worker's main
    thread: gunicorn queues, and hears back from, its request threads there.)
    """

    _in_flight = 0

    def enqueue_req(self, conn: Any) -> None:
        self._in_flight += 1
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        self._in_flight -= 1
        super().finish_request(conn, fs)

    def accept(self, listener: Any) -> None:
        super().accept(listener)
        if self._saturated():
            self.set_accept_enabled(False)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled and not self._saturated())

    def _saturated(self) -> bool:
        return self._in_flight >= self.cfg.threads

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
        except Exception:  # the client is gone; nothing more to tell it
            log.debug("could not send the error answer", extra={"request_id": request_id})
