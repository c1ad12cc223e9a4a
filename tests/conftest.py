"""Shared test helpers: small documents, and the session's real PostgreSQL and Redis servers.

``postgres_admin_url`` and ``redis_url`` start a throwaway server process the first time a test
asks for one (``tests/servers.py``: temporary directory, free port, stopped at the end of the
session), unless ``REELFARM_TEST_DATABASE_URL`` / ``REELFARM_TEST_REDIS_URL`` name existing
servers. When a server cannot be started or reached the tests that need it fail, never skip:
they exist to run against the real thing.
"""
from __future__ import annotations

import copy
import importlib.abc
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import pytest

from reelfarm.farm.runtime.queue import FORMER_TOP_LEVEL
from reelfarm.shared import config
from tests.servers import ServerError, start_postgres, start_redis
from tests.slow_first import slow_files_first

pytest_plugins = ["tests.cputime"]  # REELFARM_TEST_CPU: each test's CPU seconds


class NoFormerTopLevelNames(importlib.abc.MetaPathFinder):
    """The repository root is on ``sys.path`` here (for ``tests.*``), which would make its folders
    importable by their bare names (``farm.tasks``). Installed, they exist only as ``reelfarm.*``:
    the tests see the same, so code that reaches a part by its old name fails here as it would for
    a user (and work queued under old names runs only through ``reelfarm.farm.runtime.queue.task_path``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> None:
        if fullname.split(".", 1)[0] in FORMER_TOP_LEVEL:
            raise ModuleNotFoundError(f"No module named {fullname!r} (the parts are reelfarm.*)", name=fullname)


sys.meta_path.insert(0, NoFormerTopLevelNames())

# A suite started in the background by a script (``cmd &`` without job control) runs with SIGINT
# ignored, which every child would inherit and Python would keep ignoring: the tests that stop a
# child with Ctrl-C (``farm status --watch``, a node's warm shutdown) would then wait for nothing.
# A handler of our own is not inherited across exec: the children start with SIGINT's default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite runs four workers on two cores, so every core is always wanted: the embedded farm's
# task processes in SCHED_IDLE (the shipped ``REELFARM_TASK_PRIORITY``) would get almost none of
# them, and a GIF's stitch waited past the ten-minute ceiling. Here they share the cores evenly, in
# this process (the default Settings.from_env and EmbeddedQueue take) and in every server the tests
# start (the variable). ``tests/integration/farm/test_embedded_queue.py`` runs each priority.
SHIPPED_TASK_PRIORITY = config.DEFAULT_TASK_PRIORITY
config.DEFAULT_TASK_PRIORITY = "normal"
os.environ["REELFARM_TASK_PRIORITY"] = "normal"

BASE_DOC: dict[str, Any] = {
    "version": 1,
    "fps": 30,
    "duration": 6,
    "format": "16:9",
    "brand": {"colors": {"primary": "#1D4ED8", "background": "#0B1020", "text": "#FFFFFF",
                         "secondary": "#F1F5F9", "accent": "#F59E0B"}},
    "scenes": [
        {"id": "one", "duration": 3, "background": {"type": "linear", "colors": ["#0B1020", "#1E293B"], "angle": 45},
         "layers": [
             {"id": "title", "type": "text", "text": "Hello reelfarm", "font": "$brand.fonts.heading",
              "size": 0.09, "x": 0.5, "y": 0.4, "w": 0.8, "enter": {"preset": "slide", "duration": 0.5}},
             {"id": "box", "type": "shape", "shape": "rounded_rect", "x": 0.5, "y": 0.75, "w": 0.3, "h": 0.08,
              "radius": 0.02, "fill": "$brand.colors.primary",
              "keyframes": {"x": [{"t": 0, "v": 0.3}, {"t": 2.5, "v": 0.7}]}},
         ]},
        {"id": "two", "duration": 3, "background": {"type": "solid", "color": "$brand.colors.primary"},
         "transition": {"type": "crossfade", "duration": 0.5},
         "layers": [{"id": "cta", "type": "text", "text": "Try it today", "size": 0.08, "x": 0.5, "y": 0.5,
                     "w": 0.8, "font": {"family": "Inter", "weight": 700}, "enter": {"preset": "pop"}}]},
    ],
}


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(BASE_DOC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite golden reference images")


def pytest_configure(config: pytest.Config) -> None:
    """Where Python is told not to write bytecode (PYTHONDONTWRITEBYTECODE, as on this machine's
    image), every process the suite starts (servers, nodes, commands: hundreds) would compile the
    project's sources again, about half a second of CPU each: they are compiled once, here, by the
    run's first process (xdist's controller, before its workers start), into the usual __pycache__
    folders, which Python reads whatever that setting says."""
    if hasattr(config, "workerinput") or not sys.dont_write_bytecode:
        return
    import compileall
    from pathlib import Path

    from reelfarm import PARTS
    root = Path(__file__).resolve().parents[1]
    for folder in (*PARTS, "reelfarm"):
        compileall.compile_dir(root / folder, quiet=2, workers=0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist a worker's collection order is the order its scheduler hands files out:
    the known-long files first (tests/slow_first.py). A run without workers keeps collection order."""
    if hasattr(config, "workerinput"):
        items[:] = slow_files_first(items)


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A superuser URL on a real PostgreSQL server for the whole session."""
    given = os.environ.get("REELFARM_TEST_DATABASE_URL")
    if given:
        yield given
        return
    try:
        server = start_postgres()
    except ServerError as exc:
        pytest.fail(f"could not start a throwaway PostgreSQL: {exc}", pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a real Redis server for the whole session (tests keep to their own key prefixes)."""
    given = os.environ.get("REELFARM_TEST_REDIS_URL")
    if given:
        from redis import Redis
        from redis.exceptions import RedisError

        try:
            Redis.from_url(given, socket_timeout=5).ping()
        except RedisError as exc:
            pytest.fail(f"Redis is not reachable at {given}: {exc}", pytrace=False)
        yield given
        return
    try:
        server = start_redis()
    except ServerError as exc:
        pytest.fail(f"could not start a throwaway Redis: {exc}", pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()
