"""The MCP server: the toolbox on the MCP SDK's low-level ``Server``, over stdio or streamable HTTP.

Keys: over stdio one key serves the whole session (``REELFARM_API_KEY`` or ``reelfarm login``);
over HTTP every request must bring ``Authorization: Bearer rf_live_...`` (401 without one) and
each tool call uses that request's key, so one server serves many workspaces and never lends its
own key to anyone. The API itself checks the key on every call (a revoked key gets the API's
``unauthorized`` back as a tool error). HTTP runs stateless: no session outlives its request, and
progress notifications ride the request's own event stream.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from reelfarm.client import config
from reelfarm.client.aio import AsyncClient
from reelfarm.client.errors import APIConnectionError
from reelfarm.client.mcp_server.schemas import fetch_openapi, fetch_openapi_async
from reelfarm.client.mcp_server.tools import Toolbox, error_result

INSTRUCTIONS = ("reelfarm makes videos. Pick a story (list_stories) and create_video with its fields, or give a "
                "brief; render_video (wait=true reports progress) returns an MP4 URL; render_stills shows frames. "
                "Answers about videos, renders and versions are summaries; full=true returns the whole document.")
KeyOf = Callable[[ServerRequestContext[Any]], str | None]


class LazyToolbox:
    """The toolbox, built from the API's document on first need and kept: a server started while
    the API is down comes up anyway, and each request until the API answers is told so."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._toolbox: Toolbox | None = None
        self._lock = anyio.Lock()

    async def get(self) -> Toolbox:
        async with self._lock:
            if self._toolbox is None:
                self._toolbox = Toolbox.from_openapi(await fetch_openapi_async(self.base_url))
            return self._toolbox


def build_server(toolbox: Toolbox | LazyToolbox, base_url: str, key_of: KeyOf) -> Server[Any]:
    """An MCP server whose tool calls go to ``base_url`` with the key ``key_of`` finds for the request."""

    async def tools() -> Toolbox:
        return await toolbox.get() if isinstance(toolbox, LazyToolbox) else toolbox

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        try:
            return types.ListToolsResult(tools=(await tools()).listing())
        except APIConnectionError as exc:  # a protocol error: a listing has no room for a tool error
            raise MCPError(types.INTERNAL_ERROR, f"the reelfarm API is unreachable: {exc}", {"url": exc.url}) from exc

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        key = key_of(ctx)
        if not key:
            return error_result({"status": 401, "code": "unauthorized", "message": "No API key."})
        try:
            toolbox_now = await tools()
        except APIConnectionError as exc:
            return error_result({"code": "unavailable", "message": f"the reelfarm API is unreachable: {exc}",
                                 "url": exc.url})

        async def report(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        async with AsyncClient(api_key=key, base_url=base_url) as client:
            return await toolbox_now.call(params.name, params.arguments or {}, client, report)

    return Server("reelfarm", version="1", instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def bearer(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, or None."""
    scheme, _, key = (authorization or "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


def _request_key(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    return bearer(headers.get("authorization")) if headers is not None else None


def require_bearer(app: Any) -> Any:
    """ASGI wrapper: a request to /mcp without a bearer key gets 401 in the API's error envelope."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not bearer(headers.get("authorization")):
                body = json.dumps({"error": {"code": "unauthorized", "message": "Send Authorization: Bearer "
                                             "<API key>.", "details": None, "request_id": None}}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def serve_stdio(api_url: str | None) -> None:
    """Serve one client over stdin/stdout with the environment's (or login file's) key."""
    from mcp.server.stdio import stdio_server

    found = config.resolve(None, api_url)
    server = build_server(Toolbox.from_openapi(fetch_openapi(found.base_url), local_files=True), found.base_url,
                          lambda _ctx: found.api_key)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def serve_http(api_url: str | None, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``; every request brings its own key."""
    import uvicorn

    base_url = config.resolve(None, api_url).base_url
    server = build_server(LazyToolbox(base_url), base_url, _request_key)
    app = server.streamable_http_app(stateless_http=True, host=host)
    uvicorn.run(require_bearer(app), host=host, port=port, log_level="warning", lifespan="on")
