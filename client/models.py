"""Typed results: one frozen dataclass per API resource, built from the API's JSON.

Each model keeps the fields the contract names and the whole answer in ``raw``, so a field the
server adds later is never lost on the way through. Timestamps are aware ``datetime``s; statuses
and priorities are ``StrEnum`` members, which compare equal to the API's strings
(``render.status == "succeeded"``), and a value a newer server sends that this client does not know
stays a plain string. Formats, resolutions, frame rates and asset kinds are typed as the
``Literal`` sets the SDK's parameters take (``reelfarm.client.literals``), so a value read can be
passed back (``videos.render(v.id, format=v.default_format)``). A field an older server does not send takes its default (``Render.priority``
``normal``, ``Render.queue`` None). Every result the client returns carries ``last_response`` (a
``ResponseInfo``: request id, status, rate limit, headers) and ``request_id``, its shortcut.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from reelfarm.client.literals import AssetKind, ContainerName, Fps, Resolution, VideoFormat

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


@dataclass(frozen=True)
class RateLimitState:
    """The key's rate limit as an answer's ``RateLimit-*`` headers gave it."""

    limit: int | None  # requests allowed per window
    remaining: int | None  # requests left in this window
    reset_sec: int | None  # seconds until the window resets
    policy: str | None  # ``600;w=60``


@dataclass(frozen=True)
class ResponseInfo:
    """What the HTTP answer behind a result said besides its body: which request it was (quote
    ``request_id`` to support), its status, the key's rate limit, whether it was an idempotent
    replay, and every header."""

    method: str
    path: str  # below /api/v1
    status: int
    request_id: str | None
    rate_limit: RateLimitState | None
    replayed: bool  # ``Idempotent-Replayed: true``: the first answer to this ``Idempotency-Key``
    headers: dict[str, str] = field(repr=False, default_factory=dict)


class _Answered:
    """A result that knows the answer it came in (``last_response``; None for one built by hand)."""

    last_response: ResponseInfo | None

    @property
    def request_id(self) -> str | None:
        """The ``X-Request-Id`` of the answer this result came in."""
        return self.last_response.request_id if self.last_response is not None else None


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
class Story(_Answered):
    id: str
    name: str
    category: str
    description: str
    default_duration_sec: float
    fields: dict[str, Any]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Story:
        return build(cls, data)


@dataclass(frozen=True)
class BrandKit(_Answered):
    id: str
    name: str
    source_url: str | None
    is_default: bool
    tokens: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrandKit:
        return build(cls, data)


@dataclass(frozen=True)
class Job(_Answered):
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
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        return build(cls, data)


@dataclass(frozen=True)
class Version(_Answered):
    id: str
    number: int
    source: str
    created_at: datetime
    doc: dict[str, Any] | None = None
    note: str | None = None
    lint: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Version:
        return build(cls, data)


@dataclass(frozen=True)
class Video(_Answered):
    id: str
    title: str
    status: VideoStatus | str
    story_id: str | None
    brand_kit_id: str | None
    default_format: VideoFormat
    duration_sec: float | None
    current_version: Version | None
    job: Job | None
    created_at: datetime
    updated_at: datetime
    locale: str | None = None
    source_video_id: str | None = None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

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
class RenderQueue(_Answered):
    """Where a render stands in the farm's queue while some of its chunks wait to be dispatched."""

    frames_ahead: int  # waiting frames fair dispatch would serve before this render's next chunk
    chunks_waiting: int  # this render's own chunks still waiting
    estimated_start_at: datetime | None  # when its next chunk should start; None without recent throughput
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderQueue:
        return build(cls, data)


@dataclass(frozen=True)
class RenderHeldUp(_Answered):
    """A chunk of a render that cannot finish where it was running, until the farm hands it on."""

    chunk: int  # the earliest such chunk, numbered from 0
    reason: str  # "node_silent", "node_stopped", "no_frames", "suspended" or "no_node_in_pool"
    message: str  # for people: "waiting for chunk 3 (its node stopped)"
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderHeldUp:
        return build(cls, data)


@dataclass(frozen=True)
class RenderCost(_Answered):
    """What a render's tasks used on the farm's nodes, as measured there (so far, while it runs)."""

    cpu_sec: float  # CPU seconds, every attempt of every task counted
    gpu_sec: float | None  # seconds its tasks held a GPU; None when none ran on a GPU node
    wall_sec: float  # the tasks' wall seconds summed
    frames_rendered: int  # frames it drew and encoded itself; 0 when every segment was reused
    frames_reused: int  # frames reused from segments an earlier render made
    storage_bytes: int  # bytes its tasks stored
    peak_memory_bytes: int  # the highest process memory high-water mark among its tasks
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderCost:
        return build(cls, data)


