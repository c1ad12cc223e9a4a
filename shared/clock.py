"""Time as a collaborator: every timestamp the service writes comes from a ``Clock``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Source of the current time."""

    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _aware_utc(start or datetime(2025, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float = 0.0, **kwargs: float) -> datetime:
        """Move forward by ``seconds`` plus any ``timedelta`` keywords; returns the new time."""
        self._now += timedelta(seconds=seconds, **kwargs)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = _aware_utc(when)


def _aware_utc(when: datetime) -> datetime:
    if when.tzinfo is None:
        raise ValueError("naive datetime: give a timezone-aware one")
    return when.astimezone(UTC)
