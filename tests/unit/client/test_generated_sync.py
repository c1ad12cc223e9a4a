"""The blocking SDK is generated from the awaited one (``scripts/generate_sync.py``): the committed
``client/_sync`` matches what the script makes now, and the check notices a change it does not."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts/generate_sync.py"


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--root", str(root)],
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_committed_blocking_client_is_what_the_generator_makes() -> None:
    result = _check(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_change_to_the_awaited_source_alone_is_caught_and_regenerated(tmp_path: Path) -> None:
    for side in ("_async", "_sync"):
        shutil.copytree(ROOT / "client" / side, tmp_path / "client" / side)
    source = tmp_path / "client/_async/client.py"
    source.write_text(source.read_text().replace(
        "    async def me(self) -> Me:", "    async def me(self, verbose: bool = False) -> Me:"))
    stale = _check(tmp_path)
    assert stale.returncode == 1
    assert "+    def me(self, verbose: bool = False) -> Me:" in stale.stdout
    assert "run python scripts/generate_sync.py" in stale.stderr
    subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], check=True, timeout=60)
    assert _check(tmp_path).returncode == 0
    assert "def me(self, verbose: bool = False) -> Me:" in (tmp_path / "client/_sync/client.py").read_text()
