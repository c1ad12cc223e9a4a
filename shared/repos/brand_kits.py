"""Brand kits: design tokens per workspace, at most one of them the default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.tables import brand_kits


@dataclass(frozen=True)
class BrandKit:
    id: str
    workspace_id: str
    name: str
    source_url: str | None
    is_default: bool
    tokens: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def create_brand_kit(conn: Connection, clock: Clock, *, workspace_id: str, name: str,
                     tokens: Mapping[str, Any], source_url: str | None = None,
                     is_default: bool = False, kit_id: str | None = None) -> BrandKit:
    """A new kit (with ``kit_id`` when the caller chose the id, e.g. to store its logo first); with
    ``is_default`` it replaces the workspace's current default."""
    now = clock.now()
    kit_id = kit_id or new_id()
    if is_default:
        _clear_default(conn, workspace_id)
    conn.execute(brand_kits.insert().values(
        id=kit_id, workspace_id=workspace_id, name=name, source_url=source_url,
        is_default=is_default, tokens=dict(tokens), created_at=now, updated_at=now))
    return get_brand_kit(conn, workspace_id, kit_id)


def list_brand_kits(conn: Connection, workspace_id: str) -> list[BrandKit]:
    """Every kit of the workspace, the default first, then oldest first."""
    rows = conn.execute(
        select(brand_kits).where(brand_kits.c.workspace_id == workspace_id)
        .order_by(brand_kits.c.is_default.desc(), brand_kits.c.created_at, brand_kits.c.id))
    return [BrandKit(**row._mapping) for row in rows]


def get_brand_kit(conn: Connection, workspace_id: str, kit_id: str) -> BrandKit:
    """Raises NotFound when the kit does not exist or belongs to another workspace."""
    row = conn.execute(select(brand_kits).where(
        brand_kits.c.id == kit_id, brand_kits.c.workspace_id == workspace_id)).first()
    if row is None:
        raise NotFound("brand_kit", kit_id)
    return BrandKit(**row._mapping)


def delete_brand_kit(conn: Connection, workspace_id: str, kit_id: str) -> None:
    """Remove a kit of the workspace (its videos keep their versions, which name its logo, and
    forget the kit). Raises NotFound when the kit does not exist or belongs to another workspace."""
    gone = conn.execute(delete(brand_kits).where(brand_kits.c.id == kit_id, brand_kits.c.workspace_id == workspace_id))
    if gone.rowcount != 1:
        raise NotFound("brand_kit", kit_id)


def get_default_brand_kit(conn: Connection, workspace_id: str) -> BrandKit | None:
    row = conn.execute(select(brand_kits).where(
        brand_kits.c.workspace_id == workspace_id, brand_kits.c.is_default)).first()
    return None if row is None else BrandKit(**row._mapping)


def update_brand_kit(conn: Connection, clock: Clock, workspace_id: str, kit_id: str, *,
                     name: str | None = None, tokens: Mapping[str, Any] | None = None,
                     is_default: bool | None = None) -> BrandKit:
    """Change the given attributes (None leaves one as it is).

    ``is_default=True`` takes the default from the workspace's other kit in the same
    transaction; ``False`` leaves the workspace without a default.

    Raises:
        NotFound: the kit does not exist or belongs to another workspace.
    """
    get_brand_kit(conn, workspace_id, kit_id)
    values: dict[str, Any] = {"updated_at": clock.now()}
    if name is not None:
        values["name"] = name
    if tokens is not None:
        values["tokens"] = dict(tokens)
    if is_default is not None:
        if is_default:
            _clear_default(conn, workspace_id, keep=kit_id)
        values["is_default"] = is_default
    conn.execute(brand_kits.update().where(brand_kits.c.id == kit_id).values(**values))
    return get_brand_kit(conn, workspace_id, kit_id)


def _clear_default(conn: Connection, workspace_id: str, keep: str | None = None) -> None:
    # Lock the workspace first: two transactions switching the default at once would otherwise
    # both clear the old one and both set theirs, and one would fail on the unique index.
    lock_workspace(conn, workspace_id)
    query = brand_kits.update().where(brand_kits.c.workspace_id == workspace_id, brand_kits.c.is_default)
    if keep is not None:
        query = query.where(brand_kits.c.id != keep)
    conn.execute(query.values(is_default=False))
