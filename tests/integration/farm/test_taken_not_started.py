"""A job a node took from its queue and never started: noted as taken, cleared once started, and put
back at the front of its queue, its retries unspent, only once the node that took it is gone.

Real Redis and RQ: the node's own ``NodeWorker`` takes each job as its work loop does (one queue:
RQ's intermediate list; several queues: a plain pop); the node's record in the registry says
whether it lives. ``tests/e2e/test_taken_not_started.py`` kills a real node in that moment.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import pytest
from rq import Queue, Retry
from rq.job import Job, JobStatus

from reelfarm.farm.runtime.maintenance import recover_taken
from reelfarm.farm.runtime.nodes import NodeRegistry, detect_capabilities, taken_key
from reelfarm.farm.runtime.rqnode import NodeWorker


def _node(redis: Any, namespace: str, queues: list[Queue], name: str = "taker") -> NodeWorker:
    worker = NodeWorker(queues, connection=redis, name=f"{namespace}{name}", taken=taken_key(namespace))
    worker.last_cleaned_at = worker.last_cleaned_at or _now()  # RQ's maintenance (and its scheduler) not now
    NodeRegistry(redis, namespace).beat(worker.name, detect_capabilities(), queues=[q.name for q in queues],
                                        state="busy", current_job=None)
    return worker


def _now() -> Any:
    from rq.utils import now

    return now()


def _queues(redis: Any, namespace: str, how_many: int) -> list[Queue]:
    return [Queue(f"{namespace}{name}", connection=redis) for name in ("render", "jobs")[:how_many]]


def _dead(redis: Any, namespace: str, name: str) -> None:
    """The node's record as a node on another machine that stopped heartbeating leaves it."""
    registry = NodeRegistry(redis, namespace)
    caps = dataclasses.replace(detect_capabilities(), hostname="elsewhere")
    registry.beat(f"{namespace}{name}", caps, queues=[], state="busy", current_job=None)
    redis.zadd(registry.seen_key, {f"{namespace}{name}": time.time() - 60})  # its last beat, a minute ago


@pytest.mark.parametrize("how_many", [1, 2], ids=["one queue (RQ's intermediate list)", "two queues (a pop)"])
def test_a_dead_nodes_taken_job_goes_back_to_the_front_with_its_retries(redis: Any, namespace: str,
                                                                        how_many: int) -> None:
    queues = _queues(redis, namespace, how_many)
    first = queues[0].enqueue("os.getpid", retry=Retry(max=2))
    second = queues[0].enqueue("os.getpid")
    node = _node(redis, namespace, queues)
    job, queue = node.dequeue_job_and_maintain_ttl(timeout=1)
    assert job.id == first.id and queue.name == queues[0].name
    key, registry = taken_key(namespace), NodeRegistry(redis, namespace)
    assert redis.hget(key, first.id).decode() == f"{node.name}\n{queue.name}"
    assert redis.lrange(queue.key, 0, -1) == [second.id.encode()]  # in no queue: only the note knows of it
    assert (redis.lrange(queue.intermediate_queue_key, 0, -1) == [first.id.encode()]) == (how_many == 1)

    assert recover_taken(redis, key, registry) == []  # its node lives (it may be waiting for the database)
    assert redis.hexists(key, first.id) and redis.lrange(queue.key, 0, -1) == [second.id.encode()]

    _dead(redis, namespace, "taker")
    assert recover_taken(redis, key, registry) == [first.id]
    assert redis.lrange(queue.key, 0, -1) == [first.id.encode(), second.id.encode()]  # at the front
    assert redis.llen(queue.intermediate_queue_key) == 0 and not redis.hexists(key, first.id)
    back = Job.fetch(first.id, connection=redis)
    assert back.get_status() == JobStatus.QUEUED and back.retries_left == 2  # it never ran: nothing spent
    assert recover_taken(redis, key, registry) == []  # once

    other = _node(redis, namespace, queues, name="other")
    job, queue = other.dequeue_job_and_maintain_ttl(timeout=1)
    assert job.id == first.id
    other.prepare_execution(job)  # registered as started: a dead node's job is recover_orphans' now
    assert not redis.hexists(key, first.id)
    assert job.id in queue.started_job_registry


