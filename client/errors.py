"""What the client raises.

```
ReelfarmError
├── APIError            the API answered with its error envelope (status, code, message, details, request_id)
├── APIConnectionError  the API could not be reached, retries included
├── WaitTimeout         a wait ran past its timeout; ``.last`` is the last state seen
└── TaskFailed          a render or job being waited for ended failed or canceled; ``.result`` is it
```
"""
from __future__ import annotations

from typing import Any


class ReelfarmError(Exception):
    """Base of every error the client raises."""


class APIError(ReelfarmError):
    """The API's error envelope, as raised for any 4xx or 5xx answer."""

    def __init__(self, status: int, code: str, message: str, details: list[dict[str, Any]] | None = None,
                 request_id: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
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


class APIConnectionError(ReelfarmError):
    """No answer from the API after every retry."""


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
