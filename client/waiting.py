"""How waits poll: the schedule and the checks both clients share.

A wait polls at 0.25 s, growing by half each time up to 2 s: quick for a short render, gentle on
the rate limit for a long one. ``on_progress`` is called with each state seen.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reelfarm.client.errors import TaskFailed, WaitTimeout

FIRST_POLL = 0.25
MAX_POLL = 2.0


def intervals(first: float = FIRST_POLL, most: float = MAX_POLL) -> Iterator[float]:
    delay = first
    while True:
        yield delay
        delay = min(most, delay * 1.5)


def finished(state: Any, what: str, raise_on_failure: bool) -> bool:
    """True when ``state`` (a Render or Job) is terminal; raises ``TaskFailed`` if asked to."""
    if not state.done:
        return False
    if raise_on_failure and state.status != "succeeded":
        raise TaskFailed(f"{what} {state.id} {state.status}: {state.error or 'no reason given'}", state)
    return True


def making(video: Any) -> bool:
    """Whether a video (a ``Video``) is still being made: generated from a brief (``generating``), or
    a translated copy whose translation job runs (the copy is ``draft`` meanwhile, with no version)."""
    job = video.job
    return video.status == "generating" or (job is not None and not job.done and video.status == "draft")


def timed_out(what: str, ident: str, timeout: float, last: Any) -> WaitTimeout:
    status = getattr(last, "status", "?")
    return WaitTimeout(f"{what} {ident} not finished after {timeout:g} s (status {status})", last)
