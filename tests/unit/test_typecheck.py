"""The code type-checks: mypy, configured by ``[tool.mypy]`` in pyproject.toml, finds no error.

Run from the repository root so the configured ``files`` (the packages) resolve; the cache goes in
the root's git-ignored ``.mypy_cache``, so a run after the first takes about a second.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "Success" in stdout, stdout
