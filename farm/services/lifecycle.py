"""A render's lifecycle: every change of its status, with the refund, progress and outbox event
that go with it, in one place.

    queued ──start──▶ running ──succeed──▶ succeeded
       │                 │
       └──fail, cancel───┴──▶ failed | canceled

``TRANSITIONS`` says which statuses each event may leave; any other is refused: a succeeded
render cannot fail, a canceled one cannot succeed, nothing leaves failed or canceled. Each method
is one transaction, and the repository's update is conditional on the same statuses, so two
processes racing (a chunk failing while the API cancels) end with exactly one winner.

Tasks, the reaper, reconciliation and the render service call it; nothing else writes a render's
status.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import Engine

from reelfarm.farm.services.errors import StateConflict
from reelfarm.farm.services.progress import ProgressStore, fraction
from reelfarm.farm.services.resources import render_resource
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import renders as repo
from reelfarm.shared.repos import videos as videos_repo
from reelfarm.shared.repos._locks import lock_workspace
from reelfarm.shared.repos.outbox import add_event
from reelfarm.shared.statuses import RENDER_STATUSES
from reelfarm.shared.storage import Storage
from reelfarm.studio.resources import jsonable

log = logging.getLogger("reelfarm.farm")

STATUSES = RENDER_STATUSES
LIVE = frozenset(repo.LIVE)
# event -> (statuses it may leave, status it enters)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "start": (LIVE, "running"),       # a second chunk's start keeps it running
    "succeed": (frozenset({"running"}), "succeeded"),
    "fail": (LIVE, "failed"),
    "cancel": (LIVE, "canceled"),
}


def allowed(status: str, event: str) -> bool:
    """Whether ``event`` may happen to a render that is ``status``."""
    return status in TRANSITIONS[event][0]


@dataclass(frozen=True)
class Finished:
    """What a stitch made: the stored video and poster (and captions, for a video with some), and the
    scratch files to delete after."""

    video_key: str
    poster_key: str
    size: int
    scratch_keys: tuple[str, ...] = ()
    captions_key: str | None = None


class OtherEncoderFamily(StateConflict):
    """A chunk's node encodes with another family than the render's segments so far: joined, they
    would not play. The chunk must be drawn by a node of the render's family."""

    def __init__(self, render_id: str, family: str, node_family: str) -> None:
        super().__init__(f"render {render_id}'s segments are encoded with {family}; this node encodes with "
                         f"{node_family}")
        self.family, self.node_family = family, node_family


