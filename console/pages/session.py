"""Signing in and out: the sign-in page, one-time links, password change, and the catch-all.

A link's page (GET) only shows the form: mail scanners that open links do not use them up.
Posting a new password uses the link (once) and signs the person in.
"""

from __future__ import annotations

from typing import Any

from flask import abort, flash, g, redirect, render_template, request, url_for

from reelfarm.console import web
from reelfarm.console.blueprint import blp
from reelfarm.shared.accounts import AccountError, Throttled


@blp.route("")
@blp.route("/")
def home() -> Any:
    return redirect(url_for("console.videos" if g.user else "console.sign_in"))


@blp.route("/sign-in", methods=["GET", "POST"])
def sign_in() -> Any:
    target = web.safe_next(request.values.get("next"))
    if g.user is not None and request.method == "GET":
        return redirect(target)
    if request.method == "GET":
        return render_template("console/sign_in.html", next=target, email="")
    email = request.form.get("email", "")[:320]
    try:
        user = web.services().accounts.sign_in(email, request.form.get("password", "")[:2048],
                                               request.remote_addr or "")
    except Throttled as exc:
        return render_template("console/sign_in.html", next=target, email=email, error=str(exc)), 429, \
            {"Retry-After": str(exc.retry_after)}
    except AccountError as exc:
        return render_template("console/sign_in.html", next=target, email=email, error=str(exc)), 401
    web.start_session(user)
    return redirect(target)


@blp.route("/sign-in/link/<token>", methods=["GET", "POST"])
def link(token: str) -> Any:
    if len(token) > 100:
        abort(404)
    user = web.services().accounts.link_user(token)
    if user is None:
        return render_template("console/link.html", user=None, token=token), 410
    if request.method == "GET":
        return render_template("console/link.html", user=user, token=token)
    password = request.form.get("password", "")
    if password != request.form.get("confirm", ""):
        return render_template("console/link.html", user=user, token=token,
                               error="The two passwords are not the same."), 400
    try:
        user = web.services().accounts.use_link(token, password)
    except AccountError as exc:
        return render_template("console/link.html", user=user, token=token, error=str(exc)), 400
    web.start_session(user)
    flash("Your password is set. Welcome.", "ok")
    return redirect(url_for("console.videos"))


@blp.route("/sign-out", methods=["POST"])
def sign_out() -> Any:
    web.end_session()
    flash("You are signed out.", "ok")
    return redirect(url_for("console.sign_in"))


@blp.route("/account/password", methods=["GET", "POST"])
@web.signed_in
def password() -> Any:
    if request.method == "GET":
        return render_template("console/password.html")
    new = request.form.get("new", "")
    if new != request.form.get("confirm", ""):
        return render_template("console/password.html", error="The two new passwords are not the same."), 400
    try:
        user = web.services().accounts.change_password(g.workspace.id, g.user.id, request.form.get("current", ""),
                                                       new)
    except AccountError as exc:
        return render_template("console/password.html", error=str(exc)), 400
    web.start_session(user)  # the old stamp no longer matches: other sessions end, this one goes on
    flash("Your password is changed. Other sessions are signed out.", "ok")
    return redirect(url_for("console.password"))


@blp.route("/<path:rest>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(rest: str) -> Any:
    abort(404)
