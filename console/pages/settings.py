"""Settings: the plan, credits and ledger; API keys (create, shown once; revoke with confirmation).

A new key (and a new person's sign-in link) is shown once, on the page the form post redirects
to: it crosses the redirect encrypted in the session (``web.show_once``) and is gone from it once
shown, so a reload shows only the key's prefix and makes nothing. It is never put in a URL or a
log, and the database keeps only its hash. Everyone in the workspace sees the keys' names and
prefixes; owners create and revoke them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import abort, flash, g, redirect, render_template, request, url_for

from reelfarm.console import forms, web
from reelfarm.console.blueprint import blp
from reelfarm.shared.accounts import EmailTaken
from reelfarm.shared.apikeys import ApiKey
from reelfarm.shared.ids import is_uuid
from reelfarm.shared.storage import public_base

EXPIRY_CHOICES = (("", "Never"), ("30", "In 30 days"), ("90", "In 90 days"), ("365", "In a year"))
MAX_NAME = 200


def _page(status: int = 200, **extra: Any) -> Any:
    svc = web.services()
    ws = g.workspace
    keys = svc.api_keys.list(ws.id)
    ledger = svc.read_models.ledger(ws.id)
    people = svc.accounts.people(ws.id) if g.user.is_owner else []
    rate = svc.settings.rate_limit_for(ws.plan)
    library = svc.assets.usage(ws.id)
    now = svc.clock.now()
    keys = sorted(keys, key=lambda k: (not k.is_active(now), -k.created_at.timestamp()))
    return render_template("console/settings.html", keys=keys, ledger=ledger, rate=rate, now=now, people=people,
                           library=library, expiry_choices=EXPIRY_CHOICES, **extra), status


@blp.route("/settings")
@web.signed_in
def settings() -> Any:
    key, link = web.take_once("key"), web.take_once("link")
    shown: dict[str, Any] = {}
    if key:
        shown.update(new_key=key["key"], new_key_name=key["name"])
    if link:
        shown.update(new_link=link["link"], new_person_email=link["email"])
    return _page(**shown)


@blp.route("/settings/keys", methods=["POST"])
@web.owner_only
def key_create() -> Any:
    name = request.form.get("name", "").strip()
    days = request.form.get("expires", "")
    problems = {}
    if not name:
        problems["name"] = f"Give the key a name of 1 to {MAX_NAME} characters."
    elif too_long := forms.too_long("Name", name, MAX_NAME):  # said, not cut by the browser
        problems["name"] = too_long
    if days not in {c for c, _ in EXPIRY_CHOICES}:
        problems["expires"] = "Choose one of the listed expiries."
    if problems:
        return _page(400, problems=problems, form=request.form)
    record, key = web.services().api_keys.create(g.workspace.id, name, timedelta(days=int(days)) if days else None)
    web.show_once("key", {"key": key, "name": record.name})
    return redirect(url_for("console.settings") + "#keys", code=303)


def _own_key(key_id: str) -> ApiKey:
    if not is_uuid(key_id):
        abort(404)
    return web.services().api_keys.get(g.workspace.id, key_id)


@blp.route("/settings/keys/<key_id>/revoke", methods=["GET", "POST"])
@web.owner_only
def key_revoke(key_id: str) -> Any:
    key = _own_key(key_id)
    if request.method == "GET":
        return render_template("console/key_revoke.html", key=key)
    web.services().api_keys.revoke(g.workspace.id, key.id)
    flash(f"The key “{key.name}” ({key.prefix}…) is revoked. Requests with it now get 401.", "ok")
    return redirect(url_for("console.settings") + "#keys")


@blp.route("/settings/people", methods=["POST"])
@web.owner_only
def person_invite() -> Any:
    email = request.form.get("email", "").strip()
    role = request.form.get("role", "member")
    if role not in ("owner", "member"):
        abort(400)
    try:
        made = web.services().accounts.create_user(g.workspace.id, email, role=role,
                                               public_url=public_base(web.services().settings.public_url))
    except (EmailTaken, ValueError):
        return _page(400, problems={"email": "This address cannot be invited: it is not an email address, "
                                             "or it already has an account."}, invite_email=email)
    web.show_once("link", {"link": made.link, "email": made.user.email})
    return redirect(url_for("console.settings") + "#people", code=303)
