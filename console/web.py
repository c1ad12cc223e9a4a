"""Sessions, CSRF, access rules and response headers for every console request.

Sessions are Flask's signed cookies (``reelfarm_session``: ``HttpOnly``, ``SameSite=Lax``,
``Secure`` when the request came over https or the public URL is https), signed with a key
derived from the service's secret for this use only. A session names the user and carries a
stamp of their password hash, so changing the password ends every other session; it lasts
at most ``SESSION_DAYS``. Only the cookie opens the console: an ``Authorization`` header is
never read here, and the API never reads the cookie, so neither credential works for the other.

A secret shown once (a new API key, a webhook's signing secret, an invitation link) is made by a
form post and shown by the page that post redirects to, so reloading that page makes nothing
new: ``show_once`` puts it in the session encrypted (the cookie is signed, not encrypted, and
browsers keep it on disk), and ``take_once`` takes it out on the next page, which alone shows it.

CSRF: every session holds a random token; every POST must send it back, as the form field
``csrf_token`` or the ``X-CSRF-Token`` header (the script's requests), compared in constant
time. A POST whose ``Origin`` names another site is refused too.

Each signed-in request counts against a per-user window in the API's rate limiter (the plan's
API rate, or ``CONSOLE_RATE`` for plans without one). Pages answer with a strict
Content-Security-Policy (scripts and styles only from the app itself), no framing, and
``Cache-Control: no-store`` (but for a response its view marked ``private``: a story's thumbnail,
kept by the browser of the signed-in person only).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode, urlsplit

from cryptography.fernet import Fernet, InvalidToken
from flask import Flask, Response, abort, current_app, g, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface

from reelfarm.console.ports import ConsoleServices
from reelfarm.shared.accounts import User
from reelfarm.shared.config import RateLimit

log = logging.getLogger("reelfarm.console")

SESSION_COOKIE = "reelfarm_session"
SESSION_DAYS = 7
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
ONCE_FIELD = "once"
ONCE_TTL_SEC = 600  # a secret not shown within 10 minutes of its making is dropped
REFRESH_PARAM = "refresh"
CONSOLE_RATE = RateLimit(limit=600, window_sec=60)
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# A render watched as it renders plays through hls.js: Media Source buffers (blob: media), the
# playlist and its segments fetched by script (from this server, or presigned from S3), and its
# transmuxing worker (blob:).
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https: http:; "
       "media-src 'self' blob: https: http:; font-src 'self'; connect-src 'self' https: http:; "
       "worker-src 'self' blob:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")


class ConsoleSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, ``Secure`` whenever the console is reached over https."""

    salt = "reelfarm-console-session"

    def get_cookie_secure(self, app: Flask) -> bool:
        public = str(app.config.get("REELFARM_PUBLIC_URL", ""))
        return bool(request and request.is_secure) or public.startswith("https://")


SERVICES = "REELFARM_CONSOLE_SERVICES"  # app.config: the function that answers the app's services


def services() -> ConsoleServices:
    """The app's services, found as the API's views find them: the composition root
    (``reelfarm/app.py``) puts the API's lookup, ``reelfarm.api.services.services``, in the app's
    config under ``SERVICES`` before it registers the console, which imports nothing of the API."""
    return current_app.config[SERVICES]()


def configure(app: Flask) -> None:
    """Session settings on the app (once, when the console is registered)."""
    with app.app_context():
        settings = services().settings
    secret = settings.secret_key.encode("utf-8")
    app.secret_key = hmac.new(secret, b"reelfarm console sessions", hashlib.sha256).hexdigest()
    app.session_interface = ConsoleSessionInterface()
    app.config.update(SESSION_COOKIE_NAME=SESSION_COOKIE, SESSION_COOKIE_HTTPONLY=True,
                      SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_PATH="/app",
                      PERMANENT_SESSION_LIFETIME=timedelta(days=SESSION_DAYS),
                      # the cookie goes out only with a change: a poll that set out while a flash or a
                      # key shown once waited would otherwise bring it back after the page showed it
                      # (a session lasts SESSION_DAYS from sign-in whatever its cookie says)
                      SESSION_REFRESH_EACH_REQUEST=False,
                      REELFARM_PUBLIC_URL=settings.public_url)


# -- the session ---------------------------------------------------------------------------

def _stamp(user: User) -> str:
    key = current_app.secret_key.encode("utf-8") if isinstance(current_app.secret_key, str) else b""
    return hmac.new(key, (user.password_hash or "").encode("utf-8"), hashlib.sha256).hexdigest()[:24]


def start_session(user: User) -> None:
    """Sign ``user`` in: a fresh session (new CSRF token) naming them."""
    session.clear()
    session.permanent = True
    session["uid"] = user.id
    session["stamp"] = _stamp(user)
    session["since"] = int(services().clock.now().timestamp())
    session[CSRF_FIELD] = secrets.token_urlsafe(32)


def end_session() -> None:
    session.clear()


