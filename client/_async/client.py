"""The SDK's resources and its client, written once (awaited); ``_sync/client.py`` is generated
from this file by ``scripts/generate_sync.py``. Each resource is an attribute of the client, each method
one API call (or a wait that polls).
"""
from __future__ import annotations

import builtins
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Self, cast

import httpx

from reelfarm.client import calls, config, uploads, webhooks
from reelfarm.client._async import io
from reelfarm.client._async.transport import AsyncTransport
from reelfarm.client.errors import ConflictError, WaitTimeout
from reelfarm.client.http import ProgressFn, ResponseHook, RetryHook, refuse_empty_key
from reelfarm.client.literals import AssetKind, ContainerName, Fps, PriorityName, Resolution, VideoFormat
from reelfarm.client.models import (
    Asset,
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
)
from reelfarm.client.retry import Retry
from reelfarm.client.waiting import finished, intervals, making, timed_out

DEFAULT_TIMEOUT = 30.0


class _Resource:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport


class Stories(_Resource):
    async def list(self) -> list[Story]:
        return await self._t.run(calls.list_stories())

    async def get(self, story_id: str) -> Story:
        """One story by id, with its fields' JSON Schema; ``NotFoundError`` (404) for an id no story has."""
        return await self._t.run(calls.get_story(story_id))


class BrandKits(_Resource):
    async def list(self) -> list[BrandKit]:
        return await self._t.run(calls.list_brand_kits())

    async def get(self, kit_id: str) -> BrandKit:
        return await self._t.run(calls.get_brand_kit(kit_id))

    async def update(self, kit_id: str, **changes: Any) -> BrandKit:
        return await self._t.run(calls.update_brand_kit(kit_id, **changes))


class Brand(_Resource):
    async def extract(self, url: str, *, idempotency_key: str | None = None) -> Job:
        """Start extracting a brand kit from a website; the job's result names the kit."""
        return await self._t.run(calls.extract_brand(url), idempotency_key=idempotency_key)


class Jobs(_Resource):
    async def get(self, job_id: str) -> Job:
        return await self._t.run(calls.get_job(job_id))

    async def cancel(self, job_id: str, *, idempotency_key: str | None = None) -> Job:
        return await self._t.run(calls.cancel_job(job_id), idempotency_key=idempotency_key)

    async def wait(self, job_id: str, *, timeout: float = 600, on_progress: io.Listener | None = None,
                   raise_on_failure: bool = True) -> Job:
        """Poll until the job is finished; raises ``TaskFailed`` (failed, canceled) or ``WaitTimeout``.
        ``on_progress`` may be a coroutine function in ``AsyncClient``."""
        return await _wait(lambda: self.get(job_id), "job", job_id, timeout, on_progress, raise_on_failure)


class Renders(_Resource):
    async def get(self, render_id: str) -> Render:
        return await self._t.run(calls.get_render(render_id))

    async def cancel(self, render_id: str, *, idempotency_key: str | None = None) -> Render:
        return await self._t.run(calls.cancel_render(render_id), idempotency_key=idempotency_key)

    async def wait(self, render_id: str, *, timeout: float = 900, on_progress: io.Listener | None = None,
                   raise_on_failure: bool = True) -> Render:
        """Poll until the render is finished; raises ``TaskFailed`` (failed, canceled) or ``WaitTimeout``.
        ``on_progress`` may be a coroutine function in ``AsyncClient`` (an MCP progress report)."""
        return await _wait(lambda: self.get(render_id), "render", render_id, timeout, on_progress, raise_on_failure)

    async def download(self, render: Render | str, path: str | Path, on_progress: ProgressFn | None = None) -> Path:
        """Stream a succeeded render's MP4 into ``path`` (the URL is signed afresh first)."""
        fresh = await self.get(render if isinstance(render, str) else render.id)
        if fresh.url is None:
            raise ValueError(f"render {fresh.id} has no file yet (status {fresh.status})")
        return await self._t.download(fresh.url, path, on_progress)


