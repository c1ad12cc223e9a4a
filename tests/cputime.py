"""Where a run's time goes: with REELFARM_TEST_CPU set to a folder, each test's CPU seconds (its
worker's and those of the processes it started and waited for) and wall seconds, a line per test
in a file per worker (`scripts/test-cpu.py FOLDER` sums them by file). Off without the variable."""
from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from typing import Any

import pytest


def cpu_seconds() -> float:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
    folder = os.environ.get("REELFARM_TEST_CPU")
    if not folder:
        return (yield)
    c0, t0 = cpu_seconds(), time.monotonic()
    try:
        return (yield)
    finally:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(folder, f"cpu-{worker}.tsv"), "a", encoding="utf-8") as out:
            out.write(f"{cpu_seconds() - c0:.2f}\t{time.monotonic() - t0:.2f}\t{item.nodeid}\n")
