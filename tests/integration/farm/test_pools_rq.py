"""Pools on RQ (``reelfarm.farm.runtime.poolrounds``): a pool's chunks go only to the ready queue
of nodes that carry its tags, shared fairly among the workspaces waiting in it; untagged work
goes as before; a render in a pool no live node serves is ``held_up`` with ``no_node_in_pool``;
a pooled render's stitch goes to a tag set serving its pool, never to the plain queue."""
from __future__ import annotations

import dataclasses
import socket
from typing import Any

from rq.job import Job

from reelfarm.farm.runtime.nodes import Capabilities, NodeRegistry
from reelfarm.farm.runtime.poolrounds import rescue_stranded
from reelfarm.farm.runtime.queue import RQQueue
from reelfarm.farm.services.fairness import Share
from reelfarm.farm.services.graph import Dispatch, enqueue_graph, render_graph
from reelfarm.farm.services.queues import Turn


def shares(workspace_ids: Any) -> dict[str, Share]:
    return {w: Share(1.0, 1000) for w in workspace_ids}


def enqueue(queue: RQQueue, workspace: str, render: str, chunks: int, pool: str = "") -> list[str]:
    for index in range(chunks):
        queue.enqueue("os.getpid", job_id=f"render-{render}-chunk-{index}",
                      turn=Turn(workspace, render, 100, "normal", index, pool))
    return [queue.rq_job_id(f"render-{render}-chunk-{i}") for i in range(chunks)]


def node(registry: NodeRegistry, name: str, tags: str, state: str = "busy") -> None:
    caps = Capabilities(socket.gethostname(), 1, 2, None, False, tags=tags)  # pid 1: alive while it beats
    queues = [f"render@{tags}", "render"] if tags else ["render"]
    registry.beat(name, caps, queues=queues, state=state, current_job=None)


def ready(redis: Any, namespace: str, queue: str) -> list[str]:
    return [i.decode() for i in redis.lrange(f"rq:queue:{namespace}{queue}", 0, -1)]


def test_a_pools_chunks_reach_only_its_nodes_fairly_among_its_workspaces(redis: Any, namespace: str) -> None:
    queue = RQQueue(redis, namespace=namespace, shares=shares)
    registry = NodeRegistry(redis, namespace)
    node(registry, f"{namespace}eu", "region=eu")
    node(registry, f"{namespace}us", "customer=acme,region=us")
    acme_eu = enqueue(queue, "acme", "r-acme-eu", 4, "region=eu")
    globex_eu = enqueue(queue, "globex", "r-globex-eu", 4, "region=eu")
    acme_us = enqueue(queue, "initech", "r-initech-us", 3, "customer=acme,region=us")
    plain = enqueue(queue, "globex", "r-plain", 2)
    assert ready(redis, namespace, "render") == []  # no free place yet (the nodes are busy): all wait

    moved = queue.dispatcher.round(slots=2)
    eu = ready(redis, namespace, "render@region=eu")
    us = ready(redis, namespace, "render@customer=acme,region=us")
    assert sorted(eu) == sorted([acme_eu[0], globex_eu[0]])  # fair within the pool: one each
    assert us == acme_us[:2]
    assert ready(redis, namespace, "render") == []  # the tagged nodes' places went to their pools
    assert sorted(moved) == sorted(eu + us)

    # the node tagged customer=acme,region=us serves that pool (its tags hold the pool's); the
    # places left after the pools' go to untagged work, which any node takes
    queue.dispatcher.round(slots=1)
    assert ready(redis, namespace, "render@customer=acme,region=us") == acme_us
    assert len(ready(redis, namespace, "render@region=eu")) == 3 and ready(redis, namespace, "render") == []
    queue.dispatcher.round(slots=10)
    assert sorted(ready(redis, namespace, "render@region=eu")) == sorted(acme_eu + globex_eu)
    assert ready(redis, namespace, "render") == plain


def test_a_render_in_a_pool_no_live_node_serves_is_held_up(redis: Any, namespace: str) -> None:
    queue = RQQueue(redis, namespace=namespace, shares=shares)
    registry = NodeRegistry(redis, namespace)
    node(registry, f"{namespace}eu", "gpu,region=eu")
    enqueue(queue, "acme", "r-ap", 2, "region=ap")
    enqueue(queue, "globex", "r-eu", 2, "region=eu")
    enqueue(queue, "globex", "r-any", 1)
    queue.dispatcher.round(slots=0)
    held = queue.held_up("r-ap")
    assert held is not None and held["reason"] == "no_node_in_pool" and held["chunk"] == 0
    assert "'region=ap'" in held["message"]
    assert queue.held_up("r-eu") is None and queue.held_up("r-any") is None
    registry.disable(f"{namespace}eu", by="ops")  # a disabled node serves nothing
    assert queue.held_up("r-eu")["reason"] == "no_node_in_pool"
    registry.enable(f"{namespace}eu")
    node(registry, f"{namespace}ap", "region=ap")
    assert queue.held_up("r-ap") is None


def _stitch_alone(queue: RQQueue, render: str, pool: str) -> str:
    """Enqueue the stitch of a one-chunk ``render`` in ``pool`` as the render service builds it,
    without the chunk it waits for (so it is ready at once); its RQ id."""
    graph = render_graph(render, 1, needs_import=False, dispatch=Dispatch("acme", "normal", (10,), pool),
                         stitch_queue=queue.stitch_queue(pool))
    enqueue_graph(queue, [dataclasses.replace(graph.stitch, depends_on=())])
    return queue.rq_job_id(graph.stitch.job_id)


def test_a_pooled_stitch_runs_on_a_tag_set_serving_its_pool_and_moves_to_one_once_one_is_live(
        redis: Any, namespace: str) -> None:
    queue = RQQueue(redis, namespace=namespace, shares=shares)
    registry = NodeRegistry(redis, namespace)
    node(registry, f"{namespace}plain", "")
    node(registry, f"{namespace}eu", "rack=b,region=eu")
    assert queue.stitch_queue("") == "render"
    assert queue.stitch_queue("region=eu") == "render@rack=b,region=eu"  # a live set whose tags hold the pool's
    assert queue.stitch_queue("region=us") == "render@region=us"  # none serves it: the pool's own, not "render"

    plain, eu, us = (_stitch_alone(queue, r, p) for r, p in (("r-any", ""), ("r-eu", "region=eu"),
                                                              ("r-us", "region=us")))
    assert ready(redis, namespace, "render") == [plain] and "pool" not in Job.fetch(plain, connection=redis).meta
    assert ready(redis, namespace, "render@rack=b,region=eu") == [eu]
    assert ready(redis, namespace, "render@region=us") == [us]
    assert Job.fetch(us, connection=redis).meta["pool"] == "region=us"

    assert rescue_stranded(queue.dispatcher, registry.nodes()) == []  # no node serves region=us: it waits
    node(registry, f"{namespace}us", "gpu,region=us")
    assert rescue_stranded(queue.dispatcher, registry.nodes()) == [us]
    assert ready(redis, namespace, "render@region=us") == []
    assert ready(redis, namespace, "render@gpu,region=us") == [us]
    assert Job.fetch(us, connection=redis).origin == f"{namespace}render@gpu,region=us"
    assert ready(redis, namespace, "render@rack=b,region=eu") == [eu]  # a live set's own queue is left alone