class Videos(_Resource):
    async def create(self, *, story_id: str | None = None, fields: Mapping[str, Any] | None = None,
                     brief: str | None = None, title: str | None = None, brand_kit_id: str | None = None,
                     url: str | None = None, format: VideoFormat | None = None, duration_sec: float | None = None,
                     locale: str | None = None, idempotency_key: str | None = None) -> Video:
        """Create a video from a story (ready at once) or from a brief (``generating``; see ``wait``)."""
        body = calls.video_body(story_id=story_id, fields=dict(fields) if fields is not None else None,
                                brief=brief, title=title, brand_kit_id=brand_kit_id, url=url, format=format,
                                duration_sec=duration_sec, locale=locale)
        return await self._t.run(calls.create_video(body), idempotency_key=idempotency_key)

    async def create_from_body(self, body: dict[str, Any], *, idempotency_key: str | None = None) -> Video:
        """Create from the API's own body shape (as an agent sends it)."""
        return await self._t.run(calls.create_video(body), idempotency_key=idempotency_key)

    async def list(self, *, page_size: int | None = None) -> AsyncIterator[Video]:
        """Every video, newest first, following ``next_cursor`` page by page."""
        cursor: str | None = None
        while True:
            page = await self._t.run(calls.list_videos(page_size, cursor))
            for video in page.data:
                yield video
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get(self, video_id: str) -> Video:
        return await self._t.run(calls.get_video(video_id))

    async def update(self, video: str | Video, *, fields: Mapping[str, Any] | None = None,
                     doc: Mapping[str, Any] | None = None, title: str | None = None, note: str | None = None,
                     expected_version: int | None = None, if_match: str | None = None) -> Video:
        """Save a new version (``fields`` or ``doc``) and/or rename; returns the video. A change that
        leaves the document as it is makes no version (the answer is the current one).

        ``video``: its id, or a ``Video`` you read: then the edit is made only if no one has saved
        another version since that read (it sends the version as ``If-Match``), else
        ``VersionConflictError`` (412) names the current version and nothing is saved.
        ``expected_version`` does the same for a version number; ``if_match`` sends ``If-Match`` as
        given (``"*"``: whatever version is current). With an id and neither, a ``fields`` change is
        merged into whatever version is current."""
        video_id, tag = calls.edited(video, expected_version, if_match)
        body = calls._compact(fields=dict(fields) if fields is not None else None,
                              doc=dict(doc) if doc is not None else None, title=title, note=note)
        return await self._t.run(calls.update_video(video_id, body, tag))

    async def archive(self, video_id: str) -> Video:
        return await self._t.run(calls.archive_video(video_id))

    async def versions(self, video_id: str) -> builtins.list[Version]:
        return await self._t.run(calls.list_versions(video_id))

    async def restore(self, video: str | Video, number: int, *, expected_version: int | None = None,
                      if_match: str | None = None, idempotency_key: str | None = None) -> Video:
        """Save a copy of version ``number`` as the newest version. ``video``, ``expected_version``
        and ``if_match`` as for ``update``: a ``Video`` you read is restored only if it is still at
        the version you read (else ``VersionConflictError``)."""
        video_id, tag = calls.edited(video, expected_version, if_match)
        return await self._t.run(calls.restore_version(video_id, number, tag), idempotency_key=idempotency_key)

    async def version(self, video_id: str, number: int) -> Version:
        return await self._t.run(calls.get_version(video_id, number))

    async def renders(self, video_id: str) -> builtins.list[Render]:
        return await self._t.run(calls.list_renders(video_id))

    async def render(self, video_id: str, *, format: VideoFormat, resolution: Resolution | None = None,
                     fps: Fps | None = None, priority: PriorityName | None = None,
                     container: ContainerName | None = None, transparent: bool = False,
                     pool: str | None = None, idempotency_key: str | None = None) -> Render:
        """Start a render (an identical finished one is returned instead): an MP4, or a ``container``
        ``"gif"`` (at most 720 px and 24 fps: ``Render.clamped`` names what was lowered) or ``"webm"``
        (``transparent``: no background where a scene has none).

        ``priority``: ``"normal"`` (the API's default) or ``"low"`` for batch work, which yields to the
        workspace's normal renders. While it waits for the farm, ``Render.queue`` says where it stands.
        ``pool``: the node pool to draw it in (``"region=eu"``), one of those the operator allowed the
        workspace; the workspace's default pool when None."""
        body = calls.render_body(format, resolution, fps, priority, container, transparent, pool)
        return await self._t.run(calls.create_render(video_id, body), idempotency_key=idempotency_key)

    async def estimate_render(self, video_id: str, *, format: VideoFormat, resolution: Resolution | None = None,
                              fps: Fps | None = None, container: ContainerName | None = None,
                              transparent: bool = False) -> RenderEstimate:
        """What ``render`` with the same values would cost, without asking: frames to draw and those
        reused from segments the workspace keeps, the farm's CPU and task seconds and credits; an
        identical render finished or in flight is named (``existing_render_id``), at 0."""
        body = calls.render_body(format, resolution, fps, None, container, transparent)
        return await self._t.run(calls.estimate_render(video_id, body))

    async def stills(self, video_id: str, times: Sequence[float], *, format: VideoFormat | None = None,
                     idempotency_key: str | None = None) -> Job:
        return await self._t.run(calls.create_stills(video_id, calls.stills_body(times, format)), idempotency_key=idempotency_key)

    async def variants(self, video_id: str, formats: Sequence[VideoFormat], *, locales: Sequence[str] | None = None,
                       resolution: Resolution | None = None, priority: PriorityName | None = None,
                       container: ContainerName | None = None, transparent: bool = False,
                       idempotency_key: str | None = None) -> Variants:
        """Render several formats at once (each ``locale`` also starts a translated copy); ``priority``
        ``"low"`` suits a large set: its renders yield to the workspace's normal ones. ``container`` and
        ``transparent`` as for ``render``."""
        body = calls.variants_body(formats, locales, resolution, priority, container, transparent)
        return await self._t.run(calls.create_variants(video_id, body), idempotency_key=idempotency_key)

    async def estimate_variants(self, video_id: str, formats: Sequence[VideoFormat], *,
                                resolution: Resolution | None = None, container: ContainerName | None = None,
                                transparent: bool = False) -> VariantsEstimate:
        """What ``variants`` with the same formats would cost, without asking: one estimate summed over
        them (credits charged once), each format's in ``renders``."""
        body = calls.variants_body(formats, None, resolution, None, container, transparent)
        return await self._t.run(calls.estimate_variants(video_id, body))

    async def wait(self, video_id: str, *, timeout: float = 600, on_progress: io.Listener | None = None) -> Video:
        """Poll until the video is made: a generation no longer ``generating``, a translated copy's
        translation job finished (the copy stays ``draft`` until then). A failed one raises ``TaskFailed``."""
        deadline = time.monotonic() + timeout
        for delay in intervals():
            video = await self.get(video_id)
            await io.tell(on_progress, video)
            if not making(video):
                if video.status == "failed" and video.job is not None:
                    finished(video.job, "generation job", True)
                return video
            if time.monotonic() + delay > deadline:
                raise WaitTimeout(f"video {video_id} still {video.status} after {timeout:g} s", video)
            await io.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


