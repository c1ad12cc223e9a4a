"""A render node's probes, on its metrics port beside ``/metrics``: is it alive, and can it take work.

An answer from ``/metrics`` only says that the node's metrics thread runs. A node can answer it
and still do nothing: its heartbeat thread wedged, or the farm has set it aside for failing chunks,
or an operator disabled it. So:

- ``/livez``: 200 while the node's heartbeat thread goes round (``LIVE_SEC``: several of its
  ``HEARTBEAT_SEC`` rounds); 503 once it has stopped going round. It does not look at Redis: a
  Redis outage makes the node wait, and restarting it would not bring Redis back. Kubernetes'
  liveness probe restarts a node that fails it.
- ``/readyz``: 200 ``{"status": "ok"}`` while the node can take work: Redis answers, the farm has
  recorded its heartbeat within ``ALIVE_SEC`` (``reelfarm.farm.runtime.nodes``: the others count
  it alive), it is not set aside (``reelfarm.farm.runtime.nodehealth``) and not disabled
  (``reelfarm node disable``). Otherwise 503 with ``{"status": "unavailable", "reasons": [...]}``,
  each reason a sentence. Kubernetes' readiness probe shows such a pod as not ready (a node
  has no Service: readiness only says so, where operators and rollouts look); it is not restarted,
  since a restart clears neither a set-aside nor a disable.
"""
from __future__ import annotations

import json
import logging
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from reelfarm.farm.runtime.nodes import ALIVE_SEC, NodeRegistry
from reelfarm.farm.services.nodehealth import Standing

log = logging.getLogger("reelfarm.farm")

LIVE_SEC = 60.0  # the heartbeat thread goes round every 5 s; a round's maintenance may take a while


@dataclass(frozen=True)
class NodeState:
    """What the farm records of one node: its standing, whether disabled, and its heartbeat's age."""

    name: str
    standing: Standing
    disabled: bool
    heartbeat_age: float  # seconds; inf when the farm has no heartbeat of it


def read_node_state(registry: NodeRegistry, name: str) -> NodeState:
    """The node's state from Redis (three commands). Raises Redis's errors when it is unreachable."""
    score = registry.redis.zscore(registry.seen_key, name)
    age = max(0.0, time.time() - float(score)) if score is not None else float("inf")
    return NodeState(name, registry.standing(name), registry.disabled(name) is not None, age)


class NodeProbe:
    """The answers of ``/livez`` and ``/readyz`` for node ``name()`` (the module docstring)."""

    def __init__(self, name: Callable[[], str], state: Callable[[], NodeState],
                 last_round: Callable[[], float], live_sec: float = LIVE_SEC) -> None:
        self.name, self.state, self.last_round, self.live_sec = name, state, last_round, live_sec

    def live(self) -> tuple[bool, list[str]]:
        quiet = time.monotonic() - self.last_round()
        if quiet > self.live_sec:
            return False, [f"the node's heartbeat thread has not gone round for {quiet:.0f} s"]
        return True, []

    def ready(self) -> tuple[bool, list[str]]:
        alive, reasons = self.live()
        try:
            state = self.state()
        except Exception as exc:  # noqa: BLE001 - Redis unreachable: the node cannot take work
            return False, [*reasons, f"Redis cannot be reached ({type(exc).__name__}: {str(exc)[:200]})"]
        if state.heartbeat_age > ALIVE_SEC:
            reasons.append("the farm has no heartbeat of this node" if state.heartbeat_age == float("inf") else
                           f"the farm last recorded this node's heartbeat {state.heartbeat_age:.0f} s ago")
        if state.standing.set_aside(time.time()):
            reasons.append(f"set aside after {state.standing.failures} chunk failures in a row "
                           f"(the last: {state.standing.failure}); `reelfarm node clear {state.name}` takes it back")
        if state.disabled:
            reasons.append(f"disabled by an operator; `reelfarm node enable {state.name}` takes it back")
        return alive and not reasons, reasons


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and probes are not logged, one line every few seconds each."""


def probes_app(probe: NodeProbe | None, metrics: Any) -> Callable[..., Iterable[bytes]]:
    """A WSGI app: ``/livez`` and ``/readyz`` from ``probe``, anything else to ``metrics``."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if probe is None or path not in ("/livez", "/readyz"):
            return metrics(environ, start_response)
        ok, reasons = probe.live() if path == "/livez" else probe.ready()
        body = json.dumps({"status": "ok"} if ok else {"status": "unavailable", "reasons": reasons}).encode()
        start_response("200 OK" if ok else "503 Service Unavailable",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def serve_probes(port: int, addr: str, probe: NodeProbe | None) -> None:
    """Serve ``/metrics`` (the process's registry) and the probes on ``port``, in a daemon thread."""
    from prometheus_client import REGISTRY, make_wsgi_app

    server = make_server(addr, port, probes_app(probe, make_wsgi_app(REGISTRY)), _Server, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="reelfarm-node-metrics", daemon=True).start()
