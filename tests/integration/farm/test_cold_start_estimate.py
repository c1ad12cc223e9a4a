"""A queued render's estimated start on a farm that has finished nothing lately: from its nodes'
own measured speed (``reelfarm.farm.services.speeds``), then from the farm's throughput."""
from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities
from reelfarm.farm.runtime.nodespeed import SpeedCheck, record_speed, reuse_key
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.fairness import Share
from reelfarm.farm.services.queues import Turn


def _shares(workspace_ids: Any) -> dict[str, Share]:
    return {w: Share(1.0, 8) for w in workspace_ids}


def _queued_render(queue: RQQueue, workspace: str, chunks: int, cost: int) -> str:
    render = str(uuid.uuid4())
    for index in range(chunks):
        queue.enqueue("os.getpid", job_id=f"render-{render}-chunk-{index}", turn=Turn(workspace, render, cost, "normal",
                                                                                       index))
    return render


def _seconds_to_start(standing: dict[str, Any]) -> float:
    return (standing["estimated_start_at"] - datetime.now(UTC)).total_seconds()


def test_a_cold_farm_estimates_from_its_nodes_speed_until_it_has_throughput(redis: Any, namespace: str) -> None:
    queue = RQQueue(redis, namespace=namespace, shares=_shares)  # no worker: nothing is dispatched
    first = _queued_render(queue, "a", 2, 300)
    second = _queued_render(queue, "a", 1, 300)
    queue.dispatch_round()
    ahead = queue.standing(second)["frames_ahead"]
    assert ahead > 0
    assert queue.standing(second)["estimated_start_at"] is None  # no throughput, no node: no estimate

    registry = NodeRegistry(redis, namespace)
    caps = detect_capabilities()
    for name, fps in ((f"{namespace}a", 12.0), (f"{namespace}b", 8.0), (f"{namespace}jobs", 500.0)):
        registry.beat(name, caps, queues=["jobs"] if name.endswith("jobs") else ["render", "jobs"], state="idle",
                      current_job=None)
        record_speed(redis, registry.key(name), fps)
    assert _seconds_to_start(queue.standing(second)) == pytest.approx(ahead / 20.0, abs=1.0)
    assert queue.standing(first)["frames_ahead"] == 0

    now = time.time()  # the farm finished 600 frames in the last two minutes: 5 frames/s
    redis.zadd(queue.dispatcher.key("done"), {f"x-{namespace}:{now}:600": now})
    assert _seconds_to_start(queue.standing(second)) == pytest.approx(ahead / 5.0, abs=1.0)


def test_a_node_measures_itself_and_its_record_carries_the_rate(redis: Any, namespace: str) -> None:
    registry = NodeRegistry(redis, namespace)
    name = f"{namespace}node"
    registry.beat(name, detect_capabilities(), queues=["render"], state="idle", current_job=None)
    redis.delete(reuse_key("cpu"))  # no recent measure of this host: it draws one
    check = SpeedCheck(redis, registry.key(name), "cpu")
    check.start()
    check.join(120)
    assert check.fps is not None and check.fps > 0 and not check.reused
    assert float(redis.get(reuse_key("cpu"))) == pytest.approx(check.fps, abs=0.01)
    second = f"{namespace}second"  # a node started beside it takes the host's measure, drawing nothing
    registry.beat(second, detect_capabilities(), queues=["render"], state="idle", current_job=None)
    again = SpeedCheck(redis, registry.key(second), "cpu")
    again.start()
    again.join(5)
    assert again.reused and again.fps == pytest.approx(check.fps, abs=0.01)
    assert float(redis.hget(registry.key(second), "speed_fps")) == pytest.approx(check.fps, abs=0.01)
    redis.delete(registry.key(second))
    [record] = registry.live_nodes()
    assert float(record["speed_fps"]) == pytest.approx(check.fps, abs=0.01)
    # a beat keeps it: the record is rewritten field by field
    registry.beat(name, detect_capabilities(), queues=["render"], state="busy", current_job=None)
    assert float(registry.live_nodes()[0]["speed_fps"]) == pytest.approx(check.fps, abs=0.01)


def test_a_measure_taken_while_redis_is_away_is_recorded_once_it_is_back_without_a_warning(
        namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    import redis as redis_py

    from tests.servers import RedisProcess, free_port

    port = free_port()
    client = redis_py.Redis(port=port, socket_connect_timeout=1)
    name = f"{namespace}node"
    key = NodeRegistry(client, namespace).key(name)
    check = SpeedCheck(client, key, "cpu")
    check.fps = 12.5  # as measured: Redis went away while the node drew
    server = None
    with caplog.at_level(logging.INFO, logger="reelfarm.farm"):
        recording = threading.Thread(target=check._record)
        recording.start()
        time.sleep(1.5)  # its first tries find no Redis
        assert recording.is_alive()
        server = RedisProcess(port=port).start()  # back, and empty
        try:
            time.sleep(0.5)
            client.hset(key, "state", "idle")  # the node's record, written again by its next heartbeat
            recording.join(40)
            assert not recording.is_alive()
            assert float(client.hget(key, "speed_fps")) == 12.5
            assert float(client.get(reuse_key("cpu"))) == 12.5
        finally:
            server.stop()
    assert [r for r in caplog.records if r.levelno > logging.INFO] == []


def test_the_node_check_writes_its_measure_on_this_hosts_live_nodes(redis: Any, redis_url: str, namespace: str) -> None:
    import socket

    from reelfarm.farm.runtime.nodecheck import NodeReport, check_farm
    from reelfarm.farm.runtime.nodes import Capabilities

    registry = NodeRegistry(redis, namespace)
    registry.beat(f"{namespace}here", detect_capabilities(), queues=["render"], state="idle", current_job=None)
    registry.beat(f"{namespace}there", Capabilities("elsewhere", 1, 2, None, False), queues=["render"], state="idle",
                  current_job=None)
    report = NodeReport(host={"hostname": socket.gethostname(), "cores": 1}, config={},
                        speed={"x264_fps": 60.0, "cpu_raster_fps": 30.0, "gl_raster_fps": None})
    check_farm(report, redis_url, namespace)
    found = {n["name"]: n.get("speed_fps") for n in registry.live_nodes()}
    assert found == {f"{namespace}here": "20.00", f"{namespace}there": None}
