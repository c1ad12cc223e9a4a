"""The suite's schedule under pytest-xdist (tests/slow_first.py): the known-long files are handed
to workers first, and pytest-xdist really hands files out in the workers' collection order."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests.slow_first import SLOW_FILES, slow_files_first

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Item:
    nodeid: str


def ids(items: list[Item]) -> list[str]:
    return [item.nodeid for item in items]


def test_the_slow_files_come_first_in_their_order_and_the_rest_in_collection_order():
    items = [Item(n) for n in ("a.py::one", "b.py::one", "b.py::two", "slow2.py::one", "c.py::one",
                               "slow1.py::one", "slow1.py::two", "d.py::one", "d.py::two", "d.py::three")]
    ordered = slow_files_first(items, slow=("slow1.py", "slow2.py", "not_collected.py"))
    assert ids(ordered) == ["slow1.py::one", "slow1.py::two", "slow2.py::one", "a.py::one", "b.py::one",
                            "b.py::two", "c.py::one", "d.py::one", "d.py::two", "d.py::three"]


def test_every_slow_file_named_exists():
    assert [name for name in SLOW_FILES if not (ROOT / name).is_file()] == []


def test_the_suite_turns_off_xdists_reordering_by_number_of_tests():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--no-loadscope-reorder" in addopts.split()


def _run_order(project: Path, *options: str) -> list[str]:
    """The order one loadfile worker runs a small suite in, whose one-test file is named slow."""
    project.mkdir()
    log = project / "order.txt"
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(
        "import pytest\n"
        "from tests.slow_first import slow_files_first\n\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    if hasattr(config, 'workerinput'):\n"
        "        items[:] = slow_files_first(items, slow=('test_slow.py',))\n\n"
        "@pytest.fixture\n"
        "def record():\n"
        f"    return lambda name: open({str(log)!r}, 'a').write(name + '\\n')\n")
    (project / "test_many.py").write_text(
        "".join(f"def test_{n}(record):\n    record('many{n}')\n\n" for n in range(3)))
    (project / "test_slow.py").write_text("def test_long(record):\n    record('slow')\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin",
                          "-n", "1", "--dist", "loadfile", *options], cwd=project, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                         timeout=120, check=False)  # no other plugin: each start costs seconds
    assert run.returncode == 0, run.stdout + run.stderr
    return log.read_text().split()


def test_a_loadfile_worker_runs_the_slow_file_first_only_without_xdists_reordering(tmp_path):
    assert _run_order(tmp_path / "kept", "--no-loadscope-reorder") == ["slow", "many0", "many1", "many2"]
    assert _run_order(tmp_path / "sorted") == ["many0", "many1", "many2", "slow"]  # xdist's default
