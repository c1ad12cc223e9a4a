"""The MCP tools: each is one API operation (its input schema from the OpenAPI document), some
with a follow-up of their own (wait for a render with progress, fetch stills as images). A tool may
word a body property's description for agents (when to ask for ``priority: "low"``); the property
itself, its type and its values, stay the document's, and one the document lacks is not offered.
A property whose schema is large and found elsewhere (a story's ``fields``, a whole ``doc``) is
summed up in a sentence saying where (``reelfarm.client.mcp_server.schemas.summarized``).

A tool that changes a video (``update_video``, ``restore_version``) takes ``expected_version``, the
version number the change was made from, and sends it as ``If-Match``: a change made from a video
that someone has changed since fails with ``version_conflict`` and saves nothing. It is offered only
where the API's document says the operation takes ``If-Match``.

A tool's answer is the API's JSON, as text and as structured content; for videos, renders and
versions a summary of it unless ``full`` is asked for (``reelfarm.client.mcp_server.results``);
stills come back as PNG image content as well. An API error becomes a tool error carrying the
API's status, code, message, details and request id.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
WAIT = {"type": "boolean", "default": False,
        "description": "Wait until it has finished, reporting progress; otherwise return at once."}
TIMEOUT = {"type": "number", "minimum": 1, "maximum": 3600, "default": 600,
           "description": "Seconds to wait at most when `wait` is true."}
FULL = {"type": "boolean", "default": False,
        "description": "Return the API's whole answer (a video's full VideoDoc, every field); otherwise a summary: "
                       "ids, status, title, URLs, version number."}
FIELDS = ("The story's values, an object: its JSON Schema is that story's `fields` in list_stories (defaults fill "
          "what is left out). The API names each problem with its JSON pointer.")
FIELDS_PATCH = ("Story values to change, an object: its JSON Schema is the video's story's `fields` in "
                "list_stories. Each change is a new version.")
DOC = ("A complete VideoDoc replacing the current one (a new version). Start from get_video with `full: true` "
       "(`current_version.doc`) and change what you need; its JSON Schema is the `VideoDoc` component of "
       "/api/v1/openapi.json. The API names each problem with its JSON pointer.")
EXPECTED_VERSION = {"type": "integer", "minimum": 1,
                    "description": "The version number this change was made from (`version` in the get_video answer "
                                   "you read; `current_version.number` with `full`). The change is made only if the video is still at that version; "
                                   "if someone saved another since, nothing is saved and the tool fails with "
                                   "`version_conflict`, whose `details[0].current_version` is the current one: read "
                                   "the video again and make the change on that. Leave it out to change whatever "
                                   "version is current (a `fields` change merges into it)."}
# Said to agents over the API's own description of a body property (the schema stays the API's).
PRIORITY = ('"normal" (the default) or "low". Use "low" for large batches (many variants or formats, bulk '
            're-renders): a workspace\'s low-priority renders yield to its normal ones, so renders a person is '
            'waiting for are not held up behind the batch. While a render waits, its `queue` says how many frames '
            'are ahead of it and when it should start.')


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


async def _send(inv: Invocation, tool: ToolDef) -> Any:
    path = tool.path.format(**{k: quote(str(v), safe="") for k, v in inv.path.items()})
    expected = inv.options.get("expected_version")
    call = Call(tool.method.upper(), path.removeprefix("/api/v1"), lambda answer: answer, body=inv.body,
                params=inv.query, headers={"If-Match": etag(expected)} if expected is not None else None)
    return await inv.client._t.run(call)


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
    ToolDef("list_stories", "List stories", "The built-in stories (video templates). Each story's `fields` is the "
            "JSON Schema of the values create_video accepts with its `storyId`.", "GET", "/api/v1/stories",
            read_only=True),
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
    ToolDef("update_video", "Update a video", "Change story `fields` or send a complete `doc` (each a new version), "
            "or rename with `title`; a change that leaves the document as it is makes no version. Pass "
            "`expected_version` (where offered) when the change was made from a video you read.", "PATCH", "/api/v1/videos/{video_id}",
            {"expected_version": EXPECTED_VERSION}, summaries={"fields": FIELDS_PATCH, "doc": DOC}, shape=VIDEO),
    ToolDef("list_versions", "List versions", "A video's versions, oldest first: number, source, note, lint warnings "
            "(`full`: each with its VideoDoc).", "GET", "/api/v1/videos/{video_id}/versions", read_only=True,
            shape=results.listed(results.version_summary)),
    ToolDef("restore_version", "Restore a version", "Make an earlier version current again (as a new version; "
            "nothing is lost); with `expected_version` (where offered), only if no one has saved another version "
            "since you read it.",
            "POST", "/api/v1/videos/{video_id}/versions/{number}/restore", {"expected_version": EXPECTED_VERSION},
            shape=VIDEO),
    ToolDef("render_video", "Render a video", "Render the current version to MP4 (uses credits once per version). "
            "With `wait`, progress is reported (with the render's place in the farm's queue while it waits) and "
            "the finished render with its URL is returned.", "POST", "/api/v1/videos/{video_id}/renders",
            {"wait": WAIT, "timeout": TIMEOUT}, _follow_render, notes={"priority": PRIORITY}, shape=RENDER),
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
    ToolDef("add_asset_from_url", "Add an image or sound by URL", "The server fetches a public http(s) address and "
            "stores the image or sound in the workspace's media library (checked by its bytes; the same bytes are "
            "the one asset). Name it in a VideoDoc by its `key`.", "POST", "/api/v1/assets/from-url",
            shape=results.asset_summary),
    ToolDef("list_assets", "List assets", "The media library's images and sounds, newest first, of one `kind` if "
            "asked (pass `next_cursor` as `cursor` for the next page).", "GET", "/api/v1/assets", read_only=True,
            shape=results.listed(results.asset_summary)),
    ToolDef("get_job", "Get a job", "An asynchronous job's status, stage, progress and result.", "GET",
            "/api/v1/jobs/{job_id}", {"wait": WAIT, "timeout": TIMEOUT}, _follow_job, read_only=True),
)


@dataclass(frozen=True)
class Toolbox:
    """The tools with their schemas, ready to list and to call."""

    defs: dict[str, ToolDef]
    schemas: dict[str, InputSchema]

    @classmethod
    def from_openapi(cls, doc: dict[str, Any]) -> Toolbox:
        defs = {t.name: t for t in TOOLS}
        return cls(defs, {t.name: _made(doc, t) for t in TOOLS})

    def listing(self) -> list[types.Tool]:
        return [types.Tool(name=t.name, title=t.title, description=t.description,
                           input_schema=self.schemas[t.name].schema,
                           annotations=types.ToolAnnotations(read_only_hint=t.read_only, open_world_hint=False))
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
            answer = await _send(inv, tool)
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
        return ok_result(answer, inv.images)


def _made(doc: dict[str, Any], tool: ToolDef) -> InputSchema:
    options = {**tool.options, "full": FULL} if tool.shape is not None else dict(tool.options)
    if "expected_version" in options and not _takes_if_match(doc, tool):
        del options["expected_version"]  # a server from before If-Match would ignore it: not offered
    made = input_schema(doc, tool.method, tool.path, options)
    return summarized(_noted(made, tool.notes), tool.summaries)


def _takes_if_match(doc: dict[str, Any], tool: ToolDef) -> bool:
    parameters = operation(doc, tool.method, tool.path).get("parameters", [])
    return any(p.get("in") == "header" and str(p.get("name")).lower() == "if-match" for p in parameters)


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
