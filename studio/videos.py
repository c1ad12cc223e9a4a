"""Videos and their immutable versions: create from a story, edit, restore, archive.

`VideoService` is the one place that turns user intent into versions. It validates story
fields, lints documents, and writes each change in a single transaction, so a failed request
leaves no half-written rows.

Two people editing one video must not undo each other without knowing: an edit or a restore may
name the versions it was made from (``based_on``), and is refused (``VersionConflict``, naming the
current version) unless the video's current version is one of them. The check is made under the
video's row lock in the transaction that writes, so of two edits made from the same version one is
saved and the other refused. An edit that changes nothing (the current document, or the current
story values, again) makes no version, and its note is not kept.
"""
from __future__ import annotations

import builtins
import copy
import math
import os
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from reelfarm.renderer.linter import ClipDuration, lint
from reelfarm.renderer.spec import DEFAULT_FORMAT
from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.errors import NotFound
from reelfarm.shared.repos import assets as assets_repo
from reelfarm.shared.repos import brand_kits as kits_repo
from reelfarm.shared.repos import jobs as jobs_repo
from reelfarm.shared.repos import objects
from reelfarm.shared.repos import videos as repo
from reelfarm.studio.errors import InvalidFieldsError, StudioError, VersionConflict
from reelfarm.studio.stories import get_story, validate_fields
from reelfarm.studio.stories.base import Story, uploads_named
from reelfarm.studio.stories.samples import sample_warnings

MAX_TITLE = 200
# Characters of a version's note and of a generation's brief, wherever they are written (the API's
# schemas and the console's forms read them here).
MAX_NOTE = 2000
MAX_BRIEF = 5000
MAX_EDIT_ATTEMPTS = 3
MEASURED = ("video", "audio")  # the kinds of upload whose lengths the linter is given


