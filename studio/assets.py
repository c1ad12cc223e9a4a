"""A document's assets read from the service's storage, within one workspace's objects.

``StorageAssets`` is the ``renderer.AssetSource`` that render tasks (``reelfarm.farm.services.assets``
imports remote assets first) and the studio's story previews (``studio/previews.py``) draw with: a
key is read only when the workspace owns the object (``reelfarm.shared.repos.objects``), so the
loader sees the workspace's objects, never the storage root; an asset given by http(s) URL is read
from where a render imported it (``storage_keys.imported_key``), never fetched here.
"""

from __future__ import annotations

from typing import Protocol

from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Asset
from reelfarm.shared import storage_keys
from reelfarm.shared.errors import InvalidStorageKey, ObjectNotFound, StorageError
from reelfarm.shared.storage import Storage


def is_remote(url: str | None) -> bool:
    return bool(url) and str(url).lower().startswith(("http://", "https://"))


class KeyScope(Protocol):
    """The stored objects one workspace may read (``reelfarm.shared.repos.objects.WorkspaceObjects``)."""

    def owns(self, key: str) -> bool: ...


class StorageAssets:
    """An ``renderer.AssetSource`` over the objects of one workspace in a ``Storage``.

    ``scope``: which keys the document's workspace owns; any other key is refused exactly like a
    missing one. ``imported``: the prefix a render's (or stills job's) remote assets were imported
    under; without it, an asset given by URL only is an error.
    """

    def __init__(self, storage: Storage, scope: KeyScope, imported: str | None = None) -> None:
        self.storage = storage
        self.scope = scope
        self.imported = imported

    def path(self, asset_id: str, asset: Asset) -> str:
        key, imported = asset.key, False
        if key is None and self.imported is not None and is_remote(asset.url):
            key, imported = storage_keys.imported_key(self.imported, asset_id), True
        if key is None:
            where = asset.url or "no location"
            raise AssetError(f"asset {asset_id!r} ({where}) is neither in storage nor at an http(s) URL; "
                             "give it as an https URL or refer to it by its storage key, then render again")
        if not imported and not self.scope.owns(key):
            raise AssetError(f"asset {asset_id!r}: {_not_yours(key)}")
        try:
            return self.storage.open_local(key)
        except ObjectNotFound:
            if imported:  # the import task ran first, so this is lost, not the user's fault: retry
                raise RuntimeError(f"asset {asset_id!r} ({asset.url}) was not imported into storage") from None
            raise AssetError(f"asset {asset_id!r}: {_not_yours(key)}") from None
        except InvalidStorageKey as exc:
            raise AssetError(f"asset {asset_id!r}: {exc}") from None
        except StorageError as exc:  # storage trouble is not the document's fault: let the task retry
            raise RuntimeError(f"asset {asset_id!r} could not be read from storage: {exc}") from exc


def _not_yours(key: str) -> str:
    # One message for "another workspace's" and "nothing there", so it tells no one what exists.
    return (f"no object of this workspace is stored under key {key!r}; use a key of this workspace's "
            "brand kits, renders or stills, or an https URL, then render again")
