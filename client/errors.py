"""What the client raises.

```
ReelfarmError                       anything the client raises
├── APIError                        the API did not do what was asked
│   ├── APIStatusError              it answered with its error envelope (status, code, message, details, request_id)
│   │   ├── ValidationError         400: ``details`` lists every problem (``field``: a JSON pointer, ``message``)
│   │   ├── AuthenticationError     401: no key, an unknown, revoked or expired key
│   │   ├── InsufficientCreditsError 402: the workspace's credits do not cover the render
│   │   ├── PermissionDeniedError   403: the plan or role does not allow it
│   │   ├── NotFoundError           404: no such resource in this workspace
│   │   ├── ConflictError           409: the resource's state does not allow it (or a key's request is in flight)
│   │   │   └── AssetInUseError     409 ``asset_in_use``: a version or a brand kit names the asset (the message says which)
│   │   ├── VersionConflictError    412 ``version_conflict``: an edit made from a version that is no longer current;
│   │   │                           ``current_version`` names the current one, nothing was saved
│   │   ├── PayloadTooLargeError    413 ``payload_too_large``: a file (or body) past a limit, however it was sent
│   │   ├── QuotaExceededError      413 ``quota_exceeded``: the upload would pass the plan's library quota; nothing was stored
│   │   ├── IdempotencyMismatchError 422: the ``Idempotency-Key`` was used with another request
│   │   ├── RateLimitError          429: ``retry_after`` seconds
│   │   └── InternalServerError     5xx
│   └── APIConnectionError          no answer, retries included (``url`` names where it went)
│       └── APITimeoutError         the answer did not come in time
├── WaitTimeout                     a wait ran past its timeout; ``.last`` is the last state seen
└── TaskFailed                      a render or job being waited for ended failed or canceled; ``.result`` is it
```

``str()`` of an error with details carries the first problems (pointer and message), so an
uncaught traceback shows why.
"""
from __future__ import annotations

from typing import Any

SHOWN_DETAILS = 3  # problems named in ``str()``; all of them are in ``.details``


class ReelfarmError(Exception):
    """Base of every error the client raises."""


class APIError(ReelfarmError):
    """The API did not do what was asked: an error answer, or no answer at all.

    ``status`` is None when no answer came (``APIConnectionError``).
    """

    def __init__(self, status: int | None, code: str, message: str, details: list[dict[str, Any]] | None = None,
                 request_id: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(_text(status, code, message, details))
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.request_id = request_id
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, Any]:
        """The envelope's ``error`` object, plus the HTTP status."""
        return {"status": self.status, "code": self.code, "message": self.message, "details": self.details,
                "request_id": self.request_id}


class APIStatusError(APIError):
    """The API answered with its error envelope (any 4xx or 5xx)."""

    status: int


class ValidationError(APIStatusError):
    """400: the request was refused; ``details`` lists every problem."""


class AuthenticationError(APIStatusError):
    """401: the API key is missing, unknown, revoked or expired."""


class InsufficientCreditsError(APIStatusError):
    """402: the workspace's credit balance is too small; nothing was created."""


class PermissionDeniedError(APIStatusError):
    """403: the workspace's plan or the key's role does not allow this."""


class NotFoundError(APIStatusError):
    """404: no such resource in this workspace."""


class ConflictError(APIStatusError):
    """409: the resource's state does not allow this now."""


class AssetInUseError(ConflictError):
    """409 ``asset_in_use``: a version of a video or a brand kit names the asset, so it is kept;
    the message names them."""


class VersionConflictError(APIStatusError):
    """412 ``version_conflict``: the edit or restore was made from a version of the video that is no
    longer its current one (someone saved another since it was read), so nothing was saved.
    ``current_version`` is the number of the current version: read the video again and make the
    change on that."""

    @property
    def current_version(self) -> int | None:
        for found in self.details or []:
            if isinstance(found, dict) and isinstance(found.get("current_version"), int):
                return int(found["current_version"])
        return None


class PayloadTooLargeError(APIStatusError):
    """413 ``payload_too_large``: the file (or the request's body) is past one of the API's limits;
    nothing was stored. The same error whichever way a file went (sent to the API, by a presigned
    upload, fetched from an address) and whichever limit it passed (bytes, pixels, seconds): the
    message names the limit, ``details[0]["field"]`` what was too large (``/file``, ``/bytes``,
    ``/url``). A 413 without the API's envelope (from a proxy in front of it) is one too."""


class QuotaExceededError(APIStatusError):
    """413 ``quota_exceeded``: the upload would take the media library past its plan's bytes;
    nothing was stored (the message gives the figures). Delete unused assets, or move to a larger plan."""


class IdempotencyMismatchError(APIStatusError):
    """422: this ``Idempotency-Key`` was already used with a different method, path or body (a key
    reused for another request); send a new key for a new request."""


class RateLimitError(APIStatusError):
    """429: too many requests; ``retry_after`` says how many seconds to wait."""


class InternalServerError(APIStatusError):
    """5xx: the server failed or is unavailable."""


class APIConnectionError(APIError):
    """No answer from the API (or a download link) after every retry; ``url`` is where it went."""

    def __init__(self, message: str, url: str | None = None) -> None:
        super().__init__(None, "connection_failed", message)
        self.url = url

    def __str__(self) -> str:
        return self.message


class APITimeoutError(APIConnectionError):
    """The API did not answer in time, retries included."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: ValidationError, 401: AuthenticationError, 402: InsufficientCreditsError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 412: VersionConflictError, 413: PayloadTooLargeError,
    422: IdempotencyMismatchError, 429: RateLimitError,
}

_BY_CODE: dict[tuple[int, str], type[APIStatusError]] = {(409, "asset_in_use"): AssetInUseError,
                                                          (413, "quota_exceeded"): QuotaExceededError}


def status_error(status: int, code: str, message: str, details: list[dict[str, Any]] | None = None,
                 request_id: str | None = None, retry_after: float | None = None) -> APIStatusError:
    """The ``APIStatusError`` subclass for ``status`` and ``code`` (a 4xx without one, 405 say, is a
    plain ``APIStatusError``)."""
    cls = _BY_CODE.get((status, code)) or _BY_STATUS.get(status) or (
        InternalServerError if status >= 500 else APIStatusError)
    return cls(status, code, message, details, request_id, retry_after)


def _text(status: int | None, code: str, message: str, details: list[dict[str, Any]] | None) -> str:
    head = f"{status} {code}: {message}" if status is not None else message
    problems = [d for d in details or [] if isinstance(d, dict)]
    if not problems:
        return head
    shown = "; ".join(f"{d.get('field') or '(body)'}: {d.get('message', '')}" for d in problems[:SHOWN_DETAILS])
    more = f" (and {len(problems) - SHOWN_DETAILS} more)" if len(problems) > SHOWN_DETAILS else ""
    return f"{head} {shown}{more}"


class WaitTimeout(ReelfarmError):
    """A wait for a render, job or video ran out of time."""

    def __init__(self, message: str, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


class TaskFailed(ReelfarmError):
    """A render or job ended ``failed`` or ``canceled``."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result
