"""A farm node's own Prometheus metrics, served on its own port (``reelfarm worker --metrics-port``).

RQ runs each job in a forked work horse that exits when the job is done. Counting inside the
horse would need prometheus-client's multiprocess mode and leave one file per job behind, so the
node counts in its long-lived parent process instead: ``MeteredWorker`` wraps the node worker's
``execute_job`` (which forks the horse and waits for it) and, once the horse is gone, reads the
job's outcome and timestamps back from Redis. For a chunk it looks the render's frame plan up in
the database to count the chunk's frames. The same wrapper binds ``job_id``, ``queue`` and
``render_id`` to the log context (``reelfarm.shared.logs``), which the forked horse inherits, so every log
line about a job says which one; for a render's job also its ``workspace_id`` and the
``request_id`` of the request that asked for the render (read from its row).

Metrics (no label carries an id; ``kind`` is the task function's name, a fixed set; ``node`` is
the node's name, one per node, so the label's values are bounded by the farm's nodes, and a
dashboard or an alert can say which node without relabelling the scrape target):

- ``reelfarm_jobs_total{node, kind, outcome}``: every attempt this node ran, by how it ended:
  ``finished``; ``failed`` (it raised, or its work horse died: also when RQ retries it, which
  ``reelfarm_job_retries_total{node, kind}`` counts, and a chunk whose failure set the node aside
  and went back to its queue unspent); ``stopped`` (canceled); ``requeued`` (handed back unspent
  by a node that stopped);
- ``reelfarm_job_duration_seconds{node, kind}`` (a chunk's duration is ``kind="render_chunk"``),
  ``reelfarm_job_queue_wait_seconds{node, kind}``;
- ``reelfarm_render_duration_seconds{node}``: from the render's request to its stitch finishing;
- ``reelfarm_frames_rendered_total{node}`` and ``reelfarm_frames_per_second{node}`` (of the last chunk);
- ``reelfarm_node_set_aside{node}`` (1 while the farm has set this node aside, else 0),
  ``reelfarm_node_disabled{node}`` (1 while an operator has taken it out of work),
  ``reelfarm_node_chunk_failures{node}`` (its chunks that failed in a row through its fault) and
  ``reelfarm_node_heartbeat_age_seconds{node}`` (since the farm last recorded its heartbeat), read
  from Redis when scraped (``reelfarm.farm.runtime.nodehealth``; why it was set aside is in its
  heartbeat's ``state`` and ``failure``, a text no label should carry);
  ``reelfarm_chunks_stuck_total{node}``: chunks it stopped for drawing no frame for the stall time;
- ``reelfarm_gpu_utilization_ratio``, ``reelfarm_gpu_memory_used_bytes``,
  ``reelfarm_gpu_memory_total_bytes`` per ``node`` and GPU index, read through nvidia-ml-py when it
  is installed and a driver answers (the ``gpu`` extra); absent otherwise.

The same port answers the node's probes (``reelfarm.farm.runtime.nodeprobe``): ``/livez`` and
``/readyz``.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from reelfarm.farm.runtime.nodehealth import is_chunk
from reelfarm.farm.runtime.nodeprobe import NodeProbe, NodeState, serve_probes
from reelfarm.farm.runtime.rqnode import NodeWorker
from reelfarm.shared import logs

log = logging.getLogger("reelfarm.farm")

_RENDER_JOB = re.compile(r"render-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
JOB_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
RENDER_BUCKETS = (5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600)

JOBS = Counter("reelfarm_jobs_total", "Job attempts this node ran, by task and how each ended",
               ["node", "kind", "outcome"])
RETRIES = Counter("reelfarm_job_retries_total", "Job attempts that failed on this node and were retried",
                  ["node", "kind"])
JOB_DURATION = Histogram("reelfarm_job_duration_seconds", "Time a job ran on this node (chunks: kind=render_chunk)",
                         ["node", "kind"], buckets=JOB_BUCKETS)
QUEUE_WAIT = Histogram("reelfarm_job_queue_wait_seconds", "Time a job waited in its queue before it started",
                       ["node", "kind"], buckets=JOB_BUCKETS)
RENDER_DURATION = Histogram("reelfarm_render_duration_seconds", "From a render's request to its file being ready",
                            ["node"], buckets=RENDER_BUCKETS)
FRAMES = Counter("reelfarm_frames_rendered_total", "Frames this node drew and encoded", ["node"])
FPS = Gauge("reelfarm_frames_per_second", "Frames per second of this node's last chunk", ["node"])
REUSED = Counter("reelfarm_frames_reused_total",
                 "Frames of the renders this node stitched that were reused from earlier renders, not drawn", ["node"])
NODE = Gauge("reelfarm_node_info", "This node's rasterizer and encoder family (always 1)", ["node", "raster", "encoder"])
STUCK = Counter("reelfarm_chunks_stuck_total", "Chunks this node stopped for drawing no frame for the stall time",
                ["node"])


def describe_node(node: str, raster: str, encoder: str) -> None:
    """Label the node's metrics with how it draws and encodes."""
    NODE.labels(node, raster, encoder).set(1)


