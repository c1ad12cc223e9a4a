"""A job's lifecycle: every change of its status in one place, and the one table of job kinds.

    queued ──start──▶ running ──stage──▶ running ──succeed──▶ succeeded
       │                 │
       └──fail, cancel───┴──▶ failed | canceled

``TRANSITIONS`` says which statuses each event may leave; any other is refused: a succeeded job
cannot fail, a canceled one cannot succeed, nothing leaves failed or canceled. Each method is one
transaction, and the repository's update is conditional on the same statuses, so a task racing a
cancel ends with exactly one winner. A generation that fails or is canceled fails its video in
the same transaction (``generation_ended``).

``JOB_KINDS`` maps each kind of job to the task that runs it and the words its failure is told
in: the job service, reconciliation and the queues' failure handler all read it.

Tasks, the reaper, reconciliation and the job service call it; nothing else writes a job's status.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sqlalchemy import Connection, Engine

from reelfarm.farm.services.errors import StateConflict
from reelfarm.farm.services.resources import job_resource
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import jobs as repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.statuses import JOB_STATUSES, VIDEO_IN_THE_MAKING
from reelfarm.shared.storage import Storage
from reelfarm.studio.resources import jsonable, video_resource

log = logging.getLogger("reelfarm.farm")


@dataclass(frozen=True)
class JobKind:
    """What runs a kind of job (a task's import path) and what it does, in a failure's words."""

    task: str
    doing: str


JOB_KINDS: Mapping[str, JobKind] = MappingProxyType({
    "stills": JobKind("reelfarm.farm.runtime.tasks.render_stills", "rendering the stills"),
    "brand_extract": JobKind("reelfarm.farm.runtime.studio_tasks.extract_brand", "extracting the brand"),
    "generate": JobKind("reelfarm.farm.runtime.studio_tasks.generate_video", "generating the video"),
})

STATUSES = JOB_STATUSES
LIVE = frozenset(repo.LIVE)
# event -> statuses it may leave (the status it enters is in the name)
TRANSITIONS: dict[str, frozenset[str]] = {
    "start": LIVE,                    # a retried task starts a running job again
    "stage": frozenset({"running"}),
    "succeed": frozenset({"running"}),
    "fail": LIVE,
    "cancel": LIVE,
}


def allowed(status: str, event: str) -> bool:
    """Whether ``event`` may happen to a job that is ``status``."""
    return status in TRANSITIONS[event]


def job_queue_id(job_id: str) -> str:
    """The queue's id of the job's one task."""
    return f"job-{job_id}"


class _Refused(Exception):
    """The job stopped being live while its result was written: roll the result back."""


class JobLifecycle:
    """The one writer of a job's status."""

    def __init__(self, engine: Engine, clock: Clock, storage: Storage) -> None:
        self.engine, self.clock, self.storage = engine, clock, storage

    def start(self, job_id: str, stage: str) -> repo.Job | None:
        """``queued -> running`` at ``stage`` (a retry of a running job counts an attempt); None
        when the job is no longer live, so the task does nothing."""
        with transaction(self.engine) as conn:
            job = repo.find_job(conn, job_id)
            if job is None or not allowed(job.status, "start"):
                return None
            return repo.start_job(conn, self.clock, job_id, stage)

    def stage(self, job_id: str, stage: str, progress: float) -> bool:
        """A running job moved to ``stage`` at ``progress`` (never lowered); False when it is not
        running any more (canceled or failed meanwhile): the task stops."""
        with transaction(self.engine) as conn:
            return repo.set_stage(conn, job_id, stage, progress)

    def succeed(self, job_id: str, write: Callable[[Connection], Mapping[str, Any]]) -> repo.Job | None:
        """``running -> succeeded``: ``write(conn)`` stores what the job made and answers its result,
        in the same transaction as the change of status. None when refused (the job was canceled
        or failed meanwhile), in which case what ``write`` stored is rolled back."""
        try:
            with transaction(self.engine) as conn:
                job = repo.find_job(conn, job_id)
                if job is None or not allowed(job.status, "succeed"):
                    return None
                done = repo.finish_job(conn, self.clock, job_id, write(conn))
                if done is None:
                    raise _Refused()
                return done
        except _Refused:
            return None

    def fail(self, job_id: str, message: str) -> bool:
        """``queued|running -> failed`` with ``message`` (a generation's video fails with it);
        False when refused (already finished or gone)."""
        with transaction(self.engine) as conn:
            job = repo.find_job(conn, job_id)
            if job is None or not allowed(job.status, "fail"):
                return False
            ended = repo.fail_job(conn, self.clock, job_id, message)
            if ended is not None:
                generation_ended(conn, self.clock, self.storage, ended)
        if ended is not None:
            log.info("job %s failed: %s", job_id, message)
        return ended is not None

    def cancel(self, workspace_id: str, job_id: str) -> repo.Job:
        """``queued|running -> canceled`` (the client asked).

        Raises:
            shared.errors.NotFound: no such job in the workspace.
            StateConflict: the job has already finished.
        """
        with transaction(self.engine) as conn:
            job = repo.get_job(conn, workspace_id, job_id)
            ended = repo.cancel_job(conn, self.clock, job_id) if allowed(job.status, "cancel") else None
            if ended is None:
                raise StateConflict(f"the job is {job.status}; only a queued or running job can be canceled")
            generation_ended(conn, self.clock, self.storage, ended)
        return ended


def generation_ended(conn: Connection, clock: Clock, storage: Storage, job: repo.Job) -> None:
    """After a ``generate`` job failed or was canceled (``job`` as it ended): its video becomes
    ``failed`` and ``video.generation_failed`` is written, in the caller's transaction."""
    if job.kind != "generate" or not job.video_id:
        return
    try:
        video = videos_repo.get_video(conn, job.workspace_id, job.video_id)
    except LookupError:
        return
    if video.status not in VIDEO_IN_THE_MAKING:
        return
    video = videos_repo.update_video(conn, clock, job.workspace_id, video.id, status="failed")
    version = (videos_repo.get_version_by_id(conn, job.workspace_id, video.current_version_id)
               if video.current_version_id else None)
    resource = video_resource(video, version, job_resource(job, storage, clock))
    add_event(conn, clock, workspace_id=job.workspace_id, type="video.generation_failed",
              payload={"video": jsonable(resource)})
