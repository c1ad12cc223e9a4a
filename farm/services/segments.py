"""Segments reused across renders of one workspace: a chunk whose fingerprint
(``reelfarm.renderer.fingerprint``) matches a segment an earlier render of the same workspace made
is not drawn again; the stored segment is copied into the new render's place.

A render's segments live at ``renders/<id>/seg<n>.mp4`` while it runs, as always. When it succeeds
the stitch keeps each one, under its fingerprint, at ``segments/<workspace>/<fingerprint>.mp4``,
with a row in ``segments``: copies, so deleting a render never takes a segment another render
uses; the retention sweep deletes the kept segments no render has used for the retention period. Never across workspaces:
render timing would tell one workspace what another rendered. Assets count by their content (the
SHA-256 of their bytes, read within the workspace); a chunk drawing an asset given by URL (not
imported yet when the render is requested) is always drawn.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from reelfarm.farm.services import stream
from reelfarm.renderer.chunks import chunks_from_starts, plan_chunks, scene_chunks
from reelfarm.renderer.errors import AssetError
from reelfarm.renderer.fingerprint import segment_fingerprint
from reelfarm.renderer.model import Doc, build_doc, frame_count
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as renders_repo
from reelfarm.shared.repos import segments as segments_repo
from reelfarm.shared.storage import Storage
from reelfarm.shared.storage_keys import cache_key
from reelfarm.studio.assets import KeyScope, StorageAssets

log = logging.getLogger("reelfarm.farm")

def chunk_frames(render: renders_repo.Render, doc: Doc) -> list[tuple[int, int]]:
    """The render's chunks as frame ranges: its stored plan (``chunk_starts``). A render requested
    before plans were stored is drawn as its release planned it: along its scenes without cuts
    at transitions, or, before chunks followed scenes, ``chunks`` equal pieces."""
    if render.chunk_starts:
        return chunks_from_starts(render.chunk_starts, render.frames or frame_count(doc.duration, render.fps))
    planned = scene_chunks(doc, render.fps, cut_transitions=False)
    if len(planned) == (render.chunks or 0):
        return planned
    return plan_chunks(render.frames or 0, render.chunks or 1)


def asset_digests(storage: Storage, scope: KeyScope, doc: Doc) -> Callable[[str], str | None]:
    """Content digests of the document's assets in storage (read once each, within ``scope``);
    None for an asset given by URL or one that cannot be read."""
    assets = StorageAssets(storage, scope)
    known: dict[str, str | None] = {}

    def digest(asset_id: str) -> str | None:
        if asset_id not in known:
            asset = doc.asset(asset_id)
            try:
                path = assets.path(asset_id, asset) if asset is not None and asset.key else None
            except (AssetError, RuntimeError):
                path = None
            known[asset_id] = _sha256(path) if path else None
        return known[asset_id]
    return digest


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprints(storage: Storage, scope: KeyScope, render: renders_repo.Render,
                 raw_doc: dict[str, Any] | Doc) -> list[str | None]:
    """Each chunk's fingerprint, with the render's encoder family (x264 until one is planned);
    ``raw_doc``: the render's document, as stored or built."""
    doc = raw_doc if isinstance(raw_doc, Doc) else build_doc(raw_doc)  # a stored version: valid already
    spec = RenderSpec(render.format, render.resolution, render.fps)
    digest = asset_digests(storage, scope, doc)
    encoder, settings = segment_encoder(render)
    return [segment_fingerprint(doc, spec, frames, encoder, digest, settings)
            for frames in chunk_frames(render, doc)]


def segment_encoder(render: renders_repo.Render) -> tuple[str, Any]:
    """What a render's segments are encoded with, for their fingerprints: its encoder family (x264
    until one is planned), or VP9 for a WebM, with its alpha. A GIF's segments are an MP4's."""
    return encoder_for(render.container, bool(render.transparent), render.encoder)


def encoder_for(container: str, transparent: bool, encoder: str | None = None) -> tuple[str, Any]:
    """``segment_encoder`` of a render in ``container`` (a render not made yet: ``encoder`` None)."""
    if container == "webm":
        return "vp9", {"alpha": transparent}
    return encoder or "x264", None


def reuse(engine: Engine, clock: Clock, storage: Storage, render: renders_repo.Render, prints: list[str | None],
          segment_key: Callable[[int], str], streams: bool = True) -> list[int]:
    """Copy the segments the workspace keeps with these fingerprints into the render's places, and
    with ``streams`` their stream segments (a video with sound has its segments' audio mixed by its
    first chunk task, which publishes them: ``reelfarm.farm.services.stream``); returns the chunks
    reused."""
    wanted = [p for p in prints if p is not None]
    with engine.connect() as conn:
        kept = segments_repo.kept(conn, render.workspace_id, wanted)
    reused = []
    for index, fingerprint in enumerate(prints):
        if fingerprint not in kept:
            continue
        try:
            storage.put_file(segment_key(index), storage.open_local(kept[fingerprint]), "video/mp4")
            if streams:
                stream.publish_segment(storage, render, index, storage.open_local(kept[fingerprint]))
        except Exception:  # a segment that cannot be copied (swept meanwhile) is drawn instead
            log.warning("could not reuse segment %s for render %s chunk %d", fingerprint, render.id, index,
                        exc_info=True)
            continue
        reused.append(index)
    if reused:
        with transaction(engine) as conn:
            segments_repo.used(conn, clock, render.workspace_id, [str(prints[i]) for i in reused])
    return reused


def keep(engine: Engine, clock: Clock, storage: Storage, render: renders_repo.Render, prints: list[str | None],
         segment_key: Callable[[int], str]) -> None:
    """After a render succeeded: keep its segments under their fingerprints for the workspace's
    later renders (the file first, then its row, so a row always names a file)."""
    wanted = [p for p in prints if p is not None]
    with engine.connect() as conn:
        already = segments_repo.kept(conn, render.workspace_id, wanted)
    for index, fingerprint in enumerate(prints):
        if fingerprint is None or fingerprint in already:
            continue
        key = cache_key(render.workspace_id, fingerprint)
        try:
            storage.put_file(key, storage.open_local(segment_key(index)), "video/mp4")
            with transaction(engine) as conn:
                segments_repo.keep(conn, clock, render.workspace_id, fingerprint, key)
        except Exception:  # reuse is an optimisation: a segment not kept is drawn next time
            log.warning("could not keep segment %d of render %s", index, render.id, exc_info=True)