def test_notes_of_started_finished_or_missing_jobs_are_dropped_and_nothing_is_put_back(redis: Any,
                                                                                        namespace: str) -> None:
    (queue,) = _queues(redis, namespace, 1)
    key, registry = taken_key(namespace), NodeRegistry(redis, namespace)
    node = _node(redis, namespace, [queue])
    started = queue.enqueue("os.getpid")
    job, _ = node.dequeue_job_and_maintain_ttl(timeout=1)
    redis.hset(key, job.id, f"{node.name}\n{queue.name}")  # as if the note outlived a Redis error on clearing it
    node.prepare_execution(job)
    redis.hset(key, job.id, f"{node.name}\n{queue.name}")
    finished = queue.enqueue("os.getpid")
    finished.set_status(JobStatus.FINISHED)
    redis.hset(key, finished.id, f"{node.name}\n{queue.name}")
    redis.hset(key, f"{namespace}gone", f"{node.name}\n{queue.name}")
    _dead(redis, namespace, "taker")

    assert recover_taken(redis, key, registry) == []
    assert redis.hlen(key) == 0
    assert started.id in queue.started_job_registry and redis.lrange(queue.key, 0, -1) == [finished.id.encode()]


def test_a_node_without_the_farms_key_notes_nothing(redis: Any, namespace: str) -> None:
    (queue,) = _queues(redis, namespace, 1)
    queue.enqueue("os.getpid")
    worker = NodeWorker([queue], connection=redis, name=f"{namespace}plain")
    worker.last_cleaned_at = _now()
    assert worker.dequeue_job_and_maintain_ttl(timeout=1) is not None
    assert not redis.exists(taken_key(namespace))
    assert os.getpid()  # the job's function, importable as RQ needs


def test_the_render_says_which_chunk_waits_for_a_dead_node_until_it_is_put_back(redis: Any, namespace: str) -> None:
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.services.graph import chunk_job_id

    (queue,) = _queues(redis, namespace, 1)
    render_id = "7d3c2a14-0000-4000-8000-000000000001"
    queue.enqueue("os.getpid", job_id=f"{namespace}{chunk_job_id(render_id, 2)}")
    node = _node(redis, namespace, [queue])
    node.dequeue_job_and_maintain_ttl(timeout=1)
    farm = RQQueue(redis, namespace=namespace)
    assert farm.held_up(render_id) is None  # its node lives
    _dead(redis, namespace, "taker")
    assert farm.held_up(render_id) == {"chunk": 2, "reason": "node_stopped",
                                       "message": "waiting for chunk 2 (its node stopped)"}
    assert farm.held_up("7d3c2a14-0000-4000-8000-000000000002") is None  # another render's
    recover_taken(redis, taken_key(namespace), NodeRegistry(redis, namespace))
    assert farm.held_up(render_id) is None


def test_the_render_says_which_chunk_waits_on_a_silent_node_before_it_is_called_dead(redis: Any,
                                                                                      namespace: str) -> None:
    from reelfarm.farm.runtime.nodes import ALIVE_SEC, SILENT_SEC
    from reelfarm.farm.runtime.queue import RQQueue
    from reelfarm.farm.services.graph import chunk_job_id

    (queue,) = _queues(redis, namespace, 1)
    render_id = "7d3c2a14-0000-4000-8000-000000000003"
    queue.enqueue("os.getpid", job_id=f"{namespace}{chunk_job_id(render_id, 1)}")
    node = _node(redis, namespace, [queue])
    node.dequeue_job_and_maintain_ttl(timeout=1)
    farm, registry = RQQueue(redis, namespace=namespace), NodeRegistry(redis, namespace)
    assert farm.held_up(render_id) is None  # it beat just now
    quiet = (SILENT_SEC + ALIVE_SEC) / 2
    redis.zadd(registry.seen_key, {f"{namespace}taker": time.time() - quiet})  # a beat or two missed
    held = farm.held_up(render_id)
    assert held is not None and (held["chunk"], held["reason"]) == (1, "node_silent")
    assert held["message"] == f"waiting for chunk 1 (its node has not been heard from for {quiet:.0f} s)"
    _dead(redis, namespace, "taker")
    assert farm.held_up(render_id)["reason"] == "node_stopped"
