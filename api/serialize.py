"""Domain objects to the API's resource shapes (the schemas in api/schemas.py document them)."""
from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import current_app

from farm.jobs import job_resource
from shared.repos.brand_kits import BrandKit
from shared.repos.videos import Version
from studio.resources import brand_kit_resource, version_resource, video_resource
from studio.videos import VideoView


def brand_kit(kit: BrandKit) -> dict[str, Any]:
    return brand_kit_resource(kit, current_app.extensions["reelfarm"].storage)


def version(v: Version) -> dict[str, Any]:
    return version_resource(v)


def video(view: VideoView) -> dict[str, Any]:
    services = current_app.extensions["reelfarm"]
    job = job_resource(view.job, services.storage, services.clock) if view.job is not None else None
    return video_resource(view.video, view.version, job)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_cursor(position: tuple[datetime, str] | None) -> str | None:
    """``<microseconds since the epoch>.<row id>``: the pattern ``api.contract.CURSOR``."""
    if position is None:
        return None
    when, ident = position
    return f"{(when - _EPOCH) // timedelta(microseconds=1)}.{ident}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Raises ValueError for anything that is not a cursor this API hands out."""
    micros, ident = cursor.split(".", 1)
    uuid.UUID(ident)
    return _EPOCH + timedelta(microseconds=int(micros)), ident
