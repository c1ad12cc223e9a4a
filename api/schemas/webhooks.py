"""Webhook endpoints and their delivery log: the endpoint a client reads (with its secret once, on
create), the create and PATCH bodies, and one delivery attempt."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate, validates_schema

from reelfarm.api.contract import WEBHOOK_URL, Pattern, pattern_meta
from reelfarm.api.schemas.common import RequestSchema, require_change
from reelfarm.shared.statuses import DELIVERY_STATES
from reelfarm.studio.webhooks import EVENT_KINDS as WEBHOOK_EVENT_KINDS

_WEBHOOK_URL_ERROR = "must be an absolute http:// or https:// URL"
_EVENTS_DESCRIPTION = "event kinds to receive; absent, null or empty means every kind"


class WebhookSchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    url = fields.String(required=True)
    description = fields.String(required=True, allow_none=True)
    events = fields.List(fields.String(), required=True, metadata={"description": _EVENTS_DESCRIPTION})
    enabled = fields.Boolean(required=True)
    disabled_reason = fields.String(required=True, allow_none=True,
                                    metadata={"description": "why it was disabled (e.g. it answered 410 Gone)"})
    created_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)


class WebhookCreatedSchema(WebhookSchema):
    secret = fields.String(required=True, metadata={
        "description": "`whsec_...` signing secret (Standard Webhooks); shown only in this response"})


class WebhookListSchema(Schema):
    data = fields.List(fields.Nested(WebhookSchema), required=True)


class WebhookCreateSchema(RequestSchema):
    url = fields.String(required=True, validate=[validate.Length(1, 2048), Pattern(WEBHOOK_URL, _WEBHOOK_URL_ERROR)],
                        metadata=pattern_meta(WEBHOOK_URL,
                                              description="absolute http(s) URL whose host is a public address"))
    events = fields.List(fields.String(validate=validate.OneOf(WEBHOOK_EVENT_KINDS)), allow_none=True,
                         validate=validate.Length(max=len(WEBHOOK_EVENT_KINDS) * 2),
                         metadata={"description": _EVENTS_DESCRIPTION})
    description = fields.String(allow_none=True, validate=validate.Length(max=500))


class WebhookPatchSchema(RequestSchema):
    url = fields.String(validate=[validate.Length(1, 2048), Pattern(WEBHOOK_URL, _WEBHOOK_URL_ERROR)],
                        metadata=pattern_meta(WEBHOOK_URL))
    events = fields.List(fields.String(validate=validate.OneOf(WEBHOOK_EVENT_KINDS)), allow_none=True,
                         validate=validate.Length(max=len(WEBHOOK_EVENT_KINDS) * 2),
                         metadata={"description": _EVENTS_DESCRIPTION})
    description = fields.String(allow_none=True, validate=validate.Length(max=500))
    enabled = fields.Boolean()

    @validates_schema
    def changes_something(self, data: dict[str, Any], **_: Any) -> None:
        require_change(data, "url, events, description or enabled")


class WebhookDeliverySchema(Schema):
    id = fields.String(required=True, metadata={"format": "uuid"})
    event_id = fields.String(required=True, metadata={"description": "`evt_...`, also the `webhook-id` header"})
    event_type = fields.String(required=True)
    attempt = fields.Integer(required=True, metadata={"description": "1 for the first try of the event"})
    state = fields.String(required=True, validate=validate.OneOf(DELIVERY_STATES))
    status_code = fields.Integer(required=True, allow_none=True)
    latency_ms = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True)
    created_at = fields.DateTime(required=True)
    next_attempt_at = fields.DateTime(required=True, allow_none=True, metadata={
        "description": "pending: when it will be tried; failed: when the next attempt is due"})


class WebhookDeliveryListSchema(Schema):
    data = fields.List(fields.Nested(WebhookDeliverySchema), required=True)
