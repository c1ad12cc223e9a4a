"""The farm's creative jobs: brand extraction, generation from a brief, and translated copies.

Like every task they take a job id, load the rest, and are safe to run twice: each starts with a
conditional ``queued|running -> running`` and ends with a conditional finish in the same
transaction as its result (the brand kit or the version) and its outbox event, so a job canceled
meanwhile saves nothing. A brand kit's id is derived from its job's id, so a retried job finds
the kit it already made instead of making a second.

A problem the user can act on (an address refused by the SSRF guard, a site that does not answer,
a page with no brand, a rejected brief, a locale no engine translates) fails the job at once with
that message; anything else raises and the queue retries, then ``handle_task_failure`` fails the
job. A failed or canceled generation fails its video and writes ``video.generation_failed``.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from reelfarm.farm.runtime.context import TaskContext, current, studio_of
from reelfarm.farm.runtime.tasks import fail_job, job_lifecycle
from reelfarm.renderer.linter import lint
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos.outbox import add_event
from reelfarm.studio.brand import BrandExtractor
from reelfarm.studio.brand_kits import save_extracted_kit, store_logo
from reelfarm.studio.errors import (
    BrandExtractionError,
    BriefRejected,
    FetchFailed,
    FetchRefused,
    TranslationError,
    WriterError,
)
from reelfarm.studio.localize import localize
from reelfarm.studio.resources import jsonable, video_resource
from reelfarm.studio.writer import Brief, compose

log = logging.getLogger("reelfarm.farm")

_KIT_NAMESPACE = uuid.UUID("6f1c2b0e-6a3d-4f55-9a57-2f1f3c8c2d10")


class _Stopped(Exception):
    """The job stopped being live (canceled) while it ran."""


def kit_id_for(job_id: str) -> str:
    """The id of the brand kit a job makes: the same on every run of the job."""
    return str(uuid.uuid5(_KIT_NAMESPACE, job_id))


# -- brand extraction -----------------------------------------------------------------------

def extract_brand(job_id: str) -> None:
    """Fetch the site (stage ``fetch``), read its brand (``analyze``), store the kit (``save``)."""
    ctx = current()
    job = job_lifecycle(ctx).start(job_id, "fetch")
    if job is None:
        return
    try:
        _extract_and_save(ctx, job, _reporter(ctx, job_id, 0.0, 1.0))
    except _Stopped:
        return
    except (FetchRefused, FetchFailed, BrandExtractionError) as exc:
        fail_job(job_id, _brand_message(job.params["url"], exc))


def _extract_and_save(ctx: TaskContext, job: jobs_repo.Job, report: Callable[[str, float], None],
                      finish: bool = True) -> kits_repo.BrandKit:
    studio = studio_of(ctx)
    brand = BrandExtractor(studio.fetcher).extract(job.params["url"], report)
    report("save", 0.9)
    kit_id = kit_id_for(job.id)
    logo = store_logo(ctx.storage, kit_id, brand.logo)
    def save(conn: Connection) -> dict[str, Any]:
        kits.append(save_extracted_kit(conn, ctx.clock, ctx.storage, workspace_id=job.workspace_id, kit_id=kit_id,
                                       brand=brand, logo=logo))
        return {"brand_kit_id": kits[-1].id}

    kits: list[kits_repo.BrandKit] = []
    if not finish:
        with transaction(ctx.engine) as conn:
            save(conn)
    elif job_lifecycle(ctx).succeed(job.id, save) is None:
        raise _Stopped()  # canceled meanwhile: the kit was rolled back
    return kits[-1]


def _brand_message(url: str, exc: Exception) -> str:
    if isinstance(exc, FetchRefused):
        return f"{url} was refused: {exc}"
    if isinstance(exc, FetchFailed):
        return f"{url} could not be fetched: {exc}"
    return f"no brand could be read from {url}: {exc}"


# -- generation from a brief ----------------------------------------------------------------

def generate_video(job_id: str) -> None:
    """Write the job's video: from a brief (stages ``moderate``, ``brand``, ``script``,
    ``scenes``, ``save``), or, for a translated copy, from the original (``translate``, ``fit``,
    ``save``)."""
    ctx = current()
    with ctx.engine.connect() as conn:
        job = jobs_repo.find_job(conn, job_id)
    first = "translate" if job is not None and "translate" in job.params else "moderate"
    job = job_lifecycle(ctx).start(job_id, first)
    if job is None:
        return
    try:
        if "translate" in job.params:
            _translate(ctx, job)
        else:
            _generate(ctx, job)
    except _Stopped:
        return
    except (FetchRefused, FetchFailed, BrandExtractionError) as exc:
        fail_job(job_id, _brand_message(job.params.get("url") or "the site", exc))
    except (BriefRejected, WriterError, TranslationError) as exc:
        fail_job(job_id, str(exc))


def _generate(ctx: TaskContext, job: jobs_repo.Job) -> None:
    studio = studio_of(ctx)
    params = job.params
    if params["brief"]:
        studio.moderator.check(params["brief"])
    _set(ctx, job.id, "brand", 0.1)
    kit = _brand_for(ctx, job)
    text = params["brief"] or _brief_from_site(kit)
    if not params["brief"]:  # written from the site's own words: moderated like a brief
        studio.moderator.check(text)
    _set(ctx, job.id, "script", 0.45)
    brief = Brief(text=text, title=params.get("title"), locale=params.get("locale"),
                  format=params["format"], duration_sec=params.get("duration_sec"), url=params.get("url"),
                  brand_name=None if kit.source_url is None else kit.name)
    script = studio.writer.write(brief)
    _set(ctx, job.id, "scenes", 0.7)
    doc, warnings = compose(script, kit.tokens, params["format"], params.get("duration_sec"), params.get("locale"))
    _set(ctx, job.id, "save", 0.9)
    new = videos_repo.NewVersion(doc=doc, source="generate", fields=script.fields, lint=warnings,
                                 duration_sec=float(doc["duration"]), note=f"written by the {script.writer} writer")
    _save(ctx, job, new, title=None if params.get("title") else script.title, story_id=script.story_id,
          brand_kit_id=kit.id)


def _brief_from_site(kit: kits_repo.BrandKit) -> str:
    """With a url and no brief, the video introduces the site: its name and tagline."""
    tagline = kit.tokens.get("tagline") or ""
    return f"{kit.name}. {tagline}".strip() + (f" Visit {kit.source_url}" if kit.source_url else "")


def _brand_for(ctx: TaskContext, job: jobs_repo.Job) -> kits_repo.BrandKit:
    """The kit asked for; or, with a ``url`` and no kit, one extracted from the site first; or
    the workspace's default."""
    params = job.params
    with ctx.engine.connect() as conn:
        if params.get("brand_kit_id"):
            return kits_repo.get_brand_kit(conn, job.workspace_id, params["brand_kit_id"])
        if not params.get("url"):
            kit = kits_repo.get_default_brand_kit(conn, job.workspace_id)
            if kit is not None:
                return kit
            return kits_repo.list_brand_kits(conn, job.workspace_id)[0]
    # brand extraction inside generation: progress 0.1 .. 0.4 of the job, stage stays "brand"
    report = _reporter(ctx, job.id, 0.1, 0.3, stage="brand")
    return _extract_and_save(ctx, job, report, finish=False)