class VideoStateError(StudioError):
    """The video's status forbids the change (`code` says why: video_not_ready or conflict)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class DocLintError(StudioError):
    """A submitted document has lint errors; `details` lists them as JSON pointers."""

    def __init__(self, details: list[dict[str, str]]) -> None:
        super().__init__(f"the document has {len(details)} error(s)")
        self.details = details


@dataclass(frozen=True)
class VideoView:
    """A video with its current version, as the API shows it."""

    video: repo.Video
    version: repo.Version | None
    job: jobs_repo.Job | None = None  # its generation or translation job, while one runs or after one failed


class VideoService:
    """Creates and edits videos; collaborators are passed in, nothing is global."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    # -- create -----------------------------------------------------------------------------

    def create_from_story(self, workspace_id: str, *, story_id: str, fields: Mapping[str, Any],
                          brand_kit_id: str | None = None, fmt: str = DEFAULT_FORMAT,
                          duration_sec: float | None = None, title: str | None = None,
                          locale: str | None = None) -> VideoView:
        """A `ready` video whose version 1 is the story built from `fields`.

        Raises:
            UnknownStoryError, InvalidFieldsError, InvalidBuildRequestError, shared NotFound.
        """
        story = get_story(story_id)
        problems = validate_fields(story, fields)
        if problems:
            raise InvalidFieldsError(problems)
        values = _fill(story, fields)
        with self.engine.connect() as conn:
            kit = self._brand_kit(conn, workspace_id, brand_kit_id)
            uploads = story_uploads(conn, workspace_id, story, values)
            clips = uploaded_clip_lengths(conn, workspace_id, uploads)
            cues = uploaded_cues(conn, workspace_id, uploads)
        # Building and linting take a while: no write lock is held meanwhile (SQLite has one for all).
        with _building():
            doc = story.build(dict(values), kit.tokens, fmt, duration_sec, uploads, cues)
            if locale:
                doc["locale"] = locale
            version = self._new_version(doc, "story", values, None, clips, story)
        with transaction(self.engine) as conn:
            video, first = repo.create_video(
                conn, self.clock, workspace_id=workspace_id, title=title or _title_from(story, values),
                status="ready", default_format=fmt, story_id=story.id, brand_kit_id=kit.id, locale=locale,
                first_version=version)
        return VideoView(video, first)

    # -- read -------------------------------------------------------------------------------

    def get(self, workspace_id: str, video_id: str) -> VideoView:
        with self.engine.connect() as conn:
            return _view(conn, repo.get_video(conn, workspace_id, video_id))

    def list(self, workspace_id: str, limit: int, after: Any = None) -> tuple[list[VideoView], Any]:
        with self.engine.connect() as conn:
            page = repo.list_videos(conn, workspace_id, limit=limit, after=after)
            views = [_view(conn, v) for v in page.items]
        return views, page.next_after

    def versions(self, workspace_id: str, video_id: str) -> builtins.list[repo.Version]:
        with self.engine.connect() as conn:
            return repo.list_versions(conn, workspace_id, video_id)

    def version(self, workspace_id: str, video_id: str, number: int) -> repo.Version:
        with self.engine.connect() as conn:
            repo.get_video(conn, workspace_id, video_id)
            return repo.get_version(conn, workspace_id, video_id, number)

    # -- edit -------------------------------------------------------------------------------

    def update(self, workspace_id: str, video_id: str, *, doc: Mapping[str, Any] | None = None,
               fields: Mapping[str, Any] | None = None, title: str | None = None,
               note: str | None = None, based_on: Collection[int] | None = None) -> VideoView:
        """Save `doc` or `fields` as a new version and/or rename; title alone makes no version, nor
        does a `doc` equal to the current one or `fields` that leave the current values as they are
        (the answer is then the current version, and `note` is not kept).

        The version is built and linted from a read of the video, outside the write transaction;
        the write then checks that the version it was built on is still current (another edit may
        have landed meanwhile: a fields patch merges into the latest values), else builds again.

        Args:
            based_on: the numbers of the versions this edit was made from; None: whichever is current.

        Raises:
            VersionConflict: the current version is not one of ``based_on`` (checked again under
                the write lock, so two edits from one version never both land).
            VideoStateError, DocLintError, InvalidFieldsError, shared NotFound.
        """
        for _ in range(MAX_EDIT_ATTEMPTS):
            with self.engine.connect() as conn:
                video = repo.get_video(conn, workspace_id, video_id)
                current = repo.get_version_by_id(conn, workspace_id, check_usable(video))
                check_based_on(current.number, based_on)  # before building what would not be saved
                new = None
                if doc is not None:
                    new = self._doc_version(conn, workspace_id, doc, note)
                elif fields is not None:
                    new = self._fields_version(conn, workspace_id, video, current, fields, note)
                if new is not None and new.doc == current.doc:
                    new = None
            with transaction(self.engine) as conn:
                latest = repo.get_video(conn, workspace_id, video_id, lock=True)
                latest_id = check_usable(latest)
                moved = latest_id != current.id
                if moved and based_on is not None:
                    check_based_on(repo.get_version_by_id(conn, workspace_id, latest_id).number, based_on)
                if moved and (doc is not None or fields is not None):
                    continue  # built on (or found no change from) a version that is no longer current
                version = current
                if new is not None:
                    latest, version = repo.append_version(conn, self.clock, workspace_id=workspace_id,
                                                          video_id=video_id, version=new)
                if title is not None:
                    latest = repo.update_video(conn, self.clock, workspace_id, video_id, title=title)
                return VideoView(latest, version)
        raise VideoStateError("conflict", "the video changed while this edit was being made; send it again")

    def restore(self, workspace_id: str, video_id: str, number: int, note: str | None = None,
                based_on: Collection[int] | None = None) -> VideoView:
        """A new version copying version `number` (source `restore`), noted ``note`` or
        ``restored version N``.

        Raises:
            VersionConflict: the current version is not one of ``based_on`` (None: any).
            VideoStateError, shared NotFound (no such video, or no version `number`).
        """
        with transaction(self.engine) as conn:
            video = repo.get_video(conn, workspace_id, video_id, lock=True)
            current_id = check_usable(video)
            old = repo.get_version(conn, workspace_id, video_id, number)
            if based_on is not None:
                check_based_on(repo.get_version_by_id(conn, workspace_id, current_id).number, based_on)
            new = repo.NewVersion(doc=copy.deepcopy(old.doc), source="restore",
                                  note=note or f"restored version {number}",
                                  fields=old.fields, lint=old.lint, duration_sec=float(old.doc["duration"]))
            video, version = repo.append_version(conn, self.clock, workspace_id=workspace_id,
                                                 video_id=video_id, version=new)
        return VideoView(video, version)

    def archive(self, workspace_id: str, video_id: str) -> VideoView:
        with transaction(self.engine) as conn:
            video = repo.get_video(conn, workspace_id, video_id)
            if video.status == "generating":
                raise VideoStateError("video_not_ready", "the video is still generating; try again when it is ready")
            video = repo.update_video(conn, self.clock, workspace_id, video_id, status="archived")
            version = (repo.get_version_by_id(conn, workspace_id, video.current_version_id)
                       if video.current_version_id else None)
        return VideoView(video, version)

    # -- helpers ----------------------------------------------------------------------------

    def _brand_kit(self, conn: Any, workspace_id: str, brand_kit_id: str | None) -> kits_repo.BrandKit:
        if brand_kit_id:
            return kits_repo.get_brand_kit(conn, workspace_id, brand_kit_id)
        kit = kits_repo.get_default_brand_kit(conn, workspace_id)
        if kit is None:  # every workspace is created with one, and the API refuses to unset it
            raise NotFound("brand_kit", "(the workspace's default)")
        return kit

    def _doc_version(self, conn: Any, workspace_id: str, doc: Mapping[str, Any], note: str | None) -> repo.NewVersion:
        clips = assets_repo.clip_lengths(conn, workspace_id, _clip_keys(doc), MEASURED)
        with _building():
            report = lint(doc, clip_duration=clip_duration(doc, clips))
        problems = [_with_prefix(p.as_dict(), "/doc") for p in report.errors]
        problems += [{"field": f"/doc{pointer}", "code": "unknown_storage_key",
                      "message": f"no object of this workspace is stored under key {key!r}; use a key of this "
                                 "workspace's brand kits, renders or stills, or an https URL"}
                     for pointer, key in objects.foreign_keys(conn, workspace_id, doc).items()]
        problems += [{"field": f"/doc{pointer}", "code": "unsupported_url",
                      "message": f"{url!r} is not an http(s) URL; give the asset as an https URL or by a storage key"}
                     for pointer, url in objects.local_urls(doc).items()]
        if problems:
            raise DocLintError(problems)
        return repo.NewVersion(doc=dict(doc), source="doc", note=note, fields=None,
                               lint=[p.as_dict() for p in report.warnings], duration_sec=float(doc["duration"]))

    def _fields_version(self, conn: Any, workspace_id: str, video: repo.Video, current: repo.Version,
                        fields: Mapping[str, Any], note: str | None) -> repo.NewVersion | None:
        """The version ``fields`` make, merged into the latest story values; None when they leave
        the current version's values as they are (nothing to build)."""
        if not video.story_id:
            raise VideoStateError("conflict", "this video was not made from a story, so it has no fields; "
                                              "send a complete doc")
        story = get_story(video.story_id)
        problems = validate_fields(story, fields)
        if problems:
            raise InvalidFieldsError(problems)
        merged = {**self._last_fields(conn, workspace_id, video.id, current), **fields}
        if merged == current.fields:
            return None
        kit = self._brand_kit(conn, workspace_id, video.brand_kit_id)
        duration = float(current.doc["duration"])
        uploads = story_uploads(conn, workspace_id, story, merged)
        clips = uploaded_clip_lengths(conn, workspace_id, uploads)
        cues = uploaded_cues(conn, workspace_id, uploads)
        with _building():
            doc = story.build(dict(merged), kit.tokens, video.default_format, duration, uploads, cues)
            if video.locale:
                doc["locale"] = video.locale
            return self._new_version(doc, "fields", merged, note, clips, story)

    @staticmethod
    def _last_fields(conn: Any, workspace_id: str, video_id: str, current: repo.Version | None) -> dict[str, Any]:
        """The story values to patch: the current version's, or, after a hand-edited `doc`
        version, the latest version that had them (a fields patch rebuilds from the story)."""
        if current is not None and current.fields is not None:
            return dict(current.fields)
        for version in reversed(repo.list_versions(conn, workspace_id, video_id)):
            if version.fields is not None:
                return dict(version.fields)
        return {}

    @staticmethod
    def _new_version(doc: dict[str, Any], source: str, fields: Mapping[str, Any] | None,
                     note: str | None, clips: Mapping[str, float], story: Story | None = None) -> repo.NewVersion:
        """A version of ``doc``, its lint the document's warnings and, for one built from ``story``'s
        ``fields``, a ``sample_value`` warning per field still holding its sample."""
        warnings = [p.as_dict() for p in lint(doc, clip_duration=clip_duration(doc, clips)).warnings]
        if story is not None and fields is not None:
            warnings += sample_warnings(story.fields, fields)
        return repo.NewVersion(doc=doc, source=source, note=note, fields=dict(fields) if fields else None,
                               lint=warnings, duration_sec=float(doc["duration"]))


