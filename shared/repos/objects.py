"""Which workspace owns a stored object: the one rule every storage key a client names goes through.

Storage keys are global (``brand-kits/<kit id>/logo.png``, ``renders/<render id>/poster.jpg``,
``jobs/<job id>/still-0.png``), so a key alone says nothing about who may read it. A key that a
document names is resolved only through its *owner*, found from the key's first two segments:

| key | owner |
|---|---|
| ``brand-kits/<id>/...`` | the brand kit's workspace (its logo) |
| ``renders/<id>/...`` | the render's workspace (its poster, its file, the assets imported for it) |
| ``jobs/<id>/...`` | the job's workspace (the stills it made) |
| ``assets/<workspace id>/...`` | the workspace whose media library holds an asset stored under exactly that key |

Anything else (a key of no known kind, an id that names nothing) has no owner and is refused like
another workspace's object, with the same words, so a refusal never tells whether an object exists.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, Table, select

from reelfarm.shared.errors import InvalidStorageKey
from reelfarm.shared.ids import is_uuid
from reelfarm.shared.storage import check_key
from reelfarm.shared.tables import assets, brand_kits, jobs, renders

_KINDS: dict[str, Table] = {"brand-kits": brand_kits, "renders": renders, "jobs": jobs}


def owner_of(conn: Connection, key: str) -> str | None:
    """The id of the workspace owning the object stored under ``key``, or None.

    A key that is not a valid storage key (``reelfarm.shared.storage.check_key``: plain segments of safe
    characters) or whose id is not a UUID names nothing, and is never sent to the database."""
    try:
        check_key(str(key))
    except InvalidStorageKey:
        return None
    kind, _, rest = str(key).partition("/")
    if kind == "assets":  # the library's row naming the key (a deleted asset names nothing)
        return conn.execute(select(assets.c.workspace_id).where(assets.c.key == key)).scalar_one_or_none()
    object_id, _, tail = rest.partition("/")
    table = _KINDS.get(kind)
    if table is None or not tail or not is_uuid(object_id):
        return None
    return conn.execute(select(table.c.workspace_id).where(table.c.id == object_id)).scalar_one_or_none()


def owned_by(conn: Connection, workspace_id: str, key: str) -> bool:
    """Whether ``workspace_id`` may use the object stored under ``key``."""
    return owner_of(conn, key) == workspace_id


class WorkspaceObjects:
    """The keys one workspace may read, asked of the database once per key.

    A render task holds one for the render's workspace and hands it to ``reelfarm.farm.services.assets.StorageAssets``,
    so the renderer's asset loader never sees storage beyond the workspace.
    """

    def __init__(self, engine: Engine, workspace_id: str) -> None:
        self.engine = engine
        self.workspace_id = workspace_id
        self._known: dict[str, bool] = {}

    def owns(self, key: str) -> bool:
        if key not in self._known:
            with self.engine.connect() as conn:
                self._known[key] = owned_by(conn, self.workspace_id, key)
        return self._known[key]


def doc_keys(doc: Any) -> dict[str, str]:
    """``{JSON pointer: key}`` for every storage key a raw VideoDoc names (assets, the brand logo)."""
    found: dict[str, str] = {}
    if not isinstance(doc, dict):
        return found
    assets = doc.get("assets")
    for asset_id, asset in (assets.items() if isinstance(assets, dict) else ()):
        if isinstance(asset, dict) and asset.get("key") is not None:
            found[f"/assets/{_escape(str(asset_id))}/key"] = str(asset["key"])
    brand = doc.get("brand")
    logo = brand.get("logo") if isinstance(brand, dict) else None
    if isinstance(logo, dict) and logo.get("key") is not None:
        found["/brand/logo/key"] = str(logo["key"])
    return found


def local_urls(doc: Any) -> dict[str, str]:
    """``{JSON pointer: url}`` for every asset URL of a raw VideoDoc that is not http(s): a path or a
    ``file:`` URL would name a node's own files, so a stored document may not hold one."""
    found: dict[str, str] = {}
    assets = doc.get("assets") if isinstance(doc, dict) else None
    for asset_id, asset in (assets.items() if isinstance(assets, dict) else ()):
        url = asset.get("url") if isinstance(asset, dict) else None
        if isinstance(url, str) and not url.lower().startswith(("http://", "https://")):
            found[f"/assets/{_escape(str(asset_id))}/url"] = url
    return found


def foreign_keys(conn: Connection, workspace_id: str, doc: Any) -> dict[str, str]:
    """The subset of ``doc_keys(doc)`` that ``workspace_id`` does not own."""
    return {pointer: key for pointer, key in doc_keys(doc).items() if not owned_by(conn, workspace_id, key)}


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
