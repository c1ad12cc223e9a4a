"""The operator's commands start light: ``reelfarm admin ...``, ``reelfarm migrate`` and ``reelfarm
worker`` are looked up (and print their help) without loading the web framework, the views or the
renderer; each loads what it needs when it runs. Importing ``reelfarm.api`` once loaded the whole
app (about 1.7 s of a CPU for every command an operator, a script or a test ran)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import part_of

HEAVY = {"flask", "flask_smorest", "skia", "av", "console", "marshmallow"}


@pytest.mark.parametrize("command", ["admin", "migrate", "worker", "serve"])
def test_an_operator_command_loads_no_web_framework_nor_renderer_to_start(command: str) -> None:
    code = ("import json, sys\nfrom reelfarm.cli import main\n"
            f"assert main.get_command(None, {command!r}) is not None\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = {part_of(name) for name in json.loads(out)}
    assert loaded & HEAVY == set()
