"""When a render node is set aside, and when one of its chunks is stuck: pure policies over plain values.

A node whose chunks keep failing through its own fault (a broken GPU, a full scratch disk) would
take chunk after chunk and fail each, spending the retries of renders that other nodes could
finish. So each node has a ``Standing``: how many chunks in a row failed on it through its own
fault (``failures``), the last such failure (``failure``), and until when it is set aside
(``until``, seconds since the epoch; 0: it takes work).

- A chunk failure that is the node's fault counts one more; at ``SetAsidePolicy.after`` in a row
  (``REELFARM_NODE_SETASIDE_AFTER``, default 3) the node is set aside for ``cooldown_sec``
  (``REELFARM_NODE_COOLDOWN_SEC``, default 600 s): it takes no work until then.
- A chunk that succeeds on it starts it afresh (``Standing()``: the count at 0).
- When the cool-down is over the node takes work again on probation: its count is still at or
  past ``after``, so the next failure sets it aside again at once, and the next success clears it.
- An operator's clear (``reelfarm node clear NAME``) starts it afresh (``Standing()``).
- The last node still taking work is never set aside (``others_working`` false): when every node
  fails, the fault is the farm's (a bad release, a shared service down), not a node's, and setting
  them all aside would only leave renders waiting where they should fail and say why.

Which failures are the node's fault, and where the count lives (the node's hash in Redis), is
``reelfarm.farm.runtime.nodehealth``'s to say.

``StallClock`` says when a chunk is stuck: its node's count of frames drawn has not moved for
``after_sec`` (``REELFARM_CHUNK_STALL_SEC``, default 120 s).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reelfarm.shared.config import DEFAULT_CHUNK_STALL_SEC, DEFAULT_NODE_COOLDOWN_SEC, DEFAULT_NODE_SETASIDE_AFTER

REASON_CHARS = 300  # a failure is kept as one line of at most this many characters


@dataclass(frozen=True)
class SetAsidePolicy:
    """``after`` chunk failures in a row set a node aside for ``cooldown_sec`` seconds."""

    after: int = DEFAULT_NODE_SETASIDE_AFTER
    cooldown_sec: float = DEFAULT_NODE_COOLDOWN_SEC


@dataclass(frozen=True)
class Standing:
    """A node's record of its own failures (see the module docstring)."""

    failures: int = 0
    failure: str = ""
    until: float = 0.0

    def set_aside(self, now: float) -> bool:
        """Whether the node takes no work at ``now`` (seconds since the epoch)."""
        return self.until > now

    def as_fields(self) -> dict[str, str]:
        """The stored form: fields of the node's hash."""
        return {"failures": str(self.failures), "failure": self.failure, "set_aside_until": f"{self.until:.3f}"}

    @classmethod
    def from_fields(cls, fields: Mapping[str, str | None]) -> Standing:
        """Read the stored form back; missing or unreadable fields read as a clean standing."""
        try:
            return cls(int(fields.get("failures") or 0), fields.get("failure") or "",
                       float(fields.get("set_aside_until") or 0))
        except ValueError:
            return cls()


STANDING_FIELDS = tuple(Standing().as_fields())


def after_failure(standing: Standing, failure: str, now: float, policy: SetAsidePolicy,
                  others_working: bool) -> Standing:
    """The standing after one more chunk failure that was the node's fault."""
    failures = standing.failures + 1
    until = now + policy.cooldown_sec if failures >= policy.after and others_working else 0.0
    return Standing(failures, one_line(failure), until)


def one_line(text: str) -> str:
    """``text`` as one line of at most ``REASON_CHARS`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 3] + "..."


@dataclass
class StallClock:
    """Whether a count of frames has stood still for ``after_sec`` seconds (times: any monotonic clock)."""

    after_sec: float = DEFAULT_CHUNK_STALL_SEC
    frames: int = 0
    since: float = 0.0

    def restart(self, frames: int, now: float) -> None:
        """Start watching afresh: a chunk starts, or its wait for a server does not count."""
        self.frames, self.since = frames, now

    def stalled(self, frames: int, now: float) -> bool:
        """True once ``frames`` has not changed for ``after_sec``; a change restarts the clock."""
        if frames != self.frames:
            self.restart(frames, now)
            return False
        return now - self.since >= self.after_sec