class RenderLifecycle:
    """The one writer of a render's status."""

    def __init__(self, engine: Engine, clock: Clock, storage: Storage, progress: ProgressStore) -> None:
        self.engine, self.clock, self.storage, self.progress = engine, clock, storage, progress

    def start(self, render_id: str, families: tuple[str, ...] | None = ("x264",), raster: str | None = None
              ) -> repo.Render | None:
        """A chunk starts on a node that can encode ``families`` (None: a task that encodes no video,
        such as the stitch of a render whose chunks were all reused): ``queued -> running`` (or stays
        running, marked alive); None when the render is no longer live, so the chunk does nothing.
        A render without a family yet (queued before families existed) gets x264, which every
        node has; the first chunk records its ``raster``.

        Raises:
            OtherEncoderFamily: the render's family is not one this node can encode.
        """
        with transaction(self.engine) as conn:
            render = repo.find_render(conn, render_id)
            if render is None or not allowed(render.status, "start"):
                return None
            started = repo.start_render(conn, self.clock, render_id, "x264", raster)
        if started is not None and families is not None and started.encoder not in families:
            raise OtherEncoderFamily(render_id, str(started.encoder), "/".join(families))
        return started

    def family(self, render_id: str) -> str | None:
        """The render's encoder family now (None for a render that is gone)."""
        with self.engine.connect() as conn:
            render = repo.find_render(conn, render_id)
        return render.encoder if render is not None else None

    def reused(self, render_id: str, frames: int, streaming: bool = False) -> None:
        """The render reused ``frames`` already made: counted as done at once; ``streaming``: its
        first chunk was among them, so its stream has a first segment."""
        with transaction(self.engine) as conn:
            repo.set_reused(conn, render_id, frames)
            if streaming:
                repo.mark_streaming(conn, self.clock, render_id)
        self.progress.add_frames(render_id, frames)

    def switch_family(self, render_id: str, segment_keys: list[str], to: str = "x264") -> list[int] | None:
        """Move a live render to encoder family ``to`` (no node of its family took its chunks in
        time): the segments already made by the old family are deleted, and their indexes
        returned, to be drawn again. None when the render is not live or already of ``to``."""
        with transaction(self.engine) as conn:
            render = repo.find_render(conn, render_id)
            if render is None or not allowed(render.status, "start") or render.encoder in (None, to):
                return None
            if not repo.set_encoder(conn, render_id, to, was=render.encoder):
                return None
        redo = [i for i, key in enumerate(segment_keys) if self.storage.exists(key)]
        for i in redo:
            self.storage.delete(segment_keys[i])
        log.warning("render %s moved from %s to %s; %d segment(s) to draw again", render_id, render.encoder, to,
                    len(redo))
        return redo

    def progressed(self, render_id: str, progress: float | None = None, streaming: bool = False) -> None:
        """The render moved forward (a chunk stored, the stitch begun): not a change of status;
        ``streaming``: the first chunk's part of its stream is stored."""
        with transaction(self.engine) as conn:
            repo.touch_render(conn, self.clock, render_id, progress)
            if streaming:
                repo.mark_streaming(conn, self.clock, render_id)

    def succeed(self, render: repo.Render, made: Finished) -> repo.Render | None:
        """``running -> succeeded`` with its files and ``render.completed``; None when refused (the
        render was canceled or failed meanwhile), in which case the files made are deleted, but for
        those the render already holds: a render's files have fixed keys, so a second stitch of a
        render (its last chunk run twice, once by a node thought gone) that another stitch made
        succeed meanwhile wrote the same keys, and they are the render's now."""
        with transaction(self.engine) as conn:
            now = repo.find_render(conn, render.id)
            held = {now.url_key, now.poster_key, now.captions_key} if now is not None else set()
            done = None
            if now is not None and allowed(now.status, "succeed"):
                done = repo.complete_render(conn, self.clock, render.id, url_key=made.video_key,
                                            poster_key=made.poster_key, size=made.size,
                                            duration_sec=(render.frames or 0) / render.fps,
                                            captions_key=made.captions_key)
            if done is not None:
                title = videos_repo.get_video(conn, done.workspace_id, done.video_id).title
                number = videos_repo.get_version_by_id(conn, done.workspace_id, done.version_id).number
                add_event(conn, self.clock, workspace_id=done.workspace_id, type="render.completed",
                          payload={"render": jsonable(render_resource(done, self.storage, title=title,
                                                                      version=number))})
        if done is None:  # no one's files, but for the render's own
            for key in (made.video_key, made.poster_key, made.captions_key):
                if key is not None and key not in held:
                    self.storage.delete(key)
        for key in made.scratch_keys:
            self.storage.delete(key)
        self.progress.clear(render.id)
        return done

    def fail(self, render_id: str, message: str) -> bool:
        """``queued|running -> failed`` with ``message``, the charge released and ``render.failed``.
        False when refused (already finished, canceled or gone)."""
        with transaction(self.engine) as conn:
            render = repo.find_render(conn, render_id)
            if render is None or not allowed(render.status, "fail"):
                return False
            # keep the progress shown so far: it never goes back
            repo.touch_render(conn, self.clock, render_id, fraction(self.progress, render_id, render.frames))
            if render.charged_credits:
                amount = render.charged_credits
                message += f"; the {amount} credit{'s' if amount != 1 else ''} charged for it " + \
                    ("were" if amount != 1 else "was") + " refunded"
            ended = repo.fail_render(conn, self.clock, render_id, message)
            if ended is not None:
                add_event(conn, self.clock, workspace_id=ended.workspace_id, type="render.failed",
                          payload={"render": jsonable(render_resource(ended, self.storage))})
        if ended is not None:
            self.progress.clear(render_id)
            log.info("render %s failed: %s", render_id, message)
        return ended is not None

    def cancel(self, workspace_id: str, render_id: str) -> repo.Render:
        """``queued|running -> canceled`` with the charge released (the client asked).

        Raises:
            shared.errors.NotFound: no such render in the workspace.
            StateConflict: the render has already finished (succeeded, failed or canceled).
        """
        with transaction(self.engine) as conn:
            lock_workspace(conn, workspace_id)
            render = repo.get_render(conn, workspace_id, render_id)
            ended = None
            if allowed(render.status, "cancel"):  # keep the progress shown so far: it never goes back
                repo.touch_render(conn, self.clock, render_id, fraction(self.progress, render_id, render.frames))
                ended = repo.cancel_render(conn, self.clock, render_id)
            if ended is None:
                raise StateConflict(f"the render is {render.status}; only a queued or running render can be canceled")
        self.progress.clear(render_id)
        return ended