# Building a version and linting it is CPU alone (no I/O), and Python runs one thread of a process at
# a time: the serving threads of a process take turns at it whole, one after another, instead of
# interleaving by the interpreter's switch interval. Under a burst of creates (benchmarks.burst:
# 4 request threads a worker, when a worker still ran them all at once) that cost 36-42 ms of
# serving CPU a client against 45, and let the first to come finish first. A worker now starts its
# requests one at a time (api/server.py), so the lock matters where requests do run side by side:
# one started beside another that has waited past the worker's patience, or another server. A forked child (the embedded farm's task processes) gets a
# fresh lock: one held by another thread at the fork would never be released there.
_BUILD_LOCK = threading.Lock()


def _building() -> threading.Lock:
    """The process's lock for building and linting versions (see above)."""
    return _BUILD_LOCK


def _fresh_lock_after_fork() -> None:
    global _BUILD_LOCK
    _BUILD_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_fresh_lock_after_fork)


def _view(conn: Any, video: repo.Video) -> VideoView:
    version = (repo.get_version_by_id(conn, video.workspace_id, video.current_version_id)
               if video.current_version_id else None)
    job = None
    if video.status in ("generating", "draft", "failed"):
        latest = jobs_repo.latest_video_job(conn, video.id)
        if latest is not None and (latest.status in jobs_repo.LIVE or video.status == "failed"):
            job = latest
    return VideoView(video, version, job)


