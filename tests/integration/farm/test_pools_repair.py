"""A pool's chunk on a node that dies is repaired like any other: while it is registered as running on
the dead node (in its tag set's ready queue, ``render@region=eu``), the Render says ``node_stopped``;
the repair round's hand-back (``rq_repair.handback``, which looks in the ready queues of every tag set
in the node registry) puts it back at the front of that queue, its retry spent."""
from __future__ import annotations

from typing import Any

import pytest
from rq.job import Job

from reelfarm.farm.runtime.maintenance import rq_repair
from reelfarm.farm.runtime.nodes import NodeRegistry
from reelfarm.farm.runtime.queue import RQQueue
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_render_embedded import wait_for
from tests.integration.farm.test_worker_faults import Workers, workers  # noqa: F401 - the fixture


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_dead_nodes_chunk_of_a_pool_is_held_up_then_handed_back_to_its_pools_queue(
        rq_farm: Farm, workers: Workers, redis: Any, namespace: str) -> None:  # noqa: F811
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=1080,
                                     pool="region=eu")
    assert render["pool"] == "region=eu"
    first = workers.start("first", "--tags", "region=eu")
    wait_for(lambda: 0 < rq_farm.progress.frames(render["id"]) < 120, interval=0.01)
    workers.kill(first)
    ready = f"{namespace}render@region=eu"
    assert redis.zcard(f"rq:wip:{ready}") == 1, "the killed chunk is registered as started in its pool's queue"
    registry = NodeRegistry(redis, namespace)
    wait_for(lambda: registry.is_dead(f"{namespace}first"), timeout=30, interval=0.2)
    assert rq_farm.renders.get(workspace, render["id"])["held_up"] == {
        "chunk": 0, "reason": "node_stopped", "message": "waiting for chunk 0 (its node stopped)"}

    chunk = f"{namespace}render-{render['id']}-chunk-0"
    assert chunk in rq_repair(RQQueue(redis, namespace=namespace)).handback()
    assert redis.zcard(f"rq:wip:{ready}") == 0  # no longer registered as running
    job = Job.fetch(chunk, connection=redis)
    assert getattr(job.get_status(), "value", job.get_status()) == "queued" and job.retries_left == 1
    assert redis.lindex(f"rq:queue:{ready}", 0).decode() == chunk  # for the pool's nodes, first
    held = rq_farm.renders.get(workspace, render["id"])["held_up"]
    assert held is not None and held["reason"] == "no_node_in_pool"  # no live node serves region=eu now


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_chunk_left_in_a_tag_set_with_no_live_node_goes_to_another_serving_its_pool(
        rq_farm: Farm, workers: Workers, redis: Any, namespace: str) -> None:  # noqa: F811
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=1080,
                                     pool="region=eu")
    first = workers.start("first", "--tags", "region=eu")
    wait_for(lambda: 0 < rq_farm.progress.frames(render["id"]) < 120, interval=0.01)
    workers.kill(first)
    registry = NodeRegistry(redis, namespace)
    wait_for(lambda: registry.is_dead(f"{namespace}first"), timeout=30, interval=0.2)
    chunk = f"{namespace}render-{render['id']}-chunk-0"
    assert Job.fetch(chunk, connection=redis).meta["pool"] == "region=eu"  # given out to a tag set of the pool

    other = workers.start("other", "--tags", "region=eu,rack=b")  # another tag set that serves region=eu
    wait_for(lambda: any(n["alive"] and n["name"] == f"{namespace}other" for n in registry.nodes()), interval=0.2)
    assert chunk in rq_repair(RQQueue(redis, namespace=namespace)).handback()
    assert redis.llen(f"rq:queue:{namespace}render@region=eu") == 0, "not left where no node is"
    done = wait_for(lambda: (r := rq_farm.renders.get(workspace, render["id"]))["status"] in ("succeeded", "failed")
                    and r, interval=0.2)
    assert done["status"] == "succeeded", (done["error"], workers.log("other"))
    assert Job.fetch(chunk, connection=redis).worker_name == f"{namespace}other"
    # its stitch, enqueued for the pool's own queue (no node served it when the render was asked
    # for), ran in the pool too: moved to the live tag set's queue once no node of region=eu was left
    stitch = Job.fetch(f"{namespace}render-{render['id']}-stitch", connection=redis)
    assert (stitch.worker_name, stitch.meta["pool"]) == (f"{namespace}other", "region=eu")
    assert stitch.origin == f"{namespace}render@rack=b,region=eu"
    workers.kill(other)
