"""Videos and their versions. Every edit appends an immutable version (there is deliberately no
function that updates one) and makes it the video's current version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from reelfarm.shared.clock import Clock
from reelfarm.shared.errors import NotFound
from reelfarm.shared.ids import new_id
from reelfarm.shared.statuses import VIDEO_STATUSES
from reelfarm.shared.tables import VERSION_SOURCES, versions, videos


@dataclass(frozen=True)
class Video:
    id: str
    workspace_id: str
    title: str
    status: str
    story_id: str | None
    brand_kit_id: str | None
    default_format: str
    duration_sec: float | None
    current_version_id: str | None
    fields: dict[str, Any] | None
    locale: str | None
    source_video_id: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def cursor(self) -> tuple[datetime, str]:
        """Its position in ``list_videos`` order, to pass back as ``after``."""
        return self.created_at, self.id


@dataclass(frozen=True)
class Version:
    id: str
    video_id: str
    number: int
    source: str
    note: str | None
    doc: dict[str, Any]
    doc_hash: str
    fields: dict[str, Any] | None
    lint: list[Any]
    created_at: datetime


@dataclass(frozen=True)
class NewVersion:
    """What a caller supplies for a version; number, id, hash and time are assigned here.

    ``duration_sec`` is the document's length (shared/ does not read VideoDocs); it becomes
    the video's ``duration_sec``. ``fields`` are the story field values, None for free docs.
    """

    source: str
    doc: Mapping[str, Any]
    duration_sec: float
    fields: Mapping[str, Any] | None = None
    note: str | None = None
    lint: Sequence[Any] = field(default_factory=list)


@dataclass(frozen=True)
class VideoPage:
    items: list[Video]
    next_after: tuple[datetime, str] | None  # None on the last page


def hash_doc(doc: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the document's canonical JSON: sorted keys, no spaces, UTF-8."""
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def create_video(conn: Connection, clock: Clock, *, workspace_id: str, title: str, status: str,
                 default_format: str, story_id: str | None = None, brand_kit_id: str | None = None,
                 locale: str | None = None, source_video_id: str | None = None,
                 first_version: NewVersion | None = None) -> tuple[Video, Version | None]:
    """A new video, with version 1 when ``first_version`` is given (a generating video has none)."""
    _check_choice("status", status, VIDEO_STATUSES)
    now = clock.now()
    video_id = new_id()
    conn.execute(videos.insert().values(
        id=video_id, workspace_id=workspace_id, title=title, status=status, story_id=story_id,
        brand_kit_id=brand_kit_id, default_format=default_format, locale=locale,
        source_video_id=source_video_id, created_at=now, updated_at=now))
    version = None
    if first_version is not None:
        version = _insert_version(conn, clock, video_id, 1, first_version)
    return get_video(conn, workspace_id, video_id), version


def append_version(conn: Connection, clock: Clock, *, workspace_id: str, video_id: str,
                   version: NewVersion) -> tuple[Video, Version]:
    """Add the next version (highest number + 1) and make it current.

    The video row is locked first, so concurrent edits get distinct, gapless numbers.

    Raises:
        NotFound: the video does not exist or belongs to another workspace.
    """
    locked = conn.execute(select(videos.c.id).where(
        videos.c.id == video_id, videos.c.workspace_id == workspace_id).with_for_update()).first()
    if locked is None:
        raise NotFound("video", video_id)
    highest = conn.execute(select(func.max(versions.c.number))
                           .where(versions.c.video_id == video_id)).scalar()
    created = _insert_version(conn, clock, video_id, (highest or 0) + 1, version)
    return get_video(conn, workspace_id, video_id), created


def update_video(conn: Connection, clock: Clock, workspace_id: str, video_id: str, *,
                 title: str | None = None, status: str | None = None, story_id: str | None = None,
                 brand_kit_id: str | None = None) -> Video:
    """Rename the video, change its status, or record the story and brand kit a generation chose
    (None leaves one as it is). Raises NotFound."""
    values: dict[str, Any] = {"updated_at": clock.now()}
    if title is not None:
        values["title"] = title
    if story_id is not None:
        values["story_id"] = story_id
    if brand_kit_id is not None:
        values["brand_kit_id"] = brand_kit_id
    if status is not None:
        _check_choice("status", status, VIDEO_STATUSES)
        values["status"] = status
    result = conn.execute(videos.update().where(
        videos.c.id == video_id, videos.c.workspace_id == workspace_id).values(**values))
    if result.rowcount == 0:
        raise NotFound("video", video_id)
    return get_video(conn, workspace_id, video_id)


