"""Checking a webhook's Standard Webhooks signature with the ``standardwebhooks`` library."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

__all__ = ["WebhookVerificationError", "verify"]


def verify(payload: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The event, once its ``webhook-signature`` matches ``secret`` (``whsec_...``) and its timestamp is fresh.

    Raises:
        WebhookVerificationError: a missing or wrong signature, or a timestamp over five minutes off.
    """
    body = payload.decode("utf-8") if isinstance(payload, bytes) else payload
    event = Webhook(secret).verify(body, {k.lower(): v for k, v in headers.items()})
    return dict(event)
