"""The order in which the suite's files are handed to parallel workers: the longest first.

``pytest -n 4 --dist loadfile`` gives each worker one file at a time, from a queue built out of the
collection. A file of one long test that is handed out last keeps one worker busy minutes after
the others have finished, so the known-long files go to the front, longest first, and the rest
follow in collection order: tests/deploy, tests/e2e (real servers and processes, a few long tests a
file), tests/golden, tests/integration, then tests/unit (many short files, which fill the end
evenly). pytest-xdist would otherwise sort that queue by each file's number of tests (its
``--loadscope-reorder`` default), which hands the one-test end-to-end files out last;
pyproject.toml's ``addopts`` turn that off with ``--no-loadscope-reorder``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

# Measured with ``--durations`` on the 2-core development machine under ``-n 4``, longest first.
SLOW_FILES: tuple[str, ...] = (
    # seconds of their longest tests in a whole run, 2026-12-06 (18.6 min in all)
    "tests/deploy/test_compose_farm.py",  # 600: four images built from nothing, a compose farm
    "tests/e2e/test_partitions.py",  # 180: silent links held 15 to 25 s
    "tests/e2e/test_contract_fuzz.py",  # 151
    "tests/integration/farm/test_fair_dispatch.py",  # 147: renders behind a backlog
    "tests/e2e/test_soak.py",  # 139: two minutes of traffic
    "tests/integration/api/test_api_download_names.py",  # 122
    "tests/e2e/test_client_retries.py",  # 103
    "tests/e2e/test_console_stream.py",  # 83
    "tests/e2e/test_farm_outages.py",  # 80
    "tests/e2e/test_console_browser.py",  # 77
    "tests/e2e/test_storage_freeze.py",  # 74
    "tests/e2e/test_contract_scenarios.py",  # 72
    "tests/e2e/test_first_start.py",  # 71
    "tests/integration/api/test_api_renders.py",  # 64
    "tests/integration/api/test_api_story_uploads.py",  # 59
    "tests/e2e/test_worker_database_outage.py",  # 52
    "tests/e2e/test_typescript_contract.py",  # 50
    "tests/e2e/test_connection_bounds.py",  # 43
    "tests/e2e/test_console_drafts.py",  # 41
    "tests/integration/farm/test_footage_renders.py",  # 40
    "tests/e2e/test_serve.py",  # 39
    "tests/e2e/test_node_drain.py",  # 38
    "tests/e2e/test_console_gaps.py",  # 37
)


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


Item = TypeVar("Item", bound=_Item)


def file_of(nodeid: str) -> str:
    """The file a test belongs to, as pytest-xdist's loadfile scheduling groups it."""
    return nodeid.split("::", 1)[0]


def slow_files_first(items: Sequence[Item], slow: Sequence[str] = SLOW_FILES) -> list[Item]:
    """``items`` grouped by file: the ``slow`` files first in their given order, then the others
    in collection order. Within a file the tests keep their order."""
    by_file: dict[str, list[Item]] = {}
    for item in items:
        by_file.setdefault(file_of(item.nodeid), []).append(item)
    rank = {name: i for i, name in enumerate(slow)}
    fronted = sorted((name for name in by_file if name in rank), key=rank.__getitem__)
    others = [name for name in by_file if name not in rank]
    return [item for name in (*fronted, *others) for item in by_file[name]]