def attempt_outcome(status: str, retried: bool) -> str:
    """How one attempt of a job ended, from the job's status after it and whether RQ retries it."""
    if retried or status == "failed":
        return "failed"
    if status in ("finished", "stopped", "canceled"):
        return "stopped" if status == "canceled" else status
    return "requeued"  # back in a queue with its retries unspent: handed back by the node


def serve_metrics(port: int, addr: str = "0.0.0.0", queue: Any = None, engine: Any = None,
                  node: Callable[[], NodeState] | None = None, probe: NodeProbe | None = None) -> None:
    """Expose this process's metrics (and the GPU's, when there is one) over HTTP on ``port``; with
    ``queue`` and ``engine``, also each busy workspace's chunks on the farm; with ``node`` (reads
    the node's state in the farm), whether it is set aside or disabled and its heartbeat's age;
    with ``probe``, the node's ``/livez`` and ``/readyz`` on the same port."""
    REGISTRY.register(GpuCollector(lambda: probe.name() if probe is not None else ""))
    if queue is not None and engine is not None:
        REGISTRY.register(WorkspaceLoadCollector(queue, engine))
    if node is not None:
        REGISTRY.register(StandingCollector(node))
    serve_probes(port, addr, probe)
    log.info("metrics on :%d/metrics", port)


def _render_fields(render_id: str) -> dict[str, str | None]:
    """The render's workspace and request ids, so that RQ's own lines about its job carry them too."""
    from reelfarm.farm.runtime.tasks import render_log_fields  # the tasks' imports, on first use only

    return render_log_fields(render_id)


class MeteredWorker(NodeWorker):
    """The node's worker, counting each job and binding its ids to the log context (module docstring)."""

    def execute_job(self, job: Any, queue: Any) -> None:
        render = _RENDER_JOB.search(job.id)
        fields = _render_fields(render.group(1)) if render else {}
        with logs.log_context(job_id=job.id, queue=queue.name, render_id=render.group(1) if render else None,
                              **fields):
            started, retries_left, failures = time.monotonic(), job.retries_left, self._failures(job)
            try:
                super().execute_job(job, queue)
            finally:
                try:
                    self._observe(job, time.monotonic() - started, retries_left, failures)
                except Exception:  # metrics never fail a job
                    log.debug("could not record metrics for %s", job.id, exc_info=True)

    def stop_stuck_chunk(self, job: Any, why: str) -> None:
        STUCK.labels(self.name).inc()
        super().stop_stuck_chunk(job, why)

    def _failures(self, job: Any) -> int | None:
        """The node's chunk failures in a row, before and after a chunk: a rise is this attempt
        failing through the node's fault, also when it set the node aside and was handed back."""
        if self.health is None or not is_chunk(job.func_name):
            return None
        try:
            return self.health.standing(self.name).failures
        except Exception:  # noqa: BLE001 - Redis unreachable: counted from the job's status alone
            return None

    def _observe(self, job: Any, elapsed: float, retries_left: int | None, failures: int | None) -> None:
        kind = (job.func_name or "unknown").rpartition(".")[2]
        job.refresh()
        status = job.get_status(refresh=False)
        retried = retries_left is not None and job.retries_left is not None and job.retries_left < retries_left
        after = self._failures(job) if failures is not None else None
        failed_here = failures is not None and after is not None and after > failures
        outcome = attempt_outcome(str(getattr(status, "value", status)), retried or failed_here)
        JOBS.labels(self.name, kind, outcome).inc()
        if retried:
            RETRIES.labels(self.name, kind).inc()
        duration = _seconds(job.started_at, job.ended_at) or elapsed
        JOB_DURATION.labels(self.name, kind).observe(duration)
        if job.enqueued_at and job.started_at:
            QUEUE_WAIT.labels(self.name, kind).observe(max(0.0, _seconds(job.enqueued_at, job.started_at) or 0.0))
        if outcome != "finished":
            return
        if kind == "render_chunk" and len(job.args) >= 2:
            frames = self._chunk_frames(str(job.args[0]), int(job.args[1]))
            if frames:
                FRAMES.labels(self.name).inc(frames)
                FPS.labels(self.name).set(frames / duration if duration > 0 else 0.0)
        elif kind == "stitch" and job.args:
            self._observe_render(str(job.args[0]))

    def _chunk_frames(self, render_id: str, index: int) -> int:
        from reelfarm.farm.services.segments import chunk_frames
        from reelfarm.renderer.model import build_doc
        from reelfarm.shared.repos import renders as renders_repo
        from reelfarm.shared.repos import videos as videos_repo

        if self.database is None:
            return 0
        with self.database.connect() as conn:
            render = renders_repo.find_render(conn, render_id)
            if render is None or not render.frames:
                return 0
            doc = videos_repo.get_version_by_id(conn, render.workspace_id, render.version_id).doc
        chunks = chunk_frames(render, build_doc(doc))
        return chunks[index][1] - chunks[index][0] if index < len(chunks) else 0

    def _observe_render(self, render_id: str) -> None:
        from reelfarm.shared.tables import renders

        if self.database is None:
            return
        with self.database.connect() as conn:
            row = conn.execute(renders.select().where(renders.c.id == render_id)).first()
        if row is not None and row.status == "succeeded" and row.finished_at is not None:
            RENDER_DURATION.labels(self.name).observe(_seconds(row.created_at, row.finished_at) or 0.0)
            REUSED.labels(self.name).inc(row.reused_frames or 0)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    return max(0.0, (end - start).total_seconds())


