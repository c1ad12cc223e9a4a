"""The shapes clients see for videos, versions and brand kits: one definition for the API's answers
and the webhook events the farm writes (``api/schemas/`` documents them).

A brand kit's logo is kept in storage under ``tokens.logo.key``; the resource shows a URL signed
afresh on each read (valid 7 days) in its place, never the key.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict

from reelfarm.shared.repos.brand_kits import BrandKit
from reelfarm.shared.repos.videos import Version, Video
from reelfarm.shared.storage import Storage

LOGO_URL_TTL_SEC = 7 * 24 * 3600


class VersionResource(TypedDict):
    """One immutable version of a video, as clients see it."""

    id: str
    number: int
    source: str
    note: str | None
    lint: list[dict[str, Any]]
    created_at: datetime
    doc: dict[str, Any]


class VideoResource(TypedDict):
    """A video, its current version and the job making it (a generation or translation), if any."""

    id: str
    title: str
    status: str
    story_id: str | None
    brand_kit_id: str | None
    default_format: str
    duration_sec: float | None
    locale: str | None
    source_video_id: str | None
    current_version: VersionResource | None
    job: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime


class BrandKitResource(TypedDict):
    """A brand kit, its stored logo shown as a freshly signed URL."""

    id: str
    name: str
    source_url: str | None
    is_default: bool
    tokens: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def version_resource(v: Version) -> VersionResource:
    return {"id": v.id, "number": v.number, "source": v.source, "note": v.note, "lint": list(v.lint or []),
            "created_at": v.created_at, "doc": v.doc}


def video_resource(video: Video, version: Version | None, job: Mapping[str, Any] | None = None) -> VideoResource:
    return {"id": video.id, "title": video.title, "status": video.status, "story_id": video.story_id,
            "brand_kit_id": video.brand_kit_id, "default_format": video.default_format,
            "duration_sec": video.duration_sec, "locale": video.locale,
            "source_video_id": video.source_video_id,
            "current_version": version_resource(version) if version else None,
            "job": dict(job) if job is not None else None, "created_at": video.created_at,
            "updated_at": video.updated_at}


def brand_kit_resource(kit: BrandKit, storage: Storage) -> BrandKitResource:
    return {"id": kit.id, "name": kit.name, "source_url": kit.source_url, "is_default": kit.is_default,
            "tokens": public_tokens(kit.tokens, storage), "created_at": kit.created_at, "updated_at": kit.updated_at}


def public_tokens(tokens: Mapping[str, Any], storage: Storage) -> dict[str, Any]:
    """Tokens as clients see them: a stored logo's key becomes a freshly signed URL."""
    shown = dict(tokens)
    logo = tokens.get("logo")
    if isinstance(logo, Mapping) and logo.get("key"):
        shown["logo"] = {k: v for k, v in logo.items() if k != "key"}
        shown["logo"]["url"] = storage.url(str(logo["key"]), LOGO_URL_TTL_SEC)
    return shown


def jsonable(value: Any) -> Any:
    """``value`` with every datetime, at any depth, as an ISO 8601 string (for event payloads)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
