"""The contract gate's stateful phase: multi-step scenarios along the links Schemathesis infers
from the OpenAPI document (create a video, render it, archive it, read it), against a real
`reelfarm serve` of its own; the other phases are in test_contract_fuzz.py, whose docstring says
which checks are adapted to the contract and why."""
from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_contract_fuzz import fuzzed_server


def test_schemathesis_scenarios_find_nothing(tmp_path: Path, farm_redis: str) -> None:
    stateful = fuzzed_server(tmp_path, "stateful", farm_redis)
    scenarios = re.search(r"Scenarios: +(\d+)", stateful)
    links = re.search(r"API Links: +(\d+) covered", stateful)
    assert scenarios and links, stateful[-5000:]
    assert int(scenarios.group(1)) >= 200 and int(links.group(1)) >= 20, stateful[-5000:]
