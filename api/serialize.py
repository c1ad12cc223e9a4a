"""Domain objects to the API's resource shapes (the schemas in api/schemas.py document them)."""
from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from shared.ids import is_uuid
from shared.repos.brand_kits import BrandKit
from shared.repos.videos import Version
from studio.videos import VideoView


def brand_kit(kit: BrandKit) -> dict[str, Any]:
    return {"id": kit.id, "name": kit.name, "source_url": kit.source_url, "is_default": kit.is_default,
            "tokens": kit.tokens, "created_at": kit.created_at, "updated_at": kit.updated_at}


def version(v: Version) -> dict[str, Any]:
    return {"id": v.id, "number": v.number, "source": v.source, "note": v.note, "lint": list(v.lint or []),
            "created_at": v.created_at, "doc": v.doc}


def video(view: VideoView, job: dict[str, Any] | None = None) -> dict[str, Any]:
    v = view.video
    return {"id": v.id, "title": v.title, "status": v.status, "story_id": v.story_id,
            "brand_kit_id": v.brand_kit_id, "default_format": v.default_format, "duration_sec": v.duration_sec,
            "locale": v.locale, "current_version": version(view.version) if view.version else None,
            "job": job, "created_at": v.created_at, "updated_at": v.updated_at}


def encode_cursor(position: tuple[datetime, str] | None) -> str | None:
    if position is None:
        return None
    raw = json.dumps([position[0].isoformat(), position[1]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Raises ValueError for anything that is not a cursor this API handed out."""
    padded = cursor + "=" * (-len(cursor) % 4)
    when, ident = json.loads(base64.urlsafe_b64decode(padded.encode()))
    position = datetime.fromisoformat(when)
    if position.tzinfo is None or not isinstance(ident, str) or not is_uuid(ident):
        raise ValueError("not a cursor from this API")  # ours hold an aware time and a row id
    return position, ident
