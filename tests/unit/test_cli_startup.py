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


def test_a_still_of_a_document_without_sound_or_footage_loads_no_decoder(tmp_path) -> None:
    """``reelfarm still`` starts in under a third of a second on an idle machine; PyAV alone took a
    fifth of that, loaded by the linter's sound check even where no file is read."""
    doc = {"version": 1, "fps": 30, "duration": 6, "format": "16:9",
           "scenes": [{"id": "a", "duration": 6, "background": {"type": "solid", "color": "#F7F5F2"},
                       "layers": [{"id": "t", "type": "text", "text": "Hello", "size": 0.1}]}]}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code = ("import json, sys\nfrom click.testing import CliRunner\nfrom reelfarm.cli import main\n"
            f"r = CliRunner().invoke(main, ['still', {str(tmp_path / 'doc.json')!r}, '-o', "
            f"{str(tmp_path / 'out.png')!r}, '--resolution', '144'])\n"
            "assert r.exit_code == 0, r.output\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = {part_of(name) for name in json.loads(out)}
    assert "skia" in loaded and "av" not in loaded
    assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
