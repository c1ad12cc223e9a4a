"""Videos as the API serves them: the studio's ``VideoService`` (stories, edits, versions) and
the farm's jobs and renders (generation, translated copies, variants) behind one door, answering
resources (``reelfarm.studio.resources``, ``reelfarm.farm.services.resources``).

Which service makes a new video follows from the request: a ``story_id`` builds it at once
(``VideoService.create_from_story``); without one, a brief and/or a site URL start a generation
job (``JobService.request_generation``). Which combinations are valid is the request schema's
business (``api/schemas/``), not this module's.

A page of videos is addressed by an opaque cursor, ``<microseconds since the epoch>.<row id>``
(``reelfarm.api.contract.CURSOR`` is its pattern).
"""
from __future__ import annotations

import builtins
import uuid
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from reelfarm.farm.services.errors import InvalidRequest, StateConflict
from reelfarm.farm.services.jobs import JobService
from reelfarm.farm.services.renders import RenderService
from reelfarm.farm.services.resources import job_resource
from reelfarm.renderer.spec import DEFAULT_FORMAT
from reelfarm.shared.clock import Clock
from reelfarm.shared.storage import Storage
from reelfarm.studio.errors import VersionConflict
from reelfarm.studio.resources import VersionResource, VideoResource, version_resource, video_resource
from reelfarm.studio.texts import text_problems, with_texts
from reelfarm.studio.videos import VideoService, VideoView

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_cursor(position: tuple[datetime, str] | None) -> str | None:
    """``<microseconds since the epoch>.<row id>``: the pattern ``reelfarm.api.contract.CURSOR``."""
    if position is None:
        return None
    when, ident = position
    return f"{(when - _EPOCH) // timedelta(microseconds=1)}.{ident}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Raises ValueError for anything that is not a cursor this API hands out."""
    micros, ident = cursor.split(".", 1)
    uuid.UUID(ident)
    return _EPOCH + timedelta(microseconds=int(micros)), ident


def _moved_on(now: int | str) -> StateConflict:
    return StateConflict(f"the video changed while the page was open (its current version is {now}); "
                         "reload the page and make the change again")


