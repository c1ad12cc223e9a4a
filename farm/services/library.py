"""The media library: a workspace's uploaded images, sounds, videos and captions files (``/api/v1/assets``).

An upload is probed from its bytes (``reelfarm.farm.services.media``) before anything is stored: a
refused one leaves no row and no file. What is stored is what was checked: the bytes sent, except an
SVG's, which are its sanitised rewrite (no script, event handler or outside reference; see
``reelfarm.farm.services.svg``), counted, hashed and served as such. An accepted one is stored at
``assets/<workspace id>/<sha256>.<ext>`` (``reelfarm.shared.repos.assets.asset_key``), with, for
a raster image, a thumbnail beside it (``<sha256>.thumb.jpg``, or ``<sha256>.thumb.webp`` keeping the
transparency of an image that has some; an SVG is its own thumbnail), and
for a video its poster there (a frame a second in, upright, made while it was probed), and later
its draft proxy (``reelfarm.farm.services.proxies``), which goes with it when it is deleted. The
same bytes uploaded again in the workspace answer the asset already there: one row, one copy, and
its age (from which the retention round counts) is still that of the first upload.

Each file keeps the name it came with (``reelfarm.farm.services.media_names``: an upload's file
name, a presigned upload's ``filename``, the last part of the address it was fetched from), which
its workspace may change (``rename``) and search by (``list(name=...)``: any case, a part of it).
The same bytes sent again under another name keep the name they were first known by, unless
they had none.

A stored asset is read only through its workspace: by id here, and by key in a document through
``reelfarm.shared.repos.objects`` (whose owner of ``assets/...`` is the row naming that key).

``import_url`` takes an address instead of bytes: the bytes are fetched through the studio's SSRF
guard (``reelfarm.studio.fetch``: public addresses only, every redirect checked, at most
``MAX_UPLOAD_BYTES``) and then stored exactly as an upload, with the same checks and the same
one copy. A refused address, an unreachable one, a body too large or bytes that are no image,
sound or video are 400s on ``/url`` naming the reason; nothing is stored. The server's declared content type
is not trusted, as an upload's name is not: the bytes decide.

Deleting an asset that a version of a video or a brand kit names (by key or id) is refused with
409 ``asset_in_use``, naming them: a version is immutable, so what it was made with stays.

Where the storage is S3, a large file may skip the API: ``create_upload`` answers a presigned PUT
URL to a staging key under the workspace (``uploads/<workspace id>/<upload id>``), valid for
``UPLOAD_URL_TTL_SEC`` and signed with the declared size (S3 refuses a PUT of another size, so the
URL cannot place more in the bucket than was declared), after checking that size against the
upload limit and the quota;
the client PUTs the bytes there and ``complete_upload`` reads them back and stores them exactly as
an upload (the same checks, the same content-addressed key, the same one copy), then deletes the
staged object. Completing it again answers the same asset. Bytes that are refused, or whose size is
not the size declared, are deleted and nothing is stored (the upload may be sent again while its
URL lasts). On local files there is no such URL: ``create_upload`` is a 409
``presigned_uploads_unavailable`` naming the direct upload. An upload is another workspace's
404. Uploads past their expiry by ``UPLOAD_GRACE_SEC`` go in the retention round
(``sweep_expired_uploads``): the staged object, then the row.

A workspace's library holds at most its plan's bytes (``reelfarm.shared.plans``: the sizes of its
assets, each distinct upload once, thumbnails free). An upload that would pass it is refused with
QuotaExceeded (413 ``quota_exceeded``) before anything is stored, and checked again in the
transaction that records it, with the workspace's row locked, so two uploads at once cannot both
take the last bytes; the one refused there removes what it stored. The same bytes again cost nothing.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from PIL import Image
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from reelfarm.farm.services.errors import InvalidRequest, QuotaExceeded, StateConflict
from reelfarm.farm.services.media import MAX_UPLOAD_BYTES, Media, MediaRefused, admit
from reelfarm.farm.services.media_names import check_name, file_name, url_file_name
from reelfarm.farm.services.media_sizes import file_size
from reelfarm.farm.services.proxies import delete_proxy
from reelfarm.farm.services.videos import decode_cursor, encode_cursor
from reelfarm.shared import plans, storage_keys
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound, ObjectNotFound
from reelfarm.shared.repos import assets as repo
from reelfarm.shared.storage import S3Storage, Storage
from reelfarm.studio.errors import FetchFailed, FetchRefused, FetchTooLarge
from reelfarm.studio.fetch import SafeFetcher

ASSET_URL_TTL_SEC = 24 * 3600
THUMB_SIDE = 320
URL_FETCH_OPTIONS: dict[str, float] = {"max_bytes": MAX_UPLOAD_BYTES, "read_timeout": 10.0, "total_timeout": 30.0}
"""How the fetcher of ``AssetService.import_url`` is built: an upload's size limit, within half a minute."""
UPLOAD_URL_TTL_SEC = 3600
"""How long a presigned upload's PUT URL is valid."""
UPLOAD_GRACE_SEC = 3600
"""How long after its URL expired an upload may still be completed, before the retention round removes it."""


