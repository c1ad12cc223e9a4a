"""Node names are identities: real ``reelfarm worker`` processes, killed and started again, on a
PostgreSQL database and a Redis database of the test's own.

- A node killed with SIGKILL in the middle of a job and started again under its ``--name`` starts at
  once (RQ's record of the dead node, which lives ``worker_ttl`` + 60 s and made RQ refuse the name,
  is cleared) and runs the job the dead one left.
- A node started under the name of a live node is refused, in one sentence; the live one runs on.
- Without ``--name`` a node is ``<host>-<n>``, the lowest slot free on its host; a killed node's slot
  is taken again by the next node started there.
- The scheduler locks that a dead node leaves behind, down to the fragment of a record that made a
  starting node die in ``free_dead_scheduler_locks`` (``KeyError: 'name'``), never stop a node
  starting, and the node's scheduler moves due jobs. A node killed alone (SIGKILL to its main process)
  does not leave its scheduler running.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest
from redis import Redis
from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.scheduler import RQScheduler
from rq.utils import utcformat

from tests.e2e.test_node_drain import end_tree
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
HOST = socket.gethostname()


class Nodes:
    """The ``reelfarm worker`` processes of one test, each with its log."""

    def __init__(self, root: Path, database_url: str, redis_url: str) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
        self.env.update(REELFARM_DATABASE_URL=database_url, REELFARM_REDIS_URL=redis_url,
                        REELFARM_DATA_DIR=str(root / "data"), REELFARM_SECRET_KEY="k" * 48, TMPDIR=str(root),
                        PYTHONUNBUFFERED="1")
        self.redis = Redis.from_url(redis_url)
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"node-{len(self.started)}.log", "wb")  # noqa: SIM115 - closed with the process
        node = subprocess.Popen([sys.executable, "-m", "reelfarm.farm.runtime.cli", "worker", "--queues", "render,jobs",
                                 *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.started.append(node)
        return node

    def log(self, node: subprocess.Popen[bytes]) -> str:
        return (self.root / f"node-{self.started.index(node)}.log").read_text(errors="replace")

    def registered(self, name: str, node: subprocess.Popen[bytes]) -> bool:
        """Whether ``node`` is registered in RQ as ``name``."""
        assert node.poll() is None, self.log(node)
        return self.redis.hget(f"rq:worker:{name}", "pid") == str(node.pid).encode()

    def idle(self, name: str, node: subprocess.Popen[bytes]) -> bool:
        """Whether ``node`` is registered in RQ as ``name`` and waits for a job."""
        return self.registered(name, node) and self.redis.hget(f"rq:worker:{name}", "state") == b"idle"

    def close(self) -> None:
        for node in self.started:
            end_tree(node)
        self.redis.close()


@pytest.fixture
def nodes(tmp_path: Path, farm_database: str, farm_redis: str) -> Iterator[Nodes]:
    made = Nodes(tmp_path, farm_database, farm_redis)
    yield made
    made.close()


def test_a_node_killed_mid_job_and_started_again_under_its_name_starts_at_once_and_runs_the_job(
        nodes: Nodes) -> None:
    began = time.monotonic()
    first = nodes.start("--name", "node1")
    wait_until(lambda: nodes.idle("node1", first), "node1 to wait for a job")
    first_start = time.monotonic() - began
    job = Queue("jobs", connection=nodes.redis).enqueue("time.sleep", 5, retry=Retry(max=1))
    wait_until(lambda: Job.fetch(job.id, connection=nodes.redis).get_status() == JobStatus.STARTED,
               "node1 to start the job")

    end_tree(first)  # SIGKILL: the node, its work horse and its scheduler, at once
    assert nodes.redis.exists("rq:worker:node1") and not nodes.redis.hexists("rq:worker:node1", "death")
    began = time.monotonic()
    again = nodes.start("--name", "node1")
    wait_until(lambda: nodes.registered("node1", again), "node1 to start again")
    restart = time.monotonic() - began
    # as soon as a node that was never there (RQ refused the name for 91-137 s: the dead node's record)
    assert restart < first_start + 10, (restart, first_start)
    wait_until(lambda: Job.fetch(job.id, connection=nodes.redis).get_status() == JobStatus.FINISHED,
               f"the job to run again on node1\n{nodes.log(again)}")
    done = Job.fetch(job.id, connection=nodes.redis)
    assert done.worker_name == "node1" and done.retries_left == 0  # handed back: the killed run spent its retry
    log = nodes.log(again)
    assert f"node node1 takes over the name of a node that is gone; its jobs {job.id} are handed back" in log
    assert "There exists an active worker" not in log and again.poll() is None


def test_a_node_started_under_the_name_of_a_live_node_is_refused_in_one_sentence(nodes: Nodes) -> None:
    live = nodes.start("--name", "node1")
    wait_until(lambda: nodes.idle("node1", live), "node1 to wait for a job")

    twin = nodes.start("--name", "node1")
    assert twin.wait(timeout=120) == 1
    [refusal] = [line for line in nodes.log(twin).splitlines() if line.startswith("Error: ")]
    assert refusal.startswith("Error: a node named 'node1' is alive: it sent a heartbeat ")
    assert refusal.endswith(f"from {HOST} (pid {live.pid}). Two nodes cannot share a name: stop that node first, or "
                            "start this one under another --name (without --name it takes <host>-<n>, the lowest "
                            "slot free on its host)")
    assert nodes.idle("node1", live)  # untouched: still registered, still waiting for work
    job = Queue("jobs", connection=nodes.redis).enqueue("os.getpid")
    wait_until(lambda: Job.fetch(job.id, connection=nodes.redis).get_status() == JobStatus.FINISHED,
               "node1 to run a job")
    assert Job.fetch(job.id, connection=nodes.redis).worker_name == "node1"


def test_default_names_and_the_scheduler_locks_a_dead_node_leaves(nodes: Nodes) -> None:
    redis = nodes.redis
    stamp = utcformat(datetime.now(UTC) - timedelta(seconds=90))
    for queue in ("render", "jobs"):  # what a dead node's scheduler left: locks, and a fragment of its record
        redis.set(RQScheduler.get_locking_key(queue), "gone-scheduler")
    redis.hset("rq:scheduler:gone-scheduler", "last_heartbeat", stamp)

    first = nodes.start()
    wait_until(lambda: nodes.idle(f"{HOST}-1", first), f"the first node to start as {HOST}-1")
    second = nodes.start()
    wait_until(lambda: nodes.idle(f"{HOST}-2", second), f"the second node to start as {HOST}-2")
    log = nodes.log(first)
    assert "freed the scheduler locks of " in log and "only a fragment of a record is left" in log
    assert "KeyError" not in log
    holder = redis.get(RQScheduler.get_locking_key("jobs")).decode()
    assert RQScheduler.fetch(holder, redis).pid in [p.pid for p in psutil.Process(first.pid).children()]
    due = Queue("jobs", connection=redis).enqueue_in(timedelta(seconds=1), "os.getpid")  # the scheduler moves it
    wait_until(lambda: Job.fetch(due.id, connection=redis).get_status() == JobStatus.FINISHED,
               f"the due job to be moved and run\n{log}")

    scheduler = psutil.Process(RQScheduler.fetch(holder, redis).pid)
    os.kill(first.pid, signal.SIGKILL)  # the node alone: its scheduler stops by itself, its locks released
    first.wait()
    scheduler.wait(timeout=10)
    wait_until(lambda: redis.get(RQScheduler.get_locking_key("jobs")) != holder.encode(),
               "the dead node's scheduler lock to be released")
    third = nodes.start()
    wait_until(lambda: nodes.idle(f"{HOST}-1", third), f"a third node to take the free slot {HOST}-1")
    assert nodes.idle(f"{HOST}-2", second)
    due = Queue("jobs", connection=redis).enqueue_in(timedelta(seconds=1), "os.getpid")
    wait_until(lambda: Job.fetch(due.id, connection=redis).get_status() == JobStatus.FINISHED,
               "a due job to be moved and run after the node holding the scheduler lock died")
