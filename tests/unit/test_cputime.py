"""The suite's CPU accounting (tests/cputime.py, scripts/test-cpu.py) on a run of its own."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import subprocess, sys

def test_burns_a_child():
    subprocess.run([sys.executable, "-c", "sum(range(4 * 10 ** 7))"], check=True)

def test_sleeps():
    import time
    time.sleep(0.3)
'''


def test_each_test_gets_its_own_and_its_childrens_cpu_seconds_and_the_script_sums_them(tmp_path):
    (tmp_path / "test_work.py").write_text(TESTS)
    folder = tmp_path / "cpu"
    folder.mkdir()
    env = {**os.environ, "REELFARM_TEST_CPU": str(folder), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.cputime", "-c", os.devnull,
                          "--rootdir", str(tmp_path), str(tmp_path / "test_work.py")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {line.split("\t")[2]: (float(line.split("\t")[0]), float(line.split("\t")[1]))
            for line in (folder / "cpu-main.tsv").read_text().splitlines()}
    burn, sleep = rows["test_work.py::test_burns_a_child"], rows["test_work.py::test_sleeps"]
    assert burn[0] > 0.3 and burn[0] > 3 * sleep[0]  # the child's CPU, once it was waited for
    assert sleep[1] >= 0.3 and sleep[0] < 0.2         # waiting is wall time, not CPU
    summed = subprocess.run([sys.executable, str(ROOT / "scripts" / "test-cpu.py"), str(folder)],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert "test_work.py" in summed and f"{burn[0] + sleep[0]:8.1f}" in summed, summed

