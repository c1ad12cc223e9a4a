"""The node registry on a real Redis: liveness is one command however many nodes the farm has seen;
a gone node's record expires, and the maintenance round forgets it later; names are identities that a
node started again takes back at once, and that two live nodes never share; the scheduler locks a
dead node leaves behind never stop a node from starting.

Each test has a Redis server of its own, so that ``INFO commandstats`` counts its commands alone.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis import Redis
from rq.scheduler import RQScheduler

from reelfarm.farm.runtime import nodes as nodes_module
from reelfarm.farm.runtime.nodes import (
    ALIVE_SEC,
    FORGET_SEC,
    NODE_TTL_SEC,
    Capabilities,
    NameTaken,
    NodeRegistry,
    detect_capabilities,
)
from reelfarm.farm.runtime.rqscheduler import free_dead_scheduler_locks
from reelfarm.farm.runtime.worker import HEARTBEAT_SEC
from tests.servers import start_redis

HOST = socket.gethostname()


@pytest.fixture
def own_redis() -> Iterator[Redis]:
    server = start_redis()
    client = Redis.from_url(server.url)
    yield client
    client.close()
    server.kill()
    server.stop()


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes that stand for live nodes of this host (the registry checks their pids)."""
    started = [subprocess.Popen(["sleep", "120"]) for _ in range(4)]
    yield started
    for process in started:
        process.kill()
        process.wait()


def calls(redis: Redis) -> dict[str, int]:
    return {name.removeprefix("cmdstat_"): int(values["calls"])
            for name, values in redis.info("commandstats").items() if name != "cmdstat_info"}


