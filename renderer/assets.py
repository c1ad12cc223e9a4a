"""Where the renderer reads image and audio assets from.

The renderer never touches the network: callers hand in an `AssetSource`. `LocalAssets` reads
storage keys under a root directory, absolute paths and `file://` URLs; a service wires its own
source that fetches and caches remote files before rendering.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.model import Asset


class AssetSource(Protocol):
    def path(self, asset_id: str, asset: Asset) -> str:
        """A local file path holding the asset's bytes.

        Raises:
            AssetError: when the asset cannot be found or read.
        """


class LocalAssets:
    """Assets from the local disk: storage keys under `root`, paths and `file://` URLs."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else None

    def path(self, asset_id: str, asset: Asset) -> str:
        candidate = self._locate(asset_id, asset)
        if not candidate.is_file():
            raise AssetError(f"asset {asset_id!r}: file not found ({candidate})")
        return str(candidate)

    def _locate(self, asset_id: str, asset: Asset) -> Path:
        if asset.key is not None:
            if self.root is None:
                raise AssetError(f"asset {asset_id!r}: storage key {asset.key!r} but no asset root is set")
            root = self.root.resolve()
            candidate = (root / asset.key).resolve()
            if root not in candidate.parents:
                raise AssetError(f"asset {asset_id!r}: key {asset.key!r} leaves the asset root")
            return candidate
        url = asset.url or ""
        parsed = urlparse(url)
        if parsed.scheme == "file":
            return Path(unquote(parsed.path))
        if parsed.scheme in ("", None) or len(parsed.scheme) == 1:  # bare or Windows-style path
            path = Path(url)
            return path if path.is_absolute() or self.root is None else self.root / path
        raise AssetError(
            f"asset {asset_id!r}: {parsed.scheme}:// URLs must be fetched into storage before rendering"
        )
