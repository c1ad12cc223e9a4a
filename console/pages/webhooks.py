"""Webhooks (owners): endpoints, the signing secret shown once, test events, deliveries, redelivery.

A new endpoint's signing secret is shown once, on the list the form post redirects to
(``web.show_once``), so a reload adds no second endpoint; the form carries a one-use token
(``reelfarm.console.sendings``), so a second click or a resubmitted post adds none either, and
shows the first one's secret.

The same ``WebhookService`` and ``WebhookSender`` as ``/api/v1/webhooks``: URLs vetted the same
way, every attempt in the endpoint's delivery log, redeliveries with the same ``webhook-id``.
"""

from __future__ import annotations

from typing import Any

from flask import abort, flash, g, redirect, render_template, request, url_for

from reelfarm.console import forms, sendings, web
from reelfarm.console.blueprint import blp
from reelfarm.shared.ids import is_uuid
from reelfarm.studio.errors import InvalidFieldsError
from reelfarm.studio.webhooks import EVENT_KINDS

MAX_URL = 2048  # the API's limits (``api.schemas.webhooks``)
MAX_DESCRIPTION = 500


def _id(value: str) -> str:
    if not is_uuid(value):
        abort(404)
    return value


def _list_page(status: int = 200, **extra: Any) -> Any:
    endpoints = web.services().webhooks.list_all(g.workspace.id)
    return render_template("console/webhooks.html", endpoints=endpoints, events=EVENT_KINDS, **extra), status


@blp.route("/webhooks")
@web.owner_only
def webhooks() -> Any:
    made = web.take_once("webhook")
    if made is None:
        return _list_page()
    return _list_page(new_secret=made["secret"], new_endpoint_url=made["url"])


@blp.route("/webhooks", methods=["POST"])
@web.owner_only
def webhook_create() -> Any:
    with sendings.sending() as sent:
        if sent.before is not None:
            return sendings.made_before(sent, show_once="webhook")
        return _endpoint_made(sent)


def _endpoint_made(sent: sendings.Sending) -> Any:
    """Text over a field's limit is named beside it with everything typed kept, never cut."""
    events = [e for e in request.form.getlist("events") if e in EVENT_KINDS]
    description = request.form.get("description", "").strip()
    url = request.form.get("url", "")
    typed = {"typed_url": url, "typed_description": description, "typed_events": events}
    url_error = forms.too_long("Endpoint URL", url.strip(), MAX_URL)
    description_error = forms.too_long("Description", description, MAX_DESCRIPTION)
    if url_error or description_error:
        return _list_page(400, url_error=url_error, description_error=description_error, **typed)
    try:
        made = web.services().webhooks.create(g.workspace.id, url=url, events=events, description=description or None)
    except InvalidFieldsError as exc:
        message = "; ".join(d.get("message", "") for d in exc.details)
        return _list_page(400, url_error=f"This address cannot be used: {message}.", **typed)
    shown = {"secret": made["secret"], "url": made["url"]}
    web.show_once("webhook", shown)
    return redirect(sent.made(url_for("console.webhooks"), shown), code=303)


@blp.route("/webhooks/<webhook_id>")
@web.owner_only
def webhook(webhook_id: str) -> Any:
    svc = web.services()
    endpoint = svc.webhooks.get(g.workspace.id, _id(webhook_id))
    deliveries = svc.webhooks.deliveries(g.workspace.id, webhook_id, limit=50)
    return render_template("console/webhook.html", endpoint=endpoint, deliveries=deliveries,
                           auto_refresh=3 if any(d["state"] == "pending" for d in deliveries) else None)


@blp.route("/webhooks/<webhook_id>/test", methods=["POST"])
@web.owner_only
def webhook_test(webhook_id: str) -> Any:
    web.services().webhook_sender.send_test(g.workspace.id, _id(webhook_id))
    flash("A webhook.test event is on its way; its attempt appears below.", "ok")
    return redirect(url_for("console.webhook", webhook_id=webhook_id), code=303)


@blp.route("/webhooks/<webhook_id>/deliveries/<delivery_id>/redeliver", methods=["POST"])
@web.owner_only
def webhook_redeliver(webhook_id: str, delivery_id: str) -> Any:
    web.services().webhook_sender.redeliver(g.workspace.id, _id(webhook_id), _id(delivery_id))
    flash("The event is queued again, with the same webhook-id.", "ok")
    return redirect(url_for("console.webhook", webhook_id=webhook_id), code=303)


@blp.route("/webhooks/<webhook_id>/enabled", methods=["POST"])
@web.owner_only
def webhook_enable(webhook_id: str) -> Any:
    enabled = request.form.get("enabled") == "1"
    web.services().webhooks.update(g.workspace.id, _id(webhook_id), {"enabled": enabled})
    flash("The endpoint is enabled." if enabled else "The endpoint is disabled.", "ok")
    return redirect(url_for("console.webhook", webhook_id=webhook_id), code=303)


@blp.route("/webhooks/<webhook_id>/delete", methods=["POST"])
@web.owner_only
def webhook_delete(webhook_id: str) -> Any:
    web.services().webhooks.delete(g.workspace.id, _id(webhook_id))
    flash("The endpoint is deleted.", "ok")
    return redirect(url_for("console.webhooks"), code=303)
