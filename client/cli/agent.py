"""``reelfarm mcp``: the MCP server for agents, over stdio or streamable HTTP."""
from __future__ import annotations

import sys

import click

from reelfarm.client.cli.account import _epilog


@click.command("mcp", epilog=_epilog(
    "REELFARM_API_KEY=rf_live_... reelfarm mcp",
    "reelfarm mcp --http --port 8808   # clients send `Authorization: Bearer rf_live_...`"))
@click.option("--http", "over_http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (--http).")
@click.option("--port", type=click.IntRange(1, 65535), default=8808, show_default=True, help="Port (--http).")
@click.option("--api-url", envvar="REELFARM_API_URL", metavar="URL", help="The reelfarm server to call.")
def mcp_command(over_http: bool, host: str, port: int, api_url: str | None) -> None:
    """Serve reelfarm's tools to AI agents over MCP.

    Over stdio the API key comes from REELFARM_API_KEY (or `reelfarm login`); over HTTP each
    request brings its own bearer key, so one server serves many workspaces. Tool input schemas
    are read from the API's OpenAPI document: over stdio at start (exit 3 if the API cannot be
    reached), over HTTP on first need, so the server comes up before the API does.
    """
    try:
        from reelfarm.client.mcp_server.server import serve_http, serve_stdio
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        raise click.ClickException("the MCP server needs the `mcp` package: pip install 'reelfarm-client[mcp]'")

    from reelfarm.client.cli.common import EXIT_API
    from reelfarm.client.errors import APIConnectionError

    try:
        if over_http:
            serve_http(api_url, host, port)
        else:
            serve_stdio(api_url)
    except APIConnectionError as exc:  # the API's document is needed for the tools' schemas
        click.echo(f"error: the reelfarm API is unreachable: {exc}", err=True)
        sys.exit(EXIT_API)