class Assets(_Resource):
    """The workspace's media library: images and sounds a VideoDoc names by ``Asset.key``."""

    async def upload(self, file: uploads.Source, *, on_progress: ProgressFn | None = None,
                     filename: str | None = None, idempotency_key: str | None = None,
                     presigned: bool | None = None) -> Asset:
        """Upload an image, a sound or a video: a path, a seekable binary file object (read from where it
        stands), its bytes, or a tuple ``(name, content)`` / ``(name, content, content_type)`` of one
        of those (as httpx takes files), streamed a chunk at a time. ``on_progress(sent, total)`` is told the file's bytes
        handed to the connection so far after each chunk (from 0 again should the upload be retried).
        The same bytes uploaded again answer the asset already stored. Raises
        ``PayloadTooLargeError`` (413) for a file past a limit, whichever way it went;
        ``ValidationError`` (400) when the server refuses it otherwise (``details[0]["code"]``:
        ``unsupported_media``, ...); ``QuotaExceededError`` (413) past the plan's library quota.

        ``presigned``: True sends the bytes straight to the server's storage by a presigned URL
        and then completes the upload (S3 servers; elsewhere ``ConflictError``
        ``presigned_uploads_unavailable``); False always sends them to the API; None (the
        default) goes the presigned way for files over ``uploads.PRESIGNED_OVER`` bytes where the
        server offers it, and to the API otherwise."""
        form = uploads.form_of(file, filename)
        if presigned or (presigned is None and form.size > uploads.PRESIGNED_OVER):
            try:
                return await self._presigned(form, on_progress, idempotency_key)
            except ConflictError as exc:
                if presigned or exc.code != "presigned_uploads_unavailable":
                    raise
        stream = calls.Stream(form.content_type, form.length, lambda: _multipart(form, on_progress))
        return await self._t.run(calls.upload_asset(stream), idempotency_key=idempotency_key)

    async def _presigned(self, form: uploads.Form, on_progress: ProgressFn | None,
                         idempotency_key: str | None) -> Asset:
        declared = uploads.content_type_of(form.name, form.declared_type)
        staged = await self._t.run(calls.create_asset_upload(form.size, declared, form.name),
                                   idempotency_key=idempotency_key)
        body = uploads.bare(form)
        await self._t.send_to(staged.method, staged.url, staged.headers,
                              calls.Stream(staged.headers.get("Content-Type", ""), body.length,
                                           lambda: _multipart(body, on_progress)))
        return await self._t.run(calls.complete_asset_upload(staged.id))

    async def from_url(self, url: str, *, idempotency_key: str | None = None) -> Asset:
        """Have the server fetch ``url`` (public http(s) addresses only) and store it as an upload.
        Raises ``ValidationError`` (400 on ``/url``): ``address_refused``, ``unreachable`` or
        ``unsupported_media``; ``PayloadTooLargeError`` (413) when what it sent is past a limit."""
        return await self._t.run(calls.add_asset_from_url(url), idempotency_key=idempotency_key)

    async def list(self, *, kind: AssetKind | None = None, name: str | None = None,
                   page_size: int | None = None) -> AsyncIterator[Asset]:
        """Every asset (of one ``kind``, and whose name holds ``name`` in any case, if given), newest
        first, following ``next_cursor`` page by page."""
        cursor: str | None = None
        while True:
            page = await self._t.run(calls.list_assets(kind, page_size, cursor, name))
            for asset in page.data:
                yield asset
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get(self, asset_id: str) -> Asset:
        """One asset, with fresh signed URLs."""
        return await self._t.run(calls.get_asset(asset_id))

    async def rename(self, asset_id: str, name: str) -> Asset:
        """Give an asset a new name (its label only: not its key or file). ``ValidationError`` (400
        on ``/name``) for a blank name, one over 255 characters, or one with a control character,
        ``/`` or ``\\``."""
        return await self._t.run(calls.rename_asset(asset_id, name))

    async def delete(self, asset_id: str) -> None:
        """Delete an asset and its files; ``AssetInUseError`` (409) while a version or a brand kit names it."""
        await self._t.run(calls.delete_asset(asset_id))


