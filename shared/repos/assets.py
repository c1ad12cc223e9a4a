"""The media library's rows: one per distinct upload of a workspace (``reelfarm.farm.services.library``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, String, and_, cast, delete, or_, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.tables import assets, brand_kits, versions, videos


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

    @property
    def cursor(self) -> tuple[datetime, str]:
        return self.created_at, self.id


def asset_key(workspace_id: str, sha256: str, extension: str) -> str:
    """Where an upload is stored: under its workspace, named by its content."""
    return f"assets/{workspace_id}/{sha256}.{extension}"


def insert_asset(conn: Connection, clock: Clock, *, workspace_id: str, kind: str, content_type: str, size: int,
                 sha256: str, key: str, width: int | None, height: int | None,
                 duration_sec: float | None) -> Asset:
    values = {"id": new_id(), "workspace_id": workspace_id, "kind": kind, "content_type": content_type,
              "bytes": size, "sha256": sha256, "key": key, "width": width, "height": height,
              "duration_sec": duration_sec, "created_at": clock.now()}
    conn.execute(assets.insert().values(**values))
    return Asset(**values)  # type: ignore[arg-type]


def find_by_hash(conn: Connection, workspace_id: str, sha256: str) -> Asset | None:
    row = conn.execute(select(assets).where(assets.c.workspace_id == workspace_id,
                                            assets.c.sha256 == sha256)).first()
    return Asset(**row._mapping) if row is not None else None


def get_asset(conn: Connection, workspace_id: str, asset_id: str) -> Asset:
    """The workspace's asset. Raises NotFound (also for another workspace's)."""
    row = conn.execute(select(assets).where(assets.c.workspace_id == workspace_id, assets.c.id == asset_id)).first()
    if row is None:
        raise NotFound("asset", asset_id)
    return Asset(**row._mapping)


def list_assets(conn: Connection, workspace_id: str, *, limit: int, kind: str | None = None,
                after: tuple[datetime, str] | None = None) -> tuple[list[Asset], tuple[datetime, str] | None]:
    """Newest first, ``limit`` at a time (keyset over ``(created_at, id)``), of one kind if given."""
    query = select(assets).where(assets.c.workspace_id == workspace_id)
    if kind is not None:
        query = query.where(assets.c.kind == kind)
    if after is not None:
        created_at, last_id = after
        query = query.where(or_(assets.c.created_at < created_at,
                                and_(assets.c.created_at == created_at, assets.c.id < last_id)))
    rows = conn.execute(query.order_by(assets.c.created_at.desc(), assets.c.id.desc()).limit(limit + 1)).all()
    items = [Asset(**row._mapping) for row in rows[:limit]]
    return items, (items[-1].cursor if len(rows) > limit else None)


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