def counted(redis: Redis, action: Any) -> tuple[Any, dict[str, int]]:
    """What ``action()`` returned, and the commands it sent, by name."""
    before = calls(redis)
    result = action()
    after = calls(redis)
    return result, {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def test_liveness_is_one_command_among_a_thousand_registered_nodes(own_redis: Redis) -> None:
    registry, caps, now = NodeRegistry(own_redis), detect_capabilities(), time.time()
    with own_redis.pipeline(transaction=False) as pipe:  # 997 nodes seen over the last hour, gone
        for i in range(997):
            pipe.zadd(registry.seen_key, {f"gone-{i}": now - ALIVE_SEC - 1 - i * 3.5})
            pipe.hset(registry.key(f"gone-{i}"), mapping={"hostname": "elsewhere", "state": "busy"})
        pipe.execute()
    for name in ("a", "b", "c"):
        registry.beat(name, caps, queues=["render"], state="idle", current_job=None)

    live, sent = counted(own_redis, registry.live)
    assert sorted(live) == ["a", "b", "c"] and sent == {"zrangebyscore": 1}
    nodes, sent = counted(own_redis, registry.live_nodes)  # the details of those three alone, pipelined
    assert [n["name"] for n in nodes] == ["a", "b", "c"] and all(n["alive"] for n in nodes)
    assert sent == {"zrangebyscore": 1, "zmscore": 1, "hgetall": 3}
    _, sent = counted(own_redis, lambda: registry.beat("a", caps, queues=["render"], state="idle",
                                                       current_job=None))
    assert sent == {"hset": 1, "expire": 1, "zadd": 1}  # a beat: one round trip, no transaction


def test_a_gone_nodes_record_expires_and_the_maintenance_round_forgets_it(own_redis: Redis,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert ALIVE_SEC < NODE_TTL_SEC <= 6 * HEARTBEAT_SEC  # a few beats: longer than a node counts as alive
    registry, caps = NodeRegistry(own_redis), detect_capabilities()
    registry.beat("stays", caps, queues=["render"], state="idle", current_job=None)
    assert 0 < own_redis.ttl(registry.key("stays")) <= NODE_TTL_SEC

    monkeypatch.setattr(nodes_module, "NODE_TTL_SEC", 1)  # the same expiry, in a second instead of thirty
    registry.beat("gone", dataclasses.replace(caps, hostname="elsewhere"), queues=["render"], state="busy",
                  current_job="j")
    time.sleep(1.3)
    assert not own_redis.exists(registry.key("gone")) and not registry.known("gone")
    assert [n["name"] for n in registry.nodes()] == ["stays"]
    own_redis.zadd(registry.seen_key, {"gone": time.time() - 60})
    assert registry.is_dead("gone")  # still known as dead, for the hand-back of its jobs

    own_redis.zadd(registry.seen_key, {"long-gone": time.time() - FORGET_SEC - 1})
    assert registry.prune() == 1
    assert own_redis.zrange(registry.seen_key, 0, -1) == [b"gone", b"stays"]


def test_default_names_take_the_lowest_slot_free_on_the_host(own_redis: Redis,
                                                             sleepers: list[subprocess.Popen[bytes]]) -> None:
    registry = NodeRegistry(own_redis, "ns-")
    first, second, third, fourth = sleepers
    assert registry.claim(None, pid=first.pid)[0] == f"ns-{HOST}-1"
    assert registry.claim(None, pid=second.pid)[0] == f"ns-{HOST}-2"
    first.kill()
    first.wait()
    name, before = registry.claim(None, pid=third.pid)  # slot 1's node is gone: its slot is free again
    assert name == f"ns-{HOST}-1" and before.data["pid"] == str(first.pid)
    assert registry.claim(None, pid=fourth.pid)[0] == f"ns-{HOST}-3"
    assert sorted(registry.live()) == [f"ns-{HOST}-1", f"ns-{HOST}-2", f"ns-{HOST}-3"]


def test_containers_on_the_hosts_network_each_take_a_slot_of_their_own(own_redis: Redis) -> None:
    """Two containers on the host's network share its hostname and each runs its node as pid 1 of a
    PID namespace of its own: the second is not the first's dead predecessor (that pid is its own),
    so it takes the next slot, and neither is judged dead by the other's processes."""
    registry = NodeRegistry(own_redis, "ns-")
    first = dataclasses.replace(detect_capabilities(), pid=1, pid_ns="pid:[4026532001]")
    second = dataclasses.replace(first, pid_ns="pid:[4026532002]")
    assert registry.claim(None, first, ["render"])[0] == f"ns-{HOST}-1"
    assert registry.claim(None, second, ["render"])[0] == f"ns-{HOST}-2"
    assert not registry.is_dead(f"ns-{HOST}-1") and not registry.is_dead(f"ns-{HOST}-2")
    assert sorted(registry.live()) == [f"ns-{HOST}-1", f"ns-{HOST}-2"]


def test_a_name_is_free_once_its_node_is_dead_and_refused_while_it_lives(own_redis: Redis,
                                                                         sleepers: list[subprocess.Popen[bytes]]) -> None:
    registry = NodeRegistry(own_redis)
    alive, killed, restarted, _ = sleepers
    registry.claim("node1", pid=killed.pid)
    registry.claim("node2", pid=alive.pid)
    killed.kill()
    killed.wait()

    began = time.monotonic()
    name, before = registry.claim("node1", pid=restarted.pid)  # its last beat is a second old: its process tells
    assert name == "node1" and before.data["pid"] == str(killed.pid) and time.monotonic() - began < 0.5
    with pytest.raises(NameTaken) as refused:
        registry.claim("node2", pid=restarted.pid)
    assert str(refused.value).startswith("a node named 'node2' is alive: it sent a heartbeat 0.")
    assert f"from {HOST} (pid {alive.pid}). Two nodes cannot share a name" in str(refused.value)
    registry.mark_stopped("node2")  # a node that stopped gives its name back at once
    assert registry.claim("node2", pid=restarted.pid)[0] == "node2"


def test_a_name_held_on_another_host_is_judged_by_its_heartbeats(own_redis: Redis) -> None:
    registry, caps = NodeRegistry(own_redis), dataclasses.replace(detect_capabilities(), hostname="elsewhere")
    registry.beat("beating", caps, queues=["render"], state="idle", current_job=None)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.3):
            registry.beat("beating", caps, queues=["render"], state="idle", current_job=None)

    beater = threading.Thread(target=beat)
    beater.start()
    try:
        began = time.monotonic()
        with pytest.raises(NameTaken, match="from elsewhere"):
            registry.claim("beating")
        assert time.monotonic() - began < 2  # refused at its next beat
    finally:
        stop.set()
        beater.join()

    registry.beat("silent", caps, queues=["render"], state="idle", current_job=None)
    own_redis.zadd(registry.seen_key, {"silent": time.time() - ALIVE_SEC + 1})
    began = time.monotonic()
    assert registry.claim("silent")[0] == "silent"  # no beat for ALIVE_SEC: dead
    assert 0.5 < time.monotonic() - began < 3


def test_two_nodes_claiming_one_name_at_once_get_it_once(own_redis: Redis,
                                                         sleepers: list[subprocess.Popen[bytes]]) -> None:
    registry, outcomes = NodeRegistry(own_redis), []
    start = threading.Barrier(len(sleepers))

    def claim(pid: int) -> None:
        start.wait()
        try:
            outcomes.append(registry.claim("contested", pid=pid)[0])
        except NameTaken:
            outcomes.append("refused")

    threads = [threading.Thread(target=claim, args=(s.pid,)) for s in sleepers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["contested"] + ["refused"] * (len(sleepers) - 1)


def _stamp(seconds_ago: float) -> str:
    from datetime import UTC, datetime, timedelta

    from rq.utils import utcformat

    return utcformat(datetime.now(UTC) - timedelta(seconds=seconds_ago))


def test_the_scheduler_locks_a_dead_node_left_are_freed_and_never_stop_a_start(
        own_redis: Redis, caplog: pytest.LogCaptureFixture, sleepers: list[subprocess.Popen[bytes]]) -> None:
    gone = sleepers[0]
    gone.kill()
    gone.wait()
    leftovers = {
        # RQ's heartbeat wrote into a record that had expired: only last_heartbeat (RQ's fetch: KeyError 'name')
        "fragment": {"last_heartbeat": _stamp(40)},
        "fragment-beating": {"last_heartbeat": _stamp(0.5)},  # such a record whose scheduler still beats
        "dead-pid": {"name": "dead-pid", "hostname": HOST, "pid": str(gone.pid), "last_heartbeat": _stamp(0.5)},
        "silent": {"name": "silent", "hostname": "elsewhere", "pid": "7", "last_heartbeat": _stamp(40)},
        "live": {"name": "live", "hostname": HOST, "pid": str(os.getpid()), "last_heartbeat": _stamp(0.5)},
    }
    for holder, record in leftovers.items():
        own_redis.set(RQScheduler.get_locking_key(f"q-{holder}"), holder)
        own_redis.hset(f"rq:scheduler:{holder}", mapping=record)
    own_redis.set(RQScheduler.get_locking_key("q-expired"), "expired")  # its record expired: so will the lock

    with pytest.raises(KeyError, match="name"):  # what a node starting beside these leftovers died of
        RQScheduler.fetch("fragment", own_redis)

    queues = [f"q-{holder}" for holder in leftovers] + ["q-expired"]
    with caplog.at_level(logging.WARNING, logger="reelfarm.farm"):
        freed = free_dead_scheduler_locks(own_redis, queues)
    assert sorted(freed) == ["q-dead-pid", "q-fragment", "q-silent"]
    assert sorted(k.decode() for k in own_redis.keys("rq:scheduler-lock:*")) == \
        ["rq:scheduler-lock:q-expired", "rq:scheduler-lock:q-fragment-beating", "rq:scheduler-lock:q-live"]
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("freed the scheduler locks of ") and "only a fragment of a record" in line
    assert f"whose process {gone.pid} is gone" in line and "silent for 40 s" in line


def test_capabilities_say_when_the_process_started() -> None:
    caps = detect_capabilities()
    assert caps.pid == os.getpid() and caps.pid_started.isdigit()
    assert Capabilities(HOST, 1, 2, None, False).pid_started == ""
