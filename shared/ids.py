"""Identifiers: UUID4 strings for rows, ``evt_<uuid>`` for events."""

from __future__ import annotations

import re
import uuid

EVENT_PREFIX = "evt_"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def new_id() -> str:
    """A fresh row id: a lowercase UUID4 string (36 characters)."""
    return str(uuid.uuid4())


def new_event_id() -> str:
    """A fresh event id, ``evt_`` followed by a UUID4 (the same on every delivery retry)."""
    return EVENT_PREFIX + str(uuid.uuid4())


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID in canonical 36-character form (any case)."""
    return _UUID.fullmatch(value) is not None
