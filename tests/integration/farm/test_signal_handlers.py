"""The in-process RQ workers of these tests leave the pytest worker's signal handlers as they were
(tests/integration/farm/conftest.py): the two tests run in this order, in one process."""
from __future__ import annotations

import signal
from typing import Any

from tests.integration.farm.conftest import work_burst

BEFORE = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)


def test_an_in_process_worker_installs_rqs_handlers(redis: Any, namespace: str) -> None:
    work_burst(redis, namespace)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) != BEFORE  # RQ's, for now


def test_the_next_test_has_the_processs_own_handlers_back() -> None:
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == BEFORE
