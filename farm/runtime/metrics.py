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

Metrics (no label carries an id; ``kind`` is the task function's name, a fixed set; the node is
the scrape target's ``instance``):

- ``reelfarm_jobs_total{kind, outcome}``, ``reelfarm_job_duration_seconds{kind}`` (a chunk's
  duration is ``kind="render_chunk"``), ``reelfarm_job_queue_wait_seconds{kind}``;
- ``reelfarm_render_duration_seconds``: from the render's request to its stitch finishing;
- ``reelfarm_frames_rendered_total`` and ``reelfarm_frames_per_second`` (of the last chunk);
- ``reelfarm_node_set_aside`` (1 while the farm has set this node aside, else 0) and
  ``reelfarm_node_chunk_failures`` (its chunks that failed in a row through its fault), read from
  the node's standing in Redis when scraped (``reelfarm.farm.runtime.nodehealth``; why it was set
  aside is in its heartbeat's ``state`` and ``failure``, a text no label should carry);
  ``reelfarm_chunks_stuck_total``: chunks it stopped for drawing no frame for the stall time;
- ``reelfarm_gpu_utilization_ratio``, ``reelfarm_gpu_memory_used_bytes``,
  ``reelfarm_gpu_memory_total_bytes`` per GPU index, read through nvidia-ml-py when it is
  installed and a driver answers (the ``gpu`` extra); absent otherwise.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from reelfarm.farm.runtime.rqnode import NodeWorker
from reelfarm.farm.services.nodehealth import Standing
from reelfarm.shared import logs

log = logging.getLogger("reelfarm.farm")

_RENDER_JOB = re.compile(r"render-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
JOB_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
RENDER_BUCKETS = (5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600)

JOBS = Counter("reelfarm_jobs_total", "Jobs this node ran, by task and outcome", ["kind", "outcome"])
JOB_DURATION = Histogram("reelfarm_job_duration_seconds", "Time a job ran on this node (chunks: kind=render_chunk)",
                         ["kind"], buckets=JOB_BUCKETS)
QUEUE_WAIT = Histogram("reelfarm_job_queue_wait_seconds", "Time a job waited in its queue before it started",
                       ["kind"], buckets=JOB_BUCKETS)
RENDER_DURATION = Histogram("reelfarm_render_duration_seconds", "From a render's request to its file being ready",
                            buckets=RENDER_BUCKETS)
FRAMES = Counter("reelfarm_frames_rendered_total", "Frames this node drew and encoded")
FPS = Gauge("reelfarm_frames_per_second", "Frames per second of this node's last chunk")
REUSED = Counter("reelfarm_frames_reused_total",
                 "Frames of the renders this node stitched that were reused from earlier renders, not drawn")
NODE = Gauge("reelfarm_node_info", "This node's rasterizer and encoder family (always 1)", ["raster", "encoder"])
STUCK = Counter("reelfarm_chunks_stuck_total", "Chunks this node stopped for drawing no frame for the stall time")


def describe_node(raster: str, encoder: str) -> None:
    """Label the node's metrics with how it draws and encodes."""
    NODE.labels(raster, encoder).set(1)


def serve_metrics(port: int, addr: str = "0.0.0.0", queue: Any = None, engine: Any = None,
                  standing: Callable[[], Standing] | None = None) -> None:
    """Expose this process's metrics (and the GPU's, when there is one) over HTTP on ``port``; with
    ``queue`` and ``engine``, also each busy workspace's chunks on the farm; with ``standing``
    (reads the node's standing), whether the node is set aside."""
    REGISTRY.register(GpuCollector())
    if queue is not None and engine is not None:
        REGISTRY.register(WorkspaceLoadCollector(queue, engine))
    if standing is not None:
        REGISTRY.register(StandingCollector(standing))
    start_http_server(port, addr=addr)
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
            started = time.monotonic()
            try:
                super().execute_job(job, queue)
            finally:
                try:
                    self._observe(job, time.monotonic() - started)
                except Exception:  # metrics never fail a job
                    log.debug("could not record metrics for %s", job.id, exc_info=True)

    def stop_stuck_chunk(self, job: Any, why: str) -> None:
        STUCK.inc()
        super().stop_stuck_chunk(job, why)

    def _observe(self, job: Any, elapsed: float) -> None:
        kind = (job.func_name or "unknown").rpartition(".")[2]
        job.refresh()
        status = job.get_status(refresh=False)
        outcome = getattr(status, "value", str(status))
        JOBS.labels(kind, outcome).inc()
        duration = _seconds(job.started_at, job.ended_at) or elapsed
        JOB_DURATION.labels(kind).observe(duration)
        if job.enqueued_at and job.started_at:
            QUEUE_WAIT.labels(kind).observe(max(0.0, _seconds(job.enqueued_at, job.started_at) or 0.0))
        if outcome != "finished":
            return
        if kind == "render_chunk" and len(job.args) >= 2:
            frames = self._chunk_frames(str(job.args[0]), int(job.args[1]))
            if frames:
                FRAMES.inc(frames)
                FPS.set(frames / duration if duration > 0 else 0.0)
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
            RENDER_DURATION.observe(_seconds(row.created_at, row.finished_at) or 0.0)
            REUSED.inc(row.reused_frames or 0)


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
    """Whether this node is set aside, and its chunk failures in a row, read when scraped."""

    def __init__(self, standing: Callable[[], Standing]) -> None:
        self.standing = standing

    def collect(self) -> Iterator[Any]:
        try:
            standing = self.standing()
        except Exception:  # Redis unreachable: the other metrics still
            log.debug("could not read the node's standing", exc_info=True)
            return
        yield GaugeMetricFamily("reelfarm_node_set_aside", "1 while the farm has set this node aside, else 0",
                                value=1.0 if standing.set_aside(time.time()) else 0.0)
        yield GaugeMetricFamily("reelfarm_node_chunk_failures",
                                "This node's chunks that failed in a row through its own fault",
                                value=float(standing.failures))


class GpuCollector(Collector):
    """Utilization and memory of each NVIDIA GPU, read through NVML when scraped."""

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
                                 labels=["gpu"])
        used = GaugeMetricFamily("reelfarm_gpu_memory_used_bytes", "GPU memory in use", labels=["gpu"])
        total = GaugeMetricFamily("reelfarm_gpu_memory_total_bytes", "GPU memory", labels=["gpu"])
        try:
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
                memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
                util.add_metric([str(index)], rates.gpu / 100.0)
                used.add_metric([str(index)], float(memory.used))
                total.add_metric([str(index)], float(memory.total))
        except Exception:  # a device that stops answering: report what was read
            log.debug("NVML query failed", exc_info=True)
        finally:
            pynvml.nvmlShutdown()
        yield from (util, used, total)