def _fill(story: Story, fields: Mapping[str, Any]) -> dict[str, Any]:
    from reelfarm.studio.stories import resolve_fields
    return resolve_fields(story, dict(fields))


def story_uploads(conn: Any, workspace_id: str, story: Story, values: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """``{asset id: (kind, key)}`` for the uploads ``values`` name that are the workspace's own; the
    story refuses the others (another workspace's id reads as no upload at all)."""
    found = {}
    for asset_id in set(uploads_named(story, dict(values)).values()):
        try:
            asset = assets_repo.get_asset(conn, workspace_id, asset_id)
        except NotFound:
            continue
        found[asset_id] = (asset.kind, asset.key)
    return found


def uploaded_clip_lengths(conn: Any, workspace_id: str, uploads: Mapping[str, tuple[str, str]]) -> dict[str, float]:
    """``{key: seconds}`` of the clips and sounds among a story's ``uploads`` (as ``story_uploads``
    gives them): the linter names a clip too short to fill its place, and a soundtrack played once
    that ends before the video."""
    return assets_repo.clip_lengths(conn, workspace_id, [key for kind, key in uploads.values() if kind in MEASURED],
                                    MEASURED)


def uploaded_cues(conn: Any, workspace_id: str, uploads: Mapping[str, tuple[str, str]]) -> dict[str, list[dict]]:
    """``{asset id: cues}`` of the captions files among a story's ``uploads`` (as ``story_uploads``
    gives them, the workspace's own): what a story draws is the cues read when the file was uploaded."""
    return assets_repo.captions_cues(conn, workspace_id, [i for i, (kind, _) in uploads.items() if kind == "captions"])


def _clip_keys(doc: Mapping[str, Any]) -> list[str]:
    """The storage keys a document's video and audio assets name (before the schema is checked:
    anything else is skipped)."""
    table = doc.get("assets")
    if not isinstance(table, Mapping):
        return []
    return [a["key"] for a in table.values()
            if isinstance(a, Mapping) and a.get("type") in MEASURED and isinstance(a.get("key"), str)]


def clip_duration(doc: Mapping[str, Any], lengths: Mapping[str, float]) -> ClipDuration:
    """The linter's ``clip_duration`` for ``doc``: a video or audio asset's length as the workspace's
    media library measured it at upload (``lengths``, by storage key), so a clip shorter than the
    time it must fill, trimmed past its end, or a sound played once that ends before the video, is
    named without reading the file.

    A clip the library does not hold (an address, the key of a render) is not measured here: it
    counts as long enough, as when no lengths are known at all; its file is checked when it renders.
    """
    table = doc.get("assets")
    entries = table.items() if isinstance(table, Mapping) else ()
    keys = {name: entry.get("key") for name, entry in entries if isinstance(entry, Mapping)}
    return lambda asset_id: lengths.get(str(keys.get(asset_id)), math.inf)


def _title_from(story: Story, values: Mapping[str, Any]) -> str:
    for key in ("headline", "title", "name", "product_name", "show_name"):
        value = values.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:MAX_TITLE]
    return story.name


