"""The MCP tools: each is one API operation (its input schema from the OpenAPI document), some
with a follow-up of their own (wait for a render with progress, fetch stills as images). A tool may
word a body property's description for agents (when to ask for ``priority: "low"``; ``NOTES``, shorter
words for a property in every tool that has it); the property itself, its type and its values,
stay the document's, and one the document lacks is not offered. A ``pattern`` longer than
``LONG_PATTERN`` is left out (a URL's, a node pool's): the API checks it, and every listing goes
into an agent's context, which the whole listing's bound in ``tests/e2e/test_client_mcp.py`` keeps small.
A property whose schema is large and found elsewhere (a story's ``fields``, a whole ``doc``) is
summed up in a sentence saying where (``reelfarm.client.mcp_server.schemas.summarized``).

A tool that changes a video (``update_video``, ``restore_version``) takes ``expected_version``, the
version number the change was made from, and sends it as ``If-Match``: a change made from a video
that someone has changed since fails with ``version_conflict`` and saves nothing. It is offered only
where the API's document says the operation takes ``If-Match``.

One tool is no API operation's JSON: ``upload_asset`` streams a file of this machine's disk with
the SDK, and is offered over stdio alone (an MCP server over HTTP serves callers whose files are not
on its disk).

A tool's answer is the API's JSON, as text and as structured content; for videos, renders and
versions, stories and assets a summary of it unless ``full`` is asked for (``reelfarm.client.mcp_server.results``);
stills come back as PNG image content as well. An API error becomes a tool error carrying the
API's status, code, message, details and request id.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import mcp_types as types

from reelfarm.client.aio import AsyncClient
from reelfarm.client.calls import Call
from reelfarm.client.errors import APIConnectionError, APIError, ReelfarmError, TaskFailed, WaitTimeout
from reelfarm.client.mcp_server import results
from reelfarm.client.mcp_server.results import Shape
from reelfarm.client.mcp_server.schemas import InputSchema, input_schema, operation, summarized
from reelfarm.client.models import Render, etag

Report = Callable[[float, float | None, str | None], Awaitable[None]]
WAIT = {"type": "boolean", "default": False, "description": "Wait for the end, reporting progress."}
TIMEOUT = {"type": "number", "minimum": 1, "maximum": 3600, "default": 600, "description": "Most seconds to wait."}
FULL = {"type": "boolean", "default": False, "description": "The API's whole answer, not a summary."}
ASSET_FIELD = ("An image or video field takes an asset's `id` (add_asset_from_url, upload_asset, list_assets; "
               "never its `key`), an image field also an https URL; every story's `soundtrack` and `captions` "
               "(a sound's, an SRT or WebVTT file's `asset_id`) too.")
FIELDS = ("The story's values: their JSON Schema is the story's `fields` (get_story); defaults fill the rest. "
          + ASSET_FIELD)
FIELDS_PATCH = "Story values to change (their JSON Schema: get_story's `fields`); a new version. " + ASSET_FIELD
DOC = ("A complete VideoDoc replacing the current one (a new version): change get_video `full: true`'s "
       "`current_version.doc`. JSON Schema: `VideoDoc` in /api/v1/openapi.json.")
EXPECTED_VERSION = {"type": "integer", "minimum": 1,
                    "description": "The `version` (get_video) the change was made from; if another was saved since, "
                                   "nothing is saved (`version_conflict`). Omit to change the current one."}
UPLOAD_PATH = {"type": "string", "minLength": 1, "description": "The file's path on this machine."}
# Said to agents over the API's own description of a body property (the schema stays the API's).
PRIORITY = ('Use "low" for large batches: they yield to the workspace\'s "normal" (default) renders. A waiting '
            'render\'s `queue` says the frames ahead.')
# Said to agents over the API's own description of a property, in every tool that has it.
NOTES = {"pool": "A node pool the workspace may use (tags, e.g. `region=eu,gpu`); default: the workspace's.",
         "container": "`gif`: no sound, at most 720p and 24 fps (see `clamped`); `webm`: VP9. Default: mp4.",
         "locales": "Translated copies to make: tags of list_locales.",
         "q": "Only assets whose `name` holds this text (any case)."}
LONG_PATTERN = 80  # characters: a longer `pattern` (a URL's, a node pool's) is left to the API to check


@dataclass
class Invocation:
    """One tool call: the client for the caller's key, the split arguments, progress reporting."""

    client: AsyncClient
    path: dict[str, Any]
    body: dict[str, Any] | None
    options: dict[str, Any]
    report: Report
    images: list[types.ImageContent] = field(default_factory=list)
    query: dict[str, Any] | None = None


