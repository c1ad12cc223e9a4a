"""Where render tasks read a document's image and audio assets from: the service's storage.

A task may run on any node, so the renderer reads every asset from storage (``Storage.open_local``
brings its bytes into the node's cache). An asset is in storage either because the document names
its key (``{"key": ...}``: a brand kit's logo, an upload) or because it was *imported*: an asset
given as an ``http(s)`` URL (a story's image field, a PATCHed document, a brand logo's URL) is
fetched once per render, before any chunk draws, by ``import_remote_assets``. That runs as its own
task on the ``jobs`` queue (the nodes that reach the internet for brand extraction), through the
studio's SSRF guard, so render nodes never fetch and every chunk of one render draws the same bytes.
The copies live under the render's own prefix (``renders/<id>/assets/...``, or the stills job's)
and are deleted with the render's other intermediate files.

Local paths and ``file://`` URLs would let a document read a node's own files: they are refused
with a message saying what to do. A key is read only when the render's workspace owns the object
(``reelfarm.shared.repos.objects``): the loader sees the workspace's objects, never the storage root.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import av
import skia

from reelfarm.farm.services.errors import AssetUnreachable
from reelfarm.renderer.errors import AssetError
from reelfarm.shared import storage_keys
from reelfarm.shared.storage import Storage
from reelfarm.studio.assets import is_remote
from reelfarm.studio.errors import FetchError, FetchFailed, FetchRefused, FetchTooLarge
from reelfarm.studio.fetch import SafeFetcher

BRAND_LOGO = "$brand.logo"  # the document's brand logo, when it has a URL and no key
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif", "image/bmp", "image/svg+xml",
               "application/octet-stream", "binary/octet-stream")
AUDIO_TYPES = ("audio/*", "video/mp4", "application/ogg", "application/octet-stream", "binary/octet-stream")
MAX_IMAGE_BYTES = 25_000_000
MAX_AUDIO_BYTES = 100_000_000
ASSET_FETCH_OPTIONS: dict[str, float] = {"total_timeout": 60.0, "read_timeout": 20.0, "max_bytes": MAX_AUDIO_BYTES}
"""How ``reelfarm.farm.services.collaborators.Collaborators.asset_fetcher`` is built: the largest asset allowed, within one minute."""


def remote_assets(doc: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """``{asset_id: (type, url)}`` for every asset of a raw document given by http(s) URL without a key."""
    found = {}
    for asset_id, asset in (doc.get("assets") or {}).items():
        if isinstance(asset, Mapping) and not asset.get("key") and is_remote(asset.get("url")):
            found[asset_id] = (str(asset.get("type", "image")), str(asset["url"]))
    logo = (doc.get("brand") or {}).get("logo") or {}
    if isinstance(logo, Mapping) and not logo.get("key") and is_remote(logo.get("url")):
        found[BRAND_LOGO] = ("image", str(logo["url"]))
    return found


def imported_keys(doc: Mapping[str, Any], prefix: str) -> list[str]:
    """Where ``import_remote_assets(doc, ..., prefix)`` puts the document's remote assets."""
    return [storage_keys.imported_key(prefix, asset_id) for asset_id in remote_assets(doc)]


def import_remote_assets(doc: Mapping[str, Any], fetcher: SafeFetcher, storage: Storage, prefix: str) -> list[str]:
    """Fetch every remote asset of ``doc`` into storage under ``prefix``; the keys written.

    An asset already imported (a retried task) is not fetched again.

    Raises:
        AssetError: an asset the user must fix: a refused URL, an answer 4xx, a body too large,
            or bytes that are not an image (or audio) the renderer can read.
        AssetUnreachable: a failure that may pass (timeout, an unresolvable host, connection error,
            5xx): the queue retries; its message names the asset, the reason and what to change,
            and becomes the render's error when the retries are spent.
    """
    keys = []
    for asset_id, (kind, url) in remote_assets(doc).items():
        if kind == "video":  # clips are large and drawn frame by frame: they come from the media library
            raise AssetError(f"video asset {asset_id!r} ({url}): a video is drawn from the workspace's media "
                             "library; upload it there and name it by its key, then render again")
        key = storage_keys.imported_key(prefix, asset_id)
        keys.append(key)
        if storage.exists(key):
            continue
        audio = kind == "audio"
        data, content_type = _fetch(fetcher, asset_id, url, AUDIO_TYPES if audio else IMAGE_TYPES,
                                    MAX_AUDIO_BYTES if audio else MAX_IMAGE_BYTES)
        if not (_readable_audio(data) if audio else _readable_image(data)):
            what = "audio the renderer can decode" if audio else "a PNG, JPEG, WebP, GIF, BMP or SVG image"
            raise AssetError(f"{asset_name(asset_id, kind)}: {url} did not send {what}")
        storage.put_bytes(key, data, content_type)
    return keys


def asset_name(asset_id: str, kind: str = "image") -> str:
    """How a message names an asset: ``image asset 'hero'``, ``the brand logo``."""
    return "the brand logo" if asset_id == BRAND_LOGO else f"{kind} asset {asset_id!r}"


def _fetch(fetcher: SafeFetcher, asset_id: str, url: str, accept: tuple[str, ...], max_bytes: int) -> tuple[bytes, str]:
    kind = "audio" if accept is AUDIO_TYPES else "image"
    name = asset_name(asset_id, kind)
    try:
        result = fetcher.fetch(url, accept=accept)
    except FetchRefused as exc:
        raise AssetError(f"{name} ({url}) is refused: {exc.reason}") from None
    except FetchFailed as exc:
        message = f"{name} could not be fetched from {url}: {exc.reason}"
        if isinstance(exc, FetchTooLarge) or (exc.status is not None and 400 <= exc.status < 500):
            raise AssetError(message) from None
        # may pass (a host down for a moment): retried, and if it does not, the render's error
        raise AssetUnreachable(f"{message}; check its address or give another {kind}, then render again") from exc
    except FetchError as exc:
        raise AssetError(f"{name} ({url}): {exc.reason}") from None
    if len(result.body) > max_bytes:
        raise AssetError(f"{name}: {url} sent {len(result.body)} bytes, more than the {max_bytes} "
                         f"allowed for this kind of asset")
    return result.body, result.content_type


def check_image_url(fetcher: SafeFetcher, url: str) -> str | None:
    """Why the image at ``url`` could not be drawn (unreachable, refused, too large, not an image),
    in words for the field that holds it; None when it can."""
    try:
        result = fetcher.fetch(url, accept=IMAGE_TYPES)
    except FetchError as exc:
        return f"could not be fetched: {exc.reason}"
    if len(result.body) > MAX_IMAGE_BYTES:
        return f"is {len(result.body)} bytes, more than the {MAX_IMAGE_BYTES} allowed for an image"
    if not _readable_image(result.body):
        return "did not send a PNG, JPEG, WebP, GIF, BMP or SVG image"
    return None


def _readable_image(data: bytes) -> bool:
    if data.lstrip()[:5] in (b"<svg ", b"<?xml"):
        return skia.SVGDOM.MakeFromStream(skia.MemoryStream(data)) is not None
    return skia.Image.MakeFromEncoded(skia.Data.MakeWithCopy(data)) is not None


def _readable_audio(data: bytes) -> bool:
    try:
        with av.open(io.BytesIO(data)) as container:
            return bool(container.streams.audio)
    except (av.FFmpegError, ValueError):
        return False
