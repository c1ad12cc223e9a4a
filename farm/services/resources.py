"""The Render and Job resources: what clients see of a render or a job (``api/schemas/``
documents them; webhook events carry the same shapes).

Files are never shown by their storage key: a succeeded render's MP4 and poster are URLs signed
afresh on every read, valid 7 days; a stills job's PNGs, 10 minutes. A live render's progress is
the larger of what the database last recorded and what the progress store counts now, so it
never goes back.
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, TypedDict

from reelfarm.farm.services.costs import RenderCost
from reelfarm.farm.services.progress import ProgressStore, fraction
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.storage import Storage

RENDER_URL_TTL_SEC = 7 * 24 * 3600
STILLS_URL_TTL_SEC = 600
_NOT_IN_SLUGS = re.compile(r"[^a-z0-9]+")
MAX_SLUG_CHARS = 80


class RenderResource(TypedDict):
    """A render as clients see it (``api/schemas/renders.py``'s RenderSchema; webhook events carry it)."""

    id: str
    video_id: str
    version_id: str
    format: str
    resolution: int
    fps: int
    status: str
    progress: float
    progress_stale: bool
    url: str | None
    poster_url: str | None
    stream_url: str | None
    captions_url: str | None
    duration_sec: float | None
    bytes: int | None
    error: str | None
    priority: str
    queue: dict[str, Any] | None
    held_up: dict[str, Any] | None
    reused_frames: int
    cost: RenderCost | None
    container: str  # mp4, gif or webm
    transparent: bool
    clamped: list[str]  # the request's values lowered to the container's limits
    pool: str  # the pool of nodes its chunks run in ("": any node; farm.services.pools)
    created_at: datetime
    finished_at: datetime | None


class JobResource(TypedDict):
    """A job as clients see it (``api/schemas/jobs.py``'s JobSchema)."""

    id: str
    kind: str
    status: str
    stage: str | None
    progress: float
    error: str | None
    result: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None


def download_name(title: str | None, fmt: str, resolution: int, extra: str = "", version: int | None = None) -> str:
    """The file name a render's or a still's download is saved under, from the video's title, the
    number of the version it shows, the format and the resolution: ``spring-sale-v2-9x16-1080p``
    (``extra`` appended with a hyphen; no ``v<N>`` part when the version is not known), so two
    versions' files never share a name; the storage adds the file's own extension."""
    plain = unicodedata.normalize("NFKD", title or "").encode("ascii", "ignore").decode("ascii").lower()
    slug = _NOT_IN_SLUGS.sub("-", plain)[:MAX_SLUG_CHARS].strip("-") or "video"
    parts = [slug, *([f"v{version}"] if version else []), fmt.replace(":", "x"), f"{resolution}p",
             *([extra] if extra else [])]
    return "-".join(parts)


def render_resource(render: renders_repo.Render, storage: Storage,
                    progress: ProgressStore | None = None, queue: dict[str, Any] | None = None, *,
                    held_up: dict[str, Any] | None = None, progress_stale: bool = False,
                    stream_url: str | None = None, title: str | None = None,
                    version: int | None = None, cost: RenderCost | None = None) -> RenderResource:
    """The Render resource (the seed's fields, in its order); URLs signed afresh for 7 days.
    ``queue``: where it stands while chunks of it wait (``JobQueue.standing``); ``held_up``: a
    chunk that waits on a node that stopped (``JobQueue.held_up``); ``progress_stale``: the
    progress store could not be read, so ``progress`` is the last figure the database holds;
    ``stream_url``: the signed link of its HLS playlist (``reelfarm.farm.services.stream``);
    ``title``: the video's, and ``version``: the number of the render's version, which name the
    files' downloads (``download_name``); ``cost``: what its tasks used so far
    (``reelfarm.farm.services.costs``), None where it was not read (webhook payloads)."""
    if render.status == "succeeded":
        shown = 1.0
    elif render.status in renders_repo.LIVE and progress is not None:
        shown = max(render.progress, fraction(progress, render.id, render.frames))
    else:
        shown = render.progress
    succeeded = render.status == "succeeded"
    name = download_name(title, render.format, render.resolution, version=version)
    return {
        "id": render.id, "video_id": render.video_id, "version_id": render.version_id,
        "format": render.format, "resolution": render.resolution, "fps": render.fps,
        "status": render.status, "progress": round(float(shown), 4),
        "progress_stale": progress_stale and render.status in renders_repo.LIVE,
        "url": storage.url(render.url_key, RENDER_URL_TTL_SEC, name) if succeeded and render.url_key else None,
        "poster_url": (storage.url(render.poster_key, RENDER_URL_TTL_SEC, f"{name}-poster")
                       if succeeded and render.poster_key else None),
        "stream_url": stream_url,
        "captions_url": (storage.url(render.captions_key, RENDER_URL_TTL_SEC, f"{name}-captions")
                         if succeeded and render.captions_key else None),
        "duration_sec": render.duration_sec, "bytes": render.bytes, "error": render.error,
        "priority": render.priority, "queue": queue if render.status in renders_repo.LIVE else None,
        "held_up": held_up if render.status in renders_repo.LIVE else None,
        "reused_frames": render.reused_frames, "cost": cost,
        "container": render.container, "transparent": render.transparent, "clamped": list(render.clamped or []),
        "pool": render.pool, "created_at": render.created_at, "finished_at": render.finished_at,
    }


def job_resource(job: jobs_repo.Job, storage: Storage, clock: Clock, title: str | None = None,
                 version: int | None = None) -> JobResource:
    """The Job resource; a stills result carries URLs signed now, valid 10 minutes, whose
    downloads are named after ``title`` (the video's), ``version`` (the number of the version
    drawn), the format, the resolution and the time."""
    return {
        "id": job.id, "kind": job.kind, "status": job.status, "stage": job.stage,
        "progress": round(float(job.progress), 4), "error": job.error,
        "result": _result(job, storage, clock, title, version), "created_at": job.created_at, "finished_at": job.finished_at,
    }


def _result(job: jobs_repo.Job, storage: Storage, clock: Clock, title: str | None,
            version: int | None) -> dict[str, Any] | None:
    if job.result is None or job.kind != "stills" or job.status != "succeeded":
        return job.result if job.kind != "stills" else None
    now = clock.now()  # read once: the URLs expire when `expires_at` says, to the second
    expires_at = datetime.fromtimestamp(int(now.timestamp()) + STILLS_URL_TTL_SEC, now.tzinfo).isoformat()
    fmt, resolution = str(job.params.get("format", "")), int(job.params.get("resolution", 1080))

    def name(time: float) -> str:
        return download_name(title, fmt, resolution, f"{time:g}s", version)
    return {"stills": [{"time": s["time"], "url": storage.url(s["key"], STILLS_URL_TTL_SEC, name(s["time"]), now),
                        "width": s["width"], "height": s["height"], "expires_at": expires_at}
                       for s in job.result.get("stills", [])]}
