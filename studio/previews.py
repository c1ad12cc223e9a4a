"""Stills of a story before anything is saved: the new-video gallery's thumbnails and the story
form's live preview, drawn at once in the serving process.

A still of a story at preview size takes a few milliseconds to draw (no encoder, no queue), so
the form's preview is answered synchronously: ``StoryPreviews.draw`` checks every value of the
draft at once (``problems``: the story's fields, the format, the duration, the brand kit) and
either refuses with all of them or returns the PNG.

Thumbnails are drawn with the story's default fields and the workspace's default brand kit, at
the moment its first scene has settled (``renderer.stills.poster_time``), on the first request
for one, then kept in storage under the workspace's own prefix,
``previews/<workspace>/thumbnails/<story>-<format>.png``: one object per workspace, story and
format, so the cache is bounded by construction (15 stories x 4 formats per workspace) and never
shared between workspaces. Each object starts with the tag it was drawn for, the digest of what
its pixels depend on (the kit's tokens, its logo's bytes, the renderer's version, the size); a
thumbnail whose tag is not the current one is drawn again and replaces it.

The drawing sees only the workspace's own stored objects (its brand kit's logo), through the
same guard renders use (``StorageAssets`` over ``WorkspaceObjects``). An image the form gives by
address is not fetched for a preview: a grey placeholder of the same box stands in for it, so the
layout is the one the render will have; stills and renders fetch it.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from reelfarm.renderer import RENDERER_VERSION
from reelfarm.renderer.model import Asset
from reelfarm.renderer.raster import encode_png
from reelfarm.renderer.spec import RenderSpec
from reelfarm.renderer.stills import as_doc, poster_time, render_still_png
from reelfarm.shared import storage_keys
from reelfarm.shared.errors import NotFound, ObjectNotFound
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos.objects import WorkspaceObjects
from reelfarm.shared.storage import Storage
from reelfarm.studio.assets import StorageAssets, is_remote
from reelfarm.studio.errors import InvalidFieldsError
from reelfarm.studio.stories import get_story
from reelfarm.studio.stories.base import request_problems
from reelfarm.studio.videos import story_uploads, uploaded_cues

PREVIEW_RESOLUTION = 540
THUMBNAIL_RESOLUTION = 360
_TAG_LINE = b"reelfarm-thumbnail "


@dataclass(frozen=True)
class StoryDraft:
    """What a story form holds before anything is saved."""

    story_id: str
    fields: dict[str, Any] = field(default_factory=dict)
    format: str = "9:16"
    duration_sec: float | None = None
    brand_kit_id: str | None = None


@dataclass(frozen=True)
class Thumbnail:
    png: bytes
    tag: str


class StoryPreviews:
    """Draws stills of unsaved story drafts, and keeps each workspace's gallery thumbnails."""

    def __init__(self, engine: Engine, storage: Storage, scratch_dir: Path) -> None:
        self.engine = engine
        self.storage = storage
        self.scratch_dir = scratch_dir
        self._placeholder_lock = threading.Lock()

    # -- the form's live preview ------------------------------------------------------------

    def problems(self, workspace_id: str, draft: StoryDraft) -> list[dict[str, Any]]:
        """Every problem with ``draft``, at once, as ``{"field", "code", "message"}`` (JSON pointers:
        ``/fields/...``, ``/format``, ``/duration_sec``, ``/brand_kit_id``). Raises UnknownStoryError."""
        found = request_problems(get_story(draft.story_id), draft.fields, draft.format, draft.duration_sec)
        if draft.brand_kit_id:
            try:
                with self.engine.connect() as conn:
                    kits_repo.get_brand_kit(conn, workspace_id, draft.brand_kit_id)
            except NotFound:
                found.append({"field": "/brand_kit_id", "code": "not_found",
                              "message": "no such brand kit in this workspace"})
        return found

    def draw(self, workspace_id: str, draft: StoryDraft, t: float | None = None) -> bytes:
        """PNG of ``draft`` at ``t`` seconds (clamped to the video; None: when its first scene has
        settled), at ``PREVIEW_RESOLUTION`` in the draft's format.

        Raises:
            InvalidFieldsError: every problem ``problems`` finds. UnknownStoryError.
        """
        problems = self.problems(workspace_id, draft)
        if problems:
            raise InvalidFieldsError(problems)
        return self._draw(workspace_id, draft, t, PREVIEW_RESOLUTION)

    def settled_time(self, workspace_id: str, draft: StoryDraft) -> float:
        """When the draft's first scene has settled (where thumbnails are drawn), in seconds."""
        story = get_story(draft.story_id)
        with self.engine.connect() as conn:
            kit = _kit(conn, workspace_id, None)
            uploads = story_uploads(conn, workspace_id, story, draft.fields)
            cues = uploaded_cues(conn, workspace_id, uploads)
        return round(poster_time(as_doc(story.build(dict(draft.fields), kit.tokens, draft.format, None, uploads, cues))),
                     1)

    def doc(self, workspace_id: str, draft: StoryDraft, locale: str | None = None) -> dict[str, Any]:
        """The document ``draft`` makes, as saving it would (an animated preview draws it:
        ``reelfarm.farm.services.drafts``); ``locale``: the video's, when it has one.

        Raises:
            InvalidFieldsError: every problem ``problems`` finds. UnknownStoryError.
        """
        problems = self.problems(workspace_id, draft)
        if problems:
            raise InvalidFieldsError(problems)
        doc = self._build(workspace_id, draft)
        if locale:
            doc["locale"] = locale
        return doc

    def _draw(self, workspace_id: str, draft: StoryDraft, t: float | None, resolution: int) -> bytes:
        doc = as_doc(self._build(workspace_id, draft))
        at = poster_time(doc) if t is None else min(max(t, 0.0), doc.duration)
        return render_still_png(doc, at, RenderSpec(draft.format, resolution), self.assets(workspace_id))

    def _build(self, workspace_id: str, draft: StoryDraft) -> dict[str, Any]:
        """The draft's document, its uploads (by id) resolved within the workspace."""
        story = get_story(draft.story_id)
        with self.engine.connect() as conn:
            kit = _kit(conn, workspace_id, draft.brand_kit_id)
            uploads = story_uploads(conn, workspace_id, story, draft.fields)
            cues = uploaded_cues(conn, workspace_id, uploads)
        return story.build(dict(draft.fields), kit.tokens, draft.format, draft.duration_sec, uploads, cues)

    def assets(self, workspace_id: str) -> _PreviewAssets:
        """The workspace's stored objects; an image given only by address draws as a placeholder."""
        return _PreviewAssets(StorageAssets(self.storage, WorkspaceObjects(self.engine, workspace_id)),
                              self._placeholder())

    def _placeholder(self) -> str:
        path = self.scratch_dir / "image-placeholder.png"
        with self._placeholder_lock:
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(_placeholder_png())
        return str(path)

    # -- the gallery's thumbnails -----------------------------------------------------------

    def thumbnail_tag(self, workspace_id: str) -> str:
        """The digest of what this workspace's thumbnails depend on (its default kit, its logo's
        bytes, the renderer's version, the size): a thumbnail URL carrying it changes with them."""
        with self.engine.connect() as conn:
            kit = _kit(conn, workspace_id, None)
        return self._tag(workspace_id, kit)

    def _tag(self, workspace_id: str, kit: kits_repo.BrandKit) -> str:
        digest = hashlib.sha256(json.dumps([kit.tokens, RENDERER_VERSION, THUMBNAIL_RESOLUTION],
                                           sort_keys=True, default=str).encode("utf-8"))
        logo_key = ((kit.tokens or {}).get("logo") or {}).get("key") if isinstance(kit.tokens, dict) else None
        if logo_key and WorkspaceObjects(self.engine, workspace_id).owns(str(logo_key)):
            try:
                digest.update(hashlib.sha256(self.storage.get_bytes(str(logo_key))).digest())
            except ObjectNotFound:
                pass
        return digest.hexdigest()[:20]

    def thumbnail(self, workspace_id: str, story_id: str, fmt: str) -> Thumbnail:
        """The workspace's thumbnail of ``story_id`` in ``fmt``: kept, or drawn now and kept.

        Raises:
            UnknownStoryError; ValueError for a format that is not one of the formats.
        """
        get_story(story_id)
        RenderSpec(fmt, THUMBNAIL_RESOLUTION)  # refuses an unknown format before anything is read
        with self.engine.connect() as conn:
            kit = _kit(conn, workspace_id, None)
        tag = self._tag(workspace_id, kit)
        key = storage_keys.story_thumbnail_key(workspace_id, story_id, fmt)
        kept = self._kept(key, tag)
        if kept is not None:
            return Thumbnail(kept, tag)
        png = self._draw(workspace_id, StoryDraft(story_id, {}, fmt, None, kit.id), None, THUMBNAIL_RESOLUTION)
        self.storage.put_bytes(key, _TAG_LINE + tag.encode("ascii") + b"\n" + png, "application/octet-stream")
        return Thumbnail(png, tag)

    def _kept(self, key: str, tag: str) -> bytes | None:
        try:
            stored = self.storage.get_bytes(key)
        except ObjectNotFound:
            return None
        head, _, png = stored.partition(b"\n")
        return png if head == _TAG_LINE + tag.encode("ascii") else None


