"""A node that dies after taking a job and before starting it: the job runs on the next node, its
retries unspent, instead of waiting in no queue for RQ's clean-up or the stall reaper.

A real ``reelfarm worker`` (queues ``render,jobs``: RQ pops the job outright, no intermediate list)
waits for a job; its database is shut down under it, so once it has taken the job it waits for the
database before starting it. It is killed there. The API process's hand-back round puts the job
back at the front of its queue; with the database back, a second node runs it.
"""
from __future__ import annotations

import os
import signal
import time

from redis import Redis
from rq import Queue, Retry, Worker
from rq.job import Job, JobStatus

from reelfarm.farm.runtime.nodes import taken_key
from tests.e2e.test_farm_outages import Farm, farm, wait_for  # noqa: F401 - the fixture
from tests.helpers import WORK_CEILING_SEC


def test_a_job_taken_by_a_node_that_died_before_starting_it_runs_on_the_next_node(farm: Farm) -> None:  # noqa: F811
    redis = Redis.from_url(farm.redis.url)
    node = farm.start_worker()
    # idle: registered, past its look at the database, waiting for a job (RQ marks that just before it waits)
    wait_for(lambda: any(w.get_state() == "idle" for w in Worker.all(connection=redis)), WORK_CEILING_SEC,
             f"the node to wait for a job\n{farm.worker_log()}")
    time.sleep(0.5)
    queue = Queue("jobs", connection=redis)

    farm.postgres.shut_down()  # the node waits for a job; it will hold the one it takes until the database is back
    job = queue.enqueue("os.getpid", retry=Retry(max=1))
    wait_for(lambda: redis.hexists(taken_key(""), job.id), WORK_CEILING_SEC, f"the node to take the job\n{farm.worker_log()}")
    assert queue.count == 0 and job.id not in queue.started_job_registry  # taken, not started: in no list
    assert node.poll() is None

    os.killpg(node.pid, signal.SIGKILL)  # the node dies with the job in hand
    node.wait()
    wait_for(lambda: queue.get_job_ids() == [job.id], 30,
             f"the API's hand-back round to put the job back\n{farm.server_log()}")
    back = Job.fetch(job.id, connection=redis)
    assert back.get_status() == JobStatus.QUEUED and back.retries_left == 1  # it never ran: nothing spent
    assert not redis.hexists(taken_key(""), job.id)
    assert f"job {job.id} was taken by" in farm.server_log()

    farm.postgres.launch()
    farm.start_worker()
    wait_for(lambda: Job.fetch(job.id, connection=redis).get_status() == JobStatus.FINISHED, WORK_CEILING_SEC,
             f"the next node to run the job\n{farm.worker_log()}")
