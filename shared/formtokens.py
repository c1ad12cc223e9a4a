"""One-use tokens of the console's create forms: a form sent twice makes one thing.

A create form (a new video from a story or a brief, a brand kit, a webhook endpoint) carries a
token made when the form is drawn (``issue``). Sending the form claims its token in the workspace
of the session that sent it, as the API's ``Idempotency-Key`` claims a key, in the same records
(``reelfarm.shared.repos.idempotency``: key ``form:<token>``, the form's path, no body): the first
sending makes the thing and records the page that shows it (``Sending.made``); the same form sent
again (Back, then submit again; a second click) is told that page instead of making another,
after waiting a little for the first while it is still making it. A sending that makes nothing
(the form had problems, the service refused it) gives the token back, so the form can be
corrected and sent again.

A token stands for the form, not for its values: a form changed after it was sent still leads to
what its first sending made; a fresh form has a fresh token. Records are the workspace's own: a
token another workspace's session sent is a fresh token here, and leads to nothing of the other's.
They expire as the API's keys do (``KEY_TTL``); a claim held ``LEASE`` by a sending that died is
taken over by the next.
"""
from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import idempotency as repo

LEASE = timedelta(seconds=60)  # longer than any create takes, as the API's
POLL_SEC = 0.2
MAX_TOKEN = 64
_KEY_PREFIX = "form:"


def issue() -> str:
    """A fresh token for a form being drawn."""
    return secrets.token_urlsafe(24)


def well_formed(token: str) -> bool:
    """Whether ``token`` could be one ``issue`` made (anything else is no token)."""
    return 0 < len(token) <= MAX_TOKEN and all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in token)


@dataclass(frozen=True)
class Before:
    """What an earlier sending of the form did: the page that shows what it made, and what that
    page shows once (a secret) when the sending kept it; or, with ``page`` None, that it is still
    making it (or the token came with another form)."""

    page: str | None
    shown: dict[str, Any] | None = None


class Sending:
    """One sending of a form: ``before`` (an earlier sending's ``Before``, or None when this one
    makes the thing) and ``made``, which records what this one made."""

    def __init__(self, before: Before | None = None) -> None:
        self.before = before
        self.page: str | None = None
        self.shown: dict[str, Any] | None = None

    def made(self, page: str, shown: dict[str, Any] | None = None) -> str:
        """Record ``page`` (returned) as showing what this sending made, with what it shows once."""
        self.page, self.shown = page, shown
        return page


class FormTokens:
    """Claims and records the sendings of the console's create forms (see the module docstring)."""

    def __init__(self, engine: Engine, clock: Clock, wait_sec: float = 10.0) -> None:
        self.engine = engine
        self.clock = clock
        self.wait_sec = wait_sec  # how long a sending waits for an earlier one still making its thing

    @contextmanager
    def sending(self, workspace_id: str, form: str, token: str | None) -> Iterator[Sending]:
        """The sending of the form at path ``form`` with ``token``: claimed for its block, recorded
        when the block called ``made``, given back when it did not (or raised). Without a well
        formed token, a sending of its own that nothing records."""
        if token is None or not well_formed(token):
            yield Sending()
            return
        key = _KEY_PREFIX + token
        before = self._claim(workspace_id, key, repo.Fingerprint("POST", form, ""))
        sending = Sending(before)
        if before is not None:
            yield sending
            return
        try:
            yield sending
        except BaseException:
            repo.release_key(self.engine, workspace_id, key)
            raise
        if sending.page is None:
            repo.release_key(self.engine, workspace_id, key)
            return
        body = json.dumps(sending.shown).encode("utf-8") if sending.shown is not None else b""
        repo.complete_key(self.engine, workspace_id, key, 303, body, {"Location": sending.page}, self.clock.now())

    def _claim(self, workspace_id: str, key: str, fingerprint: repo.Fingerprint) -> Before | None:
        """None when claimed; else what the sending before did, once it has done it or ``wait_sec`` passed."""
        deadline = time.monotonic() + self.wait_sec
        while True:
            claim = repo.claim_key(self.engine, workspace_id, key, fingerprint, self.clock.now(), LEASE, repo.KEY_TTL)
            record = claim.record
            if claim.claimed or record is None:
                return None
            if record.fingerprint != fingerprint:
                return Before(None)
            if record.completed_at is not None:
                headers = record.response_headers or {}
                shown = json.loads(record.response_body) if record.response_body else None
                return Before(str(headers.get("Location", "")) or None, shown)
            if time.monotonic() >= deadline:
                return Before(None)
            time.sleep(POLL_SEC)