def delete_video(conn: Connection, video_id: str) -> None:
    """Remove a video and its versions (the compensation of a generation the queue refused)."""
    conn.execute(versions.delete().where(versions.c.video_id == video_id))
    conn.execute(videos.delete().where(videos.c.id == video_id))


def get_video(conn: Connection, workspace_id: str, video_id: str, *, lock: bool = False) -> Video:
    """The video (``lock``: and hold its row until the transaction ends).

    Raises NotFound when the video does not exist or belongs to another workspace."""
    query = select(videos).where(videos.c.id == video_id, videos.c.workspace_id == workspace_id)
    row = conn.execute(query.with_for_update() if lock else query).first()
    if row is None:
        raise NotFound("video", video_id)
    return Video(**row._mapping)


def list_videos(conn: Connection, workspace_id: str, *, limit: int,
                after: tuple[datetime, str] | None = None) -> VideoPage:
    """Newest first, ``limit`` at a time; pass ``page.next_after`` back as ``after`` for more.

    Keyset pagination over ``(created_at, id)``: stable while videos are being added.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    query = select(videos).where(videos.c.workspace_id == workspace_id)
    if after is not None:
        created_at, last_id = after
        query = query.where(or_(videos.c.created_at < created_at,
                                and_(videos.c.created_at == created_at, videos.c.id < last_id)))
    rows = conn.execute(query.order_by(videos.c.created_at.desc(), videos.c.id.desc())
                        .limit(limit + 1)).all()
    items = [Video(**row._mapping) for row in rows[:limit]]
    return VideoPage(items, items[-1].cursor if len(rows) > limit else None)


def get_version(conn: Connection, workspace_id: str, video_id: str, number: int) -> Version:
    """Version ``number`` of the video. Raises NotFound."""
    row = conn.execute(_versions_of(workspace_id).where(
        versions.c.video_id == video_id, versions.c.number == number)).first()
    if row is None:
        raise NotFound("version", f"{video_id}#{number}")
    return Version(**row._mapping)


def get_version_by_id(conn: Connection, workspace_id: str, version_id: str) -> Version:
    """The version with this id, if its video is in the workspace. Raises NotFound."""
    row = conn.execute(_versions_of(workspace_id).where(versions.c.id == version_id)).first()
    if row is None:
        raise NotFound("version", version_id)
    return Version(**row._mapping)


def list_versions(conn: Connection, workspace_id: str, video_id: str) -> list[Version]:
    """Every version of the video, oldest (number 1) first. Raises NotFound for no such video."""
    get_video(conn, workspace_id, video_id)
    rows = conn.execute(_versions_of(workspace_id).where(versions.c.video_id == video_id)
                        .order_by(versions.c.number))
    return [Version(**row._mapping) for row in rows]


def _versions_of(workspace_id: str) -> Any:
    return (select(versions).join(videos, videos.c.id == versions.c.video_id)
            .where(videos.c.workspace_id == workspace_id))


def _insert_version(conn: Connection, clock: Clock, video_id: str, number: int,
                    new: NewVersion) -> Version:
    _check_choice("source", new.source, VERSION_SOURCES)
    now = clock.now()
    version_id = new_id()
    fields = None if new.fields is None else dict(new.fields)
    conn.execute(versions.insert().values(
        id=version_id, video_id=video_id, number=number, source=new.source, note=new.note,
        doc=dict(new.doc), doc_hash=hash_doc(new.doc), fields=fields, lint=list(new.lint),
        created_at=now))
    conn.execute(videos.update().where(videos.c.id == video_id).values(
        current_version_id=version_id, fields=fields, duration_sec=new.duration_sec, updated_at=now))
    # read back as stored, but for the document: the one just written (a create's largest value,
    # decoded again for nothing)
    row = conn.execute(select(*(c for c in versions.c if c.key != "doc")).where(versions.c.id == version_id)).one()
    return Version(**row._mapping, doc=dict(new.doc))


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(allowed)}")
