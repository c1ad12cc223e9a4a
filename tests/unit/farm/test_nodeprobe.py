"""A node's /livez and /readyz (``reelfarm.farm.runtime.nodeprobe``): alive while its heartbeat thread
goes round, ready only while it can take work."""
from __future__ import annotations

import json
import time
from typing import Any

from reelfarm.farm.runtime.nodeprobe import LIVE_SEC, NodeProbe, NodeState, probes_app
from reelfarm.farm.services.nodehealth import Standing


def probe(state: NodeState | Exception, quiet_sec: float = 1.0) -> NodeProbe:
    def read() -> NodeState:
        if isinstance(state, Exception):
            raise state
        return state

    went_round = time.monotonic() - quiet_sec
    return NodeProbe(lambda: "cpu-1", read, lambda: went_round)


def ask(app: Any, path: str) -> tuple[str, dict[str, Any] | bytes]:
    said: list[str] = []
    body = b"".join(app({"PATH_INFO": path, "REQUEST_METHOD": "GET"}, lambda status, headers: said.append(status)))
    return said[0], json.loads(body) if path in ("/livez", "/readyz") else body


WORKING = NodeState("cpu-1", Standing(), disabled=False, heartbeat_age=2.0)


def test_a_node_taking_work_is_live_and_ready() -> None:
    app = probes_app(probe(WORKING), lambda environ, start: [start("200 OK", []) or b"metrics"])
    assert ask(app, "/livez") == ("200 OK", {"status": "ok"})
    assert ask(app, "/readyz") == ("200 OK", {"status": "ok"})
    assert ask(app, "/metrics") == ("200 OK", b"metrics")


def test_a_node_set_aside_or_disabled_is_live_but_not_ready() -> None:
    aside = NodeState("cpu-1", Standing(3, "EncodeError: disk full", time.time() + 60), False, 2.0)
    assert probe(aside).live() == (True, [])
    ok, reasons = probe(aside).ready()
    assert not ok and reasons == [("set aside after 3 chunk failures in a row (the last: EncodeError: disk full); "
                                  "`reelfarm node clear cpu-1` takes it back")]
    ok, reasons = probe(NodeState("cpu-1", Standing(), True, 2.0)).ready()
    assert not ok and reasons == ["disabled by an operator; `reelfarm node enable cpu-1` takes it back"]


def test_a_node_whose_heartbeat_is_not_recorded_or_without_redis_is_not_ready() -> None:
    ok, reasons = probe(NodeState("cpu-1", Standing(), False, 40.0)).ready()
    assert not ok and reasons == ["the farm last recorded this node's heartbeat 40 s ago"]
    ok, reasons = probe(ConnectionError("refused")).ready()
    assert not ok and reasons == ["Redis cannot be reached (ConnectionError: refused)"]
    assert probe(ConnectionError("refused")).live() == (True, [])  # an outage restarts no node


def test_a_node_whose_heartbeat_thread_stopped_is_not_live() -> None:
    stuck = probe(WORKING, quiet_sec=LIVE_SEC + 5)
    status, body = ask(probes_app(stuck, None), "/livez")
    assert status == "503 Service Unavailable" and body["status"] == "unavailable"
    assert body["reasons"][0].startswith("the node's heartbeat thread has not gone round for")
    assert stuck.ready()[0] is False
