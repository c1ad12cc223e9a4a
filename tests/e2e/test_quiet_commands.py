"""``reelfarm`` commands print nothing of the libraries under them: no Fontconfig warning (the
renderer loads its packaged fonts without the system's font configuration), no other stray lines
on stderr, whether the command renders, lists or only shows its help."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def reelfarm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELFARM_")}
    env["REELFARM_DATA_DIR"] = str(cwd / "data")
    return subprocess.run([sys.executable, "-m", "reelfarm", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.parametrize("args", [("admin", "--help"), ("--help",), ("story", "--list"), ("serve", "--help")])
def test_commands_that_load_the_studio_print_nothing_on_stderr(args: tuple[str, ...], tmp_path: Path) -> None:
    done = reelfarm(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_local_still_and_render_print_only_their_own_lines(tmp_path: Path) -> None:
    assert reelfarm("story", "quote", "--field", "quote=Quiet please", "-o", "q.json", cwd=tmp_path).returncode == 0
    still = reelfarm("still", "q.json", "--time", "1", "--resolution", "144", "--raster", "cpu", "-o", "q.png",
                     cwd=tmp_path)
    assert still.returncode == 0 and still.stderr == "", still.stderr
    assert (tmp_path / "q.png").stat().st_size > 0
    render = reelfarm("render", "q.json", "--resolution", "144", "--fps", "24", "--workers", "1", "--raster", "cpu",
                      "-o", "q.mp4", cwd=tmp_path)
    assert render.returncode == 0, render.stderr
    assert "Fontconfig" not in render.stderr and "Traceback" not in render.stderr
