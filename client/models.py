"""Typed results: one frozen dataclass per API resource, built from the API's JSON.

Each model keeps the fields the contract names and the whole answer in ``raw``, so a field the
server adds later is never lost on the way through. Timestamps are aware ``datetime``s; statuses
and priorities are ``StrEnum`` members, which compare equal to the API's strings
(``render.status == "succeeded"``), and a value a newer server sends that this client does not know
stays a plain string. A field an older server does not send takes its default (``Render.priority``
``normal``, ``Render.queue`` None).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


class TaskStatus(StrEnum):
    """A render's or a job's status."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


class Priority(StrEnum):
    """A render's scheduling priority: a workspace's ``low`` renders (batch work) yield to its ``normal`` ones."""

    NORMAL = "normal"
    LOW = "low"


class VideoStatus(StrEnum):
    DRAFT = "draft"
    GENERATING = "generating"
    READY = "ready"
    FAILED = "failed"
    ARCHIVED = "archived"


TERMINAL = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELED})
_ENUMS: dict[str, type[StrEnum]] = {"TaskStatus": TaskStatus, "VideoStatus": VideoStatus, "Priority": Priority}


def etag(version: int) -> str:
    """The entity tag the API gives a video at version number ``version``: ``"v<number>"``, quotes included."""
    return f'"v{int(version)}"'


def parse_time(value: str | None) -> datetime | None:
    """An API timestamp as an aware ``datetime``, or None."""
    return None if value is None else datetime.fromisoformat(value)


def _typed(annotation: Any, value: Any) -> Any:
    """A JSON value as its field's type says: timestamps as ``datetime``, statuses as enum members."""
    kind = str(annotation).split(" | ")[0]
    if value is None:
        return None
    if kind == "datetime" and isinstance(value, str):
        return parse_time(value)
    if kind in _ENUMS and isinstance(value, str):
        try:
            return _ENUMS[kind](value)
        except ValueError:
            return value  # a status added by a newer server
    return value


def build(cls: type[T], data: dict[str, Any], **nested: Any) -> T:
    """``cls`` from the API's JSON: known fields taken (typed), nested models given, the rest kept in ``raw``."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    values = {k: _typed(types[k], v) for k, v in data.items() if k in types}
    values.update(nested)
    make: Callable[..., T] = cls  # every model takes its fields, and ``raw``, as keywords
    return make(**values, raw=data)


@dataclass(frozen=True)
class Story:
    id: str
    name: str
    category: str
    description: str
    default_duration_sec: float
    fields: dict[str, Any]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Story:
        return build(cls, data)


@dataclass(frozen=True)
class BrandKit:
    id: str
    name: str
    source_url: str | None
    is_default: bool
    tokens: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrandKit:
        return build(cls, data)


@dataclass(frozen=True)
class Job:
    id: str
    kind: str
    status: TaskStatus | str
    stage: str | None
    progress: float
    error: str | None
    result: dict[str, Any] | None
    created_at: datetime
    finished_at: datetime | None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        return build(cls, data)


@dataclass(frozen=True)
class Version:
    id: str
    number: int
    source: str
    created_at: datetime
    doc: dict[str, Any] | None = None
    note: str | None = None
    lint: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Version:
        return build(cls, data)


@dataclass(frozen=True)
class Video:
    id: str
    title: str
    status: VideoStatus | str
    story_id: str | None
    brand_kit_id: str | None
    default_format: str
    duration_sec: float | None
    current_version: Version | None
    job: Job | None
    created_at: datetime
    updated_at: datetime
    locale: str | None = None
    source_video_id: str | None = None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def etag(self) -> str | None:
        """The entity tag of the version this video was read at (``"v5"``, as the API's ``ETag``
        gives it), which an edit of this ``Video`` sends as ``If-Match``; None while it has no version."""
        return etag(self.current_version.number) if self.current_version is not None else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Video:
        version, job = data.get("current_version"), data.get("job")
        return build(cls, data, current_version=version and Version.from_dict(version), job=job and Job.from_dict(job))


@dataclass(frozen=True)
class RenderQueue:
    """Where a render stands in the farm's queue while some of its chunks wait to be dispatched."""

    frames_ahead: int  # waiting frames fair dispatch would serve before this render's next chunk
    chunks_waiting: int  # this render's own chunks still waiting
    estimated_start_at: datetime | None  # when its next chunk should start; None without recent throughput
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderQueue:
        return build(cls, data)


@dataclass(frozen=True)
class RenderHeldUp:
    """A chunk of a render that cannot finish where it was running, until the farm hands it on."""

    chunk: int  # the earliest such chunk, numbered from 0
    reason: str  # "node_stopped"
    message: str  # for people: "waiting for chunk 3 (its node stopped)"
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderHeldUp:
        return build(cls, data)


@dataclass(frozen=True)
class Render:
    id: str
    video_id: str
    version_id: str
    format: str
    resolution: int
    fps: int
    status: TaskStatus | str
    progress: float
    url: str | None
    poster_url: str | None
    duration_sec: float | None
    bytes: int | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    reused_frames: int = 0  # frames an earlier render of the workspace had made, reused rather than drawn
    priority: Priority | str = Priority.NORMAL  # a server from before priorities runs every render as normal
    queue: RenderQueue | None = None  # None once nothing of it waits (or from a server without the field)
    held_up: RenderHeldUp | None = None  # a chunk whose node stopped, until the farm hands it on
    stream_url: str | None = None  # the HLS playlist of the part rendered so far, once a chunk is stored
    progress_stale: bool = False  # the farm's progress store was out of reach: progress may be behind
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Render:
        queue, held_up = data.get("queue"), data.get("held_up")
        return build(cls, data, queue=RenderQueue.from_dict(queue) if queue is not None else None,
                     held_up=RenderHeldUp.from_dict(held_up) if held_up is not None else None)


@dataclass(frozen=True)
class Variants:
    renders: list[Render]
    translations: list[Video]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Variants:
        return build(cls, data, renders=[Render.from_dict(r) for r in data["renders"]],
                     translations=[Video.from_dict(v) for v in data["translations"]])


@dataclass(frozen=True)
class Asset:
    """An image, a sound or a video of the workspace's media library; a VideoDoc names it by ``key``."""

    id: str
    kind: str  # "image", "audio" or "video"
    content_type: str
    bytes: int
    key: str
    url: str  # signed, valid for a day
    created_at: datetime
    width: int | None = None
    height: int | None = None
    duration_sec: float | None = None
    fps: float | None = None  # videos: frames a second, on average
    has_audio: bool | None = None  # videos
    thumbnail_url: str | None = None  # images: a thumbnail; videos: a poster
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Asset:
        return build(cls, data)


@dataclass(frozen=True)
class AssetUpload:
    """A presigned upload (S3 servers): send the file's bytes with ``method`` to ``url`` carrying
    ``headers`` before ``expires_at``, then complete it."""

    id: str
    method: str
    url: str
    headers: dict[str, str]
    bytes: int
    expires_at: datetime
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssetUpload:
        return build(cls, data)


@dataclass(frozen=True)
class Webhook:
    id: str
    url: str
    description: str | None
    events: list[str]
    enabled: bool
    created_at: datetime
    updated_at: datetime
    disabled_reason: str | None = None
    secret: str | None = None  # only in the answer to create
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Webhook:
        return build(cls, data)


@dataclass(frozen=True)
class Me:
    workspace: dict[str, Any]
    rate_limit: dict[str, Any]
    api_key: dict[str, Any]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def credits(self) -> int:
        return int(self.workspace["credits"])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Me:
        return build(cls, data)