# What each use of a video is called in the refusals: (when it is ready, nothing to ..., not ...).
_USES = {"change": ("try again", "change; create it again", "changed"),
         "render": ("render it", "render", "rendered")}


def check_usable(video: repo.Video, use: str = "change") -> str:
    """The one rule for what may be done with a video in its state: ``change`` (edit, restore) or
    ``render`` (renders, stills, translated copies) needs a version, and neither an archived video.

    Returns the id of its current version, the one to use.

    Raises:
        VideoStateError: ``video_not_ready`` while it is generating (or a draft with no version
            yet); ``conflict`` when its generation failed with nothing made, or it is archived.
    """
    when_ready, nothing_to, not_done = _USES[use]
    if video.status == "failed" and video.current_version_id is None:
        raise VideoStateError("conflict", f"the video's generation failed, so it has nothing to {nothing_to}")
    if video.status == "generating" or video.current_version_id is None:
        raise VideoStateError("video_not_ready", f"the video is still generating; {when_ready} when it is ready")
    if video.status == "archived":
        raise VideoStateError("conflict", f"the video is archived; it can be read but not {not_done}")
    return video.current_version_id


def check_based_on(current: int, based_on: Collection[int] | None) -> None:
    """Raises VersionConflict unless ``based_on`` is None or names ``current`` (the number of the
    video's current version)."""
    if based_on is not None and current not in based_on:
        raise VersionConflict(current)


def _with_prefix(problem: dict[str, str], prefix: str) -> dict[str, str]:
    return {**problem, "field": prefix + problem["field"]}
