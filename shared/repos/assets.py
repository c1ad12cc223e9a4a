"""The media library's rows: one per distinct upload of a workspace (``reelfarm.farm.services.library``),
what names them, what they weigh against the plan's quota, and which the retention round may delete;
and the presigned uploads a workspace asked for (``asset_uploads``), until they expire."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, String, and_, cast, delete, exists, func, or_, select, update

from reelfarm.shared import storage_keys
from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import asset_uploads, assets, brand_kits, versions, videos, workspaces


@dataclass(frozen=True)
class Asset:
    id: str
    workspace_id: str
    kind: str
    content_type: str
    bytes: int
    sha256: str
    key: str
    width: int | None
    height: int | None
    duration_sec: float | None
    created_at: datetime
    fps: float | None = None
    has_audio: bool | None = None
    name: str | None = None
    thumbnail_alpha: bool = False
    cues: list[dict[str, Any]] | None = None  # a captions file's, as parsed at upload

    @property
    def thumbnail_key(self) -> str:
        """Where its thumbnail (an image's) or poster (a video's) is stored."""
        return storage_keys.asset_thumbnail_key(self.key, self.thumbnail_alpha)

    @property
    def cursor(self) -> tuple[datetime, str]:
        return self.created_at, self.id


_FIELDS = frozenset(f.name for f in fields(Asset))


def _asset(row: Row[Any]) -> Asset:
    """An asset of its row, reading the columns it knows: a column a later release adds (which
    this release's rows then carry during a rolling upgrade) is left aside, not an error."""
    return Asset(**{k: v for k, v in row._mapping.items() if k in _FIELDS})


def insert_asset(conn: Connection, clock: Clock, *, workspace_id: str, kind: str, content_type: str, size: int,
                 sha256: str, key: str, width: int | None, height: int | None,
                 duration_sec: float | None, fps: float | None = None, has_audio: bool | None = None,
                 name: str | None = None, thumbnail_alpha: bool = False,
                 cues: list[dict[str, Any]] | None = None) -> Asset:
    values = {"id": new_id(), "workspace_id": workspace_id, "kind": kind, "content_type": content_type,
              "bytes": size, "sha256": sha256, "key": key, "width": width, "height": height,
              "duration_sec": duration_sec, "fps": fps, "has_audio": has_audio, "name": name,
              "thumbnail_alpha": thumbnail_alpha, "cues": cues, "created_at": clock.now()}
    conn.execute(assets.insert().values(**values))
    return Asset(**values)  # type: ignore[arg-type]


def find_by_hash(conn: Connection, workspace_id: str, sha256: str) -> Asset | None:
    row = conn.execute(select(assets).where(assets.c.workspace_id == workspace_id,
                                            assets.c.sha256 == sha256)).first()
    return _asset(row) if row is not None else None


def get_asset(conn: Connection, workspace_id: str, asset_id: str) -> Asset:
    """The workspace's asset. Raises NotFound (also for another workspace's)."""
    row = conn.execute(select(assets).where(assets.c.workspace_id == workspace_id, assets.c.id == asset_id)).first()
    if row is None:
        raise NotFound("asset", asset_id)
    return _asset(row)


def find_clip(conn: Connection, workspace_id: str, key: str) -> Asset | None:
    """The workspace's video stored under ``key``; None for another workspace's, or not a video."""
    row = conn.execute(select(assets).where(assets.c.workspace_id == workspace_id, assets.c.kind == "video",
                                            assets.c.key == key)).first()
    return _asset(row) if row is not None else None


def captions_cues(conn: Connection, workspace_id: str, asset_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """``{asset id: cues}`` of the workspace's captions files among ``asset_ids``; an id of another
    workspace, or of another kind, is left out."""
    wanted = list(set(asset_ids))
    if not wanted:
        return {}
    rows = conn.execute(select(assets.c.id, assets.c.cues).where(
        assets.c.workspace_id == workspace_id, assets.c.kind == "captions", assets.c.id.in_(wanted))).all()
    return {row.id: list(row.cues or []) for row in rows}


def clip_lengths(conn: Connection, workspace_id: str, keys: Iterable[str],
                 kinds: tuple[str, ...] = ("video",)) -> dict[str, float]:
    """``{key: seconds}`` of the workspace's videos (or other ``kinds``: sounds) stored under
    ``keys``, as measured at upload; a key of another workspace, or of another kind, is left out."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = conn.execute(select(assets.c.key, assets.c.duration_sec).where(
        assets.c.workspace_id == workspace_id, assets.c.kind.in_(kinds), assets.c.key.in_(wanted))).all()
    return {row.key: float(row.duration_sec) for row in rows if row.duration_sec is not None}


def list_assets(conn: Connection, workspace_id: str, *, limit: int, kind: str | None = None,
                after: tuple[datetime, str] | None = None,
                name: str | None = None) -> tuple[list[Asset], tuple[datetime, str] | None]:
    """Newest first, ``limit`` at a time (keyset over ``(created_at, id)``), of one kind if given,
    and only those whose name holds ``name`` (any case; ``%`` and ``_`` are themselves) if given."""
    query = select(assets).where(assets.c.workspace_id == workspace_id)
    if kind is not None:
        query = query.where(assets.c.kind == kind)
    if name:
        query = query.where(assets.c.name.icontains(name, autoescape=True))
    if after is not None:
        created_at, last_id = after
        query = query.where(or_(assets.c.created_at < created_at,
                                and_(assets.c.created_at == created_at, assets.c.id < last_id)))
    rows = conn.execute(query.order_by(assets.c.created_at.desc(), assets.c.id.desc()).limit(limit + 1)).all()
    items = [_asset(row) for row in rows[:limit]]
    return items, (items[-1].cursor if len(rows) > limit else None)


def find_named(conn: Connection, workspace_id: str, sha256: str, name: str | None) -> Asset | None:
    """The workspace's asset of these bytes (None: none), given ``name`` if it had none: the same
    file uploaded again keeps the name it was known by."""
    found = find_by_hash(conn, workspace_id, sha256)
    if found is None or found.name is not None or not name:
        return found
    conn.execute(update(assets).where(assets.c.id == found.id, assets.c.name.is_(None)).values(name=name))
    return find_by_hash(conn, workspace_id, sha256)


def rename_asset(conn: Connection, workspace_id: str, asset_id: str, name: str) -> Asset:
    """Give the workspace's asset a new name. Raises NotFound (also for another workspace's)."""
    done = conn.execute(update(assets).where(assets.c.workspace_id == workspace_id, assets.c.id == asset_id)
                        .values(name=name))
    if not done.rowcount:
        raise NotFound("asset", asset_id)
    return get_asset(conn, workspace_id, asset_id)


def delete_asset(conn: Connection, workspace_id: str, asset_id: str) -> None:
    conn.execute(delete(assets).where(assets.c.workspace_id == workspace_id, assets.c.id == asset_id))


def users_of(conn: Connection, workspace_id: str, asset: Asset) -> dict[str, list[str]]:
    """What in the workspace names the asset (by its key or its id): ``{"videos": [ids], "brand_kits": [ids]}``."""
    def names(column: ColumnElement[object]) -> ColumnElement[bool]:
        text = cast(column, String)
        return or_(text.contains(asset.key), text.contains(asset.id))
    video_ids = conn.execute(
        select(videos.c.id).distinct().join(versions, versions.c.video_id == videos.c.id)
        .where(videos.c.workspace_id == workspace_id, or_(names(versions.c.doc), names(versions.c.fields)))
        .order_by(videos.c.id)).scalars().all()
    kit_ids = conn.execute(select(brand_kits.c.id).where(brand_kits.c.workspace_id == workspace_id,
                                                         names(brand_kits.c.tokens))
                           .order_by(brand_kits.c.id)).scalars().all()
    return {"videos": list(video_ids), "brand_kits": list(kit_ids)}


def titles_of(conn: Connection, workspace_id: str, video_ids: Iterable[str]) -> dict[str, str]:
    """``{id: title}`` of the workspace's videos among ``video_ids`` (another workspace's left out)."""
    wanted = sorted(set(video_ids))
    if not wanted:
        return {}
    rows = conn.execute(select(videos.c.id, videos.c.title).where(videos.c.workspace_id == workspace_id,
                                                                  videos.c.id.in_(wanted))).all()
    return {row.id: row.title for row in rows}


def describe_users(conn: Connection, workspace_id: str, users: dict[str, list[str]]) -> str:
    """What names an asset (``users_of``), in words: each video by its title and each brand kit by
    its name, with its id (``the video "Launch" (id 3c4d...), the brand kit "Acme" (id 9f8e...)``)."""
    titles = titles_of(conn, workspace_id, users["videos"])
    kits = dict(conn.execute(select(brand_kits.c.id, brand_kits.c.name).where(
        brand_kits.c.workspace_id == workspace_id, brand_kits.c.id.in_(users["brand_kits"] or [""]))).all())
    named = [f'the video "{titles.get(v, "Untitled video")}" (id {v})' for v in users["videos"]]
    named += [f'the brand kit "{kits.get(k, k)}" (id {k})' for k in users["brand_kits"]]
    return ", ".join(named)


def used_bytes(conn: Connection, workspace_id: str) -> int:
    """What the workspace's library holds against its quota: the sizes of its assets, each once."""
    total = conn.execute(select(func.coalesce(func.sum(assets.c.bytes), 0))
                         .where(assets.c.workspace_id == workspace_id)).scalar_one()
    return int(total)


