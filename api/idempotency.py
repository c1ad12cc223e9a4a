"""`Idempotency-Key` on POST: the first answer is stored and replayed; nothing runs twice.

Hooks around the view, not inside it: ``begin_idempotent`` (after authentication) claims the key
or answers from its record; ``finish_idempotent`` stores the view's answer (4xx included) or,
for 5xx, releases the key so the client may retry.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import timedelta

from flask import Response, g, request
from sqlalchemy import Engine

from reelfarm.api.errors import ApiError, ConflictError, detail, invalid
from reelfarm.shared.clock import Clock
from reelfarm.shared.repos import idempotency as repo

log = logging.getLogger("reelfarm.api")

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
TTL = repo.KEY_TTL  # API.md: a key answers for 24 h; retention purges it after that
# How long a claim holds while its request runs; after that the request is presumed dead and
# the key usable again. Longer than any POST takes.
LEASE = timedelta(seconds=60)
# Headers set afresh on every response, never replayed.
_FRESH_HEADERS = {"x-request-id", "content-length", "date", "server", "set-cookie", REPLAYED.lower()}


class IdempotencyMismatch(ApiError):
    status, code = 422, "idempotency_key_mismatch"


@dataclass(frozen=True)
class _Claimed:
    workspace_id: str
    key: str


class Idempotency:
    """Claims, replays and stores answers for POSTs carrying an ``Idempotency-Key``."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def begin(self, workspace_id: str) -> Response | None:
        """The replayed answer, or None to run the view (the key, if any, is then claimed).

        Raises:
            ValidationFailed: the key is empty, too long or not printable ASCII.
            IdempotencyMismatch: the key was used with another method, path or body.
            ConflictError: the first request with the key is still executing.
        """
        key = request.headers.get(HEADER)
        if request.method != "POST" or key is None:
            return None
        _check_key(key)
        fingerprint = repo.Fingerprint(request.method, _path(), _body_hash(request.get_data(cache=True)))
        claim = repo.claim_key(self._engine, workspace_id, key, fingerprint, self._clock.now(), LEASE, TTL)
        if claim.claimed:
            g.idempotency_claim = _Claimed(workspace_id, key)
            return None
        record = claim.record
        assert record is not None
        if record.fingerprint != fingerprint:
            raise IdempotencyMismatch(
                "This Idempotency-Key was already used with a different method, path or body; "
                "use a new key for a different request.")
        if record.completed_at is None:
            raise ConflictError("A request with this Idempotency-Key is still executing; retry shortly.",
                                code="idempotency_key_in_use", headers={"Retry-After": "1"})
        return _replay(record)

    def finish(self, response: Response) -> None:
        """Store the claimed request's answer, or release the key on 5xx."""
        claimed: _Claimed | None = g.pop("idempotency_claim", None)
        if claimed is None:
            return
        try:
            if response.status_code >= 500:
                repo.release_key(self._engine, claimed.workspace_id, claimed.key)
                return
            headers = {name: value for name, value in response.headers.items()
                       if name.lower() not in _FRESH_HEADERS and not name.lower().startswith("ratelimit-")}
            repo.complete_key(self._engine, claimed.workspace_id, claimed.key, response.status_code,
                              response.get_data(), headers, self._clock.now())
        except Exception:  # the answer is already made; the lease frees the key later
            log.exception("could not store the idempotent answer (request_id=%s)", getattr(g, "request_id", None))

    def abandon(self) -> None:
        """Release a claim that no answer completed (the request ended without a response)."""
        claimed: _Claimed | None = g.pop("idempotency_claim", None)
        if claimed is not None:
            try:
                repo.release_key(self._engine, claimed.workspace_id, claimed.key)
            except Exception:
                log.exception("could not release an idempotency key; its lease will expire")


def _check_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all(" " <= ch <= "~" for ch in key):
        raise invalid([detail(HEADER, "invalid",
                              f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters")])


def _path() -> str:
    query = request.query_string.decode("latin-1")
    return f"{request.path}?{query}" if query else request.path


def _body_hash(raw: bytes) -> str:
    """SHA-256 of the body as canonical JSON (key order and spacing do not matter), else of its bytes."""
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode()
    except (ValueError, UnicodeDecodeError, RecursionError):
        canonical = raw
    return hashlib.sha256(canonical).hexdigest()


def _replay(record: repo.Record) -> Response:
    response = Response(record.response_body or b"", status=record.status_code)
    for name, value in (record.response_headers or {}).items():
        response.headers[name] = value
    response.headers[REPLAYED] = "true"
    return response
