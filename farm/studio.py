"""The studio's collaborators the farm's jobs use: the safe fetchers, the brand extractor,
moderation, the writer and the translation engines, built once per process from settings.

Tests hand in their own ``Studio`` (a writer pointed at a loopback LLM, translators with a
loopback engine); everything else builds it with ``make_studio``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.clock import Clock
from shared.config import Settings
from shared.repos import brand_kits as kits_repo
from shared.repos import renders as events
from shared.repos._locks import lock_workspace
from shared.storage import Storage
from studio.fetch import SafeFetcher, make_fetcher
from studio.resources import brand_kit_resource, jsonable, video_resource


@dataclass
class Studio:
    fetcher: SafeFetcher
    moderator: Any   # studio.moderation.Moderator
    writer: Any      # studio.writer.Writer
    translators: Any  # studio.translate.Translators
    asset_fetcher: SafeFetcher  # renders' remote images and audio: larger bodies, longer time


def make_studio(settings: Settings) -> Studio:
    from farm.assets import ASSET_FETCH_OPTIONS
    from studio.moderation import Moderator
    from studio.translate import make_translators
    from studio.writer import make_writer

    return Studio(fetcher=make_fetcher(settings), moderator=Moderator(), writer=make_writer(settings),
                  translators=make_translators(settings),
                  asset_fetcher=make_fetcher(settings, **ASSET_FETCH_OPTIONS))


def logo_key(kit_id: str) -> str:
    return f"brand-kits/{kit_id}/logo.png"


def store_logo(storage: Storage, kit_id: str, logo: Any) -> dict[str, Any] | None:
    """Put an extracted ``studio.brand.Logo`` in storage; the ``tokens.logo`` that refers to it."""
    if logo is None:
        return None
    key = logo_key(kit_id)
    storage.put_bytes(key, logo.png, "image/png")
    return {"url": logo.source_url, "key": key, "width": logo.width, "height": logo.height,
            "dominant_color": logo.dominant_color}


def save_extracted_kit(conn: Any, clock: Clock, storage: Storage, *, workspace_id: str, kit_id: str,
                       brand: Any, logo: dict[str, Any] | None) -> kits_repo.BrandKit:
    """Create the kit of an extracted ``studio.brand.ExtractedBrand`` and its ``brand_kit.extracted``
    event, in the caller's transaction. A workspace's first extracted kit becomes its default only
    while the neutral kit is its only one."""
    lock_workspace(conn, workspace_id)  # two extractions at once must not both see only the neutral kit
    existing = kits_repo.list_brand_kits(conn, workspace_id)
    if any(k.id == kit_id for k in existing):  # a retried task that had already saved it
        return next(k for k in existing if k.id == kit_id)
    only_neutral = len(existing) == 1 and existing[0].source_url is None
    kit = kits_repo.create_brand_kit(conn, clock, workspace_id=workspace_id, name=brand.name[:200],
                                     tokens={**brand.tokens, "logo": logo}, source_url=brand.source_url,
                                     is_default=only_neutral, kit_id=kit_id)
    events.add_event(conn, clock, workspace_id=workspace_id, type="brand_kit.extracted",
                     payload={"brand_kit": jsonable(brand_kit_resource(kit, storage))})
    return kit



def generation_ended(conn: Any, clock: Clock, storage: Storage, job: Any) -> None:
    """After a ``generate`` job failed or was canceled (``job`` as it ended): its video becomes
    ``failed`` and ``video.generation_failed`` is written, in the caller's transaction."""
    from farm.jobs import job_resource
    from shared.repos import videos as videos_repo

    if job.kind != "generate" or not job.video_id:
        return
    try:
        video = videos_repo.get_video(conn, job.workspace_id, job.video_id)
    except LookupError:
        return
    if video.status not in ("generating", "draft"):
        return
    video = videos_repo.update_video(conn, clock, job.workspace_id, video.id, status="failed")
    version = (videos_repo.get_version_by_id(conn, job.workspace_id, video.current_version_id)
               if video.current_version_id else None)
    resource = video_resource(video, version, job_resource(job, storage, clock))
    events.add_event(conn, clock, workspace_id=job.workspace_id, type="video.generation_failed",
                     payload={"video": jsonable(resource)})
