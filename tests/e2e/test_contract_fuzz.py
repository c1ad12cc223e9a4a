"""The contract gate: Schemathesis drives a real `reelfarm serve` through its published OpenAPI
document with a valid key, with all its default checks on positive and negative data, and must
find nothing.

Phases: examples, coverage and fuzzing. The stateful phase is left out: its use-after-free
heuristic takes any readable object after a 2xx DELETE as a bug, while the contract (API.md)
makes `DELETE /videos/{id}` archive the video, which stays readable by design.

The key reaches Schemathesis as the document's `bearerAuth` scheme (tests/e2e/schemathesis.toml),
so its missing-credentials cases really leave it out; `schemathesis_hooks.py` gives every
well-formed Idempotency-Key a fresh value, since reusing one with another body is, by contract,
a 422 (tested on its own in tests/integration/api/test_api_idempotency.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_serve import free_port, start_server, stop, wait_for_health, wait_for_key

HERE = Path(__file__).resolve().parent
MAX_EXAMPLES = 15
SEED = 1
TIMEOUT_SEC = 900


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process, lines = start_server(tmp_path / "data", port, REELFARM_RATE_LIMIT_PRO="1000000")
    try:
        key, _ = wait_for_key(lines)
        wait_for_health(base)
        env = {**os.environ, "REELFARM_FUZZ_KEY": key, "SCHEMATHESIS_HOOKS": "schemathesis_hooks",
               "PYTHONPATH": str(HERE)}
        command = [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(HERE / "schemathesis.toml"),
                   "run", f"{base}/api/v1/openapi.json", "--phases", "examples,coverage,fuzzing",
                   "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "2",
                   "--report", "junit", "--report-dir", str(tmp_path / "report")]
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_SEC)
    finally:
        stop(process)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-20000:]
    selected = re.search(r"Selected: (\d+)/(\d+)", output)
    tested = re.search(r"Tested: (\d+)", output)
    assert selected and tested, output[-5000:]
    assert selected.group(1) == selected.group(2) == tested.group(1), output[-5000:]  # every operation
    assert int(tested.group(1)) >= 36
