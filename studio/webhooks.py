"""Webhook endpoints: register, read, change and remove them, and read their delivery log.

Each endpoint has its own signing secret, ``whsec_`` + base64 of 24 random bytes (the form
Standard Webhooks libraries take); it is returned once, by ``create``, and never shown again.
A URL must be absolute http(s) and pass the SSRF guard's address rule (``SafeFetcher.vet``)
when it is saved (a loopback or private address is refused then, not only at delivery); delivery
checks it again on every attempt, since DNS answers change.
Sending (the outbox dispatcher, attempts, retries, tests) lives in ``reelfarm.farm.runtime.webhooks``.
"""
from __future__ import annotations

import base64
import secrets
from typing import Any

from sqlalchemy import Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.db import transaction
from reelfarm.shared.repos import webhooks as repo
from reelfarm.studio.errors import FetchFailed, InvalidFieldsError
from reelfarm.studio.fetch import FetchRefused, SafeFetcher, normalize_url

EVENT_KINDS = ("video.generated", "video.generation_failed", "render.completed", "render.failed",
               "brand_kit.extracted", "comment.created", "comment.deleted", "webhook.test")
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
_EDITABLE = ("url", "events", "description", "enabled")


def new_secret() -> str:
    """A fresh signing secret, ``whsec_<base64 of 24 random bytes>``."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def endpoint_resource(endpoint: repo.Endpoint) -> dict[str, Any]:
    """The API's Webhook; never with its secret."""
    return {"id": endpoint.id, "url": endpoint.url, "description": endpoint.description,
            "events": list(endpoint.events), "enabled": endpoint.enabled, "disabled_reason": endpoint.disabled_reason,
            "created_at": endpoint.created_at, "updated_at": endpoint.updated_at}


def delivery_resource(delivery: repo.Delivery) -> dict[str, Any]:
    """The API's WebhookDelivery: one attempt."""
    return {"id": delivery.id, "event_id": delivery.event_id, "event_type": delivery.event_type,
            "attempt": delivery.attempt, "state": delivery.state, "status_code": delivery.status_code,
            "latency_ms": delivery.latency_ms, "error": delivery.error, "created_at": delivery.created_at,
            "next_attempt_at": delivery.next_attempt_at}


class WebhookService:
    """Endpoints of a workspace; ``fetcher`` is the SSRF guard URLs are vetted with."""

    def __init__(self, engine: Engine, clock: Clock, fetcher: SafeFetcher) -> None:
        self.engine = engine
        self.clock = clock
        self.fetcher = fetcher

    def create(self, workspace_id: str, *, url: str, events: list[str] | None = None,
               description: str | None = None) -> dict[str, Any]:
        """A new enabled endpoint, with its ``secret`` (shown this once). Raises InvalidFieldsError (``/url``)."""
        url = self.vet_url(url)
        with transaction(self.engine) as conn:
            endpoint = repo.create_endpoint(conn, self.clock, workspace_id=workspace_id, url=url,
                                            events=_unique(events or []), description=description,
                                            secret=new_secret())
        return {**endpoint_resource(endpoint), "secret": endpoint.secret}

    def list_all(self, workspace_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [endpoint_resource(e) for e in repo.list_endpoints(conn, workspace_id)]

    def get(self, workspace_id: str, endpoint_id: str) -> dict[str, Any]:
        """Raises NotFound."""
        with self.engine.connect() as conn:
            return endpoint_resource(repo.get_endpoint(conn, workspace_id, endpoint_id))

    def update(self, workspace_id: str, endpoint_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Change url, events, description or enabled. Raises NotFound or InvalidFieldsError (``/url``).

        Enabling clears ``disabled_reason``; disabling records that it was done on request.
        """
        values = {k: v for k, v in changes.items() if k in _EDITABLE}
        if "url" in values:
            values["url"] = self.vet_url(values["url"])
        if "events" in values:
            values["events"] = _unique(values["events"] or [])
        if "enabled" in values:
            values["disabled_reason"] = None if values["enabled"] else "disabled through the API"
        with transaction(self.engine) as conn:
            return endpoint_resource(repo.update_endpoint(conn, self.clock, workspace_id, endpoint_id, **values))

    def delete(self, workspace_id: str, endpoint_id: str) -> None:
        """Raises NotFound."""
        with transaction(self.engine) as conn:
            repo.delete_endpoint(conn, workspace_id, endpoint_id)

    def deliveries(self, workspace_id: str, endpoint_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The endpoint's latest attempts, newest first. Raises NotFound."""
        with self.engine.connect() as conn:
            repo.get_endpoint(conn, workspace_id, endpoint_id)
            return [delivery_resource(d) for d in repo.list_deliveries(conn, endpoint_id, limit)]

    def vet_url(self, url: str) -> str:
        """``url`` stripped, if it is an absolute http(s) URL whose host is not (and does not now
        resolve to) a loopback, private or otherwise non-public address.

        A host that does not resolve yet is accepted: where it leads is checked again by the SSRF
        guard on every delivery, when the address is resolved and connected to, so a URL whose host
        later resolves to a private address is never sent anything either (each refused attempt is
        in the endpoint's delivery log).
        """
        url = url.strip()
        if not url.lower().startswith(("http://", "https://")):
            raise _bad_url("invalid_url", "must be an absolute http:// or https:// URL")
        try:
            normalize_url(url)
        except FetchRefused as exc:
            raise _bad_url("invalid_url", str(exc)) from None
        try:
            self.fetcher.vet(url)
        except FetchRefused as exc:
            raise _bad_url("invalid_url", f"{exc}; webhooks are delivered to public internet addresses only") from None
        except FetchFailed:
            pass  # not resolvable now: every delivery checks again
        return url


def _unique(events: list[str]) -> list[str]:
    return list(dict.fromkeys(events))


def _bad_url(code: str, message: str) -> InvalidFieldsError:
    return InvalidFieldsError([{"field": "/url", "code": code, "message": message}])
