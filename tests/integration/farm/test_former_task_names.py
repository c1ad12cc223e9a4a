"""Work queued by a farm running an earlier release still runs after the upgrade: tasks and callbacks
named as the release before the ``reelfarm.*`` namespace named them (``farm.tasks.render_chunk``,
``farm.queue.on_rq_failure``, ``farm.tasks.handle_task_failure``) and as the release before the
farm's two rooms did (``reelfarm.farm.tasks.render_chunk``), in Redis or in the embedded queue's rows."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rq import SimpleWorker
from rq.job import Job
from rq.queue import Queue
from sqlalchemy import select

from reelfarm.farm.runtime import queue as queue_module
from reelfarm.farm.runtime.queue import task_path
from reelfarm.farm.runtime.rqnode import NodeWorker
from reelfarm.shared.tables import queued_tasks
from tests.integration.farm.conftest import Farm, make_doc, with_image, work_burst
from tests.integration.farm.test_render_embedded import assert_video, local_file, wait_for


def former(path: str) -> str:
    """The name the release before the namespace gave a task (``reelfarm.farm.runtime.x`` -> ``farm.x``)."""
    return path.removeprefix("reelfarm.").replace("farm.runtime.", "farm.").replace("farm.services.", "farm.")


def before_the_rooms(path: str) -> str:
    """The name the release before the farm's two rooms gave it (``reelfarm.farm.x``)."""
    return f"reelfarm.{former(path)}"


class FormerRelease:
    """Enqueues as the earlier release did: the same jobs under the old dotted names."""

    def __init__(self, queue: Any, name: Any = former) -> None:
        self.queue, self.name = queue, name

    def enqueue(self, func_path: str, *args: Any, **options: Any) -> None:
        assert func_path.startswith("reelfarm.farm.runtime."), func_path
        self.queue.enqueue(self.name(func_path), *args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)


@pytest.fixture(params=[former, before_the_rooms], ids=["before-the-namespace", "before-the-rooms"])
def naming(request: pytest.FixtureRequest) -> Any:
    return request.param


@pytest.fixture
def former_rq(rq_farm: Farm, naming: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Farm]:
    monkeypatch.setattr(queue_module, "RQ_ON_FAILURE", naming(queue_module.RQ_ON_FAILURE))
    monkeypatch.setattr(rq_farm.queue, "failure_handler", naming(queue_module.DEFAULT_FAILURE_HANDLER))
    monkeypatch.setattr(rq_farm.renders, "queue", FormerRelease(rq_farm.queue, naming))
    yield rq_farm


def work_burst_as_a_node(redis: Any, namespace: str) -> None:
    """RQ's in-process worker reading jobs the way a ``reelfarm worker`` node does."""
    queues = [Queue(f"{namespace}{q}", connection=redis) for q in ("render", "jobs")]
    work_burst(redis, namespace, worker=lambda: SimpleWorker(queues, connection=redis, job_class=NodeWorker.job_class))


def test_task_path_maps_only_the_former_names() -> None:
    assert task_path("farm.tasks.render_chunk") == "reelfarm.farm.runtime.tasks.render_chunk"
    assert task_path("reelfarm.farm.tasks.stitch") == "reelfarm.farm.runtime.tasks.stitch"
    assert task_path("farm.renders.segment_key") == "reelfarm.farm.services.renders.segment_key"
    assert task_path("reelfarm.farm.runtime.tasks.stitch") == "reelfarm.farm.runtime.tasks.stitch"
    assert task_path("tests.integration.farm.jobs_for_tests.ok") == "tests.integration.farm.jobs_for_tests.ok"


def test_every_former_farm_module_maps_to_one_that_exists() -> None:
    import importlib

    for module, room in queue_module.FORMER_FARM_MODULES.items():
        importlib.import_module(f"reelfarm.farm.{room}.{module}")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_render_queued_in_redis_under_the_former_names_runs(former_rq: Farm, naming: Any, redis: Any,
                                                              namespace: str) -> None:
    workspace = former_rq.workspace(credits=3)
    render = former_rq.renders.request(workspace, former_rq.video(workspace, make_doc(6)), "1:1", resolution=120)
    stored = Job.fetch(f"{namespace}render-{render['id']}-chunk-0", connection=redis)  # waiting for its turn
    assert stored.func_name == naming("reelfarm.farm.runtime.tasks.render_chunk")
    assert stored._failure_callback_name == naming("reelfarm.farm.runtime.queue.on_rq_failure")

    work_burst_as_a_node(redis, namespace)

    done = former_rq.renders.get(workspace, render["id"])
    assert done["status"] == "succeeded", done["error"]
    assert_video(local_file(former_rq.storage, done["url"]), 120, 120, 30, 180, audio=False)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_failure_queued_under_the_former_names_still_fails_and_refunds(former_rq: Farm, redis: Any, namespace: str,
                                                                        tmp_path: Path) -> None:
    workspace = former_rq.workspace(credits=3)
    video = former_rq.video(workspace, with_image(make_doc(6), former_rq, workspace, tmp_path, corrupt=True))
    render = former_rq.renders.request(workspace, video, "16:9", resolution=120)
    assert former_rq.balance(workspace) == 2

    work_burst_as_a_node(redis, namespace)

    failed = former_rq.renders.get(workspace, render["id"])
    assert failed["status"] == "failed" and "refunded" in failed["error"]
    assert former_rq.balance(workspace) == 3


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_render_in_embedded_rows_under_the_former_names_runs(embedded: Farm) -> None:
    embedded.renders.queue = FormerRelease(embedded.queue)  # type: ignore[attr-defined]
    workspace = embedded.workspace(credits=3)
    render = embedded.renders.request(workspace, embedded.video(workspace, make_doc(6)), "1:1", resolution=120)
    with embedded.engine.connect() as conn:
        names = set(conn.execute(select(queued_tasks.c.func)).scalars())
    assert names == {"farm.tasks.render_chunk", "farm.tasks.stitch"}

    embedded.queue.start()  # type: ignore[attr-defined]
    done = wait_for(lambda: (r := embedded.renders.get(workspace, render["id"]))["status"] in ("succeeded", "failed")
                    and r)
    assert done["status"] == "succeeded", done["error"]
    assert_video(local_file(embedded.storage, done["url"]), 120, 120, 30, 180, audio=False)
