"""Asynchronous jobs (stills, brand extraction, generation from a brief, translated copies): starting,
reading and canceling them. The Job resource is in ``reelfarm.farm.services.resources``; each kind's
task is named in ``reelfarm.farm.services.job_lifecycle.JOB_KINDS``, and a job's status is written
only by its ``JobLifecycle``.

A job and what it works on (a ``generating`` or ``draft`` video) are written in one transaction
and only then handed to the queue; if the queue refuses, both are removed again, so no job is
left that nothing will run and no video waits forever.

Stills: ``times`` holds 1 to 20 numbers, each ``0 <= t <= duration``; every problem is reported
at once, as JSON pointers (``/times/3``). The job renders PNGs of the current version (stage
``render``), stores them (stage ``upload``) and keeps their storage keys; every read of the job
signs the URLs afresh, valid 10 minutes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from reelfarm.farm.services.errors import InvalidRequest, PlanFeatureUnavailable, QueueUnavailable, StateConflict
from reelfarm.farm.services.job_lifecycle import JOB_KINDS, JobLifecycle, job_queue_id
from reelfarm.farm.services.queues import JOBS_QUEUE, JobQueue
from reelfarm.farm.services.renders import renderable_version
from reelfarm.farm.services.resources import JobResource, job_resource
from reelfarm.renderer.spec import FORMATS
from reelfarm.shared import plans
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos import jobs as repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos import workspaces as ws_repo
from reelfarm.shared.storage import Storage
from reelfarm.studio.errors import FetchError
from reelfarm.studio.fetch import normalize_url
from reelfarm.studio.translate.locales import normalize_tag

if TYPE_CHECKING:
    from reelfarm.farm.services.collaborators import Collaborators

log = logging.getLogger("reelfarm.farm")

MAX_STILLS = 20


class JobService:
    """Starts, reads and cancels jobs."""

    def __init__(self, engine: Engine, queue: JobQueue, storage: Storage, clock: Clock,
                 studio: Callable[[], Collaborators], retries: int = 2) -> None:
        self.engine = engine
        self.queue = queue
        self.storage = storage
        self.clock = clock
        self.retries = retries
        self._studio = studio
        self.lifecycle = JobLifecycle(engine, clock, storage)

    @property
    def studio(self) -> Collaborators:
        """The studio's collaborators (moderation, translators) this service checks requests with,
        built on first use by whoever made the service (``reelfarm.farm.runtime.wiring``: the task context's)."""
        return self._studio()

    # -- brand extraction, generation, translation ------------------------------------------

    def request_brand_extract(self, workspace_id: str, url: str) -> JobResource:
        """A queued ``brand_extract`` job for ``url`` (https added when the scheme is missing).

        Raises:
            InvalidRequest: the URL is malformed or not http(s).
            QueueUnavailable: the queue is down; no job was created.
        """
        target = _checked_url(url, "/url")
        job = self._start(workspace_id, "brand_extract", {"url": target})
        return job_resource(job, self.storage, self.clock)

    def request_generation(self, workspace_id: str, *, brief: str | None, url: str | None, title: str | None,
                           brand_kit_id: str | None, fmt: str, duration_sec: float | None,
                           locale: str | None) -> tuple[videos_repo.Video, repo.Job]:
        """A ``generating`` video and its queued ``generate`` job, written together.

        The brief is moderated first: a rejected brief creates nothing.

        Raises:
            studio.errors.BriefRejected: moderation refused the brief.
            InvalidRequest: the URL is malformed.
            shared.errors.NotFound: ``brand_kit_id`` names no kit of the workspace.
            QueueUnavailable: the queue is down; nothing was created.
        """
        if brief:
            self.studio.moderator.check(brief)
        target = _checked_url(url, "/url") if url else None
        self.queue.ping()
        with transaction(self.engine) as conn:
            if brand_kit_id:
                kits_repo.get_brand_kit(conn, workspace_id, brand_kit_id)
            elif not target:
                default = kits_repo.get_default_brand_kit(conn, workspace_id)
                brand_kit_id = default.id if default else None
            video, _ = videos_repo.create_video(
                conn, self.clock, workspace_id=workspace_id, title=title or _title_of(brief, target),
                status="generating", default_format=fmt, brand_kit_id=brand_kit_id, locale=locale)
            params = {"brief": brief or "", "url": target, "title": title, "brand_kit_id": brand_kit_id,
                      "format": fmt, "duration_sec": duration_sec, "locale": locale}
            job = repo.create_job(conn, self.clock, workspace_id=workspace_id, kind="generate", params=params,
                                  video_id=video.id)
        self._enqueue_or_undo([job], [video.id])
        return video, job

    def request_translations(self, workspace_id: str, video_id: str,
                             locales: Sequence[str]) -> list[tuple[videos_repo.Video, repo.Job]]:
        """One translated copy per locale: a ``draft`` video and its queued ``generate`` job.

        Raises:
            PlanFeatureUnavailable: the workspace's plan has no translated copies (``reelfarm.shared.plans``).
            InvalidRequest: a locale is malformed, repeated, the video's own, or no engine has it.
            shared.errors.NotFound, studio.videos.VideoStateError: as for a render.
            QueueUnavailable: the queue is down; nothing was created.
        """
        video, version, source, targets = self.check_translations(workspace_id, video_id, locales)
        if not targets:
            return []
        self.queue.ping()
        made: list[tuple[videos_repo.Video, repo.Job]] = []
        with transaction(self.engine) as conn:
            for target in targets:
                copy, _ = videos_repo.create_video(
                    conn, self.clock, workspace_id=workspace_id, title=f"{video.title} ({target})"[:500],
                    status="draft", default_format=video.default_format, brand_kit_id=video.brand_kit_id,
                    locale=target, source_video_id=video.id)
                spec = {"version_id": version.id, "source": source, "target": target}
                job = repo.create_job(conn, self.clock, workspace_id=workspace_id, kind="generate",
                                      params={"translate": spec}, video_id=copy.id)
                made.append((copy, job))
        self._enqueue_or_undo([job for _, job in made], [copy.id for copy, _ in made])
        return made

    def check_translations(self, workspace_id: str, video_id: str, locales: Sequence[str]) -> tuple[
            videos_repo.Video, videos_repo.Version, str, list[str]]:
        """The video, the version to translate, its language and the target tags, checked.

        Raises as ``request_translations`` does, without creating anything.
        """
        with self.engine.connect() as conn:
            if locales and not plans.allows_locales(ws_repo.get_workspace(conn, workspace_id).plan):
                raise PlanFeatureUnavailable("Translated copies need the Pro or Agency plan.")
            video = videos_repo.get_video(conn, workspace_id, video_id)
            version = renderable_version(conn, video)
        source = _language_of(video.locale or version.doc.get("locale") or "en")
        return video, version, source, self._check_locales(locales, source)

    def locales(self, source: str) -> dict[str, Any]:
        """The locales the configured engines translate ``source`` (any case) into (``GET /locales``)."""
        source = source.lower()
        return {"source": source, "data": self.studio.translators.locales(source)}

    def _check_locales(self, locales: Sequence[str], source: str) -> list[str]:
        """400 for what no request may hold (a malformed, repeated or unpublished tag); 409 for
        a published tag that this video cannot go to (its own language, or no engine from it)."""
        translators = self.studio.translators
        published = set(published_locales(translators))
        details, targets = [], []
        for i, raw in enumerate(locales):
            tag = _canonical_tag(raw)
            if tag is None or tag != raw:
                hint = f"; write it as {tag}" if tag else ""
                details.append({"field": f"/locales/{i}", "code": "invalid_locale",
                                "message": f"must be a BCP 47 language tag such as de or pt-BR{hint}"})
            elif tag in targets:
                details.append({"field": f"/locales/{i}", "code": "duplicate", "message": f"{tag} is listed twice"})
            elif tag not in published:
                details.append({"field": f"/locales/{i}", "code": "unsupported_locale",
                                "message": f"no configured engine translates into {tag}; "
                                           "GET /api/v1/locales lists those that do"})
            else:
                targets.append(tag)
        if details:
            raise InvalidRequest(details)
        same = [t for t in targets if _language_of(t) == source]
        if same:
            raise StateConflict(f"the video is already in {source}; it cannot be translated into {', '.join(same)}")
        missing = [t for t in targets if not translators.supports(source, t)]
        if missing:
            raise StateConflict(f"no configured engine translates this video's language ({source}) into "
                                f"{', '.join(missing)}; GET /api/v1/locales?source={source} lists those that do")
        return targets

    def _start(self, workspace_id: str, kind: str, params: dict[str, Any]) -> repo.Job:
        self.queue.ping()
        with transaction(self.engine) as conn:
            job = repo.create_job(conn, self.clock, workspace_id=workspace_id, kind=kind, params=params)
        self._enqueue_or_undo([job], [])
        return job

    def _enqueue_or_undo(self, jobs: Sequence[repo.Job], video_ids: Sequence[str]) -> None:
        """Hand the jobs to the queue; if it cannot take them all, remove them and their videos."""
        try:
            for job in jobs:
                self.queue.enqueue(JOB_KINDS[job.kind].task, job.id, job_id=job_queue_id(job.id), queue=JOBS_QUEUE,
                                   retries=self.retries)
        except QueueUnavailable:
            with transaction(self.engine) as conn:
                for job in jobs:
                    repo.delete_job(conn, job.id)
                for video_id in video_ids:
                    videos_repo.delete_video(conn, video_id)
            for job in jobs:  # any that did get queued find no job row and do nothing
                try:
                    self.queue.cancel(job_queue_id(job.id))
                except QueueUnavailable:
                    pass
            raise

    # -- stills -----------------------------------------------------------------------------

    def request_stills(self, workspace_id: str, video_id: str, times: Any, fmt: str | None = None,
                       resolution: int = 1080, number: int | None = None) -> JobResource:
        """A queued ``stills`` job for the video's current version, or for its version ``number``
        (an older one, looked at again: the same rule as for the current one, that the video can
        be rendered, holds).

        Raises:
            InvalidRequest: ``times`` or ``format`` out of range (``details`` lists every problem).
            shared.errors.NotFound: no such video in the workspace.
            studio.videos.VideoStateError: the video is generating or archived.
            QueueUnavailable: the queue is down; no job was created.
        """
        _check_list(times)
        with self.engine.connect() as conn:
            video = videos_repo.get_video(conn, workspace_id, video_id)
            version = renderable_version(conn, video)  # one rule for what can be rendered
            if number is not None and number != version.number:
                version = videos_repo.get_version(conn, workspace_id, video_id, number)
        _check_values(times, fmt, float(version.doc["duration"]))
        params = {"version_id": version.id, "times": [float(t) for t in times],
                  "format": fmt or version.doc.get("format") or video.default_format, "resolution": resolution}
        self.queue.ping()
        with transaction(self.engine) as conn:
            job = repo.create_job(conn, self.clock, workspace_id=workspace_id, kind="stills", params=params,
                                  video_id=video_id)
        self._enqueue_or_undo([job], [])
        return job_resource(job, self.storage, self.clock)

    def get(self, workspace_id: str, job_id: str) -> JobResource:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            job = repo.get_job(conn, workspace_id, job_id)
            title = number = None  # a succeeded stills job's downloads are named after the video and version
            if job.kind == "stills" and job.status == "succeeded" and job.video_id:
                title = videos_repo.get_video(conn, workspace_id, job.video_id).title
                if job.params.get("version_id"):
                    number = videos_repo.get_version_by_id(conn, workspace_id, job.params["version_id"]).number
        return job_resource(job, self.storage, self.clock, title, number)

    def cancel(self, workspace_id: str, job_id: str) -> JobResource:
        """``queued|running -> canceled``. Raises NotFound, or StateConflict for a finished job."""
        ended = self.lifecycle.cancel(workspace_id, job_id)
        try:
            self.queue.cancel(job_queue_id(job_id))
        except QueueUnavailable:  # the task finds the job canceled and does nothing
            log.warning("job %s canceled, but it could not be dropped from the queue", job_id)
        return job_resource(ended, self.storage, self.clock)


def published_locales(translators: Any) -> list[str]:
    """Every tag the configured engines translate into, from English or from any language they
    translate English into: the list requests are checked against (``GET /locales`` shows it per
    source)."""
    try:
        tags = {loc["code"] for loc in translators.locales("en")}
        for language in {_language_of(t) for t in tags}:
            tags |= {loc["code"] for loc in translators.locales(language)}
    except Exception:
        log.warning("the translation engines could not list their languages", exc_info=True)
        return []
    return sorted(tags)


def _canonical_tag(raw: Any) -> str | None:
    """``raw`` in its canonical case (``pt-br`` -> ``pt-BR``), or None if it is no language tag."""
    try:
        return normalize_tag(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _language_of(tag: str) -> str:
    return tag.split("-")[0].lower()


def _checked_url(url: str, pointer: str) -> str:
    try:
        return str(normalize_url(url))
    except FetchError as exc:
        raise InvalidRequest([{"field": pointer, "code": "invalid_url", "message": str(exc)}]) from None


def _title_of(brief: str | None, url: str | None) -> str:
    """A working title until the writer names the video: the brief's first words, or the site."""
    words = " ".join((brief or "").split())
    if not words:
        return f"Video for {url}"[:200] if url else "Untitled video"
    return words if len(words) <= 60 else words[:57].rsplit(" ", 1)[0] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_list(times: Any) -> None:
    if not isinstance(times, (list, tuple)):
        raise InvalidRequest([{"field": "/times", "code": "invalid_type", "message": "must be an array of numbers"}])
    if not 1 <= len(times) <= MAX_STILLS:
        raise InvalidRequest([{"field": "/times", "code": "out_of_range",
                               "message": f"must hold 1 to {MAX_STILLS} times, not {len(times)}"}])


def _check_values(times: Sequence[Any], fmt: str | None, duration: float) -> None:
    """Every problem at once: each time a number of seconds from 0, and a known format (400);
    then every time within this video's duration (409: the same times suit a longer video)."""
    details = []
    for i, t in enumerate(times):
        if not _is_number(t):
            details.append({"field": f"/times/{i}", "code": "invalid_type", "message": "must be a number of seconds"})
        elif t < 0:
            details.append({"field": f"/times/{i}", "code": "out_of_range", "message": "must be 0 or more"})
    if fmt is not None and fmt not in FORMATS:
        details.append({"field": "/format", "code": "invalid_choice",
                        "message": f"must be one of {', '.join(FORMATS)}"})
    if details:
        raise InvalidRequest(details)
    late = [f"{t:g}" for t in times if t > duration]
    if late:
        raise StateConflict(f"time{'s' if len(late) > 1 else ''} {', '.join(late)} s "
                            f"{'lie' if len(late) > 1 else 'lies'} past the end of the "
                            f"video ({duration:g} s); give times from 0 to {duration:g}")
