"""Brand kits: read and change a workspace's kits, and save the kit a brand extraction made.

Every kit is shown as ``reelfarm.studio.resources.brand_kit_resource`` (a stored logo as a freshly signed
URL). An extracted kit is written with its ``brand_kit.extracted`` event in one transaction
(``save_extracted_kit``; the farm's ``extract_brand`` job calls it); a workspace's first
extracted kit becomes its default while the neutral kit is its only one.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.storage import Storage
from reelfarm.studio.resources import brand_kit_resource, jsonable


class BrandKitService:
    """List, read and update brand kits, answering resources."""

    def __init__(self, engine: Engine, clock: Clock, storage: Storage) -> None:
        self.engine = engine
        self.clock = clock
        self.storage = storage

    def list(self, workspace_id: str) -> list[dict[str, Any]]:
        """Every kit of the workspace, the default kit first."""
        with self.engine.connect() as conn:
            kits = kits_repo.list_brand_kits(conn, workspace_id)
        return [brand_kit_resource(k, self.storage) for k in kits]

    def get(self, workspace_id: str, kit_id: str) -> dict[str, Any]:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            return brand_kit_resource(kits_repo.get_brand_kit(conn, workspace_id, kit_id), self.storage)

    def update(self, workspace_id: str, kit_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Rename, replace the tokens, or make it the default (``is_default``). Raises NotFound."""
        with transaction(self.engine) as conn:
            kit = kits_repo.update_brand_kit(conn, self.clock, workspace_id, kit_id, **changes)
        return brand_kit_resource(kit, self.storage)


def logo_key(kit_id: str) -> str:
    return f"brand-kits/{kit_id}/logo.png"


def store_logo(storage: Storage, kit_id: str, logo: Any) -> dict[str, Any] | None:
    """Put an extracted ``reelfarm.studio.brand.Logo`` in storage; the ``tokens.logo`` that refers to it."""
    if logo is None:
        return None
    key = logo_key(kit_id)
    storage.put_bytes(key, logo.png, "image/png")
    return {"url": logo.source_url, "key": key, "width": logo.width, "height": logo.height,
            "dominant_color": logo.dominant_color}


def save_extracted_kit(conn: Connection, clock: Clock, storage: Storage, *, workspace_id: str, kit_id: str,
                       brand: Any, logo: dict[str, Any] | None) -> kits_repo.BrandKit:
    """Create the kit of an extracted ``reelfarm.studio.brand.ExtractedBrand`` and its ``brand_kit.extracted``
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
    add_event(conn, clock, workspace_id=workspace_id, type="brand_kit.extracted",
              payload={"brand_kit": jsonable(brand_kit_resource(kit, storage))})
    return kit