async def _multipart(form: uploads.Form, on_progress: ProgressFn | None) -> AsyncIterator[bytes]:
    """The body of ``form``: its head, the file a chunk at a time (telling ``on_progress``), its tail."""
    if form.head:
        yield form.head
    if on_progress:
        on_progress(0, form.size)
    handle: io.BinaryFile
    if form.path is not None:
        handle = await io.open_file(form.path, "rb")
    else:
        handle = io.wrap_file(cast(IO[bytes], form.file))
    try:
        await handle.seek(form.start)
        sent = 0
        while sent < form.size:
            chunk = await handle.read(min(uploads.CHUNK, form.size - sent))
            if not chunk:
                raise ValueError(f"the file ended after {sent} of its {form.size} bytes")
            sent += len(chunk)
            yield chunk
            if on_progress:
                on_progress(sent, form.size)
    finally:
        if form.path is not None:
            await handle.aclose()
    if form.tail:
        yield form.tail


class Webhooks(_Resource):
    async def create(self, url: str, *, events: Sequence[str] | None = None,
                     description: str | None = None, idempotency_key: str | None = None) -> Webhook:
        """Register an endpoint; the answer's ``secret`` is shown only this once."""
        return await self._t.run(calls.create_webhook(url, events, description), idempotency_key=idempotency_key)

    async def list(self) -> list[Webhook]:
        return await self._t.run(calls.list_webhooks())

    async def get(self, webhook_id: str) -> Webhook:
        return await self._t.run(calls.get_webhook(webhook_id))

    async def update(self, webhook_id: str, **changes: Any) -> Webhook:
        return await self._t.run(calls.update_webhook(webhook_id, **changes))

    async def delete(self, webhook_id: str) -> None:
        await self._t.run(calls.delete_webhook(webhook_id))

    async def deliveries(self, webhook_id: str) -> builtins.list[dict[str, Any]]:
        return await self._t.run(calls.list_deliveries(webhook_id))

    async def redeliver(self, webhook_id: str, delivery_id: str, *, idempotency_key: str | None = None) -> Any:
        return await self._t.run(calls.redeliver(webhook_id, delivery_id), idempotency_key=idempotency_key)

    async def test(self, webhook_id: str, *, idempotency_key: str | None = None) -> Any:
        return await self._t.run(calls.test_webhook(webhook_id), idempotency_key=idempotency_key)

    verify = staticmethod(webhooks.verify)


