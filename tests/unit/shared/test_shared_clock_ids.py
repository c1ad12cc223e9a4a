"""Clocks and identifiers."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from reelfarm.shared.clock import FixedClock, SystemClock
from reelfarm.shared.ids import is_uuid, new_event_id, new_id


def test_system_clock_is_aware_utc() -> None:
    now = SystemClock().now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)


def test_fixed_clock_stands_still_until_advanced() -> None:
    clock = FixedClock(datetime(2025, 1, 1, tzinfo=UTC))
    assert clock.now() == clock.now() == datetime(2025, 1, 1, tzinfo=UTC)
    assert clock.advance(90) == datetime(2025, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert clock.advance(days=1) == datetime(2025, 1, 2, 0, 1, 30, tzinfo=UTC)


def test_fixed_clock_converts_to_utc_and_refuses_naive_times() -> None:
    plus_two = timezone(timedelta(hours=2))
    clock = FixedClock(datetime(2025, 1, 1, 12, tzinfo=plus_two))
    assert clock.now() == datetime(2025, 1, 1, 10, tzinfo=UTC)
    assert clock.now().tzinfo == UTC
    with pytest.raises(ValueError):
        clock.set(datetime(2025, 1, 1))


def test_ids() -> None:
    row_id, event_id = new_id(), new_event_id()
    assert uuid.UUID(row_id).version == 4 and str(uuid.UUID(row_id)) == row_id
    assert event_id.startswith("evt_") and uuid.UUID(event_id[4:]).version == 4
    assert new_id() != new_id()


@pytest.mark.parametrize(("value", "expected"), [
    ("d775c602-331a-4d15-9da7-9d148af68385", True),  # fixed: parallel workers collect the same ids
    ("6F9619FF-8B86-D011-B42D-00C04FC964FF", True),
    ("6f9619ff8b86d011b42d00c04fc964ff", False),
    ("{6f9619ff-8b86-d011-b42d-00c04fc964ff}", False),
    ("1234-5678123456781234567812345678---", False),
    ("not-a-uuid", False),
    ("", False),
])
def test_is_uuid(value: str, expected: bool) -> None:
    assert is_uuid(value) is expected
