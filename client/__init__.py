"""reelfarm's clients: a Python SDK, the ``reelfarm`` client commands and an MCP server.

They speak to the API over HTTP only (``/api/v1``) and import nothing of the server
(``api``, ``farm``, ``studio``, ``shared``, ``renderer``); a test walks the imports to keep it so.
Importable as ``client`` and as ``reelfarm.client``.

| module | what |
|---|---|
| ``sync`` / ``aio`` | ``Client`` and ``AsyncClient``: a resource per attribute, typed results |
| ``calls`` | every operation as a ``Call`` (method, path, body, parser), shared by both clients |
| ``http`` | the one I/O seam: retries, ``Idempotency-Key`` per logical POST, errors, downloads |
| ``retry`` / ``waiting`` | when to retry and how long to wait; how waits poll (no I/O) |
| ``models`` / ``errors`` | dataclasses for the API's resources; the exception tree |
| ``config`` | key and URL from arguments, ``REELFARM_API_KEY``/``REELFARM_API_URL``, ``reelfarm login`` |
| ``webhooks`` | ``verify``: Standard Webhooks signatures |
| ``cli`` | the client commands of the ``reelfarm`` console script |
| ``mcp_server`` | ``reelfarm mcp``: tools for agents, schemas taken from the API's OpenAPI document |
"""
from __future__ import annotations

import importlib
from typing import Any

# Names load on first use, so the console script's client commands start without httpx.
_HOMES = {
    "AsyncClient": "reelfarm.client.aio", "Client": "reelfarm.client.sync", "Page": "reelfarm.client.calls", "Retry": "reelfarm.client.retry",
    "APIConnectionError": "reelfarm.client.errors", "APIError": "reelfarm.client.errors", "ReelfarmError": "reelfarm.client.errors",
    "TaskFailed": "reelfarm.client.errors", "WaitTimeout": "reelfarm.client.errors",
    "BrandKit": "reelfarm.client.models", "Job": "reelfarm.client.models", "Me": "reelfarm.client.models", "Render": "reelfarm.client.models",
    "Story": "reelfarm.client.models", "Variants": "reelfarm.client.models", "Version": "reelfarm.client.models", "Video": "reelfarm.client.models",
    "Webhook": "reelfarm.client.models", "WebhookVerificationError": "reelfarm.client.webhooks", "verify": "reelfarm.client.webhooks",
}
__all__ = [
    "APIConnectionError", "APIError", "AsyncClient", "BrandKit", "Client", "Job", "Me", "Page", "ReelfarmError",
    "Render", "Retry", "Story", "TaskFailed", "Variants", "Version", "Video", "WaitTimeout", "Webhook",
    "WebhookVerificationError", "verify",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'reelfarm.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
