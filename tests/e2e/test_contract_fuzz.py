"""The contract gate: Schemathesis drives a real `reelfarm serve` through its published OpenAPI
document with a valid key, with all its default checks on positive and negative data, and must
find nothing.

All four phases run: examples, coverage and fuzzing here, stateful (multi-step scenarios along the
links Schemathesis infers, e.g. create a video, render it, archive it, read it). One check is
adapted to the contract: API.md makes `DELETE /videos/{id}` archive the video, which stays
readable, so Schemathesis's use-after-free check (a 404 after any 2xx DELETE) is off for the reads
under `/videos/{video_id}` only, and `schemathesis_hooks.archived_video_contract` checks what the
contract promises there instead (reads show `archived`; PATCH, renders, stills, variants refused).
Example counts are in schemathesis.toml (10 per operation in the fuzzing phase, beside the examples and
coverage phases' cases; 500 stateful examples, which reach about 700 scenarios along 26 links).

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

from tests.e2e.test_serve import first_workspace_key, free_port, start_server, stop, wait_for_health

HERE = Path(__file__).resolve().parent
SEED = 1
TIMEOUT_SEC = 900


def schemathesis(base: str, key: str, phases: str, report_dir: Path) -> str:
    """Run Schemathesis against ``base``; assert it found nothing and return its output."""
    env = {**os.environ, "REELFARM_FUZZ_KEY": key, "SCHEMATHESIS_HOOKS": "schemathesis_hooks", "PYTHONPATH": str(HERE)}
    command = [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(HERE / "schemathesis.toml"),
               "run", f"{base}/api/v1/openapi.json", "--phases", phases, "--seed", str(SEED), "--workers", "2",
               "--report", "junit", "--report-dir", str(report_dir)]
    run = subprocess.run(command, check=False, cwd=report_dir.parent, env=env, capture_output=True, text=True, timeout=TIMEOUT_SEC)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-20000:]
    return output


def fuzzed_server(tmp_path: Path, phases: str, redis_url: str) -> str:
    """Schemathesis's output for ``phases`` against a fresh `reelfarm serve`.

    The server is a farm's API (``REELFARM_REDIS_URL`` set; SQLite, local files) with no node:
    renders and jobs are queued and answered exactly as on the embedded default, and nothing
    draws them. An embedded server would draw every render the fuzz asks for, at every size and
    length the document allows, for as long as the fuzz runs: minutes of both cores that test
    nothing of the contract and slow every other test running beside it.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data, env = tmp_path / "data", {"REELFARM_RATE_LIMIT_PRO": "1000000", "REELFARM_REDIS_URL": redis_url}
    process, _ = start_server(data, port, **env)
    try:
        wait_for_health(base)
        key = first_workspace_key(data, **env)
        return schemathesis(base, key, phases, tmp_path / "report")
    finally:
        stop(process)


def test_schemathesis_finds_nothing(tmp_path: Path, farm_redis: str) -> None:
    """Examples, coverage and fuzzing of every operation. The stateful phase runs on a server of
    its own (test_contract_scenarios.py): run after the others in one invocation it stops after a
    few dozen scenarios instead of its configured count, and apart the two run side by side."""
    single = fuzzed_server(tmp_path, "examples,coverage,fuzzing", farm_redis)
    selected = re.search(r"Selected: (\d+)/(\d+)", single)
    tested = re.search(r"Tested: (\d+)", single)
    assert selected and tested, single[-5000:]
    assert selected.group(1) == selected.group(2) == tested.group(1), single[-5000:]  # every operation
    assert int(tested.group(1)) >= 36