def load_user() -> User | None:
    """The signed-in user of this request, or None (a stale or tampered session is dropped)."""
    uid = session.get("uid")
    if not uid:
        return None
    user = services().accounts.get(uid)
    age = services().clock.now().timestamp() - float(session.get("since", 0))
    if user is None or not hmac.compare_digest(str(session.get("stamp", "")), _stamp(user)) \
            or age > SESSION_DAYS * 86400:
        session.clear()
        return None
    return user


def _once_cipher() -> Fernet:
    """Fernet (AES-128-CBC with HMAC-SHA256: authenticated) under a key derived from the session
    secret for this use only."""
    secret = current_app.secret_key
    key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret or b"")
    derived = hmac.new(key, b"reelfarm console secrets shown once", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(derived))


def show_once(kind: str, value: dict[str, str]) -> None:
    """Keep ``value`` (a secret and what names it) for the next page that asks for ``kind``."""
    sealed = _once_cipher().encrypt(json.dumps(value).encode("utf-8"))
    session.setdefault(ONCE_FIELD, {})[kind] = sealed.decode("ascii")
    session.modified = True


def take_once(kind: str) -> dict[str, str] | None:
    """The value ``show_once`` kept for ``kind``, removed from the session; None if there is none."""
    kept = session.get(ONCE_FIELD) or {}
    if kind not in kept:
        return None
    sealed = kept.pop(kind)
    if kept:
        session[ONCE_FIELD] = kept
    else:
        session.pop(ONCE_FIELD, None)
    session.modified = True
    try:
        value = json.loads(_once_cipher().decrypt(str(sealed).encode("ascii"), ttl=ONCE_TTL_SEC))
    except (InvalidToken, ValueError):
        return None
    return value if isinstance(value, dict) else None


def refresh_url(anchor: str = "") -> str:
    """This page again, for a meta refresh, with its ``refresh`` count raised by one.

    A refresh to the page's own address only scrolls when the address ends in an anchor (the
    server sees no request); an address that differs in its query is loaded again.
    """
    args = [(k, v) for k, v in request.args.items(multi=True) if k != REFRESH_PARAM]
    count = request.args.get(REFRESH_PARAM, "0")
    args.append((REFRESH_PARAM, str(int(count) % 1000 + 1 if count.isdigit() and len(count) < 5 else 1)))
    return f"{request.path}?{urlencode(args)}{anchor}"


def csrf_token() -> str:
    """This session's CSRF token (made on first use, so the sign-in form has one too)."""
    token = session.get(CSRF_FIELD)
    if not token:
        token = session[CSRF_FIELD] = secrets.token_urlsafe(32)
    return str(token)


def check_csrf() -> None:
    """Refuse (403) a state-changing request without this session's token or from another origin."""
    if request.method in _SAFE_METHODS:
        return
    origin = request.headers.get("Origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.host:
        abort(403, description="This form came from another site.")
    sent = request.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER) or ""
    expected = session.get(CSRF_FIELD) or ""
    if not expected or not hmac.compare_digest(str(sent), str(expected)):
        abort(403, description="The form had expired or was not sent from this console. Reload the page and "
                               "try again.")


def count_request(user: User) -> None:
    """Count the request in the user's rate window; 429 over it (fails open like the API)."""
    svc = services()
    plan = g.workspace.plan
    rate = svc.settings.rate_limit_for(plan) or CONSOLE_RATE
    try:
        quota = svc.rate_limiter.hit(f"console:{user.id}", rate)
    except Exception as exc:  # noqa: BLE001 - whatever the counter's store fails with, the console fails open
        log.warning("console rate limiter unavailable, request not counted: %s", exc)
        return
    if not quota.allowed:
        abort(429, description=f"Too many requests from this session; wait {quota.retry_after} s.")


# -- access rules --------------------------------------------------------------------------

def signed_in(view: Callable[..., Any]) -> Callable[..., Any]:
    """The view needs a signed-in user; others are sent to the sign-in page."""
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if g.get("user") is None:
            if request.method in _SAFE_METHODS and not request.path.endswith(".json"):
                return redirect(url_for("console.sign_in", next=request.full_path.rstrip("?")))
            abort(401)
        return view(*args, **kwargs)
    return wrapper


def owner_only(view: Callable[..., Any]) -> Callable[..., Any]:
    """Owners manage the workspace's secrets (API keys, webhooks); members get 403."""
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not g.user.is_owner:
            abort(403, description="Only the workspace's owners can manage this.")
        return view(*args, **kwargs)
    return signed_in(wrapper)


def operator_only(view: Callable[..., Any]) -> Callable[..., Any]:
    """The farm pages: operators only; everyone else gets 403."""
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not g.user.is_operator:
            abort(403, description="The farm pages are for operators.")
        return view(*args, **kwargs)
    return signed_in(wrapper)


def safe_next(target: str | None) -> str:
    """A same-site path under /app to go to after signing in, never an outside address."""
    if target and target.startswith("/app") and not target.startswith("//") and "\\" not in target:
        return target
    return url_for("console.videos")


def secure_headers(response: Response) -> Response:
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    # static files, and images a view marked ``private`` (a story's thumbnail), may be kept
    if request.endpoint != "console.static" and not response.headers.get("Cache-Control", "").startswith("private"):
        response.headers["Cache-Control"] = "no-store"
    return response