def plan_of(conn: Connection, workspace_id: str, *, lock: bool = False) -> str:
    """The workspace's plan; with ``lock``, its row stays locked to the end of the transaction
    (PostgreSQL: uploads to one workspace check their quota one at a time; SQLite's writers
    already take turns)."""
    query = select(workspaces.c.plan).where(workspaces.c.id == workspace_id)
    return str(conn.execute(query.with_for_update() if lock else query).scalar_one())


def _named(key: ColumnElement[str], asset_id: ColumnElement[str], column: ColumnElement[object]) -> ColumnElement[bool]:
    text = cast(column, String)
    return or_(text.contains(key), text.contains(asset_id))


def unused_before(conn: Connection, cutoff: datetime, limit: int) -> list[Asset]:
    """Up to ``limit`` assets, of any workspace, uploaded before ``cutoff`` that no version of a
    video (document or fields, old versions too) and no brand kit of their workspace names."""
    in_a_version = exists(select(versions.c.id).join(videos, versions.c.video_id == videos.c.id)
                          .where(videos.c.workspace_id == assets.c.workspace_id,
                                 or_(_named(assets.c.key, assets.c.id, versions.c.doc),
                                     _named(assets.c.key, assets.c.id, versions.c.fields))))
    in_a_kit = exists(select(brand_kits.c.id).where(brand_kits.c.workspace_id == assets.c.workspace_id,
                                                     _named(assets.c.key, assets.c.id, brand_kits.c.tokens)))
    rows = conn.execute(select(assets).where(assets.c.created_at < cutoff, ~in_a_version, ~in_a_kit)
                        .order_by(assets.c.created_at, assets.c.id).limit(limit)).all()
    return [_asset(row) for row in rows]