class Videos:
    """Create, read, edit, archive and render videos; every answer is a resource."""

    def __init__(self, videos: VideoService, jobs: JobService, renders: RenderService, storage: Storage,
                 clock: Clock) -> None:
        self.videos = videos
        self.jobs = jobs
        self.renders = renders
        self.storage = storage
        self.clock = clock

    def create(self, workspace_id: str, *, story_id: str | None = None, fields: dict[str, Any] | None = None,
               brief: str | None = None, url: str | None = None, title: str | None = None,
               brand_kit_id: str | None = None, fmt: str = DEFAULT_FORMAT, duration_sec: float | None = None,
               locale: str | None = None) -> VideoResource:
        """Built from the story at once (``ready``), or ``generating`` with its ``generate`` job."""
        if story_id is None:
            video, job = self.jobs.request_generation(
                workspace_id, brief=brief, url=url, title=title, brand_kit_id=brand_kit_id, fmt=fmt,
                duration_sec=duration_sec, locale=locale)
            return self._resource(VideoView(video, None, job))
        return self._resource(self.videos.create_from_story(
            workspace_id, story_id=story_id, fields=fields or {}, brand_kit_id=brand_kit_id, fmt=fmt,
            duration_sec=duration_sec, title=title, locale=locale))

    def list(self, workspace_id: str, limit: int, cursor: str | None = None) -> dict[str, Any]:
        """A page, newest first, and the cursor of the next (None on the last). Raises InvalidRequest
        for a cursor this API did not hand out."""
        after = None
        if cursor:
            try:
                after = decode_cursor(cursor)
            except (ValueError, TypeError):
                raise InvalidRequest([{"field": "cursor", "code": "invalid",
                                       "message": "not a cursor from this API"}]) from None
        views, next_after = self.videos.list(workspace_id, limit, after)
        return {"data": [self._resource(v) for v in views], "next_cursor": encode_cursor(next_after)}

    def get(self, workspace_id: str, video_id: str) -> VideoResource:
        return self._resource(self.videos.get(workspace_id, video_id))

    def update(self, workspace_id: str, video_id: str, *, doc: dict[str, Any] | None = None,
               fields: dict[str, Any] | None = None, title: str | None = None,
               note: str | None = None, based_on: Collection[int] | None = None) -> VideoResource:
        """``VideoService.update``: a new version (none when nothing changes) and/or a new title;
        ``based_on``: the version numbers the edit was made from (studio.errors.VersionConflict
        unless the current one is among them; None: any)."""
        return self._resource(self.videos.update(workspace_id, video_id, doc=doc, fields=fields, title=title,
                                                 note=note, based_on=based_on))

    def update_texts(self, workspace_id: str, video_id: str, changes: dict[int, str], *, based_on: int,
                     note: str | None = None) -> VideoResource:
        """Save the current version with some of its texts replaced (``reelfarm.studio.texts``: by the
        index of each distinct text) as a new version; nothing is saved when no text changed.

        Raises:
            StateConflict: the current version is no longer ``based_on`` (another edit landed, also
                while this one was being saved).
            InvalidRequest: every text that cannot be used (``/texts/<index>``).
            shared.errors.NotFound, studio.videos.VideoStateError: as for any edit.
        """
        view = self.videos.get(workspace_id, video_id)
        current = view.version
        if current is None or current.number != based_on:
            raise _moved_on(current.number if current is not None else "none")
        problems = text_problems(current.doc, changes)
        if problems:
            raise InvalidRequest([{"field": f"/texts/{i}", "code": "invalid_text", "message": message}
                                  for i, message in sorted(problems.items())])
        new_doc = with_texts(current.doc, changes)
        if new_doc == current.doc:
            return self._resource(view)
        try:
            return self.update(workspace_id, video_id, doc=new_doc, note=note, based_on={based_on})
        except VersionConflict as exc:
            raise _moved_on(exc.current) from exc

    def archive(self, workspace_id: str, video_id: str) -> VideoResource:
        return self._resource(self.videos.archive(workspace_id, video_id))

    def versions(self, workspace_id: str, video_id: str) -> builtins.list[VersionResource]:
        return [version_resource(v) for v in self.videos.versions(workspace_id, video_id)]

    def version(self, workspace_id: str, video_id: str, number: int) -> VersionResource:
        return version_resource(self.videos.version(workspace_id, video_id, number))

    def version_fields(self, workspace_id: str, video_id: str, number: int) -> dict[str, Any] | None:
        """The story values version ``number`` was built from (None for a document edit, a
        translation or a generation's document). Raises shared.errors.NotFound."""
        fields = self.videos.version(workspace_id, video_id, number).fields
        return dict(fields) if fields is not None else None

    def restore(self, workspace_id: str, video_id: str, number: int, note: str | None = None,
                based_on: Collection[int] | None = None) -> VideoResource:
        """A copy of version ``number`` as the newest version; ``based_on`` as for ``update``."""
        return self._resource(self.videos.restore(workspace_id, video_id, number, note, based_on))

    def request_variants(self, workspace_id: str, video_id: str, formats: Sequence[str], resolution: int,
                         locales: Sequence[str] = (), priority: str = "normal", container: str = "mp4",
                         transparent: bool = False, pool: str | None = None) -> dict[str, Any]:
        """Renders of the current version in ``formats`` (in ``pool``: ``RenderService.request_many``),
        and a translated copy per locale.

        The locales are checked (plan, tags, engines) before anything is rendered or charged.
        """
        if locales:
            self.jobs.check_translations(workspace_id, video_id, locales)
        renders = self.renders.request_many(workspace_id, video_id, formats, resolution, priority=priority,
                                            container=container, transparent=transparent, pool=pool)
        copies = self.jobs.request_translations(workspace_id, video_id, locales) if locales else []
        return {"renders": renders, "translations": [self._resource(VideoView(v, None, j)) for v, j in copies]}

    def _resource(self, view: VideoView) -> VideoResource:
        job = job_resource(view.job, self.storage, self.clock) if view.job is not None else None
        return video_resource(view.video, view.version, job)