@dataclass(frozen=True)
class RenderEstimate(_Answered):
    """What asking for a render would cost, before asking."""

    format: str  # the format estimated
    existing_render_id: str | None  # an identical render finished or in flight: asking would answer it, at 0
    frames_to_render: int  # frames the farm would draw
    frames_reused: int  # frames copied from segments the workspace keeps (they cost nothing)
    cpu_sec: float  # CPU seconds the farm's nodes would spend
    wall_sec: float  # seconds its tasks would run, summed (not the time to wait)
    credits: int  # credits asking would charge
    node_kind: str  # "cpu" or "gl": the kind of node the figures are for
    basis: str  # "measured" (scaled by the farm's recent chunks), "baseline" or "identical_render"
    sampled_frames: int  # frames of the recent chunks it was calibrated on
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RenderEstimate:
        return build(cls, data)


@dataclass(frozen=True)
class VariantsEstimate(_Answered):
    """What asking for variants would cost, before asking: the figures summed over the formats."""

    frames_to_render: int
    frames_reused: int
    cpu_sec: float
    wall_sec: float
    credits: int  # charged once for all the formats
    renders: list[RenderEstimate]  # each format's, in the order asked
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VariantsEstimate:
        return build(cls, {k: v for k, v in data.items() if k != "renders"},
                     renders=[RenderEstimate.from_dict(r) for r in data.get("renders") or []])


@dataclass(frozen=True)
class Usage(_Answered):
    """What the workspace's renders used on the farm and cost over days ``start`` to ``end`` (UTC)."""

    start: str  # the first day counted, YYYY-MM-DD (the API's `from`)
    end: str  # the last day counted (the API's `to`)
    group_by: str | None  # "day", "video" or None
    renders: int  # renders created
    frames_rendered: int  # frames the farm drew for them
    frames_reused: int  # frames reused from earlier renders' segments
    cpu_sec: float  # CPU seconds on the farm's nodes, every attempt counted
    gpu_sec: float  # seconds their tasks held a GPU
    storage_bytes: int  # bytes their tasks stored
    credits: int  # credits charged, less refunds
    groups: list[dict[str, Any]] | None = None  # the same figures by day or video, with group_by
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return build(cls, {k: v for k, v in data.items() if k not in ("from", "to")},
                     start=data.get("from"), end=data.get("to"))


@dataclass(frozen=True)
class Render(_Answered):
    id: str
    video_id: str
    version_id: str
    format: VideoFormat
    resolution: Resolution
    fps: Fps
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
    captions_url: str | None = None  # the video's captions as WebVTT, once it succeeded (None without captions)
    progress_stale: bool = False  # the farm's progress store was out of reach: progress may be behind
    cost: RenderCost | None = None  # what its tasks used so far (None from a server without the field)
    container: ContainerName | str = "mp4"  # the file: mp4, gif or webm (a server from before containers: mp4)
    transparent: bool = False  # a WebM with alpha where its scenes have no background
    clamped: list[str] = field(default_factory=list)  # the values asked for lowered to the container's limits
    pool: str | None = None  # the node pool it is drawn in ("" or None: any node)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Render:
        queue, held_up, cost = data.get("queue"), data.get("held_up"), data.get("cost")
        return build(cls, data, queue=RenderQueue.from_dict(queue) if queue is not None else None,
                     held_up=RenderHeldUp.from_dict(held_up) if held_up is not None else None,
                     cost=RenderCost.from_dict(cost) if cost is not None else None)


@dataclass(frozen=True)
class Variants(_Answered):
    renders: list[Render]
    translations: list[Video]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Variants:
        return build(cls, data, renders=[Render.from_dict(r) for r in data["renders"]],
                     translations=[Video.from_dict(v) for v in data["translations"]])


@dataclass(frozen=True)
class Asset(_Answered):
    """An image, a sound, a video or a captions file of the workspace's media library; a VideoDoc names
    it by ``key``, a story's field by ``id``."""

    id: str
    kind: AssetKind
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
    cues: int | None = None  # captions files: how many cues
    thumbnail_url: str | None = None  # images: a thumbnail; videos: a poster
    name: str | None = None  # the file's name (as uploaded, or as renamed); None for one sent without
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Asset:
        return build(cls, data)


@dataclass(frozen=True)
class AssetUpload(_Answered):
    """A presigned upload (S3 servers): send the file's bytes with ``method`` to ``url`` carrying
    ``headers`` before ``expires_at``, then complete it."""

    id: str
    method: str
    url: str
    headers: dict[str, str]
    bytes: int
    expires_at: datetime
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssetUpload:
        return build(cls, data)


@dataclass(frozen=True)
class Webhook(_Answered):
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
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Webhook:
        return build(cls, data)


@dataclass(frozen=True)
class Me(_Answered):
    workspace: dict[str, Any]
    rate_limit: dict[str, Any]
    api_key: dict[str, Any]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    last_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    @property
    def credits(self) -> int:
        return int(self.workspace["credits"])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Me:
        return build(cls, data)
