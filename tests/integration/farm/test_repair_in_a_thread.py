"""The farm's repair round runs in a thread (of a node, of each API process): handing back the chunk
of a node that died must work there, without anything that needs the main thread (RQ's registry
clean-up runs the job's failure callback under a death penalty, by default SIGALRM, which only the
main thread may set). Until it is handed back, the Render says which chunk waits and why; once
handed back, the chunk is at the front of its queue at once, its retry spent but not waited for."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from rq.job import Job

from reelfarm.farm.runtime.maintenance import recover_orphans
from reelfarm.farm.runtime.nodes import NodeRegistry
from tests.integration.farm.conftest import Farm, make_doc
from tests.integration.farm.test_render_embedded import wait_for
from tests.integration.farm.test_worker_faults import Workers, kill_mid_chunk, workers  # noqa: F401 - the fixture


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_dead_nodes_chunk_is_handed_back_by_a_repair_round_in_a_thread(rq_farm: Farm, workers: Workers,  # noqa: F811
                                                                         redis: Any, namespace: str) -> None:
    workspace = rq_farm.workspace(credits=3)
    render = rq_farm.renders.request(workspace, rq_farm.video(workspace, make_doc(12)), "16:9", resolution=1080)
    kill_mid_chunk(rq_farm, workers, redis, namespace, render["id"], chunk_frames=120)
    registry = NodeRegistry(redis, namespace)
    wait_for(lambda: registry.is_dead(f"{namespace}first"), timeout=30, interval=0.2)
    shown = rq_farm.renders.get(workspace, render["id"])
    assert shown["held_up"] == {"chunk": 0, "reason": "node_stopped", "message": "waiting for chunk 0 (its node stopped)"}

    outcome: dict[str, Any] = {}

    def repair() -> None:
        try:
            outcome["recovered"] = recover_orphans(redis, [f"{namespace}render"], registry)
        except Exception as exc:  # noqa: BLE001 - what the test reports
            outcome["error"] = exc

    thread = threading.Thread(target=repair)
    thread.start()
    thread.join(30)
    chunk = f"{namespace}render-{render['id']}-chunk-0"
    assert "error" not in outcome, repr(outcome.get("error"))
    assert outcome["recovered"] == [chunk]
    assert redis.zcard(f"rq:wip:{namespace}render") == 0  # no longer registered as running
    job = Job.fetch(chunk, connection=redis)
    assert getattr(job.get_status(), "value", job.get_status()) == "queued"  # handed back, not left for its retry
    assert job.retries_left == 1  # its retry spent: a chunk that kills every node it runs on does not loop
    assert redis.lindex(f"rq:queue:{namespace}render", 0).decode() == chunk
    assert rq_farm.renders.get(workspace, render["id"])["held_up"] is None