class UploadRefused(InvalidRequest):
    """An upload the library does not take (400 on ``/file``)."""

    def __init__(self, refused: MediaRefused) -> None:
        super().__init__([{"field": "/file", "code": refused.code, "message": refused.reason}])


class ImportRefused(InvalidRequest):
    """An address the library cannot take an asset from (400 on ``/url``); ``code`` says why:
    ``address_refused``, ``unreachable``, ``too_large`` or ``unsupported_media``."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__([{"field": "/url", "code": code, "message": reason}])


class AssetService:
    """The library of each workspace; ``fetcher`` (the SSRF guard) serves ``import_url``."""

    def __init__(self, engine: Engine, clock: Clock, storage: Storage, fetcher: SafeFetcher | None = None,
                 quotas: Mapping[str, int] = plans.LIBRARY_BYTES) -> None:
        self.engine = engine
        self.clock = clock
        self.storage = storage
        self.fetcher = fetcher
        self.quotas = quotas  # bytes per plan

    def upload(self, workspace_id: str, data: bytes, filename: str | None = None) -> dict[str, Any]:
        """Probe, store once, record (named after ``filename``); the Asset. Raises UploadRefused
        (nothing stored)."""
        try:
            stored, media = admit(data)
        except MediaRefused as exc:
            raise UploadRefused(exc) from None
        return self._store(workspace_id, stored, media, file_name(filename))

    def import_url(self, workspace_id: str, url: str) -> dict[str, Any]:
        """Fetch ``url`` through the SSRF guard and store it as an upload; the Asset.

        Raises ImportRefused (nothing stored): a refused address (private, loopback, another
        scheme), no answer or a non-2xx one, a body over the upload limit, or no image, sound or video.
        """
        if self.fetcher is None:
            raise RuntimeError("AssetService was built without a fetcher")
        try:
            data = self.fetcher.fetch(url, accept=("*/*",)).body
        except FetchRefused as exc:
            raise ImportRefused("address_refused", f"this address is refused: {exc.reason}") from None
        except FetchTooLarge as exc:
            declared = re.search(r"(\d+) bytes", exc.reason)
            sent = f"sent {file_size(int(declared.group(1)))}, more" if declared else "sent more"
            raise ImportRefused("too_large", f"the address {sent} than the {file_size(self.fetcher.max_bytes)} "
                                "an upload may be") from None
        except FetchFailed as exc:
            raise ImportRefused("unreachable", f"the address could not be fetched: {exc.reason}") from None
        try:
            stored, media = admit(data)
        except MediaRefused as exc:
            raise ImportRefused(exc.code, f"what the address sent is refused: {exc.reason}") from None
        return self._store(workspace_id, stored, media, url_file_name(url))

    def _store(self, workspace_id: str, data: bytes, media: Media, name: str | None = None) -> dict[str, Any]:
        sha256 = hashlib.sha256(data).hexdigest()
        with transaction(self.engine) as conn:
            found = repo.find_named(conn, workspace_id, sha256, name)
        if found is not None:
            return self._resource(found)
        with self.engine.connect() as conn:
            self._check_quota(conn, workspace_id, len(data))  # before anything is stored
        key = storage_keys.asset_key(workspace_id, sha256, media.extension)
        self.storage.put_bytes(key, data, media.content_type)
        thumb, alpha = _thumbnail(data, media)
        if thumb is not None:
            self.storage.put_bytes(_thumb_key(key, alpha), thumb, "image/webp" if alpha else "image/jpeg")
        try:
            with transaction(self.engine) as conn:
                self._check_quota(conn, workspace_id, len(data), lock=True)
                asset = repo.insert_asset(conn, self.clock, workspace_id=workspace_id, kind=media.kind,
                                          content_type=media.content_type, size=len(data), sha256=sha256, key=key,
                                          width=media.width, height=media.height, duration_sec=media.duration_sec,
                                          fps=media.fps, has_audio=media.has_audio, name=name,
                                          thumbnail_alpha=alpha, cues=media.cues)
        except QuotaExceeded:
            with transaction(self.engine) as conn:
                found = repo.find_named(conn, workspace_id, sha256, name)
            if found is not None:  # the same bytes, recorded meanwhile: theirs is ours
                return self._resource(found)
            self.storage.delete(key)
            self.storage.delete(_thumb_key(key, alpha))
            raise
        except IntegrityError:  # the same bytes uploaded at the same moment: theirs is ours
            with transaction(self.engine) as conn:
                found = repo.find_named(conn, workspace_id, sha256, name)
            if found is None:
                raise
            return self._resource(found)
        return self._resource(asset)

    def create_upload(self, workspace_id: str, size: int, content_type: str,
                      filename: str | None = None) -> dict[str, Any]:
        """A presigned upload of ``size`` bytes: ``{"id", "method", "url", "headers", "bytes", "expires_at"}``.

        Raises StateConflict ``presigned_uploads_unavailable`` where the storage is local files,
        InvalidRequest for a size past the upload limit, QuotaExceeded when ``size`` more bytes
        would pass the plan's quota (nothing recorded)."""
        if not isinstance(self.storage, S3Storage):
            raise StateConflict("Presigned uploads need S3 storage, and this server stores files locally; send the "
                                "file to POST /api/v1/assets (multipart/form-data, the part `file`) instead.",
                                code="presigned_uploads_unavailable")
        if not 0 < size <= MAX_UPLOAD_BYTES:
            raise InvalidRequest([{"field": "/bytes", "code": "too_large",
                                   "message": f"the file is {file_size(size)}, more than the "
                                              f"{file_size(MAX_UPLOAD_BYTES)} an upload may be"}])
        with self.engine.connect() as conn:
            self._check_quota(conn, workspace_id, size)
        expires_at = self.clock.now() + timedelta(seconds=UPLOAD_URL_TTL_SEC)
        with transaction(self.engine) as conn:
            upload = repo.insert_upload(conn, self.clock, workspace_id=workspace_id, size=size,
                                        content_type=content_type, filename=filename, expires_at=expires_at)
        url = self.storage.upload_url(upload.key, UPLOAD_URL_TTL_SEC, content_type, size)
        return {"id": upload.id, "method": "PUT", "url": url,
                "headers": {"Content-Type": content_type, "Content-Length": str(size)},
                "bytes": size, "expires_at": expires_at}

    def complete_upload(self, workspace_id: str, upload_id: str) -> dict[str, Any]:
        """Check and store what was PUT to the upload's URL; the Asset (the same one when completed before).

        Raises NotFound (also another workspace's upload), StateConflict ``upload_incomplete``
        while nothing was sent, UploadRefused (400 on ``/file``) for a size other than the one
        declared or bytes that are no image, sound or video, QuotaExceeded; refused bytes are deleted."""
        with self.engine.connect() as conn:
            upload = repo.get_upload(conn, workspace_id, upload_id)
        if upload.asset_id is not None:
            return self.get(workspace_id, upload.asset_id)
        try:
            size = self.storage.size(upload.key)
            if size != upload.bytes:
                self.storage.delete(upload.key)
                raise UploadRefused(MediaRefused(
                    f"{size} bytes were sent where {upload.bytes} were declared; nothing is stored (send the "
                    "declared bytes to the URL again, or ask for a new upload)", "size_mismatch"))
            data = self.storage.get_bytes(upload.key)
        except ObjectNotFound:
            with self.engine.connect() as conn:
                upload = repo.get_upload(conn, workspace_id, upload_id)
            if upload.asset_id is not None:  # completed meanwhile by another request
                return self.get(workspace_id, upload.asset_id)
            raise StateConflict("Nothing has been sent to this upload's URL yet: PUT the file to it, then "
                                "complete the upload.", code="upload_incomplete") from None
        try:
            stored, media = admit(data)  # the staged bytes are never served: what is stored is checked here
        except MediaRefused as exc:
            self.storage.delete(upload.key)
            raise UploadRefused(exc) from None
        try:
            asset = self._store(workspace_id, stored, media, file_name(upload.filename))
        except QuotaExceeded:
            self.storage.delete(upload.key)
            raise
        with transaction(self.engine) as conn:
            repo.complete_upload(conn, workspace_id, upload_id, str(asset["id"]))
        self.storage.delete(upload.key)
        return asset

    def usage(self, workspace_id: str) -> dict[str, int]:
        """The library's bytes against its plan's quota: ``{"used_bytes", "limit_bytes"}``."""
        with self.engine.connect() as conn:
            return {"used_bytes": repo.used_bytes(conn, workspace_id),
                    "limit_bytes": self.quotas[repo.plan_of(conn, workspace_id)]}

    def _check_quota(self, conn: Connection, workspace_id: str, size: int, lock: bool = False) -> None:
        limit = self.quotas[repo.plan_of(conn, workspace_id, lock=lock)]
        used = repo.used_bytes(conn, workspace_id)
        if used + size > limit:
            raise QuotaExceeded(used, limit, size)

    def list(self, workspace_id: str, limit: int, cursor: str | None = None, kind: str | None = None,
             name: str | None = None) -> dict[str, Any]:
        """A page of the workspace's assets, newest first, of one ``kind`` and whose name holds
        ``name`` (any case) if given. Raises InvalidRequest for a cursor not from here."""
        after = None
        if cursor:
            try:
                after = decode_cursor(cursor)
            except (ValueError, TypeError):
                raise InvalidRequest([{"field": "cursor", "code": "invalid",
                                       "message": "not a cursor from this API"}]) from None
        with self.engine.connect() as conn:
            items, next_after = repo.list_assets(conn, workspace_id, limit=limit, kind=kind, after=after,
                                                 name=(name or "").strip() or None)
        return {"data": [self._resource(a) for a in items], "next_cursor": encode_cursor(next_after)}

    def get(self, workspace_id: str, asset_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            return self._resource(repo.get_asset(conn, workspace_id, asset_id))

    def rename(self, workspace_id: str, asset_id: str, name: str) -> dict[str, Any]:
        """Give the asset a new name; the Asset. Raises NotFound (also another workspace's),
        InvalidRequest (on ``/name``) for a blank or too long name, or one with a control
        character or a path separator."""
        checked = check_name(name)
        with transaction(self.engine) as conn:
            return self._resource(repo.rename_asset(conn, workspace_id, asset_id, checked))

    def used_by(self, workspace_id: str, asset_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What names each of the workspace's ``asset_ids``: ``{id: {"videos": [ids], "brand_kits": [ids]}}``
        (an id not in the workspace is left out)."""
        found: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for asset_id in asset_ids:
                try:
                    asset = repo.get_asset(conn, workspace_id, asset_id)
                except NotFound:
                    continue
                found[asset_id] = repo.users_of(conn, workspace_id, asset)
        return found

    def delete(self, workspace_id: str, asset_id: str) -> None:
        """Remove the asset and its files. Raises NotFound; StateConflict while something names it."""
        with transaction(self.engine) as conn:
            asset = repo.get_asset(conn, workspace_id, asset_id)
            users = repo.users_of(conn, workspace_id, asset)
            if users["videos"] or users["brand_kits"]:
                raise StateConflict(f"This asset is used by {repo.describe_users(conn, workspace_id, users)}; it is "
                                    "kept while a version or a brand kit names it.", code="asset_in_use")
            repo.delete_asset(conn, workspace_id, asset_id)
        self.storage.delete(asset.key)
        self.storage.delete(asset.thumbnail_key)
        delete_proxy(self.storage, asset.key)

    def _resource(self, asset: repo.Asset) -> dict[str, Any]:
        url = self.storage.url(asset.key, ASSET_URL_TTL_SEC)
        thumb = None
        if asset.kind in ("image", "video"):
            thumb = url if asset.content_type == "image/svg+xml" else self.storage.url(asset.thumbnail_key,
                                                                                         ASSET_URL_TTL_SEC)
        return {"id": asset.id, "name": asset.name, "kind": asset.kind, "content_type": asset.content_type, "bytes": asset.bytes,
                "key": asset.key, "width": asset.width, "height": asset.height, "duration_sec": asset.duration_sec,
                "fps": asset.fps, "has_audio": asset.has_audio, "url": url, "thumbnail_url": thumb,
                "cues": len(asset.cues) if asset.kind == "captions" and asset.cues is not None else None,
                "created_at": asset.created_at}


_thumb_key = storage_keys.asset_thumbnail_key


def sweep_expired_uploads(engine: Engine, storage: Storage, clock: Clock, limit: int) -> int:
    """Remove up to ``limit`` presigned uploads whose URL expired more than ``UPLOAD_GRACE_SEC``
    ago, completed or not: the staged object first (a failed delete leaves the row for the next
    round), then the row. How many went."""
    with engine.connect() as conn:
        expired = repo.uploads_expired_before(conn, clock.now() - timedelta(seconds=UPLOAD_GRACE_SEC), limit)
    for upload in expired:
        storage.delete(upload.key)
        with transaction(engine) as conn:
            repo.delete_upload(conn, upload.workspace_id, upload.id)
    return len(expired)


def _thumbnail(data: bytes, media: Media) -> tuple[bytes | None, bool]:
    """(the thumbnail or poster, or None; whether it keeps transparency, as a WebP, not a JPEG)."""
    if media.kind == "video":
        return media.poster, False
    if media.kind != "image" or media.content_type == "image/svg+xml":
        return None, False
    with Image.open(io.BytesIO(data)) as image:
        image.thumbnail((THUMB_SIDE, THUMB_SIDE))
        out = io.BytesIO()
        if image.has_transparency_data:
            shown = image.convert("RGBA")
            alpha_low, _ = shown.getchannel("A").getextrema()
            if alpha_low < 255:  # some pixel lets what is behind show through: kept so
                shown.save(out, "WEBP", quality=85)
                return out.getvalue(), True
        image.convert("RGB").save(out, "JPEG", quality=85)
    return out.getvalue(), False
