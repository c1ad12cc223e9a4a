"""Where render tasks read a document's image and audio assets from: the service's storage.

A task may run on any node, so an asset must be in storage under a key (``{"key": ...}``); its
bytes are fetched into the storage's local cache (``Storage.open_local``). Web URLs are fetched
into storage before rendering (by studio, behind its SSRF guard), never by a render node, and
local paths or ``file://`` URLs would let a document read the node's own files: both are refused
with a message saying what to do.
"""

from __future__ import annotations

from renderer import AssetError
from renderer.model import Asset
from shared.errors import InvalidStorageKey, ObjectNotFound, StorageError
from shared.storage import Storage


class StorageAssets:
    """An ``renderer.AssetSource`` over a ``Storage``."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def path(self, asset_id: str, asset: Asset) -> str:
        if asset.key is None:
            where = asset.url or "no location"
            raise AssetError(f"asset {asset_id!r} ({where}) has not been uploaded to storage; upload it and "
                             "refer to it by its key, then render again")
        try:
            return self.storage.open_local(asset.key)
        except ObjectNotFound:
            raise AssetError(f"asset {asset_id!r}: nothing is stored under key {asset.key!r}; upload it again "
                             "or remove it from the video, then render again") from None
        except InvalidStorageKey as exc:
            raise AssetError(f"asset {asset_id!r}: {exc}") from None
        except StorageError as exc:  # storage trouble is not the document's fault: let the task retry
            raise RuntimeError(f"asset {asset_id!r} could not be read from storage: {exc}") from exc
