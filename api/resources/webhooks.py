"""Webhook endpoints, their delivery log, redeliveries and test events."""
from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from reelfarm.api import examples as ex
from reelfarm.api.auth import current_workspace_id
from reelfarm.api.docs import WITH_BODY, errors
from reelfarm.api.schemas.webhooks import (
    WebhookCreatedSchema,
    WebhookCreateSchema,
    WebhookDeliveryListSchema,
    WebhookDeliverySchema,
    WebhookListSchema,
    WebhookPatchSchema,
    WebhookSchema,
)
from reelfarm.api.services import services

blp = Blueprint("webhooks", __name__, url_prefix="/api/v1", description="Webhook endpoints and their deliveries")


@blp.route("/webhooks")
class Webhooks(MethodView):
    @blp.arguments(WebhookCreateSchema, error_status_code=400, example=ex.REQUESTS["WebhookCreate"])
    @blp.response(201, WebhookCreatedSchema, example=ex.RESPONSES["WebhookCreated"])
    @blp.doc(operationId="createWebhook")
    @errors(blp, *WITH_BODY)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Register a webhook endpoint

        The answer carries the endpoint's signing `secret` (`whsec_...`); it is never shown again.
        The URL must be http(s) and its host a public address (400 at `/url` otherwise).
        """
        return services().webhooks.create(current_workspace_id(), url=body["url"], events=body.get("events"),
                                  description=body.get("description"))

    @blp.response(200, WebhookListSchema, example=ex.RESPONSES["WebhookList"])
    @blp.doc(operationId="listWebhooks")
    @errors(blp)
    def get(self) -> dict[str, Any]:
        """List webhook endpoints

        Oldest first; secrets are not shown.
        """
        return {"data": services().webhooks.list_all(current_workspace_id())}


@blp.route("/webhooks/<string:webhook_id>")
class Webhook(MethodView):
    @blp.response(200, WebhookSchema, example=ex.RESPONSES["Webhook"])
    @blp.doc(operationId="getWebhook")
    @errors(blp, 404)
    def get(self, webhook_id: str) -> dict[str, Any]:
        """Get a webhook endpoint"""
        return services().webhooks.get(current_workspace_id(), webhook_id)

    @blp.arguments(WebhookPatchSchema, error_status_code=400, example=ex.REQUESTS["WebhookPatch"])
    @blp.response(200, WebhookSchema, example=ex.RESPONSES["Webhook"])
    @blp.doc(operationId="updateWebhook")
    @errors(blp, 404, *WITH_BODY)
    def patch(self, body: dict[str, Any], webhook_id: str) -> dict[str, Any]:
        """Change a webhook endpoint

        `url`, `events`, `description`, `enabled`; enabling clears `disabled_reason`.
        """
        return services().webhooks.update(current_workspace_id(), webhook_id, body)

    @blp.response(204)
    @blp.doc(operationId="deleteWebhook")
    @errors(blp, 404)
    def delete(self, webhook_id: str) -> None:
        """Delete a webhook endpoint

        Its delivery log goes with it; attempts not yet sent are not sent.
        """
        services().webhooks.delete(current_workspace_id(), webhook_id)


@blp.route("/webhooks/<string:webhook_id>/deliveries")
class WebhookDeliveries(MethodView):
    @blp.response(200, WebhookDeliveryListSchema, example=ex.RESPONSES["DeliveryList"])
    @blp.doc(operationId="listWebhookDeliveries")
    @errors(blp, 404)
    def get(self, webhook_id: str) -> dict[str, Any]:
        """List an endpoint's delivery attempts

        The latest 100 attempts, newest first: one entry per attempt, with its status code,
        latency and error.
        """
        return {"data": services().webhooks.deliveries(current_workspace_id(), webhook_id)}


@blp.route("/webhooks/<string:webhook_id>/deliveries/<string:delivery_id>/redeliver")
class WebhookRedeliver(MethodView):
    @blp.response(202, WebhookDeliverySchema, example=ex.RESPONSES["Redelivery"])
    @blp.doc(operationId="redeliverWebhookDelivery")
    @errors(blp, 404, 409)
    def post(self, webhook_id: str, delivery_id: str) -> dict[str, Any]:
        """Send a delivery's event again

        Queues a new attempt of the same event (same `webhook-id`); 409 when the endpoint is disabled.
        """
        return services().webhook_sender.redeliver(current_workspace_id(), webhook_id, delivery_id)


@blp.route("/webhooks/<string:webhook_id>/test")
class WebhookTest(MethodView):
    @blp.response(202, WebhookDeliverySchema, example={**ex.RESPONSES["Redelivery"], "event_type": "webhook.test",
                                                        "attempt": 1})
    @blp.doc(operationId="sendWebhookTest")
    @errors(blp, 404, 409)
    def post(self, webhook_id: str) -> dict[str, Any]:
        """Send a test event

        Queues a `webhook.test` event to this endpoint only; 409 when the endpoint is disabled.
        """
        return services().webhook_sender.send_test(current_workspace_id(), webhook_id)
