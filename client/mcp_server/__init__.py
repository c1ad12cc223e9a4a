"""``reelfarm mcp``: reelfarm's operations as MCP tools for agents.

The server calls the API over HTTP through ``AsyncClient``, so an agent's calls carry the same
key, workspace scoping, credits, rate limits and idempotency as any other client's. Tool input
schemas are cut from the API's own OpenAPI document, fetched at start (``schemas``): there is no
second copy to drift. ``tools`` holds the tool table and what each does; ``server`` wires them to
the MCP SDK's low-level ``Server`` over stdio (one key, from the environment) or streamable HTTP
(each request's own ``Authorization: Bearer`` key, so one server serves many workspaces).
"""
