"""The media library: a workspace's uploaded images and sounds (``/api/v1/assets``).

An upload is probed from its bytes (``reelfarm.farm.services.media``) before anything is stored: a
refused one leaves no row and no file. An accepted one is stored at
``assets/<workspace id>/<sha256>.<ext>`` (``reelfarm.shared.repos.assets.asset_key``), with, for
a raster image, a thumbnail beside it (``<sha256>.thumb.jpg``; an SVG is its own thumbnail). The
same bytes uploaded again in the workspace answer the asset already there: one row, one copy.

A stored asset is read only through its workspace: by id here, and by key in a document through
``reelfarm.shared.repos.objects`` (whose owner of ``assets/...`` is the row naming that key).

Deleting an asset that a version of a video or a brand kit names (by key or id) is refused with
409 ``asset_in_use``, naming them: a version is immutable, so what it was made with stays.
"""

from __future__ import annotations

import hashlib
import io
from typing import Any

from PIL import Image
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from reelfarm.farm.services.errors import InvalidRequest, StateConflict
from reelfarm.farm.services.media import Media, MediaRefused, probe
from reelfarm.farm.services.videos import decode_cursor, encode_cursor
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import assets as repo
from reelfarm.shared.storage import Storage

ASSET_URL_TTL_SEC = 24 * 3600
THUMB_SIDE = 320


class UploadRefused(InvalidRequest):
    """An upload the library does not take (400 on ``/file``)."""

    def __init__(self, refused: MediaRefused) -> None:
        super().__init__([{"field": "/file", "code": refused.code, "message": refused.reason}])


class AssetService:
    def __init__(self, engine: Engine, clock: Clock, storage: Storage) -> None:
        self.engine = engine
        self.clock = clock
        self.storage = storage

    def upload(self, workspace_id: str, data: bytes) -> dict[str, Any]:
        """Probe, store once, record; the Asset. Raises UploadRefused (nothing stored)."""
        try:
            media = probe(data)
        except MediaRefused as exc:
            raise UploadRefused(exc) from None
        sha256 = hashlib.sha256(data).hexdigest()
        with self.engine.connect() as conn:
            found = repo.find_by_hash(conn, workspace_id, sha256)
        if found is not None:
            return self._resource(found)
        key = repo.asset_key(workspace_id, sha256, media.extension)
        self.storage.put_bytes(key, data, media.content_type)
        thumb = _thumbnail(data, media)
        if thumb is not None:
            self.storage.put_bytes(_thumb_key(key), thumb, "image/jpeg")
        try:
            with transaction(self.engine) as conn:
                asset = repo.insert_asset(conn, self.clock, workspace_id=workspace_id, kind=media.kind,
                                          content_type=media.content_type, size=len(data), sha256=sha256, key=key,
                                          width=media.width, height=media.height, duration_sec=media.duration_sec)
        except IntegrityError:  # the same bytes uploaded at the same moment: theirs is ours
            with self.engine.connect() as conn:
                found = repo.find_by_hash(conn, workspace_id, sha256)
            if found is None:
                raise
            return self._resource(found)
        return self._resource(asset)

    def list(self, workspace_id: str, limit: int, cursor: str | None = None, kind: str | None = None) -> dict[str, Any]:
        after = None
        if cursor:
            try:
                after = decode_cursor(cursor)
            except (ValueError, TypeError):
                raise InvalidRequest([{"field": "cursor", "code": "invalid",
                                       "message": "not a cursor from this API"}]) from None
        with self.engine.connect() as conn:
            items, next_after = repo.list_assets(conn, workspace_id, limit=limit, kind=kind, after=after)
        return {"data": [self._resource(a) for a in items], "next_cursor": encode_cursor(next_after)}

    def get(self, workspace_id: str, asset_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            return self._resource(repo.get_asset(conn, workspace_id, asset_id))

    def delete(self, workspace_id: str, asset_id: str) -> None:
        """Remove the asset and its files. Raises NotFound; StateConflict while something names it."""
        with transaction(self.engine) as conn:
            asset = repo.get_asset(conn, workspace_id, asset_id)
            users = repo.users_of(conn, workspace_id, asset)
            if users["videos"] or users["brand_kits"]:
                named = [f"video {v}" for v in users["videos"]] + [f"brand kit {k}" for k in users["brand_kits"]]
                raise StateConflict(f"This asset is used by {', '.join(named)}; it is kept while a version or a "
                                    "brand kit names it.", code="asset_in_use")
            repo.delete_asset(conn, workspace_id, asset_id)
        self.storage.delete(asset.key)
        self.storage.delete(_thumb_key(asset.key))

    def _resource(self, asset: repo.Asset) -> dict[str, Any]:
        url = self.storage.url(asset.key, ASSET_URL_TTL_SEC)
        thumb = None
        if asset.kind == "image":
            thumb = url if asset.content_type == "image/svg+xml" else self.storage.url(_thumb_key(asset.key),
                                                                                         ASSET_URL_TTL_SEC)
        return {"id": asset.id, "kind": asset.kind, "content_type": asset.content_type, "bytes": asset.bytes,
                "key": asset.key, "width": asset.width, "height": asset.height, "duration_sec": asset.duration_sec,
                "url": url, "thumbnail_url": thumb, "created_at": asset.created_at}


def _thumb_key(key: str) -> str:
    return key.rsplit(".", 1)[0] + ".thumb.jpg"


def _thumbnail(data: bytes, media: Media) -> bytes | None:
    if media.kind != "image" or media.content_type == "image/svg+xml":
        return None
    with Image.open(io.BytesIO(data)) as image:
        image.thumbnail((THUMB_SIDE, THUMB_SIDE))
        out = io.BytesIO()
        image.convert("RGB").save(out, "JPEG", quality=85)
    return out.getvalue()
