"""Asynchronous jobs the farm runs for a video (stills here; brand extraction and generation
arrive with studio) and the Job resource.

Stills: ``times`` holds 1 to 20 numbers, each ``0 <= t <= duration``; every problem is reported
at once, as JSON pointers (``/times/3``). The job renders PNGs of the current version (stage
``render``), stores them (stage ``upload``) and keeps their storage keys; every read of the job
signs the URLs afresh, valid 10 minutes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

import renderer
from farm.errors import InvalidRequest, QueueUnavailable, StateConflict
from farm.queue import JobQueue
from shared.clock import Clock
from shared.db import transaction
from shared.repos import jobs as repo
from shared.repos import videos as videos_repo
from shared.storage import Storage

log = logging.getLogger("reelfarm.farm")

STILLS_URL_TTL_SEC = 600
MAX_STILLS = 20
JOBS_QUEUE = "jobs"
STILLS_TASK = "farm.tasks.render_stills"


def job_queue_id(job_id: str) -> str:
    return f"job-{job_id}"


def job_resource(job: repo.Job, storage: Storage, clock: Clock) -> dict[str, Any]:
    """The Job resource; a stills result carries URLs signed now, valid 10 minutes."""
    return {
        "id": job.id, "kind": job.kind, "status": job.status, "stage": job.stage,
        "progress": round(float(job.progress), 4), "error": job.error,
        "result": _result(job, storage, clock), "created_at": job.created_at, "finished_at": job.finished_at,
    }


def _result(job: repo.Job, storage: Storage, clock: Clock) -> dict[str, Any] | None:
    if job.result is None or job.kind != "stills" or job.status != "succeeded":
        return job.result if job.kind != "stills" else None
    expires_at = (clock.now() + timedelta(seconds=STILLS_URL_TTL_SEC)).isoformat()
    return {"stills": [{"time": s["time"], "url": storage.url(s["key"], STILLS_URL_TTL_SEC),
                        "width": s["width"], "height": s["height"], "expires_at": expires_at}
                       for s in job.result.get("stills", [])]}


class JobService:
    """Starts, reads and cancels jobs."""

    def __init__(self, engine: Engine, queue: JobQueue, storage: Storage, clock: Clock,
                 retries: int = 2) -> None:
        self.engine = engine
        self.queue = queue
        self.storage = storage
        self.clock = clock
        self.retries = retries

    def request_stills(self, workspace_id: str, video_id: str, times: Any, fmt: str | None = None,
                       resolution: int = 1080) -> dict[str, Any]:
        """A queued ``stills`` job for the video's current version.

        Raises:
            InvalidRequest: ``times`` or ``format`` out of range (``details`` lists every problem).
            shared.errors.NotFound: no such video in the workspace.
            studio.videos.VideoStateError: the video is generating or archived.
            QueueUnavailable: the queue is down; no job was created.
        """
        _check_list(times)
        with self.engine.connect() as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            version = _stillable_version(conn, video)
        _check_values(times, fmt, float(version.doc["duration"]))
        params = {"version_id": version.id, "times": [float(t) for t in times],
                  "format": fmt or version.doc.get("format") or video.default_format, "resolution": resolution}
        self.queue.ping()
        with transaction(self.engine) as conn:
            job = repo.create_job(conn, self.clock, workspace_id=workspace_id, kind="stills", params=params,
                                  video_id=video_id)
        try:
            self.queue.enqueue(STILLS_TASK, job.id, job_id=job_queue_id(job.id), queue=JOBS_QUEUE,
                               retries=self.retries)
        except QueueUnavailable:
            with transaction(self.engine) as conn:
                repo.delete_job(conn, job.id)
            raise
        return job_resource(job, self.storage, self.clock)

    def get(self, workspace_id: str, job_id: str) -> dict[str, Any]:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            job = repo.get_job(conn, workspace_id, job_id)
        return job_resource(job, self.storage, self.clock)

    def cancel(self, workspace_id: str, job_id: str) -> dict[str, Any]:
        """``queued|running -> canceled``. Raises NotFound, or StateConflict for a finished job."""
        with transaction(self.engine) as conn:
            job = repo.get_job(conn, workspace_id, job_id)
            ended = repo.cancel_job(conn, self.clock, job_id)
            if ended is None:
                raise StateConflict(f"the job is {job.status}; only a queued or running job can be canceled")
        try:
            self.queue.cancel(job_queue_id(job_id))
        except QueueUnavailable:  # the task finds the job canceled and does nothing
            log.warning("job %s canceled, but it could not be dropped from the queue", job_id)
        return job_resource(ended, self.storage, self.clock)


def _stillable_version(conn: Any, video: videos_repo.Video) -> videos_repo.Version:
    from farm.renders import renderable_version  # one rule for what can be rendered

    return renderable_version(conn, video)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_list(times: Any) -> None:
    if not isinstance(times, (list, tuple)):
        raise InvalidRequest([{"field": "/times", "code": "invalid_type", "message": "must be an array of numbers"}])
    if not 1 <= len(times) <= MAX_STILLS:
        raise InvalidRequest([{"field": "/times", "code": "out_of_range",
                               "message": f"must hold 1 to {MAX_STILLS} times, not {len(times)}"}])


def _check_values(times: Sequence[Any], fmt: str | None, duration: float) -> None:
    """Every problem at once: each time a number within the video, and a known format."""
    details = []
    for i, t in enumerate(times):
        if not _is_number(t):
            details.append({"field": f"/times/{i}", "code": "invalid_type", "message": "must be a number of seconds"})
        elif not 0 <= t <= duration:
            details.append({"field": f"/times/{i}", "code": "out_of_range",
                            "message": f"must be between 0 and the video's duration, {duration:g} s"})
    if fmt is not None and fmt not in renderer.FORMATS:
        details.append({"field": "/format", "code": "invalid_choice",
                        "message": f"must be one of {', '.join(renderer.FORMATS)}"})
    if details:
        raise InvalidRequest(details)