async def _wait(get: Callable[[], Any], what: str, ident: str, timeout: float,
                on_progress: io.Listener | None, raise_on_failure: bool) -> Any:
    deadline = time.monotonic() + timeout
    for delay in intervals():
        state = await get()
        await io.tell(on_progress, state)
        if finished(state, what, raise_on_failure):
            return state
        if time.monotonic() + delay > deadline:
            raise timed_out(what, ident, timeout, state)
        await io.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class AsyncClient:
    """The reelfarm API from Python (``AsyncClient``: awaited, on asyncio or trio; ``Client``: blocking).

    Args:
        api_key: ``rf_live_...``; default ``REELFARM_API_KEY``, then the ``reelfarm login`` file.
        base_url: the server's root (``https://host``); default ``REELFARM_API_URL``, then the login
            file, then ``http://127.0.0.1:8000``.
        timeout: seconds for each HTTP request (or an ``httpx.Timeout``).
        retry: how 429, 502/503/504 and connection errors are retried, and how long one call may
            wait between its tries in all (``Retry.max_wait``, 60 s by default: a longer
            ``Retry-After`` raises the ``RateLimitError`` at once). Each retry is logged on the
            ``reelfarm.client`` logger with its reason and delay (a WARNING when the server asked
            for a wait, as a 429 does).
        http: an httpx client to use instead of a new one (its base URL and headers are yours).
        on_retry: called with a ``RetryEvent`` before each retry waits (method, path, delay, reason).
        on_response: called with the ``ResponseInfo`` of each answer (request id, status, rate
            limit), lists and deletes included; every result also carries it as ``last_response``.

    Options for some calls only: ``client.with_options(timeout=5, max_retries=0).videos.get(id)``.
    """

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *,
                 timeout: float | httpx.Timeout = DEFAULT_TIMEOUT, retry: Retry | None = None,
                 http: httpx.AsyncClient | None = None, on_retry: RetryHook | None = None,
                 on_response: ResponseHook | None = None) -> None:
        refuse_empty_key(api_key)
        found = config.resolve(api_key, base_url)
        self.api_key, self.base_url = found.api_key, found.base_url
        transport = AsyncTransport(found.api_key, found.base_url, timeout, retry or Retry(), http)
        transport.on_retry, transport.on_response = on_retry, on_response
        self._bind(transport)

    def _bind(self, transport: AsyncTransport) -> None:
        self._t = transport
        self.stories = Stories(self._t)
        self.brand_kits = BrandKits(self._t)
        self.brand = Brand(self._t)
        self.videos = Videos(self._t)
        self.renders = Renders(self._t)
        self.jobs = Jobs(self._t)
        self.webhooks = Webhooks(self._t)
        self.assets = Assets(self._t)

    def with_options(self, *, timeout: float | httpx.Timeout | None = None, max_retries: int | None = None,
                     max_wait: float | None = None, retry: Retry | None = None, on_retry: RetryHook | None = None,
                     on_response: ResponseHook | None = None) -> Self:
        """This client with other options for the calls made through it, sharing its connection pool
        (the Stripe and OpenAI SDKs' per-request options): ``timeout`` per HTTP request, ``max_retries``
        (0: none), ``max_wait`` (seconds of waiting between one call's tries), or a whole ``retry``
        policy; ``on_retry`` and ``on_response`` hooks in place of this client's. Closing it leaves
        this client's pool open."""
        policy = retry or self._t.retry
        if max_retries is not None:
            policy = dataclasses.replace(policy, max_retries=max_retries)
        if max_wait is not None:
            policy = dataclasses.replace(policy, max_wait=max_wait)
        made = type(self).__new__(type(self))
        made.api_key, made.base_url = self.api_key, self.base_url
        transport = self._t.with_options(timeout, policy)
        transport.on_retry = on_retry or self._t.on_retry
        transport.on_response = on_response or self._t.on_response
        made._bind(transport)
        return made

    async def me(self) -> Me:
        """The key's workspace, plan, credits and rate limit."""
        return await self._t.run(calls.me())

    async def usage(self, *, start: str | None = None, end: str | None = None,
                    group_by: str | None = None) -> Usage:
        """What the workspace's renders used on the farm and cost over days ``start`` to ``end``
        (``YYYY-MM-DD``, UTC, both included; by default the 30 days to today), by ``"day"`` or
        ``"video"`` with ``group_by``."""
        return await self._t.run(calls.get_usage(start, end, group_by))

    async def locales(self) -> list[dict[str, Any]]:
        return await self._t.run(calls.list_locales())

    async def render_video(self, video_id: str, *, format: VideoFormat | None = None,
                           resolution: Resolution | None = None, fps: Fps | None = None, priority: PriorityName | None = None, wait: bool = True,
                           timeout: float = 900, on_progress: io.Listener | None = None,
                           idempotency_key: str | None = None, container: ContainerName | None = None,
                           transparent: bool = False) -> Render:
        """Render a video (in its default format unless told) and, with ``wait``, return it finished
        (``on_progress`` sees each state, ``Render.queue`` set while it waits for the farm)."""
        fmt = format or (await self.videos.get(video_id)).default_format
        render = await self.videos.render(video_id, format=fmt, resolution=resolution, fps=fps, priority=priority,
                                          container=container, transparent=transparent, idempotency_key=idempotency_key)
        if not wait:
            return render
        return await self.renders.wait(render.id, timeout=timeout, on_progress=on_progress)

    async def fetch_bytes(self, url: str) -> bytes:
        """The body of a signed URL the API handed out (a still, a poster)."""
        return await self._t.fetch_bytes(url)

    async def download(self, url: str, path: str | Path, on_progress: ProgressFn | None = None) -> Path:
        """Stream any signed URL the API handed out (MP4, poster, still) into ``path``."""
        return await self._t.download(url, path, on_progress)

    async def aclose(self) -> None:
        await self._t.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