Follow = Callable[[Invocation, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ToolDef:
    name: str
    title: str
    description: str
    method: str
    path: str  # as in the OpenAPI document
    options: dict[str, Any] = field(default_factory=dict)
    follow: Follow | None = None
    read_only: bool = False
    # Agent-facing descriptions of body properties, used where the API's document has the property.
    notes: dict[str, str] = field(default_factory=dict)
    # Properties offered as their type and a description only (the schema is found elsewhere).
    summaries: dict[str, str] = field(default_factory=dict)
    shape: Shape | None = None  # the answer summed up, unless the call asks for ``full``
    # Sends the call itself instead of the API operation's JSON request (an upload streams a file).
    send: Callable[[Invocation], Awaitable[Any]] | None = None
    local_files: bool = False  # reads this machine's files: offered over stdio alone (see Toolbox)
    required: tuple[str, ...] = ()  # options the tool cannot go without


async def _send(inv: Invocation, tool: ToolDef) -> Any:
    path = tool.path.format(**{k: quote(str(v), safe="") for k, v in inv.path.items()})
    expected = inv.options.get("expected_version")
    call = Call(tool.method.upper(), path.removeprefix("/api/v1"), lambda answer: answer, body=inv.body,
                params=inv.query, headers={"If-Match": etag(expected)} if expected is not None else None)
    return await inv.client._t.run(call)


async def _upload_file(inv: Invocation) -> Any:
    """Upload the file at ``path`` with the SDK: streamed, by a presigned URL where the server offers
    one and the file is large (``reelfarm.client.uploads.PRESIGNED_OVER``), else to the API."""
    asset = await inv.client.assets.upload(Path(str(inv.options["path"])).expanduser())
    return results.asset_summary(asset.raw)  # always summed up: list_assets with `full` has the rest


async def _follow_render(inv: Invocation, render: dict[str, Any]) -> Any:
    if not inv.options.get("wait"):
        return render

    async def tell(state: Any) -> None:
        await inv.report(float(state.progress), 1.0, render_message(state))

    done = await inv.client.renders.wait(render["id"], timeout=float(inv.options.get("timeout", 600)),
                                         on_progress=tell)
    return done.raw


def render_message(render: Render) -> str:
    """A progress message: the status, and while some of it waits the frames ahead and the expected
    start; once its first chunk is stored, the stream of the part already rendered."""
    watch = f"; watch it as it renders: {render.stream_url}" if render.stream_url and not render.done else ""
    queue = render.queue
    if queue is None:
        return f"render {render.status}{watch}"
    start = queue.estimated_start_at
    chunks = f"{queue.chunks_waiting} chunk{'' if queue.chunks_waiting == 1 else 's'}"
    text = f"render {render.status}: {chunks} waiting, {queue.frames_ahead} frames ahead"
    return text + (f", expected to start at {start.isoformat()}" if start is not None else "") + watch


async def _follow_job(inv: Invocation, job: dict[str, Any]) -> Any:
    if not inv.options.get("wait"):
        return job

    async def tell(state: Any) -> None:
        await inv.report(float(state.progress), 1.0, f"{state.kind} {state.status} {state.stage or ''}".strip())

    done = await inv.client.jobs.wait(job["id"], timeout=float(inv.options.get("timeout", 600)), on_progress=tell)
    return done.raw


def _making(video: dict[str, Any]) -> bool:
    """As ``reelfarm.client.waiting.making``, on the API's JSON: generating, or a translated copy
    (``draft``) whose job runs."""
    job = video.get("job") or {}
    return video.get("status") == "generating" or (video.get("status") == "draft"
                                                   and job.get("status") in ("queued", "running"))


async def _follow_video(inv: Invocation, video: dict[str, Any]) -> Any:
    if not inv.options.get("wait") or not _making(video):
        return video

    async def tell(state: Any) -> None:
        job = state.job
        stage = f" ({job.stage})" if job is not None and job.stage else ""
        await inv.report(float(job.progress) if job else 0.0, 1.0, f"video {state.status}{stage}")

    done = await inv.client.videos.wait(video["id"], timeout=float(inv.options.get("timeout", 600)), on_progress=tell)
    return done.raw


async def _follow_stills(inv: Invocation, job: dict[str, Any]) -> Any:
    inv.options["wait"] = True
    done = await _follow_job(inv, job)
    for still in (done.get("result") or {}).get("stills", []):
        png = await inv.client.fetch_bytes(still["url"])
        inv.images.append(types.ImageContent(type="image", data=base64.b64encode(png).decode("ascii"),
                                             mime_type="image/png"))
    return done


VIDEO, VIDEOS, RENDER = results.video_summary, results.listed(results.video_summary), results.render_summary
TOOLS: tuple[ToolDef, ...] = (
    ToolDef("whoami", "Who am I", "The calling key's workspace, plan, credits left and rate limit.", "GET",
            "/api/v1/me", read_only=True),
    ToolDef("list_videos", "List videos", "The workspace's videos, newest first, each summed up (`limit` per page; "
            "pass the answer's `next_cursor` as `cursor` for the next page).", "GET", "/api/v1/videos",
            read_only=True, shape=VIDEOS),
    ToolDef("list_stories", "List stories", "The built-in stories (video templates), each with its field names; "
            "get_story gives one's `fields` JSON Schema (`full`: every story's).", "GET", "/api/v1/stories",
            read_only=True, shape=results.listed(results.story_summary)),
    ToolDef("get_story", "Get a story", "A story with `fields`: the JSON Schema of the values create_video takes "
            "with its `storyId`.", "GET", "/api/v1/stories/{story_id}", read_only=True),
    ToolDef("list_locales", "List locales", "The languages translated copies can be made in (render_variants "
            "`locales`), from the video's language (`source`, default en).", "GET", "/api/v1/locales",
            read_only=True),
    ToolDef("list_brand_kits", "List brand kits", "The workspace's brand kits (colors, fonts, logo), default first.",
            "GET", "/api/v1/brand-kits", read_only=True),
    ToolDef("extract_brand", "Extract a brand", "Extract a brand kit from a website (a `brand_extract` job; its "
            "result names the new kit).", "POST", "/api/v1/brand/extract", {"wait": WAIT, "timeout": TIMEOUT},
            _follow_job),
    ToolDef("create_video", "Create a video", "Create a video: from a story (`storyId` + `fields`, ready at once) or "
            "from a written `brief` (generated by a job; `wait` waits for it).", "POST", "/api/v1/videos",
            {"wait": WAIT, "timeout": TIMEOUT}, _follow_video, summaries={"fields": FIELDS}, shape=VIDEO),
    ToolDef("get_video", "Get a video", "A video's status, title and current version number; `wait` waits while "
            "it is generated or translated; `full` gives its full VideoDoc.", "GET", "/api/v1/videos/{video_id}",
            {"wait": WAIT, "timeout": TIMEOUT}, _follow_video, read_only=True, shape=VIDEO),
    ToolDef("update_video", "Update a video", "Change story `fields` or send a whole `doc` (a new version, none if "
            "nothing changes), or rename (`title`).", "PATCH", "/api/v1/videos/{video_id}",
            {"expected_version": EXPECTED_VERSION}, summaries={"fields": FIELDS_PATCH, "doc": DOC}, shape=VIDEO),
    ToolDef("list_versions", "List versions", "A video's versions, oldest first: number, source, note, lint warnings "
            "(`full`: each with its VideoDoc).", "GET", "/api/v1/videos/{video_id}/versions", read_only=True,
            shape=results.listed(results.version_summary)),
    ToolDef("restore_version", "Restore a version", "Make an earlier version current again, as a new version (nothing "
            "is lost).",
            "POST", "/api/v1/videos/{video_id}/versions/{number}/restore", {"expected_version": EXPECTED_VERSION},
            shape=VIDEO),
    ToolDef("render_video", "Render a video", "Render the current version (credits once per version). `wait` "
            "reports progress (and the place in the farm's queue) and returns the finished render with its URL.", "POST", "/api/v1/videos/{video_id}/renders",
            {"wait": WAIT, "timeout": TIMEOUT}, _follow_render, notes={"priority": PRIORITY}, shape=RENDER),
    ToolDef("estimate_render", "Estimate a render", "What render_video with the same values would cost, without "
            "rendering: frames to draw and reused, CPU seconds and credits; an identical render is named, at 0.",
            "POST", "/api/v1/videos/{video_id}/renders/estimate", read_only=True),
    ToolDef("list_renders", "List a video's renders", "A video's renders, newest first, with their status and URLs.",
            "GET", "/api/v1/videos/{video_id}/renders", read_only=True, shape=results.listed(RENDER)),
    ToolDef("render_variants", "Render variants", "Render several formats at once; `locales` also start translated "
            "copies (new videos, each with its own job: get_video with `wait` waits for one).", "POST",
            "/api/v1/videos/{video_id}/variants", notes={"priority": PRIORITY}, shape=results.variants_summary),
    ToolDef("render_stills", "Render stills", "Render PNG stills at the given times; waits and returns each still "
            "as an image, with signed URLs (valid 10 minutes).", "POST", "/api/v1/videos/{video_id}/stills",
            {"timeout": TIMEOUT}, _follow_stills),
    ToolDef("get_render", "Get a render", "A render's status, progress and, once succeeded, its MP4 and poster URLs.",
            "GET", "/api/v1/renders/{render_id}", {"wait": WAIT, "timeout": TIMEOUT}, _follow_render, read_only=True,
            shape=RENDER),
    ToolDef("cancel_render", "Cancel a render", "Stop a queued or running render (its credits are refunded).",
            "POST", "/api/v1/renders/{render_id}/cancel", shape=RENDER),
    ToolDef("add_asset_from_url", "Add an image, sound or video by URL", "Fetch a public http(s) address into the "
            "media library. Pass the answer's `id` as a story's image or video field (create_video `fields`).", "POST", "/api/v1/assets/from-url",
            shape=results.asset_summary),
    ToolDef("list_assets", "List assets", "The media library, newest first, each with its `name`; one `kind`, names "
            "holding `q`, if asked; `next_cursor` as `cursor` for the next page.", "GET", "/api/v1/assets", read_only=True,
            shape=results.listed(results.asset_summary)),
    ToolDef("upload_asset", "Upload a file", "Upload an image, sound, video or captions (SRT, WebVTT) file of this "
            "machine to the media library; use its `id` as add_asset_from_url's.", "POST", "/api/v1/assets", {"path": UPLOAD_PATH},
            send=_upload_file, local_files=True, required=("path",)),
    ToolDef("get_job", "Get a job", "An asynchronous job's status, stage, progress and result.", "GET",
            "/api/v1/jobs/{job_id}", {"wait": WAIT, "timeout": TIMEOUT}, _follow_job, read_only=True),
)


@dataclass(frozen=True)
class Toolbox:
    """The tools with their schemas, ready to list and to call."""

    defs: dict[str, ToolDef]
    schemas: dict[str, InputSchema]

    @classmethod
    def from_openapi(cls, doc: dict[str, Any], *, local_files: bool = False) -> Toolbox:
        """The tools for the API that ``doc`` describes; ``local_files`` adds those reading this
        machine's files (``upload_asset``): a server over stdio runs beside its user, one over HTTP
        serves callers whose files are not on its disk, and must not hand its own out."""
        tools = [t for t in TOOLS if local_files or not t.local_files]
        return cls({t.name: t for t in tools}, {t.name: _made(doc, t) for t in tools})

    def listing(self) -> list[types.Tool]:
        return [types.Tool(name=t.name, title=t.title, description=t.description,
                           input_schema=self.schemas[t.name].schema,
                           # readOnlyHint is false unless said (the MCP specification's default)
                           annotations=types.ToolAnnotations(read_only_hint=t.read_only or None,
                                                             open_world_hint=False))
                for t in self.defs.values()]

    async def call(self, name: str, arguments: dict[str, Any], client: AsyncClient,
                   report: Report) -> types.CallToolResult:
        tool = self.defs.get(name)
        if tool is None:
            return error_result({"code": "unknown_tool", "message": f"no tool named {name!r}"})
        schema = self.schemas[name]
        problems = schema.problems(arguments if arguments is not None else {})
        if problems:
            named = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:3])
            return error_result({"code": "invalid_arguments", "message": f"{name}: {named}", "details": problems})
        path, body, options = schema.split(arguments)
        inv = Invocation(client, path, body, options, report, query=schema.query(arguments))
        try:
            answer = await (tool.send(inv) if tool.send is not None else _send(inv, tool))
            if tool.follow is not None:
                answer = await tool.follow(inv, answer)
            if tool.shape is not None and not options.get("full"):
                answer = tool.shape(answer)
        except APIConnectionError as exc:  # before APIError, its base
            return error_result({"code": "unavailable", "message": str(exc)})
        except APIError as exc:
            return error_result(exc.to_dict())
        except (TaskFailed, WaitTimeout) as exc:
            last = getattr(exc, "result", None) or getattr(exc, "last", None)
            return error_result({"code": "failed" if isinstance(exc, TaskFailed) else "timeout", "message": str(exc),
                                 "last": getattr(last, "raw", last)})
        except ReelfarmError as exc:
            return error_result({"code": "unavailable", "message": str(exc)})
        except OSError as exc:  # a local file (upload_asset) that cannot be read
            return error_result({"code": "unreadable_file", "message": f"cannot read {exc.filename}: "
                                                                       f"{exc.strerror or exc}"})
        return ok_result(answer, inv.images)


