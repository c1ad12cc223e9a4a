"""Every API operation the clients offer, as a ``Call``: method, path, body and how to read the answer.

Both ``Client`` and ``AsyncClient`` run these same values, so a request body is spelled once.
Arguments that are None are left out of a body: the API's defaults apply.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from reelfarm.client.models import (
    Asset,
    AssetUpload,
    BrandKit,
    Job,
    Me,
    Render,
    RenderEstimate,
    Story,
    Usage,
    Variants,
    VariantsEstimate,
    Version,
    Video,
    Webhook,
    etag,
)

T = TypeVar("T")
M = TypeVar("M")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a cursor-paginated list."""

    data: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class Stream:
    """A body sent as it is read (an upload): its type, its length, and ``open()`` for a fresh
    iterator of its bytes, called once per try so that a retry sends it whole again."""

    content_type: str
    length: int
    open: Callable[[], Any]


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str  # below /api/v1
    parse: Callable[[Any], T]
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    stream: Stream | None = None
    headers: dict[str, str] | None = None  # the call's own (``If-Match``)


def _id(value: str) -> str:
    return quote(str(value), safe="")


def _compact(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _data(model: Callable[[dict[str, Any]], M]) -> Callable[[Any], list[M]]:
    return lambda answer: [model(item) for item in answer["data"]]


def _page(model: Callable[[dict[str, Any]], M]) -> Callable[[Any], Page[M]]:
    return lambda answer: Page([model(item) for item in answer["data"]], answer.get("next_cursor"))


def _none(_answer: Any) -> None:
    return None


def _raw(answer: Any) -> Any:
    return answer


def me() -> Call[Me]:
    return Call("GET", "/me", Me.from_dict)


def list_stories() -> Call[list[Story]]:
    return Call("GET", "/stories", _data(Story.from_dict))


def get_story(story_id: str) -> Call[Story]:
    return Call("GET", f"/stories/{_id(story_id)}", Story.from_dict)


def list_locales() -> Call[list[dict[str, Any]]]:
    return Call("GET", "/locales", lambda answer: list(answer["data"]))


def list_brand_kits() -> Call[list[BrandKit]]:
    return Call("GET", "/brand-kits", _data(BrandKit.from_dict))


def get_brand_kit(kit_id: str) -> Call[BrandKit]:
    return Call("GET", f"/brand-kits/{_id(kit_id)}", BrandKit.from_dict)


def update_brand_kit(kit_id: str, **changes: Any) -> Call[BrandKit]:
    return Call("PATCH", f"/brand-kits/{_id(kit_id)}", BrandKit.from_dict, body=_compact(**changes))


def extract_brand(url: str) -> Call[Job]:
    return Call("POST", "/brand/extract", Job.from_dict, body={"url": url})


def create_video(body: dict[str, Any]) -> Call[Video]:
    """``body`` is the API's create-video body (``storyId`` + ``fields``, or ``brief``, ...)."""
    return Call("POST", "/videos", Video.from_dict, body=body)


def video_body(*, story_id: str | None = None, fields: dict[str, Any] | None = None, brief: str | None = None,
               title: str | None = None, brand_kit_id: str | None = None, url: str | None = None,
               format: str | None = None, duration_sec: float | None = None,
               locale: str | None = None) -> dict[str, Any]:
    """The create-video body from Python-style arguments."""
    return _compact(storyId=story_id, fields=fields, brief=brief, title=title, brandKitId=brand_kit_id, url=url,
                    format=format, durationSec=duration_sec, locale=locale)


def list_videos(limit: int | None = None, cursor: str | None = None) -> Call[Page[Video]]:
    return Call("GET", "/videos", _page(Video.from_dict), params=_compact(limit=limit, cursor=cursor))


def get_video(video_id: str) -> Call[Video]:
    return Call("GET", f"/videos/{_id(video_id)}", Video.from_dict)


def update_video(video_id: str, body: dict[str, Any], if_match: str | None = None) -> Call[Video]:
    """``body``: the API's PATCH body (``fields`` or ``doc``, ``title``, ``note``); ``if_match``: the
    ``If-Match`` header (the video's ETag as read), if any."""
    return Call("PATCH", f"/videos/{_id(video_id)}", Video.from_dict, body=body, headers=_if_match(if_match))


def archive_video(video_id: str) -> Call[Video]:
    return Call("DELETE", f"/videos/{_id(video_id)}", Video.from_dict)


def list_versions(video_id: str) -> Call[list[Version]]:
    return Call("GET", f"/videos/{_id(video_id)}/versions", _data(Version.from_dict))


def get_version(video_id: str, number: int) -> Call[Version]:
    return Call("GET", f"/videos/{_id(video_id)}/versions/{int(number)}", Version.from_dict)


def restore_version(video_id: str, number: int, if_match: str | None = None) -> Call[Video]:
    return Call("POST", f"/videos/{_id(video_id)}/versions/{int(number)}/restore", Video.from_dict, body={},
                headers=_if_match(if_match))


def edited(video: str | Video, expected_version: int | None = None,
           if_match: str | None = None) -> tuple[str, str | None]:
    """The id of the video an edit changes and the ``If-Match`` it sends: ``if_match`` as given, else
    the tag of ``expected_version``, else, for a ``Video`` that was read, the tag of the version it
    was read at; None (the edit lands on whatever version is current) for a bare id."""
    video_id = video.id if isinstance(video, Video) else video
    if if_match is not None:
        return video_id, if_match
    if expected_version is not None:
        return video_id, etag(expected_version)
    return video_id, video.etag if isinstance(video, Video) else None


def _if_match(tag: str | None) -> dict[str, str] | None:
    return {"If-Match": tag} if tag is not None else None


def list_renders(video_id: str) -> Call[list[Render]]:
    return Call("GET", f"/videos/{_id(video_id)}/renders", _data(Render.from_dict))


def create_render(video_id: str, body: dict[str, Any]) -> Call[Render]:
    return Call("POST", f"/videos/{_id(video_id)}/renders", Render.from_dict, body=body)


def render_body(format: str, resolution: int | None = None, fps: int | None = None,
                priority: str | None = None, container: str | None = None,
                transparent: bool | None = None, pool: str | None = None) -> dict[str, Any]:
    return _compact(format=format, resolution=resolution, fps=fps, priority=priority, container=container,
                    transparent=transparent or None, pool=pool)


def estimate_render(video_id: str, body: dict[str, Any]) -> Call[RenderEstimate]:
    return Call("POST", f"/videos/{_id(video_id)}/renders/estimate", RenderEstimate.from_dict, body=body)


def estimate_variants(video_id: str, body: dict[str, Any]) -> Call[VariantsEstimate]:
    return Call("POST", f"/videos/{_id(video_id)}/variants/estimate", VariantsEstimate.from_dict, body=body)


def get_usage(start: str | None = None, end: str | None = None, group_by: str | None = None) -> Call[Usage]:
    return Call("GET", "/usage", Usage.from_dict, params=_compact(**{"from": start, "to": end, "group_by": group_by}))


def create_stills(video_id: str, body: dict[str, Any]) -> Call[Job]:
    return Call("POST", f"/videos/{_id(video_id)}/stills", Job.from_dict, body=body)


def stills_body(times: Sequence[float], format: str | None = None) -> dict[str, Any]:
    return _compact(times=[float(t) for t in times], format=format)


def create_variants(video_id: str, body: dict[str, Any]) -> Call[Variants]:
    return Call("POST", f"/videos/{_id(video_id)}/variants", Variants.from_dict, body=body)


def variants_body(formats: Sequence[str], locales: Sequence[str] | None = None,
                  resolution: int | None = None, priority: str | None = None, container: str | None = None,
                  transparent: bool | None = None) -> dict[str, Any]:
    return _compact(formats=list(formats), locales=list(locales) if locales else None, resolution=resolution,
                    priority=priority, container=container, transparent=transparent or None)


def get_render(render_id: str) -> Call[Render]:
    return Call("GET", f"/renders/{_id(render_id)}", Render.from_dict)


def cancel_render(render_id: str) -> Call[Render]:
    return Call("POST", f"/renders/{_id(render_id)}/cancel", Render.from_dict)


def get_job(job_id: str) -> Call[Job]:
    return Call("GET", f"/jobs/{_id(job_id)}", Job.from_dict)


def cancel_job(job_id: str) -> Call[Job]:
    return Call("POST", f"/jobs/{_id(job_id)}/cancel", Job.from_dict)


def upload_asset(stream: Stream) -> Call[Asset]:
    """``stream``: the multipart body (``reelfarm.client.uploads``) with the file in the part ``file``."""
    return Call("POST", "/assets", Asset.from_dict, stream=stream)


def create_asset_upload(size: int, content_type: str, filename: str | None = None) -> Call[AssetUpload]:
    body = _compact(bytes=size, content_type=content_type, filename=filename)
    return Call("POST", "/assets/uploads", AssetUpload.from_dict, body=body)


def complete_asset_upload(upload_id: str) -> Call[Asset]:
    return Call("POST", f"/assets/uploads/{_id(upload_id)}/complete", Asset.from_dict)


def add_asset_from_url(url: str) -> Call[Asset]:
    return Call("POST", "/assets/from-url", Asset.from_dict, body={"url": url})


def list_assets(kind: str | None = None, limit: int | None = None, cursor: str | None = None,
                q: str | None = None) -> Call[Page[Asset]]:
    return Call("GET", "/assets", _page(Asset.from_dict), params=_compact(kind=kind, limit=limit, cursor=cursor, q=q))


def rename_asset(asset_id: str, name: str) -> Call[Asset]:
    return Call("PATCH", f"/assets/{_id(asset_id)}", Asset.from_dict, body={"name": name})


def get_asset(asset_id: str) -> Call[Asset]:
    return Call("GET", f"/assets/{_id(asset_id)}", Asset.from_dict)


def delete_asset(asset_id: str) -> Call[None]:
    return Call("DELETE", f"/assets/{_id(asset_id)}", _none)


def create_webhook(url: str, events: Sequence[str] | None = None, description: str | None = None) -> Call[Webhook]:
    body = _compact(url=url, events=list(events) if events else None, description=description)
    return Call("POST", "/webhooks", Webhook.from_dict, body=body)


def list_webhooks() -> Call[list[Webhook]]:
    return Call("GET", "/webhooks", _data(Webhook.from_dict))


def get_webhook(webhook_id: str) -> Call[Webhook]:
    return Call("GET", f"/webhooks/{_id(webhook_id)}", Webhook.from_dict)


def update_webhook(webhook_id: str, **changes: Any) -> Call[Webhook]:
    return Call("PATCH", f"/webhooks/{_id(webhook_id)}", Webhook.from_dict, body=_compact(**changes))


def delete_webhook(webhook_id: str) -> Call[None]:
    return Call("DELETE", f"/webhooks/{_id(webhook_id)}", _none)


def list_deliveries(webhook_id: str) -> Call[list[dict[str, Any]]]:
    return Call("GET", f"/webhooks/{_id(webhook_id)}/deliveries", lambda answer: list(answer["data"]))


def redeliver(webhook_id: str, delivery_id: str) -> Call[Any]:
    return Call("POST", f"/webhooks/{_id(webhook_id)}/deliveries/{_id(delivery_id)}/redeliver", _raw)


def test_webhook(webhook_id: str) -> Call[Any]:
    return Call("POST", f"/webhooks/{_id(webhook_id)}/test", _raw)


test_webhook.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