class WorkspaceLoadCollector(Collector):
    """Each busy workspace's chunks running and waiting, read when scraped
    (``reelfarm.farm.services.loadmetrics``: bounded labels)."""

    def __init__(self, queue: Any, engine: Any) -> None:
        self.queue, self.engine = queue, engine

    def collect(self) -> Iterator[Any]:
        from reelfarm.farm.services.loadmetrics import load_families
        from reelfarm.shared.repos.workspaces import workspace_names

        def names(ids: Any) -> dict[str, str]:
            with self.engine.connect() as conn:
                return workspace_names(conn, ids)
        try:
            yield from load_families(self.queue.loads(), names)
        except Exception:  # Redis or the database unreachable: the other metrics still
            log.debug("could not read the farm's load", exc_info=True)


class StandingCollector(Collector):
    """This node's state in the farm (set aside, disabled, chunk failures in a row, heartbeat age),
    read when scraped."""

    def __init__(self, node: Callable[[], NodeState]) -> None:
        self.node = node

    def collect(self) -> Iterator[Any]:
        try:
            state = self.node()
        except Exception:  # Redis unreachable: the other metrics still
            log.debug("could not read the node's standing", exc_info=True)
            return
        for name, text, value in (
                ("reelfarm_node_set_aside", "1 while the farm has set this node aside, else 0",
                 1.0 if state.standing.set_aside(time.time()) else 0.0),
                ("reelfarm_node_disabled", "1 while an operator has taken this node out of work, else 0",
                 1.0 if state.disabled else 0.0),
                ("reelfarm_node_chunk_failures", "This node's chunks that failed in a row through its own fault",
                 float(state.standing.failures)),
                ("reelfarm_node_heartbeat_age_seconds", "Seconds since the farm last recorded this node's heartbeat",
                 state.heartbeat_age)):
            family = GaugeMetricFamily(name, text, labels=["node"])
            family.add_metric([state.name], value)
            yield family


class GpuCollector(Collector):
    """Utilization and memory of each NVIDIA GPU, read through NVML when scraped."""

    def __init__(self, node: Callable[[], str]) -> None:
        self.node = node

    def collect(self) -> Iterator[Any]:
        try:
            import pynvml  # nvidia-ml-py; the "gpu" extra
        except Exception:  # noqa: BLE001 - not installed: no GPU metrics
            return
        try:
            pynvml.nvmlInit()
        except Exception:  # noqa: BLE001 - no driver
            return
        util = GaugeMetricFamily("reelfarm_gpu_utilization_ratio", "GPU busy share over the last sample period",
                                 labels=["node", "gpu"])
        used = GaugeMetricFamily("reelfarm_gpu_memory_used_bytes", "GPU memory in use", labels=["node", "gpu"])
        total = GaugeMetricFamily("reelfarm_gpu_memory_total_bytes", "GPU memory", labels=["node", "gpu"])
        node = self.node()
        try:
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
                memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
                util.add_metric([node, str(index)], rates.gpu / 100.0)
                used.add_metric([node, str(index)], float(memory.used))
                total.add_metric([node, str(index)], float(memory.total))
        except Exception:  # a device that stops answering: report what was read
            log.debug("NVML query failed", exc_info=True)
        finally:
            pynvml.nvmlShutdown()
        yield from (util, used, total)
