"""Scratch folders: a folder whose process died is removed, one in use is kept."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from reelfarm.farm.runtime.scratch import remove_stale, scratch_dir, scratch_root

HOLDER = "from reelfarm.farm.runtime.scratch import scratch_dir\nimport time\nwith scratch_dir('chunk') as d:\n" \
         "    print(d, flush=True)\n    time.sleep(120)\n"


def test_a_killed_process_folder_goes_and_a_live_one_stays(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], env=env, stdout=subprocess.PIPE, text=True)
    try:
        theirs = Path(holder.stdout.readline().strip())
        assert theirs.parent == scratch_root() == tmp_path / "reelfarm-scratch"
        with scratch_dir("stitch") as ours:
            assert remove_stale() == [] and theirs.is_dir() and Path(ours).is_dir()
            holder.send_signal(signal.SIGKILL)
            holder.wait()
            assert remove_stale() == [theirs.name]
            assert not theirs.exists() and Path(ours).is_dir()
        assert not Path(ours).exists()
    finally:
        holder.kill()
        holder.wait()
