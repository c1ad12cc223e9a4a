"""The README's two set-up commands are the ones the project runs: CI runs the test command
verbatim, and both start from the system packages script."""
from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    section = ROOT.joinpath("README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    serve, test = readme_commands()
    ci_lines = [line for line in ROOT.joinpath(".ci/run").read_text().splitlines()
                if line and not line.startswith("#")]
    assert test in ci_lines
    assert test.startswith("scripts/setup-system.sh --test && ") and test.endswith("pytest -q -n 4 --dist loadfile")
    assert serve.startswith("scripts/setup-system.sh && ") and serve.endswith("reelfarm serve")


def test_ci_runs_the_readme_first_command_before_the_tests() -> None:
    """CI installs the test extra, which would hide an import only it satisfies: the first command runs
    too, without extras, and its server is used (scripts/check-first-command.py)."""
    ci_lines = [line for line in ROOT.joinpath(".ci/run").read_text().splitlines()
                if line and not line.startswith("#")]
    check = "python3 scripts/check-first-command.py"
    serve, test = readme_commands()
    assert check in ci_lines and ci_lines.index(check) < ci_lines.index(test)
    spec = importlib.util.spec_from_file_location("check_first_command", ROOT / "scripts" / "check-first-command.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.first_command() == serve


def test_setup_script_is_valid_sh_and_names_every_server_package() -> None:
    script = ROOT / "scripts" / "setup-system.sh"
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    for package in ("libegl1", "libgl1", "postgresql", "pgbouncer", "redis-server", "apertium-eng-spa"):
        assert package in text
    assert text.index("apt-get update") < text.index("apt-get install")