def _kit(conn: Any, workspace_id: str, kit_id: str | None) -> kits_repo.BrandKit:
    """The kit asked for (NotFound when it is not this workspace's), else the default, else the first."""
    if kit_id:
        return kits_repo.get_brand_kit(conn, workspace_id, kit_id)
    kit = kits_repo.get_default_brand_kit(conn, workspace_id)
    if kit is None:
        kits = kits_repo.list_brand_kits(conn, workspace_id)
        if not kits:
            raise NotFound("brand_kit", "(the workspace's default)")
        kit = kits[0]
    return kit


class _PreviewAssets:
    """The workspace's stored objects; an image given only by address draws as a placeholder."""

    def __init__(self, stored: StorageAssets, placeholder: str) -> None:
        self.stored = stored
        self.placeholder = placeholder

    def path(self, asset_id: str, asset: Asset) -> str:
        if asset.key is None and is_remote(asset.url):
            return self.placeholder
        return self.stored.path(asset_id, asset)


def _placeholder_png(size: int = 96) -> bytes:
    """A light grey square with darker diagonal stripes: where an image will be."""
    y, x = np.mgrid[0:size, 0:size]
    stripes = ((x + y) // 8) % 2 == 0
    rgba = np.empty((size, size, 4), dtype=np.uint8)
    rgba[..., :3] = np.where(stripes[..., None], 200, 222)
    rgba[..., 3] = 255
    return encode_png(rgba)
