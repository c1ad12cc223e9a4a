"""reelfarm's clients: a Python SDK, the ``reelfarm`` client commands and an MCP server.

They speak to the API over HTTP only (``/api/v1``) and import nothing of the server
(``api``, ``farm``, ``studio``, ``shared``, ``renderer``); a test walks the imports to keep it so.
Importable as ``client`` and as ``reelfarm.client``.

| module | what |
|---|---|
| ``sync`` / ``aio`` | ``Client`` and ``AsyncClient``: a resource per attribute, typed results |
| ``calls`` | every operation as a ``Call`` (method, path, body, parser), shared by both clients |
| ``http`` | the one I/O seam: retries, ``Idempotency-Key`` per logical POST, errors, downloads |
| ``literals`` | the API's value sets (formats, resolutions, fps, priorities, statuses) as ``Literal`` types |
| ``retry`` / ``waiting`` | when to retry and how long to wait; how waits poll (no I/O) |
| ``models`` / ``errors`` | dataclasses for the API's resources; the exception tree |
| ``config`` | key and URL from arguments, ``REELFARM_API_KEY``/``REELFARM_API_URL``, ``reelfarm login`` |
| ``webhooks`` | ``verify``: Standard Webhooks signatures |
| ``cli`` | the client commands of the ``reelfarm`` console script |
| ``mcp_server`` | ``reelfarm mcp``: tools for agents, schemas taken from the API's OpenAPI document |
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
"""This client's version, the ``reelfarm-client`` distribution's (``client/pyproject.toml``)."""

# Names load on first use, so the console script's client commands start without httpx.
_HOMES = {name: f"reelfarm.client.{module}" for module, names in {
    'aio': ('AsyncClient',),
    'sync': ('Client',),
    'calls': ('Page',),
    'retry': ('Retry', 'RetryEvent'),
    'errors': ('APIConnectionError', 'APIError', 'APIStatusError', 'APITimeoutError', 'AssetInUseError',
               'AuthenticationError', 'ConflictError',
               'IdempotencyMismatchError', 'InsufficientCreditsError', 'InternalServerError', 'NotFoundError',
               'PayloadTooLargeError', 'PermissionDeniedError', 'QuotaExceededError', 'RateLimitError', 'ReelfarmError', 'TaskFailed',
               'ValidationError', 'VersionConflictError', 'WaitTimeout'),
    'literals': ('AssetKind', 'Fps', 'PriorityName', 'Resolution', 'TaskStatusName', 'VideoFormat', 'VideoStatusName'),
    'models': ('Asset', 'AssetUpload', 'BrandKit', 'Job', 'Me', 'Priority', 'RateLimitState', 'Render', 'RenderCost',
               'RenderEstimate', 'RenderHeldUp', 'RenderQueue', 'ResponseInfo', 'Story', 'TaskStatus', 'Usage', 'Variants', 'VariantsEstimate', 'Version', 'Video', 'VideoStatus',
               'Webhook'),
    'webhooks': ('WebhookVerificationError', 'verify'),
}.items() for name in names}
__all__ = [
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "Asset",
    "AssetInUseError",
    "AssetKind",
    "AssetUpload",
    "AsyncClient",
    "AuthenticationError",
    "BrandKit",
    "Client",
    "ConflictError",
    "Fps",
    "IdempotencyMismatchError",
    "InsufficientCreditsError",
    "InternalServerError",
    "Job",
    "Me",
    "NotFoundError",
    "Page",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Priority",
    "PriorityName",
    "QuotaExceededError",
    "RateLimitError",
    "RateLimitState",
    "ReelfarmError",
    "Render",
    "RenderCost",
    "RenderEstimate",
    "RenderHeldUp",
    "RenderQueue",
    "Resolution",
    "ResponseInfo",
    "Retry",
    "RetryEvent",
    "Story",
    "TaskFailed",
    "TaskStatus",
    "TaskStatusName",
    "Usage",
    "ValidationError",
    "Variants",
    "VariantsEstimate",
    "Version",
    "VersionConflictError",
    "Video",
    "VideoFormat",
    "VideoStatus",
    "VideoStatusName",
    "WaitTimeout",
    "Webhook",
    "WebhookVerificationError",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'reelfarm.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # what type checkers see (at run time the names load lazily, above)
    from reelfarm.client.aio import AsyncClient
    from reelfarm.client.calls import Page
    from reelfarm.client.errors import (
        APIConnectionError,
        APIError,
        APIStatusError,
        APITimeoutError,
        AssetInUseError,
        AuthenticationError,
        ConflictError,
        IdempotencyMismatchError,
        InsufficientCreditsError,
        InternalServerError,
        NotFoundError,
        PayloadTooLargeError,
        PermissionDeniedError,
        QuotaExceededError,
        RateLimitError,
        ReelfarmError,
        TaskFailed,
        ValidationError,
        VersionConflictError,
        WaitTimeout,
    )
    from reelfarm.client.literals import (
        AssetKind,
        Fps,
        PriorityName,
        Resolution,
        TaskStatusName,
        VideoFormat,
        VideoStatusName,
    )
    from reelfarm.client.models import (
        Asset,
        AssetUpload,
        BrandKit,
        Job,
        Me,
        Priority,
        RateLimitState,
        Render,
        RenderCost,
        RenderEstimate,
        RenderHeldUp,
        RenderQueue,
        ResponseInfo,
        Story,
        TaskStatus,
        Usage,
        Variants,
        VariantsEstimate,
        Version,
        Video,
        VideoStatus,
        Webhook,
    )
    from reelfarm.client.retry import Retry, RetryEvent
    from reelfarm.client.sync import Client
    from reelfarm.client.webhooks import WebhookVerificationError, verify

