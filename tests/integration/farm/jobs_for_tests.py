"""Tiny jobs for the queue contract tests. Each writes to files named in its arguments, so a test
can see what ran, how often and in which order, whichever process ran it."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def record(path: str, value: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(value + "\n")


def recorded(path: str | Path) -> list[str]:
    return Path(path).read_text("utf-8").splitlines() if Path(path).exists() else []


def _attempt(path: str) -> int:
    record(path + ".attempts", "x")
    return len(recorded(path + ".attempts"))


def fail_times(path: str, times: int, value: str) -> None:
    """Fails its first ``times`` attempts, then records ``value``."""
    if _attempt(path) <= times:
        raise RuntimeError("planned failure")
    record(path, value)


def exit_once(path: str, value: str) -> None:
    """Kills the process running it on the first attempt (a crash), then records ``value``."""
    if _attempt(path) == 1:
        os._exit(3)
    record(path, value)


def slow(path: str, value: str, seconds: float) -> None:
    time.sleep(seconds)
    record(path, value)


def failed(func_path: str, args: Sequence[Any], reason: str) -> None:
    """A failure handler: records ``<function name> <value>: <reason>`` beside the job's file."""
    record(str(args[0]) + ".failed", f"{func_path.rsplit('.', 1)[-1]} {args[-1]}: {reason}")


def record_niceness(path: str) -> None:
    """Records the niceness of the process running it, and whether it is SCHED_IDLE."""
    record(path, str(os.nice(0)))
    record(path, "idle" if os.sched_getscheduler(0) == os.SCHED_IDLE else "other")