def forget_unused(conn: Connection, asset: Asset) -> bool:
    """Delete the asset's row if nothing names it now; whether it went (False: already gone, or named)."""
    users = users_of(conn, asset.workspace_id, asset)
    if users["videos"] or users["brand_kits"]:
        return False
    gone = conn.execute(delete(assets).where(assets.c.workspace_id == asset.workspace_id, assets.c.id == asset.id))
    return bool(gone.rowcount)


@dataclass(frozen=True)
class Upload:
    """A presigned upload: the staging ``key`` the client PUTs to, what it declared, when its URL
    expires, and the asset it became once completed."""

    id: str
    workspace_id: str
    key: str
    bytes: int
    content_type: str
    filename: str | None
    asset_id: str | None
    expires_at: datetime
    created_at: datetime


def insert_upload(conn: Connection, clock: Clock, *, workspace_id: str, size: int, content_type: str,
                  filename: str | None, expires_at: datetime) -> Upload:
    upload_id = new_id()
    values = {"id": upload_id, "workspace_id": workspace_id, "key": storage_keys.staging_key(workspace_id, upload_id),
              "bytes": size, "content_type": content_type, "filename": filename, "asset_id": None,
              "expires_at": expires_at, "created_at": clock.now()}
    conn.execute(asset_uploads.insert().values(**values))
    return Upload(**values)  # type: ignore[arg-type]


def get_upload(conn: Connection, workspace_id: str, upload_id: str) -> Upload:
    """The workspace's upload. Raises NotFound (also for another workspace's)."""
    row = conn.execute(select(asset_uploads).where(asset_uploads.c.workspace_id == workspace_id,
                                                   asset_uploads.c.id == upload_id)).first()
    if row is None:
        raise NotFound("upload", upload_id)
    return Upload(**row._mapping)


def complete_upload(conn: Connection, workspace_id: str, upload_id: str, asset_id: str) -> None:
    conn.execute(update(asset_uploads).where(asset_uploads.c.workspace_id == workspace_id,
                                             asset_uploads.c.id == upload_id).values(asset_id=asset_id))


def delete_upload(conn: Connection, workspace_id: str, upload_id: str) -> None:
    conn.execute(delete(asset_uploads).where(asset_uploads.c.workspace_id == workspace_id,
                                             asset_uploads.c.id == upload_id))


def uploads_expired_before(conn: Connection, cutoff: datetime, limit: int) -> list[Upload]:
    """Up to ``limit`` uploads, of any workspace, whose URL expired before ``cutoff``, oldest first."""
    rows = conn.execute(select(asset_uploads).where(asset_uploads.c.expires_at < cutoff)
                        .order_by(asset_uploads.c.expires_at, asset_uploads.c.id).limit(limit)).all()
    return [Upload(**row._mapping) for row in rows]