# -- translated copies ----------------------------------------------------------------------

def _translate(ctx: TaskContext, job: jobs_repo.Job) -> None:
    studio = studio_of(ctx)
    spec = job.params["translate"]
    with ctx.engine.connect() as conn:
        original = videos_repo.get_version_by_id(conn, job.workspace_id, spec["version_id"])
    doc = localize(original.doc, source=spec["source"], target=spec["target"], translators=studio.translators,
                   progress=_reporter(ctx, job.id, 0.0, 0.9))
    _set(ctx, job.id, "save", 0.9)
    warnings = [p.as_dict() for p in lint(doc).warnings]
    new = videos_repo.NewVersion(doc=doc, source="translate", lint=warnings, duration_sec=float(doc["duration"]),
                                 note=f"translated from {spec['source']} to {spec['target']}")
    _save(ctx, job, new)


# -- shared ---------------------------------------------------------------------------------

def _save(ctx: TaskContext, job: jobs_repo.Job, new: videos_repo.NewVersion, *, title: str | None = None,
          story_id: str | None = None, brand_kit_id: str | None = None) -> None:
    """Version 1 of the job's video, the video ``ready``, the job finished and ``video.generated``:
    one transaction, rolled back if the job was canceled meanwhile."""
    if job.video_id is None:  # generate and translate jobs are always created with their video
        raise ValueError(f"{job.kind} job {job.id} has no video to save a version to")
    video_id = job.video_id
    made: list[tuple[videos_repo.Video, videos_repo.Version]] = []

    def write(conn: Connection) -> dict[str, Any]:
        video, version = videos_repo.append_version(conn, ctx.clock, workspace_id=job.workspace_id,
                                                    video_id=video_id, version=new)
        video = videos_repo.update_video(conn, ctx.clock, job.workspace_id, video.id, status="ready",
                                         title=title, story_id=story_id, brand_kit_id=brand_kit_id)
        add_event(conn, ctx.clock, workspace_id=job.workspace_id, type="video.generated",
                  payload={"video": jsonable(video_resource(video, version, None))})
        made.append((video, version))
        return {"video_id": video.id, "version_id": version.id}

    if job_lifecycle(ctx).succeed(job.id, write) is None:
        raise _Stopped()  # canceled meanwhile: the version was rolled back
    video, version = made[-1]
    log.info("job %s wrote version %s of video %s", job.id, version.number, video.id)


def _set(ctx: TaskContext, job_id: str, stage: str, progress: float) -> None:
    if not job_lifecycle(ctx).stage(job_id, stage, progress):
        raise _Stopped()


def _reporter(ctx: TaskContext, job_id: str, start: float, span: float,
              stage: str | None = None) -> Callable[[str, float], None]:
    """A ``progress(stage, fraction)`` callback mapping a step's 0..1 onto ``start .. start+span``
    of the job (with ``stage`` fixed when given); raises ``_Stopped`` once the job is not live."""
    def report(name: str, fraction: float) -> None:
        _set(ctx, job_id, stage or name, start + span * max(0.0, min(1.0, fraction)))
    return report
