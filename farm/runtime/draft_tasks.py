"""The draft's job: draw one chunk of an animated preview and store its stream segment
(``reelfarm.farm.services.drafts``).

Like a render's chunk, it takes ids and plain values, loads the rest itself, and is idempotent (a
retried chunk overwrites its segment's key). It draws with the node's rasterizer and x264 (a
draft's segments are never joined, so any node may draw any chunk), through the renderer's own
``render_segment``, then remuxes the chunk into its MPEG-TS segment (``remux_to_ts``) with the
chunk's own part of the sound: the soundtrack and the clips' sound mixed over the chunk's span
alone and encoded there (``reelfarm.renderer.hls.segment_sound``), since a draft's chunks share
nothing and are never stitched; a sound that cannot be read leaves the preview silent (its render
names it). A library
clip is drawn from its small proxy when one is stored (``reelfarm.farm.services.proxies``); a clip
drawn from its original has its proxy made once the chunk's segment is stored, off the preview's
way, and a proxy that cannot be made leaves the draft as it was. Every few
seconds, and before it stores anything, it looks whether its draft is still live: a draft deleted
meanwhile (a newer one took its place, or it expired) stops it, and nothing is stored. A chunk that
cannot be drawn fails its draft at once, with a message the page shows, rather than be retried: a
preview is asked for again with a click (a chunk whose process died is run again by the queue; one
that dies on every try fails its draft through the queue's failure handler, ``fail_for_good``).
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from reelfarm.farm.runtime.context import TaskContext, current
from reelfarm.farm.runtime.scratch import scratch_dir
from reelfarm.farm.services import drafts
from reelfarm.farm.services.proxies import ClipProxies, DraftClips
from reelfarm.renderer.errors import AssetError, DocInvalid, FontError
from reelfarm.renderer.hls import TS_CONTENT_TYPE, AudioPart, remux_to_ts, segment_sound
from reelfarm.renderer.model import parse_doc
from reelfarm.renderer.spec import RenderSpec
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import drafts as drafts_repo
from reelfarm.shared.storage_keys import draft_segment_key
from reelfarm.studio.previews import StoryPreviews

log = logging.getLogger("reelfarm.farm")

LOOK_EVERY_SEC = 2.0
_USERS = (AssetError, DocInvalid, FontError)  # the user's to fix: the draft fails, nothing is retried


class _Gone(Exception):
    """The draft stopped being live while a chunk of it was drawing."""


def draw_draft_chunk(draft_id: str, index: int) -> None:
    """Draw chunk ``index`` of the draft and store it at ``drafts/<workspace>/<id>/seg<index>.ts``."""
    ctx = current()
    draft = _live(ctx, draft_id)
    if draft is None or index >= draft.chunks:
        return
    with transaction(ctx.engine) as conn:
        drafts_repo.start(conn, draft_id)
    start, end = drafts.chunk_ranges(draft)[index]
    with scratch_dir("draft") as tmp:
        mp4, ts = os.path.join(tmp, f"seg{index}.mp4"), os.path.join(tmp, f"seg{index}.ts")
        try:
            clips = _draw(ctx, draft, mp4, range(start, end), Path(tmp))
            sound = _sound(draft, range(start, end), clips, last=index == draft.chunks - 1)
        except _Gone:
            return
        except _USERS as exc:
            _fail(ctx, draft_id, str(exc))
            return
        except Exception:  # a preview is not retried: the person plays it again, and the page says so
            log.exception("draft %s chunk %d could not be drawn", draft_id, index)
            _fail(ctx, draft_id, "the preview could not be drawn; play it again")
            return
        remux_to_ts(mp4, ts, start / draft.fps, sound)
        if _live(ctx, draft_id) is None:
            return
        key = draft_segment_key(draft.workspace_id, draft.id, index)
        ctx.storage.put_file(key, ts, TS_CONTENT_TYPE)
        if not drafts.segment_stored(ctx.engine, ctx.storage, draft, os.path.getsize(ts)):
            ctx.storage.delete(key)  # deleted (or failed) meanwhile: keep nothing of it
            return
        clips.make_wanted()


def fail_for_good(draft_id: str, reason: str) -> None:
    """The queue gave up on a chunk of the draft (its process died on every try, which the chunk
    cannot catch itself): the draft fails at once, with what its page shows, rather than look
    live until it expires."""
    _fail(current(), draft_id, f"the preview could not be drawn ({reason}); play it again")


def _fail(ctx: TaskContext, draft_id: str, message: str) -> None:
    with transaction(ctx.engine) as conn:
        drafts_repo.fail(conn, draft_id, message)


def _live(ctx: TaskContext, draft_id: str) -> drafts_repo.Draft | None:
    with ctx.engine.connect() as conn:
        draft = drafts_repo.find_draft(conn, draft_id)
    if draft is None or draft.status not in drafts_repo.LIVE or draft.expires_at <= ctx.clock.now():
        return None
    return draft


def _sound(draft: drafts_repo.Draft, frames: range, assets: DraftClips, last: bool) -> AudioPart | None:
    """The chunk's part of the draft's sound, or None: nothing to hear, or a sound that cannot be
    read (the preview plays without it; a render of the video names it)."""
    try:
        return segment_sound(parse_doc(draft.doc), assets, draft.format, frames, draft.fps, last)
    except AssetError as exc:
        log.warning("draft %s: its sound is left out: %s", draft.id, exc)
        return None


def _draw(ctx: TaskContext, draft: drafts_repo.Draft, path: str, frames: range, tmp: Path) -> DraftClips:
    from reelfarm.renderer.backends import EncoderChoice, choose_raster  # loaded only where a chunk runs
    from reelfarm.renderer.render import render_segment

    parsed = parse_doc(draft.doc)
    spec = RenderSpec(draft.format, draft.resolution, draft.fps)
    # the stills' preview rules: an image given only by address draws as a placeholder (nothing fetched)
    # a library clip from its proxy when there is one (full renders and stills never use one)
    assets = DraftClips(StoryPreviews(ctx.engine, ctx.storage, tmp).assets(draft.workspace_id),
                        ClipProxies(ctx.engine, ctx.storage, ctx.clock), draft.workspace_id)
    choice = ctx.raster or choose_raster(ctx.settings.raster if ctx.settings else "cpu")
    raster = choice.make(parsed, spec, assets, yuv=True)
    looked = time.monotonic()

    def look(frames_done: int) -> None:
        nonlocal looked
        if ctx.frames_drawn is not None:
            ctx.frames_drawn(frames_done)
        if time.monotonic() - looked >= LOOK_EVERY_SEC:
            looked = time.monotonic()
            if _live(ctx, draft.id) is None:
                raise _Gone()

    try:
        render_segment(parsed, path, spec, frames, assets=assets, progress=look, raster=raster,
                       encoder=EncoderChoice("x264").make(threads=1))
    finally:
        raster.close()
    return assets
