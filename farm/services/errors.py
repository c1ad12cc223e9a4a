"""Errors raised by the farm package.

Hierarchy::

    FarmError                  base of everything farm/ raises on purpose
    ├── QueueUnavailable       the queue backend (Redis, or the database behind the embedded
    │                          queue) cannot be reached; nothing was left behind (API: 503)
    ├── InvalidRequest         (also a ValueError) arguments a client sent are out of range;
    │                          ``details`` lists ``{"field", "code", "message"}`` (API: 400)
    ├── StateConflict          the render or job is in a state that forbids the action;
    │                          ``code`` is ``conflict`` (API: 409)
    ├── PlanFeatureUnavailable the workspace's plan does not include what was asked for
    │                          (translated copies: Pro and Agency) (API: 403)
    ├── QuotaExceeded          an upload would take the workspace's media library past its
    │                          plan's bytes; nothing was stored (API: 413 ``quota_exceeded``)
    ├── AllowanceExceeded      a render would take the workspace's CPU seconds this month past
    │                          its compute allowance; nothing was made (API: 402 ``allowance_exceeded``)
    └── TaskFailed             a task met a problem the user can act on (an unreadable asset);
        │                      its message is what the render's or job's ``error`` shows
        └── AssetUnreachable   (also a RuntimeError) a remote asset could not be fetched for a
                               reason that may pass (an unresolvable host, a timeout, a 5xx):
                               the queue retries; when it gives up, the message (naming the
                               asset, the reason and what to change) is the render's ``error``

The services also raise ``reelfarm.shared.errors.NotFound`` (404), ``reelfarm.shared.errors.InsufficientCredits``
(402), ``reelfarm.studio.videos.VideoStateError`` (409 ``video_not_ready`` / ``conflict``) and
``reelfarm.studio.errors.VersionConflict`` (412 ``version_conflict``: an edit made from a version that is
no longer current). None of these carries HTTP knowledge; ``api/`` maps them.
"""

from __future__ import annotations

from reelfarm.farm.services.media_sizes import file_size
from reelfarm.shared.db import database_outage


class FarmError(Exception):
    """Base class of every error the farm package raises deliberately."""


class QueueUnavailable(FarmError):
    """The queue backend cannot be reached; the request that needed it changed nothing."""


class InvalidRequest(FarmError, ValueError):
    """A request's arguments are invalid; ``details`` holds every problem, not only the first."""

    def __init__(self, details: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{d['field']}: {d['message']}" for d in details))
        self.details = details


class StateConflict(FarmError):
    """The object's status forbids the action (cancel a finished render, for instance)."""

    def __init__(self, message: str, code: str = "conflict") -> None:
        super().__init__(message)
        self.code = code


class PlanFeatureUnavailable(FarmError):
    """The workspace's plan does not include the feature; the message says which plans do."""


class QuotaExceeded(FarmError):
    """The media library would pass its plan's quota with this upload; the message gives the figures."""

    def __init__(self, used: int, limit: int, size: int) -> None:
        super().__init__(f"The media library holds {file_size(used)} of its {file_size(limit)}; this upload "
                         f"({file_size(size)}) would pass the plan's quota. Delete assets no video or brand kit uses, "
                         "or move to a larger plan.")
        self.used, self.limit, self.size = used, limit, size


class AllowanceExceeded(FarmError):
    """A render request would pass the workspace's monthly compute allowance; the message gives the figures."""

    def __init__(self, allowance: float, used: float, estimate: float) -> None:
        super().__init__(f"This render would pass the workspace's monthly compute allowance of {allowance:g} CPU "
                         f"seconds: {used:g} are used this month (renders in flight counted at their estimates) and it "
                         f"is estimated at {estimate:g}. Ask an "
                         "operator to raise the allowance, or wait for next month.")
        self.allowance, self.used, self.estimate = allowance, used, estimate


class TaskFailed(FarmError):
    """A task failed for a reason the user can act on; the message is shown to them as is."""


class AssetUnreachable(TaskFailed, RuntimeError):
    """A remote asset could not be fetched, perhaps for a moment: retried, then shown as is."""


def is_database_outage(exc: BaseException) -> bool:
    """The database refused, dropped or timed out the connection (``shared.db.database_outage``):
    the views answer 503 for it, the farm waits it out (``farm/runtime/resilience.py``)."""
    return database_outage(exc) is not None