def _made(doc: dict[str, Any], tool: ToolDef) -> InputSchema:
    options = {**tool.options, "full": FULL} if tool.shape is not None else dict(tool.options)
    if "expected_version" in options and not _takes_if_match(doc, tool):
        del options["expected_version"]  # a server from before If-Match would ignore it: not offered
    made = input_schema(doc, tool.method, tool.path, options)
    if tool.required:
        made.schema["required"] = [*made.schema.get("required", []), *tool.required]
    return summarized(_noted(_short_patterns(made), {**NOTES, **tool.notes}), tool.summaries)


def _takes_if_match(doc: dict[str, Any], tool: ToolDef) -> bool:
    parameters = operation(doc, tool.method, tool.path).get("parameters", [])
    return any(p.get("in") == "header" and str(p.get("name")).lower() == "if-match" for p in parameters)


def _short_patterns(made: InputSchema) -> InputSchema:
    """``made`` without the long ``pattern`` of any argument: a regular expression of hundreds of
    characters (a URL's, a node pool's) tells an agent nothing and costs its context in every
    listing; the API still checks the value and names the argument that breaks it."""
    for prop in made.schema.get("properties", {}).values():
        if len(str(prop.get("pattern", ""))) > LONG_PATTERN:
            del prop["pattern"]
    return made


def _noted(made: InputSchema, notes: dict[str, str]) -> InputSchema:
    """``made`` with ``notes`` as the descriptions of the properties the API's document has; one it
    lacks (an older server) is not offered, since the API would refuse it."""
    props = made.schema.get("properties", {})
    for name, note in notes.items():
        if name in props:
            props[name] = {**props[name], "description": note}
    return made


def ok_result(answer: Any, images: list[types.ImageContent]) -> types.CallToolResult:
    structured = answer if isinstance(answer, dict) else {"data": answer}
    content: list[Any] = [types.TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))]
    return types.CallToolResult(content=[*content, *images], structured_content=structured)


def error_result(error: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps({"error": error}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content={"error": error}, is_error=True)
