"""A create form's sendings: the one-use token it carries, and one thing made however often it is sent.

A form that makes something (a video from a story or a brief, a brand kit, a webhook endpoint)
carries ``FIELD``, a token from ``reelfarm.shared.formtokens`` made when the form is drawn, and
kept when the form is drawn again with its problems or a preview. Its view makes the thing inside
``with sending() as sent:``; when the same form was sent before (Back, then submit again; a second
click), ``sent.before`` names the page that shows what that sending made, and the view goes
there (``made_before``) instead of making another. A form sent without a token (a page drawn
before forms had one) makes its thing as it always did.

The pages that draw a create form afresh (a new video's, a new brand kit's) are kept by the
browser (``kept``: ``KEEP``, as a thumbnail is), so Back brings the same form, token and all,
rather than a fresh one. A page that shows a secret once (the webhooks list) is never kept, so its
form is a fresh one after Back; its second click and a resubmitted post are caught all the same.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import abort, current_app, flash, g, redirect, request

from reelfarm.console import web
from reelfarm.shared import formtokens
from reelfarm.shared.formtokens import Sending

__all__ = ["FIELD", "Sending", "form_token", "kept", "made_before", "sending"]

FIELD = "form_token"
KEEP = "private, no-cache"  # kept for Back; asked for afresh on any other visit (``web.secure_headers``)
SENT_BEFORE = "This form was sent already; here is what it made."


def form_token() -> str:
    """The token of the form being drawn: the one it was sent with when it is drawn again, else a fresh one."""
    sent = request.form.get(FIELD, "") if request.method == "POST" else ""
    return sent if formtokens.well_formed(sent) else formtokens.issue()


@contextmanager
def sending() -> Iterator[Sending]:
    """This request's sending of its form, in the signed-in workspace (``FormTokens.sending``).

    Raises:
        werkzeug.exceptions.Conflict: an earlier sending of the form is still making its thing
            (after a wait), or the token came with another form.
    """
    token = request.form.get(FIELD)
    with web.services().form_tokens.sending(g.workspace.id, request.path, token) as sent:
        if sent.before is not None and sent.before.page is None:
            abort(409, description="This form was sent already, and what it makes is not ready yet: "
                                   "look for it again in a moment.")
        yield sent


def made_before(sent: Sending, show_once: str | None = None) -> Any:
    """The answer to a form sent again: to the page that shows what its first sending made (with
    what that page shows once, kept under ``show_once``), with a word that nothing new was made."""
    assert sent.before is not None and sent.before.page is not None
    if show_once is not None and sent.before.shown is not None:
        web.show_once(show_once, {k: str(v) for k, v in sent.before.shown.items()})
    flash(SENT_BEFORE, "ok")
    return redirect(sent.before.page, code=303)


def kept(answer: Any) -> Any:
    """``answer`` (a view's page, or page and status) marked to be kept by the browser for Back (``KEEP``)."""
    page, status = answer if isinstance(answer, tuple) else (answer, 200)
    response = current_app.make_response((page, status))
    response.headers["Cache-Control"] = KEEP
    return response
