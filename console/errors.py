"""The console's error pages, and what a refused action tells the person who asked.

Handlers are registered on the blueprint: Flask tries a blueprint's handlers, for every class
of an error, before the app's, so console routes answer in HTML while ``/api/v1`` keeps its
JSON envelope. A domain error from a form post
(not enough credits, a video still generating, a refused brief) goes back to the page it came
from as a message; the same error on a page load is an error page. An unreachable database is
a 503 page; anything unexpected is logged and a 500 page says so without details.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, flash, jsonify, redirect, render_template, request
from werkzeug.exceptions import HTTPException

from reelfarm.farm.services.errors import (
    FarmError,
    InvalidRequest,
    QueueUnavailable,
    StateConflict,
    is_database_outage,
)
from reelfarm.shared.errors import InsufficientCredits, NotFound
from reelfarm.studio.errors import BriefRejected, InvalidFieldsError, StudioError, VersionConflict
from reelfarm.studio.videos import DocLintError, VideoStateError

log = logging.getLogger("reelfarm.console")

TITLES = {400: "Bad request", 401: "Sign in first", 403: "Not allowed", 404: "Not found",
          405: "Not found", 409: "Not possible now", 413: "Too large", 429: "Slow down",
          500: "Something went wrong", 503: "Unavailable"}
DOMAIN_ERRORS = (NotFound, InsufficientCredits, FarmError, StudioError)


def describe(exc: Exception) -> str:
    """A sentence for a person about a refused action."""
    if isinstance(exc, InsufficientCredits):
        return "Not enough credits for this render. Add credits, or render a version that is already paid for."
    if isinstance(exc, QueueUnavailable):
        return "The render queue is unavailable; nothing was started. Try again shortly."
    if isinstance(exc, BriefRejected):
        return f"The brief was refused: {exc.reason}"
    if isinstance(exc, (InvalidFieldsError, InvalidRequest, DocLintError)):
        details = getattr(exc, "details", None) or []
        return "; ".join(f"{d.get('field', '').lstrip('/') or 'value'}: {d.get('message')}" for d in details) \
            or str(exc)
    if isinstance(exc, VersionConflict):
        return (f"Version {exc.current} of this video was saved since this page was opened, so nothing was done: "
                f"look at version {exc.current} and try again if it is still wanted.")
    if isinstance(exc, NotFound):
        return f"No such {getattr(exc, 'kind', 'object').replace('_', ' ')} in this workspace."
    return str(exc)


def page(status: int, message: str) -> Any:
    """The error page (or, for the script's ``.json`` requests, a small JSON body)."""
    if request.path.endswith(".json"):
        return jsonify({"error": {"status": status, "message": message}}), status
    title = TITLES.get(status, "Error")
    return render_template("console/error.html", status=status, title=title, message=message), status


def install(blp: Blueprint) -> None:
    """Flask looks through a blueprint's handlers (for any class of the error) before the app's."""
    blp.register_error_handler(HTTPException, _http)
    blp.register_error_handler(Exception, _unexpected)


def _http(exc: HTTPException) -> Any:
    status = exc.code or 500
    if status in (404, 405):
        return page(404, "There is nothing here, or it belongs to another workspace.")
    message = exc.description if status in (400, 401, 403, 413, 429) and exc.description else TITLES.get(status, "")
    if status == 401:
        message = "Your session has ended. Sign in again."
    if status == 413:
        limit = (request.max_content_length or 0) / (1024 * 1024)
        message = (f"What was sent is larger than the {limit:g} MB this server takes in one request, so nothing "
                   "was saved. Go back and choose a smaller file.")
    return page(status, message)


def _domain(exc: Exception) -> Any:
    if request.method == "POST" and not isinstance(exc, NotFound) and not request.path.endswith(".json"):
        flash(describe(exc), "error")
        return redirect(_back())
    if request.method == "POST" and request.path.endswith(".json"):
        return page(409 if isinstance(exc, (VideoStateError, StateConflict, VersionConflict)) else 400, describe(exc))
    if isinstance(exc, NotFound):
        return page(404, "There is nothing here, or it belongs to another workspace.")
    return page(409, describe(exc))


def _back() -> str:
    back = request.form.get("back", "")
    return back if back.startswith("/app") and not back.startswith("//") else request.path.rsplit("/", 1)[0]


def _unexpected(exc: Exception) -> Any:
    if isinstance(exc, HTTPException):
        return _http(exc)
    if isinstance(exc, DOMAIN_ERRORS):
        return _domain(exc)
    if is_database_outage(exc):
        log.warning("database unavailable: %s", exc)
        return page(503, "The database cannot be reached right now. Try again in a few seconds.")
    log.exception("console error on %s %s", request.method, request.path)
    return page(500, "Something went wrong on our side. It has been logged.")
